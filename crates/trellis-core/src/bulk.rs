//! Tool output that can leave memory: the text of a call's content, kept in the session
//! log (where its frame already is) once the call is finished, and read back when a view,
//! an export or an extension asks for it.
//!
//! Invariants:
//! - A [`Text`] always knows its length and line count, held or not, so cards and
//!   summaries never read the log.
//! - [`Text::load`] returns the same text before and after [`Text::evict`]: evicting only
//!   swaps where it is kept. A text whose frame cannot be read back (the log is gone) loads
//!   as a one-line note saying so, never as an error.
//! - Recently loaded texts stay in a small cache ([`RECENT`] texts, [`RECENT_BYTES`] at most),
//!   so a view drawing the same card twice reads the log once.
//!
//! Pure: reading is the [`BulkSource`]'s business (the driver gives one over the log).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub(crate) mod escaped;

/// Reads the text of content item `item` of the call a log line (`seq`) describes.
pub trait BulkSource: Send + Sync {
    fn text(&self, seq: u64, item: usize) -> Option<String>;
}

/// Texts kept in the cache of recently loaded ones.
pub const RECENT: usize = 256;
/// Bytes the cache of recently loaded texts keeps at most.
pub const RECENT_BYTES: usize = 8 << 20;

enum State {
    Held(Arc<String>),
    /// In memory as the agent's line wrote it ([`escaped`]): the JSON string literal,
    /// quotes included, that writing the text would write.
    Escaped(Arc<str>),
    Stored {
        source: Arc<dyn BulkSource>,
        seq: u64,
        item: usize,
        cache: Weak<String>,
    },
}

struct Cell {
    len: usize,
    lines: OnceLock<usize>,
    /// The log line and content item it came from, once a frame set it.
    origin: OnceLock<(u64, usize)>,
    state: Mutex<State>,
}

/// The text of one content item, shared by every snapshot of the call.
#[derive(Clone)]
pub struct Text(Arc<Cell>);

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn recent() -> &'static Mutex<(VecDeque<Arc<String>>, usize)> {
    static R: OnceLock<Mutex<(VecDeque<Arc<String>>, usize)>> = OnceLock::new();
    R.get_or_init(|| Mutex::new((VecDeque::new(), 0)))
}

fn remember(t: &Arc<String>) {
    let mut r = recent()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    r.1 += t.len();
    r.0.push_back(t.clone());
    while r.0.len() > RECENT || (r.1 > RECENT_BYTES && r.0.len() > 1) {
        if let Some(old) = r.0.pop_front() {
            r.1 -= old.len();
        }
    }
}

impl Text {
    pub fn new(text: String) -> Text {
        Text(Arc::new(Cell {
            len: text.len(),
            lines: OnceLock::new(),
            origin: OnceLock::new(),
            state: Mutex::new(State::Held(Arc::new(text))),
        }))
    }

    /// The text of a JSON string literal as a line wrote it (quotes included; a reader
    /// checked it is one), kept written if its escapes are those
    /// [`crate::compact_json::write_str`] writes (`None` otherwise: unescape it and use
    /// [`Text::new`]).
    pub(crate) fn escaped(literal: &str) -> Option<Text> {
        let literal = literal.trim();
        let m = escaped::measure(literal)?;
        Text::measured(literal, m)
    }

    /// [`Text::escaped`] with the literal's measure taken already (by the reader that
    /// found the string's end, [`escaped::Tally`]): the output is not walked twice.
    pub(crate) fn measured(literal: &str, m: escaped::Measured) -> Option<Text> {
        // Output budgets count the text's bytes: a literal much longer than its text (a
        // terminal's colours are six bytes an escape) is held as text instead.
        if literal.len() > m.len + m.len / 4 + 2 {
            return None;
        }
        let lines = OnceLock::new();
        if let Some(n) = m.lines {
            let _ = lines.set(n);
        }
        Some(Text(Arc::new(Cell {
            len: m.len,
            lines,
            origin: OnceLock::new(),
            state: Mutex::new(State::Escaped(literal.into())),
        })))
    }

    /// Appends the text as a JSON string literal (what `write_str` of [`Text::load`]
    /// appends), copied as the line wrote it where it is kept so.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        if let State::Escaped(literal) = &*lock(&self.0.state) {
            out.extend_from_slice(literal.as_bytes());
            return;
        }
        crate::compact_json::write_str(out, &self.load());
    }

    pub fn len(&self) -> usize {
        self.0.len
    }

    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// Lines of output as a user counts them (see [`output_lines`]).
    pub fn output_lines(&self) -> usize {
        *self.0.lines.get_or_init(|| output_lines(&self.load()))
    }

    /// The text, from memory, the cache, or the log.
    pub fn load(&self) -> Arc<String> {
        let mut st = lock(&self.0.state);
        match &mut *st {
            State::Held(t) => t.clone(),
            State::Escaped(literal) => {
                // Read once: held as text from then on (written the same way).
                let t = Arc::new(escaped::unescape(literal));
                *st = State::Held(t.clone());
                t
            }
            State::Stored {
                source,
                seq,
                item,
                cache,
            } => {
                if let Some(t) = cache.upgrade() {
                    return t;
                }
                let t = Arc::new(source.text(*seq, *item).unwrap_or_else(|| {
                    format!(
                        "[{} bytes of output not available: the session log could not be read]",
                        self.0.len
                    )
                }));
                *cache = Arc::downgrade(&t);
                drop(st);
                remember(&t);
                t
            }
        }
    }

    /// A text known to be in the log (a frozen call's, see [`crate::cold`]): read back
    /// through `source` when asked for.
    pub fn logged(
        source: &Arc<dyn BulkSource>,
        seq: u64,
        item: usize,
        len: usize,
        lines: usize,
    ) -> Text {
        let cell = Cell {
            len,
            lines: OnceLock::new(),
            origin: OnceLock::new(),
            state: Mutex::new(State::Stored {
                source: source.clone(),
                seq,
                item,
                cache: Weak::new(),
            }),
        };
        let _ = cell.lines.set(lines);
        let _ = cell.origin.set((seq, item));
        Text(Arc::new(cell))
    }

    /// The log line and content item the text came from, if a frame set it.
    pub fn origin(&self) -> Option<(u64, usize)> {
        self.0.origin.get().copied()
    }

    /// Whether the text is in memory (not only in the log).
    pub fn is_held(&self) -> bool {
        matches!(*lock(&self.0.state), State::Held(_) | State::Escaped(_))
    }

    /// Notes which log line (`seq`) and content item the text came from; the first note
    /// stands (a later frame that repeats the content makes a new `Text`).
    pub fn set_origin(&self, seq: u64, item: usize) {
        let _ = self.0.origin.set((seq, item));
    }

    /// Leaves memory for `source` (which can read it back from where [`Text::set_origin`]
    /// said it came from); returns the bytes let go. A text with no origin stays.
    pub fn evict(&self, source: &Arc<dyn BulkSource>) -> usize {
        let Some(&(seq, item)) = self.0.origin.get() else {
            return 0;
        };
        let mut st = lock(&self.0.state);
        // Counted before it goes: a card asks for the line count without loading.
        let cache = match &*st {
            State::Held(t) => {
                let _ = self.0.lines.get_or_init(|| output_lines(t));
                Arc::downgrade(t)
            }
            State::Escaped(literal) => {
                let _ = self
                    .0
                    .lines
                    .get_or_init(|| output_lines(&escaped::unescape(literal)));
                Weak::new()
            }
            State::Stored { .. } => return 0,
        };
        *st = State::Stored {
            source: source.clone(),
            seq,
            item,
            cache,
        };
        self.0.len
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_held() {
            f.debug_tuple("Text").field(&*self.load()).finish()
        } else {
            write!(f, "Text(<{} bytes in the log>)", self.0.len)
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, o: &Text) -> bool {
        Arc::ptr_eq(&self.0, &o.0) || (self.0.len == o.0.len && *self.load() == *o.load())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s.to_string())
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.load())
    }
}

/// Lines of tool output as the user would count them: agents wrap output in a Markdown
/// fence (```` ```console ````), append notes for the model (`<system-reminder>` blocks)
/// and number the lines of a file they read (`     1→text`, with a last empty numbered
/// line for the final newline); none of that is output.
pub fn output_lines(text: &str) -> usize {
    // Most output is none of that (no backtick, no `<`, no `→`, whose UTF-8 starts with
    // 0xE2): its lines, but blank ones at the end — counted in one pass of the bytes.
    if memchr::memchr3(b'`', b'<', 0xE2, text.as_bytes()).is_none() {
        let kept = text.trim_end();
        return if kept.is_empty() {
            0
        } else {
            memchr::memchr_iter(b'\n', kept.as_bytes()).count() + 1
        };
    }
    if !text.contains("```") && !text.contains("<system-reminder>") && !text.contains('→') {
        let mut last_kept = 0;
        for (n, l) in text.lines().enumerate() {
            if !l.trim().is_empty() {
                last_kept = n + 1;
            }
        }
        return last_kept;
    }
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.len() >= 2
        && lines[0].trim_start().starts_with("```")
        && lines.last().is_some_and(|l| l.trim() == "```")
    {
        lines.remove(0);
        lines.pop();
    }
    // Notes to the model.
    let mut kept = Vec::with_capacity(lines.len());
    let mut in_note = false;
    for l in lines {
        let t = l.trim();
        if t == "<system-reminder>" {
            in_note = true;
        } else if t == "</system-reminder>" {
            in_note = false;
        } else if !in_note {
            kept.push(l);
        }
    }
    while kept.last().is_some_and(|l| l.trim().is_empty()) {
        kept.pop();
    }
    // A numbered listing: its last number stands for the final newline when empty.
    let numbered = |l: &str| {
        let t = l.trim_start();
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && t[digits..].starts_with('→')
    };
    if !kept.is_empty() && kept.iter().all(|l| numbered(l)) {
        while kept.last().is_some_and(|l| {
            let t = l.trim_start();
            t.trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start_matches('→')
                .is_empty()
        }) {
            kept.pop();
        }
    }
    kept.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Log(Vec<String>);
    impl BulkSource for Log {
        fn text(&self, seq: u64, item: usize) -> Option<String> {
            self.0.get(seq as usize + item).cloned()
        }
    }

    /// The one-pass count of plain output is the line-by-line count.
    #[test]
    fn plain_output_is_counted_as_line_by_line() {
        let by_lines = |text: &str| {
            let mut last_kept = 0;
            for (n, l) in text.lines().enumerate() {
                if !l.trim().is_empty() {
                    last_kept = n + 1;
                }
            }
            last_kept
        };
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\n\n\n",
            "a\r\nb\r\n",
            "a\n  \n\t\n",
            "a\n \u{3000}\nb",
            "\n\na",
            "a\rb\n",
            "one\n\ntwo\n \n",
            "\u{2003}\n\u{2003}",
        ] {
            assert_eq!(output_lines(text), by_lines(text), "{text:?}");
        }
    }

    #[test]
    fn a_text_loads_the_same_before_and_after_it_leaves_memory() {
        let src: Arc<dyn BulkSource> = Arc::new(Log(vec!["a\nb\n".into(), "other".into()]));
        let t = Text::new("a\nb\n".into());
        assert_eq!(t.evict(&src), 0, "no origin: stays");
        t.set_origin(0, 0);
        let snapshot = t.clone();
        assert_eq!(t.evict(&src), 4);
        assert!(!snapshot.is_held(), "every snapshot shares it");
        assert_eq!(snapshot.len(), 4);
        assert_eq!(snapshot.output_lines(), 2);
        assert_eq!(&**snapshot.load(), "a\nb\n");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"a\\nb\\n\"");
        // A log that cannot be read: a note, not a failure.
        let gone: Arc<dyn BulkSource> = Arc::new(Log(vec![]));
        let u = Text::new("x".repeat(10));
        u.set_origin(5, 0);
        u.evict(&gone);
        // Nothing else holds it: read again (and missing).
        assert!(u.load().contains("10 bytes of output not available"));
    }

    /// A text kept as its line wrote it is the same text: measured, counted, written,
    /// read (then held as text) and let go of like any other.
    #[test]
    fn a_text_kept_as_written_is_the_text() {
        let text = "the output of a command:\na \"q\"\n\tb\n\n";
        let literal = serde_json::to_string(text).unwrap();
        assert!(Text::escaped("\"a\\/b\"").is_none(), "not write_str's form");
        let colours = serde_json::to_string("\u{1b}[1mbold\u{1b}[0m").unwrap();
        assert!(
            Text::escaped(&colours).is_none(),
            "held as text: it is a third of its literal"
        );
        let t = Text::escaped(&literal).expect("write_str's form");
        assert!(t.is_held());
        assert_eq!((t.len(), t.output_lines()), (text.len(), 3));
        let mut out = Vec::new();
        t.write_json(&mut out);
        assert_eq!(out, literal.as_bytes());
        let src: Arc<dyn BulkSource> = Arc::new(Log(vec![text.into()]));
        t.set_origin(0, 0);
        assert_eq!(t.evict(&src), text.len());
        assert!(!t.is_held());
        assert_eq!(&**t.load(), text);
        let u = Text::escaped(&literal).unwrap();
        assert_eq!(&**u.load(), text);
        let mut again = Vec::new();
        u.write_json(&mut again);
        assert_eq!(again, literal.as_bytes(), "read once, written the same");
        assert_eq!(t, u);
    }
}
