//! Line diffs of `oldText`/`newText`, on `similar` (Myers, linear memory): the one place
//! both the cards' `+N −M` and the Diff views come from.
//!
//! Invariant: cost is bounded whatever an agent sends. The common head and tail are cut
//! first (an edit of a large file diffs only the changed region); when what remains is more
//! than [`MAX_LINES`] lines on the two sides together, it is diffed by position (a line is
//! kept when it equals the line at the same place) instead of by Myers, whose worst case
//! grows with the square of the lines.

use similar::{Algorithm, DiffTag, capture_diff_slices};

/// Changed-region lines (both sides) beyond which the diff is positional.
pub const MAX_LINES: usize = 4_000;

/// One line of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// The lines of `old` and `new` (without their line ends) as a diff.
pub fn ops<'a>(old: &'a str, new: &'a str) -> Vec<Op<'a>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let (head, tail) = common_ends(&a, &b);
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<Op<'a>> = Vec::with_capacity(a.len().max(b.len()));
    out.extend(a[..head].iter().map(|l| Op::Same(l)));
    if mid_a.len() + mid_b.len() > MAX_LINES {
        out.extend(positional(mid_a, mid_b));
    } else {
        for op in capture_diff_slices(Algorithm::Myers, mid_a, mid_b) {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => out.extend(mid_a[old_range].iter().map(|l| Op::Same(l))),
                DiffTag::Delete => out.extend(mid_a[old_range].iter().map(|l| Op::Del(l))),
                DiffTag::Insert => out.extend(mid_b[new_range].iter().map(|l| Op::Add(l))),
                DiffTag::Replace => {
                    out.extend(mid_a[old_range].iter().map(|l| Op::Del(l)));
                    out.extend(mid_b[new_range].iter().map(|l| Op::Add(l)));
                }
            }
        }
    }
    out.extend(a[a.len() - tail..].iter().map(|l| Op::Same(l)));
    out
}

/// A unified diff of `old` → `new` for `path` (3 lines of context; hunks numbered from the
/// texts' first lines: for a fragment, the fragment's lines). Empty when they are equal.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    let ops = ops(old, new);
    if ops.iter().all(|o| matches!(o, Op::Same(_))) {
        return String::new();
    }
    let keep = near_changes(&ops, 3);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let (mut o, mut n) = (1usize, 1usize);
    let mut i = 0;
    while i < ops.len() {
        if !keep[i] {
            match ops[i] {
                Op::Same(_) => {
                    o += 1;
                    n += 1;
                }
                Op::Del(_) => o += 1,
                Op::Add(_) => n += 1,
            }
            i += 1;
            continue;
        }
        let (o0, n0) = (o, n);
        let mut body = String::new();
        while i < ops.len() && keep[i] {
            match ops[i] {
                Op::Same(l) => {
                    body.push_str(&format!(" {l}\n"));
                    o += 1;
                    n += 1;
                }
                Op::Del(l) => {
                    body.push_str(&format!("-{l}\n"));
                    o += 1;
                }
                Op::Add(l) => {
                    body.push_str(&format!("+{l}\n"));
                    n += 1;
                }
            }
            i += 1;
        }
        out.push_str(&format!("@@ -{o0},{} +{n0},{} @@\n{body}", o - o0, n - n0));
    }
    out
}

/// Which lines of a diff to show when unchanged runs are folded: those within
/// `context` lines of a change (the views and the exports fold the same way).
pub fn near_changes(ops: &[Op<'_>], context: usize) -> Vec<bool> {
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(_)))
        .map(|(i, _)| i)
        .collect();
    (0..ops.len())
        .map(|i| {
            // `changed` is sorted: the nearest change is at the insertion point or before.
            let at = changed.partition_point(|&c| c < i);
            [at.checked_sub(1), Some(at)]
                .into_iter()
                .flatten()
                .filter_map(|k| changed.get(k))
                .any(|&c| c.abs_diff(i) <= context)
        })
        .collect()
}

/// Lines `a` and `b` share at their start and (after that) at their end.
pub fn common_ends(a: &[&str], b: &[&str]) -> (usize, usize) {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (head, tail)
}

fn positional<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    for i in 0..a.len().max(b.len()) {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) if x == y => out.push(Op::Same(x)),
            (x, y) => {
                out.extend(x.map(|l| Op::Del(l)));
                out.extend(y.map(|l| Op::Add(l)));
            }
        }
    }
    out
}

/// Lines added and removed between `old` and `new`.
pub fn lines_changed(old: &str, new: &str) -> (usize, usize) {
    ops(old, new).iter().fold((0, 0), |(a, d), op| match op {
        Op::Add(_) => (a + 1, d),
        Op::Del(_) => (a, d + 1),
        Op::Same(_) => (a, d),
    })
}

#[cfg(test)]
mod unified_tests {
    #[test]
    fn a_unified_diff_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        assert_eq!(
            super::unified("x.txt", old, new),
            "--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        assert_eq!(super::unified("x", "same\n", "same\n"), "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ops() {
        assert_eq!(lines_changed("a\nb\nc\n", "a\nB\nc\nd\n"), (2, 1));
        assert_eq!(
            ops("a\nb\n", "a\nc\n"),
            vec![Op::Same("a"), Op::Del("b"), Op::Add("c")]
        );
        assert_eq!(lines_changed("", "x\ny"), (2, 0));
    }

    #[test]
    fn huge_inputs_stay_linear() {
        let a: String = (0..30_000).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..30_000).map(|i| format!("b{i}\n")).collect();
        assert_eq!(lines_changed(&a, &b), (30_000, 30_000));
        // A small edit in a large file is still an exact diff.
        let mut c = a.clone();
        c.insert_str(a.find("a15000\n").unwrap(), "inserted\n");
        assert_eq!(lines_changed(&a, &c), (1, 0));
    }
}
