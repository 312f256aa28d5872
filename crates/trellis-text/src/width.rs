//! Column width of terminal text.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns between tab stops.
pub const TAB_STOP: usize = 8;

/// One piece of terminal text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// An escape sequence (zero columns), verbatim.
    Escape(&'a str),
    /// A tab.
    Tab,
    /// A grapheme cluster and its width (0 for other control characters).
    Grapheme(&'a str, usize),
}

/// Length in bytes of the escape sequence at the start of `s` (which starts with ESC).
pub fn escape_len(s: &str) -> usize {
    let b = s.as_bytes();
    match b.get(1) {
        // CSI: parameters and intermediates, then one final byte 0x40..=0x7E.
        Some(b'[') => {
            let mut i = 2;
            while i < b.len() {
                if (0x40..=0x7e).contains(&b[i]) {
                    return i + 1;
                }
                i += 1;
            }
            b.len()
        }
        // OSC (and DCS/APC/PM/SOS): up to BEL or ST (ESC \).
        Some(b']' | b'P' | b'_' | b'^' | b'X') => {
            let mut i = 2;
            while i < b.len() {
                if b[i] == 0x07 {
                    return i + 1;
                }
                if b[i] == 0x1b && b.get(i + 1) == Some(&b'\\') {
                    return i + 2;
                }
                i += 1;
            }
            b.len()
        }
        // Two-byte escape (ESC + one char).
        Some(_) => 1 + s[1..].chars().next().map(char::len_utf8).unwrap_or(0),
        None => 1,
    }
}

/// Width of one grapheme cluster: combining sequences count once, emoji sequences (ZWJ,
/// variation selectors) as one wide glyph.
pub fn grapheme_width(g: &str) -> usize {
    let mut chars = g.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_control() => 0,
        (Some(_), None) => g.width(),
        (Some(first), Some(_)) => {
            if first.is_control() {
                return 0;
            }
            if g.contains('\u{fe0f}') {
                // Emoji presentation widens an emoji base; an ASCII base stays narrow
                // unless it is a keycap (`1️⃣`).
                if first.is_ascii() && !g.contains('\u{20e3}') {
                    unicode_width::UnicodeWidthChar::width(first).unwrap_or(0)
                } else {
                    2
                }
            } else {
                g.width().min(2)
            }
        }
        (None, _) => 0,
    }
}

/// Splits terminal text into escapes, tabs and graphemes.
pub fn pieces(s: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.starts_with('\x1b') {
            let n = escape_len(rest).min(rest.len());
            let (esc, r) = rest.split_at(n);
            rest = r;
            return Some(Piece::Escape(esc));
        }
        if rest.starts_with('\t') {
            rest = &rest[1..];
            return Some(Piece::Tab);
        }
        let g = rest.graphemes(true).next().unwrap_or(rest);
        // A grapheme never swallows a following escape (ESC is a control character).
        rest = &rest[g.len()..];
        Some(Piece::Grapheme(g, grapheme_width(g)))
    })
}

/// Columns `s` takes when drawn from column 0 (tabs to the next stop).
pub fn display_width(s: &str) -> usize {
    if s.is_ascii() && !s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return s.len();
    }
    let mut col = 0;
    for p in pieces(s) {
        col = advance(col, p);
    }
    col
}

/// The column after drawing `p` at `col`.
pub fn advance(col: usize, p: Piece<'_>) -> usize {
    match p {
        Piece::Escape(_) => col,
        Piece::Tab => (col / TAB_STOP + 1) * TAB_STOP,
        Piece::Grapheme(_, w) => col + w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(display_width("hello"), 5);
        assert_eq!(display_width("日本語"), 6);
        assert_eq!(display_width("[\u{fe0f}"), 1);
        assert_eq!(display_width("1\u{fe0f}\u{20e3}"), 2);
        assert_eq!(display_width("\u{2764}\u{fe0f}"), 2);
        assert_eq!(display_width("e\u{301}"), 1, "combining accent");
        assert_eq!(
            display_width("👨\u{200d}👩\u{200d}👧"),
            2,
            "ZWJ family is one glyph"
        );
        assert_eq!(display_width("❤\u{fe0f}"), 2, "emoji presentation");
        assert_eq!(display_width("a\tb"), 9);
        assert_eq!(display_width("abcdefgh\tb"), 17);
        assert_eq!(display_width("\x1b[31mred\x1b[0m"), 3);
        assert_eq!(
            display_width("\x1b]8;;https://x.y\x1b\\link\x1b]8;;\x1b\\"),
            4
        );
        assert_eq!(display_width("\x1b]8;;https://x.y\x07link\x1b]8;;\x07"), 4);
        assert_eq!(display_width("a\rb"), 2);
    }
}
