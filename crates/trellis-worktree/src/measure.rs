//! Read-only measurements of worktrees: what a worktree's work is against its base (as
//! git's `--stat` and `--numstat` count it), the difference between two, a patch of a
//! tree's changes. Nothing the user sees changes: snapshots go through a private index
//! and are referenced by nothing.

use std::path::Path;

use crate::git::Git;
use crate::record::Record;
use crate::state::{owned, snapshot};
use crate::{Error, Found};

/// What the worktree's work is against its base (see [`crate::plan::base`]) — committed,
/// uncommitted and untracked —
/// as git's `--stat` (`a.txt | 2 +-` lines and the summary), for the user to see before
/// an ending acts on it. Read-only.
pub fn stat(found: &Found) -> Result<String, Error> {
    let record = owned(found)?;
    let (snap, _) = snapshot(&record.path, &record.label)?;
    let base = crate::plan::base(&record, &snap);
    let out = Git::at(&record.path)
        .args(["diff", "--stat=100", "--no-ext-diff", "--no-color"])
        .args([&base, &snap])
        .output()?;
    Ok(String::from_utf8_lossy(&out).trim_end().to_string())
}

/// What a worktree's work is against its base: the sums of `git diff --numstat` from its
/// base to its whole state (committed, uncommitted and untracked files; not ignored ones).
/// A binary file counts as a file with no lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStat {
    pub added: u64,
    pub removed: u64,
    pub files: usize,
}

/// The worktree's [`DiffStat`], measured now. Nothing the user sees changes: the
/// snapshot goes through a private index and is referenced by nothing.
pub fn diffstat(record: &Record) -> Result<DiffStat, Error> {
    let (snap, _) = snapshot(&record.path, &record.label)?;
    let base = crate::plan::base(record, &snap);
    let out = Git::at(&record.path)
        .args(["diff", "--numstat", "-z", "--no-renames", "--no-ext-diff"])
        .args([&base, &snap])
        .output()?;
    Ok(numstat(&out))
}

/// Sums `git diff --numstat -z` output (`added\tremoved\tpath\0` per file, `-` for a
/// binary file's counts).
fn numstat(out: &[u8]) -> DiffStat {
    let mut stat = DiffStat::default();
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let text = String::from_utf8_lossy(entry);
        let mut parts = text.split('\t');
        let mut n = || {
            parts
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        stat.added += n();
        stat.removed += n();
        stat.files += 1;
    }
    stat
}

/// The difference between two worktrees of one repository, each as its whole state
/// (committed or not): a unified diff, `a` to `b`.
pub fn compare(a: &Found, b: &Found) -> Result<String, Error> {
    let ra = owned(a)?;
    let rb = owned(b)?;
    if ra.source != rb.source {
        return Err(Error::Refused(format!(
            "{} and {} are worktrees of different repositories",
            ra.label, rb.label
        )));
    }
    let (sa, _) = snapshot(&ra.path, &ra.label)?;
    let (sb, _) = snapshot(&rb.path, &rb.label)?;
    let out = Git::at(&ra.source)
        .args(["diff", "--no-ext-diff", "--stat", "--patch", &sa, &sb])
        .output()?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What changed in the work tree at `dir` since commit `base` — committed or not, new
/// files included (through a snapshot on a private index; the tree, its index and its
/// branch are left as they are) — as a patch `git apply` takes.
pub fn patch_since(dir: &Path, base: &str) -> Result<String, Error> {
    let (snap, _) = snapshot(dir, "run")?;
    let out = Git::at(dir)
        .args(["diff", "--binary", "--no-ext-diff", base, &snap])
        .output()?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The commit `dir`'s work tree is at, when it is in a repository with one.
pub fn head_of(dir: &Path) -> Option<String> {
    Git::at(dir)
        .args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .line()
        .ok()
        .filter(|h| !h.is_empty())
}
