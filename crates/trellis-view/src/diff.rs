//! Unified diffs of `oldText`/`newText`, computed on first view (LCS over lines).

use ratatui_core::text::Line;

use crate::theme::Theme;

/// Lines of a unified diff (no hunk headers: whole files are small in agent edits; large
/// ones are shown with 3 lines of context around changes).
pub fn unified(old: &str, new: &str, theme: &Theme) -> Vec<Line<'static>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = diff_ops(&a, &b);
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

fn diff_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    // LCS table; agent edits are small. Beyond ~4M cells fall back to delete-all/add-all.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return a
            .iter()
            .map(|l| Op::Del(l))
            .chain(b.iter().map(|l| Op::Add(l)))
            .collect();
    }
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if t[i + 1][j] >= t[i][j + 1] {
            ops.push(Op::Del(a[i]));
            i += 1;
        } else {
            ops.push(Op::Add(b[j]));
            j += 1;
        }
    }
    ops.extend(a[i..].iter().map(|l| Op::Del(l)));
    ops.extend(b[j..].iter().map(|l| Op::Add(l)));
    ops
}
