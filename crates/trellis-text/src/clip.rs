//! Clipping terminal text to a number of columns without breaking the layout.

use std::borrow::Cow;

use crate::width::{Piece, TAB_STOP, display_width, pieces};

/// What an escape sequence does to the state a cut must close.
fn track(esc: &str, sgr_open: &mut bool, link_open: &mut bool) {
    if let Some(params) = esc.strip_prefix("\x1b[").and_then(|r| r.strip_suffix('m')) {
        // SGR: a reset (empty or 0) closes, anything else opens.
        *sgr_open = !(params.is_empty() || params.split(';').all(|p| p.is_empty() || p == "0"));
    } else if let Some(body) = esc.strip_prefix("\x1b]8;") {
        // OSC 8: `ESC ] 8 ; params ; URI ST`; an empty URI ends the link.
        let body = body.trim_end_matches('\x07').trim_end_matches("\x1b\\");
        let uri = body.split_once(';').map(|(_, u)| u).unwrap_or("");
        *link_open = !uri.is_empty();
    }
}

/// A line made of styled pieces (spans of any type), cut to `room` columns as a whole:
/// pieces that fit are returned as they are (byte-identical); the first that does not is
/// cut with [`clip`] (closing any SGR style or OSC 8 link it leaves open) and rebuilt with
/// `with_text`; the rest is dropped.
pub fn clip_pieces<T>(
    pieces: impl IntoIterator<Item = T>,
    room: usize,
    text: impl Fn(&T) -> &str,
    with_text: impl Fn(T, String) -> T,
) -> Vec<T> {
    let mut left = room;
    let mut out = Vec::new();
    for p in pieces {
        if left == 0 {
            break;
        }
        let w = display_width(text(&p));
        if w <= left {
            left -= w;
            out.push(p);
        } else {
            let cut = clip(text(&p), left).into_owned();
            out.push(with_text(p, cut));
            left = 0;
        }
    }
    out
}

/// `s` cut to at most `max` columns. Returns `s` itself (byte-identical) when it fits;
/// otherwise the longest prefix that fits with `…`, tabs expanded to spaces, and any open
/// SGR style or OSC 8 hyperlink closed.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if display_width(s) <= max {
        return Cow::Borrowed(s);
    }
    let budget = max.saturating_sub(1); // room for the ellipsis
    let mut out = String::with_capacity(s.len().min(max * 4 + 16));
    let (mut col, mut sgr_open, mut link_open) = (0usize, false, false);
    for p in pieces(s) {
        match p {
            Piece::Escape(esc) => {
                out.push_str(esc);
                track(esc, &mut sgr_open, &mut link_open);
            }
            Piece::Tab => {
                let next = (col / TAB_STOP + 1) * TAB_STOP;
                let to = next.min(budget);
                out.extend(std::iter::repeat_n(' ', to.saturating_sub(col)));
                col = to;
                if next > budget {
                    break;
                }
            }
            Piece::Grapheme(g, w) => {
                if col + w > budget {
                    break;
                }
                out.push_str(g);
                col += w;
            }
        }
    }
    if max > 0 {
        out.push('…');
    }
    if link_open {
        out.push_str("\x1b]8;;\x1b\\");
    }
    if sgr_open {
        out.push_str("\x1b[0m");
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_text_is_returned_unchanged() {
        for s in [
            "plain",
            "日本",
            "\x1b[1mbold\x1b[0m",
            "a\tb",
            "\x1b]8;;u\x1b\\l\x1b]8;;\x1b\\",
        ] {
            assert!(matches!(clip(s, 20), Cow::Borrowed(b) if b == s));
        }
    }

    #[test]
    fn cuts_wide_chars_emoji_tabs_and_closes_styles() {
        assert_eq!(clip("日本語テキスト", 6), "日本…");
        assert_eq!(
            display_width(&clip("日本語テキスト", 6)),
            5,
            "a wide char never straddles the edge"
        );
        assert_eq!(clip("ab👨\u{200d}👩\u{200d}👧cd", 4), "ab…");
        assert_eq!(clip("a\tbcdefghijk", 6), "a    …");
        assert_eq!(clip("\x1b[31mredredred", 4), "\x1b[31mred…\x1b[0m");
        assert_eq!(clip("\x1b[31mr\x1b[0mplain text", 4), "\x1b[31mr\x1b[0mpl…");
        assert_eq!(
            clip("\x1b]8;;https://a.b\x1b\\a long link", 5),
            "\x1b]8;;https://a.b\x1b\\a lo…\x1b]8;;\x1b\\"
        );
        assert_eq!(clip("anything", 0), "");
    }

    proptest::proptest! {
        #[test]
        fn clipped_text_fits(s in "[a-z日本\\t👍 ]{0,40}", max in 0usize..30) {
            let c = clip(&s, max);
            proptest::prop_assert!(display_width(&c) <= max);
        }
    }
}
