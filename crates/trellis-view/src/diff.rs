//! Unified diffs of `oldText`/`newText` as styled lines (the diff itself comes from
//! `trellis_core::diff`; the UI caches what it draws per call revision and width).

use ratatui_core::text::Line;
use trellis_core::diff::{Op, ops as diff_ops};

use crate::theme::Theme;

/// Lines of a unified diff (no hunk headers: whole files are small in agent edits; large
/// ones are shown with 3 lines of context around changes).
pub fn unified(old: &str, new: &str, theme: &Theme) -> Vec<Line<'static>> {
    let ops = diff_ops(old, new);
    let mut out = Vec::new();
    let context = 3;
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let near = |i: usize| changed.iter().any(|&c| c.abs_diff(i) <= context);
    let mut skipped = false;
    for (i, op) in ops.iter().enumerate() {
        if !near(i) {
            if !skipped {
                out.push(Line::styled("  ⋯", theme.dim));
                skipped = true;
            }
            continue;
        }
        skipped = false;
        out.push(match op {
            Op::Same(l) => Line::styled(format!("  {l}"), theme.dim),
            Op::Del(l) => Line::styled(format!("- {l}"), theme.failed),
            Op::Add(l) => Line::styled(format!("+ {l}"), theme.ok),
        });
    }
    out
}
