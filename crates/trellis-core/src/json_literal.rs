//! JSON text as it stands on an agent's line: a value's raw text ([`Raw`], borrowed, not
//! read twice) and a string literal's value ([`unescape`], one pass, one allocation).
//! Below the readers of hot lines (`hot`) and the tool-call types that keep such text.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A value's JSON text as it is on the line (what serde_json's borrowed raw value holds;
/// the hand reader, `hot::scan`, makes one without checking the text twice).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Raw<'a>(pub(crate) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| Raw(r.get()))
    }
}

/// The value of a JSON string literal as serde_json's raw capture gives it (quotes
/// included, escapes validated): unescaped in one pass into one allocation of the right
/// size. `None` for anything serde_json would not read as a `String` (not a string, a
/// lone surrogate): the caller then leaves the frame to the lenient decoders.
pub(crate) fn unescape(raw: &str) -> Option<String> {
    let inner = raw.trim().strip_prefix('"')?.strip_suffix('"')?;
    let b = inner.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let h = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u32::from_str_radix(h, 16)
            .ok()
            .filter(|_| h.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        // A backslash is ASCII: the run before it ends on a character boundary.
        out.push_str(&inner[i..i + k]);
        let at = i + k;
        i = at + 2;
        out.push(match *b.get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(i)?;
                i += 4;
                if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate must be followed by an escaped low one.
                    if b.get(i..i + 2)? != b"\\u" {
                        return None;
                    }
                    let lo = hex4(i + 2).filter(|lo| (0xDC00..0xE000).contains(lo))?;
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    // A lone low surrogate is no character.
                    char::from_u32(hi)?
                }
            }
            _ => return None,
        });
    }
    out.push_str(&inner[i..]);
    Some(out)
}
