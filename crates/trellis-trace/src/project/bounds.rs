//! What a span may carry: texts cut at a character boundary and marked cut, lists and
//! attributes counted, times as the log keeps them. A 1 MiB title is not a 1 MiB
//! attribute.

use crate::span::Value;

/// Longest argument or output text recorded (when content is asked for).
pub(super) const CONTENT_LIMIT: usize = 4096;
/// What any attribute's text may be, at most (a title, a name, an id, an error), and how
/// many texts a list and a span may carry: a 1 MiB title is not a 1 MiB attribute.
pub(super) const ATTRIBUTE_LIMIT: usize = 4096;
pub(super) const LIST_LIMIT: usize = 128;
pub(super) const ATTRIBUTES: usize = 128;
/// A span's name, at most.
pub(super) const NAME_LIMIT: usize = 256;

/// A session time as the log keeps it (milliseconds).
pub(super) fn ms(t: f64) -> f64 {
    (t.max(0.0) * 1000.0).round() / 1000.0
}

pub(super) fn nanos(started: f64, t: f64) -> u64 {
    ((started + t.max(0.0)) * 1e9).max(0.0) as u64
}

pub(super) fn clip(s: &str) -> String {
    clip_to(s, CONTENT_LIMIT)
}

/// `s`, cut at a character boundary to at most `limit` bytes and marked cut (`…`).
pub(super) fn clip_to(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `v` within the bounds of any attribute.
pub(super) fn bounded(v: Value) -> Value {
    match v {
        Value::Str(s) if s.len() > ATTRIBUTE_LIMIT => Value::Str(clip_to(&s, ATTRIBUTE_LIMIT)),
        Value::StrList(l) => Value::StrList(
            l.into_iter()
                .take(LIST_LIMIT)
                .map(|s| {
                    if s.len() > ATTRIBUTE_LIMIT {
                        clip_to(&s, ATTRIBUTE_LIMIT)
                    } else {
                        s
                    }
                })
                .collect(),
        ),
        v => v,
    }
}
