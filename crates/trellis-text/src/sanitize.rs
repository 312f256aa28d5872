//! Text from outside (an agent, a plugin, a log) made safe to print on a terminal.
//!
//! Invariant: the result holds no control character but `\n` and `\t`: C0 controls
//! and DEL become caret notation (`^[`, `^G`, `^?`), C1 controls `<U+009B>`, a `\r` before a
//! `\n` is dropped. So no escape sequence an outsider wrote can set the title, the
//! clipboard, move the cursor or clear the screen; what it tried is still visible. The
//! bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the
//! direction marks (U+200E, U+200F, U+061C) and the invisible characters that hide or
//! join what a reader sees (U+200B, U+2060–U+2064, U+FEFF, U+180E, U+00AD) are made
//! visible the same way (`<U+202E>`): they reorder what follows them on the screen, or
//! are not shown at all, so text from outside could show one thing and say another.
//! The joiners that emoji and scripts are written with (U+200C, U+200D) stay.

use std::borrow::Cow;

fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi(c)
}

/// A character that reorders the text around it (embeddings, overrides, isolates, marks)
/// or is not shown (zero-width spaces, invisible operators, the soft hyphen).
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}'
            | '\u{200B}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{180E}'
            | '\u{00AD}'
    )
}

/// `text` with every control character but `\n` and `\t` made visible.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    push_sanitized(&mut out, text);
    Cow::Owned(out)
}

/// [`sanitize`], with tabs expanded to spaces up to the next stop of 8 (a terminal cell
/// buffer has no tabs: drawn as they are they would vanish while the layout counted them).
pub fn for_display(text: &str) -> Cow<'_, str> {
    let clean = sanitize(text);
    if !clean.contains('\t') {
        return clean;
    }
    let mut out = String::with_capacity(clean.len() + 16);
    for (i, line) in clean.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut col = 0usize;
        for g in unicode_segmentation::UnicodeSegmentation::graphemes(line, true) {
            if g == "\t" {
                let n = 8 - col % 8;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            } else {
                out.push_str(g);
                col += crate::width::display_width(g);
            }
        }
    }
    Cow::Owned(out)
}

/// `text` on one line: line breaks and tabs become spaces, other control characters are
/// made visible as by [`sanitize`] (titles, one-line cards).
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() || is_bidi(c)) {
        return Cow::Borrowed(text);
    }
    let spaced: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    Cow::Owned(sanitize(&spaced).into_owned())
}

/// `text` on one line with every run of whitespace (line breaks included) squeezed to one
/// space and none at either end, cut after `max` characters with `…` (exports, listings).
/// Control characters other than whitespace are left for the caller's [`sanitize`].
pub fn squeezed(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

fn push_sanitized(out: &mut String, text: &str) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\t' => out.push(c),
            '\x7f' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c if c.is_control() || is_bidi(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_visible() {
        let evil = "a\x1b]0;T\x07b\x1b]52;c;QQ==\x07c\x1b[2Jd\u{9b}31me\r\nf\rg\x7f";
        assert_eq!(
            sanitize(evil),
            "a^[]0;T^Gb^[]52;c;QQ==^Gc^[[2Jd<U+009B>31me\nf^Mg^?"
        );
        assert!(matches!(sanitize("plain\ttext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn tabs_are_expanded_for_display() {
        assert_eq!(for_display("a\tb\n\tc"), "a       b\n        c");
    }

    #[test]
    fn squeezed_is_one_line_and_cut_by_characters() {
        assert_eq!(squeezed("  a\n\tb   c ", 100), "a b c");
        assert_eq!(squeezed("ééé", 2), "éé…");
        assert_eq!(squeezed("abc", 3), "abc");
    }

    #[test]
    fn one_line_has_no_breaks() {
        assert_eq!(one_line("a\nb\r\n\tc\x1b[2J"), "a b   c^[[2J");
    }

    #[test]
    fn reordering_characters_are_shown_not_obeyed() {
        let hidden = "a\u{200F}b\u{061C}c\u{200B}d\u{FEFF}e\u{200D}f";
        assert_eq!(
            sanitize(hidden),
            "a<U+200F>b<U+061C>c<U+200B>d<U+FEFF>e\u{200D}f",
            "marks and invisibles shown; the emoji joiner kept"
        );
        let tricky = "agent\u{202E}txt.exe\u{2066}x\u{2069}";
        assert_eq!(sanitize(tricky), "agent<U+202E>txt.exe<U+2066>x<U+2069>");
        assert_eq!(one_line(tricky), "agent<U+202E>txt.exe<U+2066>x<U+2069>");
        // Right-to-left text itself is text.
        assert_eq!(sanitize("שלום"), "שלום");
    }
}
