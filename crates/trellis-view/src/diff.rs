//! Diffs of `oldText`/`newText` as styled lines, with line numbers: unified on narrow
//! screens, side by side (old left, new right) when there is room for two columns of
//! code. The diff itself comes from `trellis_core::diff` (`similar`); the UI caches what
//! it draws per call revision and width.

use ratatui_core::text::{Line, Span};
use trellis_core::diff::{Op, ops as diff_ops};

use crate::theme::Theme;

/// Lines of context kept around changes; longer unchanged runs are folded to `⋯`.
const CONTEXT: usize = 3;

/// The narrowest width drawn side by side (two columns of about 48).
pub const SIDE_BY_SIDE_MIN: usize = 100;

/// One row to draw: a line of the old side, of the new side, or of both.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Row<'a> {
    Same(usize, usize, &'a str),
    Del(usize, &'a str),
    Add(usize, &'a str),
    /// A deleted line beside the added line that replaced it (side by side only).
    Changed((usize, &'a str), (usize, &'a str)),
    Fold,
}

/// The rows of the diff, numbered, with unchanged runs beyond [`CONTEXT`] folded.
fn rows<'a>(ops: &[Op<'a>]) -> (Vec<Row<'a>>, usize) {
    let shown = trellis_core::diff::near_changes(ops, CONTEXT);
    let (mut a, mut b) = (0usize, 0usize);
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let row = match op {
            Op::Same(l) => {
                a += 1;
                b += 1;
                Row::Same(a, b, l)
            }
            Op::Del(l) => {
                a += 1;
                Row::Del(a, l)
            }
            Op::Add(l) => {
                b += 1;
                Row::Add(b, l)
            }
        };
        if shown[i] {
            out.push(row);
        } else if out.last() != Some(&Row::Fold) {
            out.push(Row::Fold);
        }
    }
    (out, a.max(b))
}

/// The diff in `width` columns: side by side from [`SIDE_BY_SIDE_MIN`], else unified.
pub fn render(old: &str, new: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let ops = diff_ops(old, new);
    let (rows, last) = rows(&ops);
    let num_w = last.max(1).to_string().len();
    if width >= SIDE_BY_SIDE_MIN {
        side_by_side(&rows, num_w, width, theme)
    } else {
        unified_rows(&rows, num_w, theme)
    }
}

/// The unified form: `old new ± text`.
pub fn unified(old: &str, new: &str, theme: &Theme) -> Vec<Line<'static>> {
    render(old, new, 0, theme)
}

fn unified_rows(rows: &[Row<'_>], w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let blank = " ".repeat(w);
    rows.iter()
        .map(|r| match *r {
            Row::Same(a, b, l) => Line::from(vec![
                Span::styled(format!("{a:>w$} {b:>w$} "), theme.dim),
                Span::styled(format!("  {l}"), theme.dim),
            ]),
            Row::Del(a, l) => Line::from(vec![
                Span::styled(format!("{a:>w$} {blank} "), theme.dim),
                Span::styled(format!("- {l}"), theme.failed),
            ]),
            Row::Add(b, l) => Line::from(vec![
                Span::styled(format!("{blank} {b:>w$} "), theme.dim),
                Span::styled(format!("+ {l}"), theme.ok),
            ]),
            Row::Changed(..) | Row::Fold => Line::styled(format!("{blank} {blank}   ⋯"), theme.dim),
        })
        .collect()
}

/// Old on the left, new on the right; a run of deletions followed by additions is
/// paired line by line, so a changed line sits beside its replacement.
fn side_by_side(rows: &[Row<'_>], w: usize, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    // Pair deletions with the additions that follow them.
    let mut paired: Vec<Row<'_>> = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        if let Row::Del(..) = rows[i] {
            let dels: Vec<(usize, &str)> = rows[i..]
                .iter()
                .map_while(|r| match *r {
                    Row::Del(a, l) => Some((a, l)),
                    _ => None,
                })
                .collect();
            let j = i + dels.len();
            let adds: Vec<(usize, &str)> = rows[j..]
                .iter()
                .map_while(|r| match *r {
                    Row::Add(b, l) => Some((b, l)),
                    _ => None,
                })
                .collect();
            for k in 0..dels.len().max(adds.len()) {
                paired.push(match (dels.get(k), adds.get(k)) {
                    (Some(&d), Some(&a)) => Row::Changed(d, a),
                    (Some(&(n, l)), None) => Row::Del(n, l),
                    (None, Some(&(n, l))) => Row::Add(n, l),
                    (None, None) => Row::Fold,
                });
            }
            i = j + adds.len();
        } else {
            paired.push(rows[i]);
            i += 1;
        }
    }
    // Each half: `num ± text`, the text clipped to the half's width.
    let half = (width.saturating_sub(3)) / 2;
    let text_w = half.saturating_sub(w + 3);
    let cell = |side: Option<(usize, &str)>, sign: &str, style| -> Vec<Span<'static>> {
        match side {
            Some((n, l)) => {
                let t = trellis_text::clip(&l.replace('\t', "    "), text_w).into_owned();
                let pad = text_w.saturating_sub(trellis_text::display_width(&t));
                vec![
                    Span::styled(format!("{n:>w$} "), theme.dim),
                    Span::styled(format!("{sign} {t}{}", " ".repeat(pad)), style),
                ]
            }
            None => vec![Span::raw(" ".repeat(half))],
        }
    };
    paired
        .iter()
        .map(|r| {
            let (left, right) = match *r {
                Row::Same(a, b, l) => (
                    cell(Some((a, l)), " ", theme.dim),
                    cell(Some((b, l)), " ", theme.dim),
                ),
                Row::Del(a, l) => (
                    cell(Some((a, l)), "-", theme.failed),
                    cell(None, "", theme.dim),
                ),
                Row::Add(b, l) => (cell(None, "", theme.dim), cell(Some((b, l)), "+", theme.ok)),
                Row::Changed(d, a) => (
                    cell(Some(d), "-", theme.failed),
                    cell(Some(a), "+", theme.ok),
                ),
                Row::Fold => {
                    return Line::styled(format!("{:>w$}   ⋯", ""), theme.dim);
                }
            };
            let mut spans = left;
            spans.push(Span::styled(" │ ", theme.dim));
            spans.extend(right);
            Line::from(spans)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn unified_lines_carry_both_numbers() {
        let t = Theme::plain();
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\nd\n";
        assert_eq!(
            text(&render(old, new, 80, &t)),
            "1 1   a\n2   - b\n  2 + B\n3 3   c\n  4 + d"
        );
    }

    #[test]
    fn side_by_side_pairs_a_changed_line_with_its_replacement() {
        let t = Theme::plain();
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\nd\n";
        let out = text(&render(old, new, 100, &t));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(
            lines[1].starts_with("2 - b") && lines[1].contains("│ 2 + B"),
            "{out}"
        );
        assert!(lines[3].contains("│ 4 + d"), "{out}");
        // Every line fits the width.
        assert!(render(old, new, 100, &t).iter().all(|l| l.width() <= 100));
    }

    #[test]
    fn long_unchanged_runs_fold_and_numbers_keep_counting() {
        let t = Theme::plain();
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l15\n", "L15\n");
        let out = text(&render(&old, &new, 80, &t));
        assert!(out.starts_with("        ⋯\n12 12   l12"), "{out}");
        assert!(out.contains("15    - l15\n   15 + L15"), "{out}");
        assert!(out.ends_with("18 18   l18\n        ⋯"), "{out}");
    }
}
