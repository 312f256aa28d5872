//! The one check every ending makes before git writes into a work tree: which files there
//! the change would replace although no commit has them (untracked or ignored files, and
//! untracked files standing where the change puts a directory). An ending that would
//! replace any refuses and names them; nothing is written.
//!
//! Git's own checks stop a merge that would overwrite *untracked* files, but a merge (a
//! fast-forward included) overwrites *ignored* ones silently unless told not to: a `.env`
//! ignored in the source and committed in a worktree would replace the user's secret.
//! Endings also pass `--no-overwrite-ignore` to git, so the rule holds even for a file
//! that appears between this check and the merge.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::git::Git;

/// How many names a refusal lists before it says how many more there are.
pub(crate) const LISTED: usize = 20;

/// A file in the tree that a change would replace, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endangered {
    /// Relative to the tree's top.
    pub path: PathBuf,
    /// `ignored`, `untracked`, or what stands where a directory would go.
    pub what: &'static str,
}

/// The paths a change from commit `from` to commit `to` writes (added or modified; not
/// deleted, not submodules), relative to the repository's top. `merge`: the change is a
/// merge of `to` into `from` (what `to` brought since their merge base).
fn written(tree: &Path, from: &str, to: &str, merge: bool) -> Result<Vec<PathBuf>, Error> {
    let range = if merge {
        format!("{from}...{to}")
    } else {
        format!("{from}..{to}")
    };
    let out = Git::at(tree)
        .args([
            "diff",
            "--raw",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            &range,
        ])
        .output()?;
    // `:oldmode newmode oldsha newsha STATUS\0path\0`, one entry per path.
    let mut fields = out.split(|&b| b == 0);
    let mut paths = Vec::new();
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let Some(path) = fields.next() else { break };
        let meta = String::from_utf8_lossy(meta);
        let mut parts = meta.trim_start_matches(':').split(' ');
        let new_mode = parts.nth(1).unwrap_or("");
        let status = parts.nth(2).unwrap_or("");
        if status.starts_with('D') || new_mode == "160000" {
            continue;
        }
        paths.push(PathBuf::from(OsStr::from_bytes(path)));
    }
    Ok(paths)
}

/// Every path git tracks in the tree's index.
fn tracked(tree: &Path) -> Result<HashSet<PathBuf>, Error> {
    Ok(Git::at(tree)
        .args(["ls-files", "-z", "--full-name"])
        .paths()?
        .into_iter()
        .collect())
}

/// Whether git ignores `rel` in the tree.
fn ignored(tree: &Path, rel: &Path) -> bool {
    Git::at(tree)
        .args(["check-ignore", "-q", "--no-index", "--"])
        .arg(rel)
        .ok()
        .unwrap_or(false)
}

/// The files of the work tree at `tree` (its top) that moving it from `from` to `to` would
/// replace although no commit has them. `merge`: the move is a merge of `to` (see
/// [`written`]). Links are never followed: a link is itself what would be replaced.
pub fn endangered(
    tree: &Path,
    from: &str,
    to: &str,
    merge: bool,
) -> Result<Vec<Endangered>, Error> {
    let paths = written(tree, from, to, merge)?;
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let index = tracked(tree)?;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for rel in &paths {
        // Each directory on the way: a file or a link there would give way to a directory.
        let mut dir = PathBuf::new();
        let parts: Vec<_> = rel.components().collect();
        for (i, c) in parts.iter().enumerate() {
            dir.push(c);
            let last = i + 1 == parts.len();
            if !seen.insert(dir.clone()) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(tree.join(&dir)) else {
                break;
            };
            if !last && meta.is_dir() {
                continue;
            }
            if index.contains(&dir) {
                // Tracked: git refuses by itself to overwrite local changes to it.
                break;
            }
            let what = if !last {
                "a file where a directory would go"
            } else if meta.is_dir() {
                "a directory where a file would go"
            } else if ignored(tree, &dir) {
                "ignored"
            } else {
                "untracked"
            };
            out.push(Endangered {
                path: dir.clone(),
                what,
            });
            break;
        }
    }
    Ok(out)
}

/// The refusal for `found` (non-empty): every name (the first [`LISTED`]), and what to do.
pub fn refusal(action: &str, tree: &Path, found: &[Endangered], then: &str) -> Error {
    let mut names: Vec<String> = found
        .iter()
        .take(LISTED)
        .map(|e| format!("{} ({})", e.path.display(), e.what))
        .collect();
    if found.len() > LISTED {
        names.push(format!("and {} more", found.len() - LISTED));
    }
    Error::Refused(format!(
        "{action} would replace files in {} that no commit has: {}. Nothing was changed: move them aside (or commit them) and {then}",
        tree.display(),
        names.join(", ")
    ))
}
