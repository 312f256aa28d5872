//! Word wrapping of styled lines to a width in columns.

use ratatui_core::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

use crate::width::grapheme_width;

/// Wraps `line` to `width` columns: breaks after spaces when possible, inside a word when
/// a word is longer than the width. Styles are kept; an empty line stays one empty line.
pub fn wrap_line(line: &Line<'_>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut col = 0usize;
    // Position (span index, byte length) of the last space in `cur`, to break there.
    let mut last_space: Option<(usize, usize, usize)> = None; // (span, byte end, col after)
    for span in &line.spans {
        let style = span.style;
        for g in span.content.graphemes(true) {
            let w = grapheme_width(g);
            if col + w > width && col > 0 {
                match last_space {
                    Some((si, end, after)) if after > 0 => {
                        // Move what follows the space to the next line.
                        let mut tail: Vec<Span<'static>> = Vec::new();
                        let head_span = &mut cur[si];
                        let rest = head_span.content[end..].to_string();
                        head_span.content = head_span.content[..end].trim_end().to_string().into();
                        if !rest.is_empty() {
                            tail.push(Span::styled(rest, head_span.style));
                        }
                        tail.extend(cur.drain(si + 1..));
                        out.push(Line::from(std::mem::take(&mut cur)).style(line.style));
                        col = tail
                            .iter()
                            .map(|s| crate::width::display_width(&s.content))
                            .sum();
                        cur = tail;
                    }
                    _ => {
                        out.push(Line::from(std::mem::take(&mut cur)).style(line.style));
                        col = 0;
                    }
                }
                last_space = None;
                // What moved down with the word may still leave no room for this grapheme.
                if col + w > width && col > 0 {
                    out.push(Line::from(std::mem::take(&mut cur)).style(line.style));
                    col = 0;
                }
                if g == " " && col == 0 {
                    continue;
                }
            }
            match cur.last_mut() {
                Some(last) if last.style == style => last.content.to_mut().push_str(g),
                _ => cur.push(Span::styled(g.to_string(), style)),
            }
            col += w;
            if g == " " {
                let si = cur.len() - 1;
                last_space = Some((si, cur[si].content.len(), col));
            }
        }
    }
    out.push(Line::from(cur).style(line.style));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_inside_long_words() {
        let l = Line::from("the quick brown fox jumps");
        assert_eq!(
            text(&wrap_line(&l, 10)),
            vec!["the quick", "brown fox", "jumps"]
        );
        let l = Line::from("abcdefghijkl");
        assert_eq!(text(&wrap_line(&l, 5)), vec!["abcde", "fghij", "kl"]);
        let l = Line::from("日本語のテキスト");
        assert_eq!(
            text(&wrap_line(&l, 5)),
            vec!["日本", "語の", "テキ", "スト"]
        );
        assert_eq!(text(&wrap_line(&Line::from(""), 5)), vec![""]);
    }
}
