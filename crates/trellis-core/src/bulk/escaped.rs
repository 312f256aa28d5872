//! A tool's output kept as the agent's line wrote it: a JSON string literal whose every
//! escape is the one [`crate::compact_json::write_str`] writes for that character. Such a
//! literal *is* what writing the text writes, so the events and the spill copy it instead
//! of unescaping it on the way in and escaping it again on the way out; it is unescaped
//! only when someone reads the text itself (a view, an extension, a search).
//!
//! Invariant: [`measure`] accepts a literal only if `write_str(unescaped) == literal`, and
//! then gives the unescaped text's length in bytes and, where [`super::output_lines`]
//! would take its one-pass branch, its line count — both exactly what the unescaped text
//! has. Anything else (`\/`, `\u00e9`, an upper-case hex digit, a malformed escape) is
//! refused, and the caller unescapes the literal as before.

/// What a canonical literal's text measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measured {
    /// Bytes of the unescaped text.
    pub len: usize,
    /// [`super::output_lines`] of the text, when its one-pass branch applies (no
    /// backtick, no `<`, no `→`); `None`: count it from the text when asked.
    pub lines: Option<usize>,
}

/// Measures `literal` (quotes included) if it is written the way `write_str` writes.
/// `literal` is a JSON string literal a reader checked (no raw quote or control
/// character inside): only its escapes are looked at here.
pub(crate) fn measure(literal: &str) -> Option<Measured> {
    let body = literal.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let mut tally = Tally::default();
    let mut i = 0;
    loop {
        let at = memchr::memchr(b'\\', &b[i..]).map_or(b.len(), |k| i + k);
        tally.run(body, i, at);
        if at == b.len() {
            break;
        }
        i = at + tally.escape(&b[at..])?;
    }
    tally.finish(body)
}

/// [`measure`] taken as a literal's escapes are found, by whoever walks them anyway (the
/// hot reader finding a string's end): the runs of characters between escapes, and each
/// escape, in order; then [`Tally::finish`].
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Bytes the escapes take beyond the one each stands for.
    extra: usize,
    newlines: usize,
    /// Newlines before the last character that is not white space, once there is one.
    kept: Option<usize>,
    /// An escape `write_str` does not write was seen.
    refused: bool,
}

impl Tally {
    /// The characters `text[from..to]`, between escapes (none of them a line break: JSON
    /// has no raw control character in a string).
    #[inline]
    pub(crate) fn run(&mut self, text: &str, from: usize, to: usize) {
        if to > from && has_content(&text[from..to]) {
            self.kept = Some(self.newlines);
        }
    }

    /// The escape `esc` starts with (a backslash, then the rest of the literal): its width,
    /// or `None` when it is not one `write_str` writes (the literal is refused).
    #[inline]
    pub(crate) fn escape(&mut self, esc: &[u8]) -> Option<usize> {
        if self.refused {
            return None;
        }
        let (white, width) = match self.shape(esc) {
            Some(s) => s,
            None => {
                self.refused = true;
                return None;
            }
        };
        self.extra += width - 1;
        if !white {
            self.kept = Some(self.newlines);
        }
        Some(width)
    }

    /// Whether the escape stands for white space, and its width.
    fn shape(&mut self, esc: &[u8]) -> Option<(bool, usize)> {
        Some(match *esc.get(1)? {
            b'n' => {
                self.newlines += 1;
                (true, 2)
            }
            b'r' | b't' | b'f' => (true, 2),
            b'"' | b'\\' | b'b' => (false, 2),
            b'u' => match esc.get(2..6)? {
                [b'0', b'0', hi, lo] => {
                    let v = hex(*hi)? << 4 | hex(*lo)?;
                    // write_str has a short escape for these, and leaves the rest as is.
                    if v >= 0x20 || matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return None;
                    }
                    // U+000B (vertical tab) is white space; the other controls are not.
                    (v == 0x0b, 6)
                }
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The measure of the literal whose body (between its quotes) was walked.
    pub(crate) fn finish(self, body: &str) -> Option<Measured> {
        if self.refused {
            return None;
        }
        // Escapes write only ASCII letters and digits, so these bytes are in the literal
        // exactly where they are in the text.
        let plain = memchr::memchr3(b'`', b'<', 0xE2, body.as_bytes()).is_none();
        Some(Measured {
            len: body.len() - self.extra,
            lines: plain.then(|| self.kept.map_or(0, |n| n + 1)),
        })
    }
}

/// Whether `run` (no control character in it) has a character that is not white space:
/// told by its first byte but for a leading space or a character beyond ASCII.
fn has_content(run: &str) -> bool {
    match run.as_bytes().first() {
        None => false,
        Some(&c) if c != b' ' && c.is_ascii() => true,
        Some(_) => !run.trim().is_empty(),
    }
}

/// A lower-case hex digit's value (`write_str` writes no other).
fn hex(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    }
}

/// The text of a literal [`measure`] accepted, by the hot path's one unescaper (which
/// reads any literal such a measure accepts; empty for anything else, never reached).
pub(super) fn unescape(literal: &str) -> String {
    crate::json_literal::unescape(literal).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact_json::write_str;
    use proptest::prelude::*;

    fn literal(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    /// Texts made of what output holds and what the counting and the escapes turn on.
    fn texts() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "a", "line 12", " ", "\n", "\r", "\t", "\u{b}", "\u{c}", "\u{8}", "\u{1}", "\u{1f}",
            "\"", "\\", "/", "é", "\u{a0}", "\u{3000}", "\u{2003}", "→", "`", "<", "```", "u",
            "00", "\u{85}",
        ]);
        prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        /// What write_str writes is accepted, measured exactly and read back whole.
        #[test]
        fn a_written_text_is_measured_as_the_text(text in texts()) {
            let lit = literal(&text);
            let m = measure(&lit).expect("write_str's own form");
            prop_assert_eq!(m.len, text.len());
            let plain = !text.contains(['`', '<', '→']) && !text.as_bytes().contains(&0xE2);
            if plain {
                prop_assert_eq!(m.lines, Some(super::super::output_lines(&text)));
            } else {
                prop_assert_eq!(m.lines, None);
            }
            prop_assert_eq!(unescape(&lit), text);
        }

        /// Any other literal serde_json reads is refused unless it is write_str's form.
        #[test]
        fn another_form_is_refused(text in texts(), slash in any::<bool>()) {
            // serde_json writes `\u001f`-style escapes too, but not `\/`; ensure_ascii-style
            // writers escape every non-ASCII character.
            let mut lit = serde_json::to_string(&text).unwrap();
            if slash {
                lit = lit.replace('/', "\\/");
            }
            let ascii: String = lit
                .chars()
                .map(|c| if c.is_ascii() { c.to_string() } else {
                    let mut b = [0u16; 2];
                    c.encode_utf16(&mut b).iter().map(|u| format!("\\u{u:04x}")).collect()
                })
                .collect();
            for l in [lit, ascii] {
                let canonical = l == literal(&text);
                prop_assert_eq!(measure(&l).is_some(), canonical, "{}", l);
            }
        }
    }

    #[test]
    fn what_is_not_a_canonical_literal_is_refused() {
        for l in [
            "",
            "\"",
            "abc",
            "\"a\\/b\"",
            "\"\\u000a\"",
            "\"\\u001F\"",
            "\"\\u0041\"",
            "\"\\x\"",
            "\"\\\"",
            "\"\\u00\"",
            "\"\\ud800\"",
        ] {
            assert_eq!(measure(l), None, "{l:?}");
        }
        assert_eq!(
            measure("\"\\u001f\\u000b\""),
            Some(Measured {
                len: 2,
                lines: Some(1)
            })
        );
    }
}
