//! What the hub has to say that is no answer to anyone: a request refused for carrying a
//! credential in its URL, say. The hub never prints; the program that runs it decides
//! where these go ([`on_notice`]: `trellis serve` writes them to its stderr). Until then,
//! or besides, the last [`KEPT`] are kept for [`recent`].

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

/// Notices kept for [`recent`].
pub const KEPT: usize = 16;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: OnceLock<Sink> = OnceLock::new();
static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// Where notices go from now on (the first call wins: one program, one place).
pub fn on_notice(sink: impl Fn(&str) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(sink));
}

/// Says `line` (one line, already made harmless by the caller).
#[cfg_attr(not(feature = "listen"), allow(dead_code))]
pub(crate) fn say(line: String) {
    if let Some(sink) = SINK.get() {
        sink(&line);
    }
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    if recent.len() == KEPT {
        recent.pop_front();
    }
    recent.push_back(line);
}

/// The last notices, oldest first.
pub fn recent() -> Vec<String> {
    RECENT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_notices_are_kept_in_order_and_bounded() {
        for i in 0..super::KEPT + 3 {
            super::say(format!("n{i}"));
        }
        let r = super::recent();
        assert_eq!(r.len(), super::KEPT);
        assert_eq!(r.first().map(String::as_str), Some("n3"));
        assert_eq!(r.last().map(String::as_str), Some("n18"));
    }
}
