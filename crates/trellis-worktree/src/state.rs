//! What an ending reads before it acts, and nothing it changes: the record checked to be
//! Trellis's, the tree's whole state as a snapshot commit (through a private index), the
//! branch the source has out, the ignored files a removal would take. Below both the
//! checks that ask first (`plan`) and the endings that act (`end`).

use std::path::{Path, PathBuf};

use crate::git::Git;
use crate::record::Record;
use crate::{Error, Found, Status, status};

/// The record as it is on disk now, and its tree checked to be Trellis's.
pub(crate) fn owned(found: &Found) -> Result<Record, Error> {
    let record = Record::read(&found.file).map_err(Error::Io)?;
    match status(&record) {
        Status::Owned => Ok(record),
        Status::Ended => Err(Error::Refused(format!(
            "worktree {} has ended already ({})",
            record.label,
            record.stage.word()
        ))),
        Status::Incomplete => Err(Error::Refused(format!(
            "worktree {} was never finished; Trellis leaves {} alone",
            record.label,
            record.path.display()
        ))),
        Status::Missing(why) => Err(Error::Refused(format!(
            "worktree {} is gone: {why}; its branch {} is kept (`trellis worktree discard {}` forgets it)",
            record.label, record.branch, record.label
        ))),
        Status::Foreign(why) => Err(Error::Refused(format!(
            "{} is not the worktree Trellis made ({why}); Trellis will not touch it",
            record.path.display()
        ))),
    }
}

/// The whole state of `tree` (tracked changes, untracked files; not ignored ones) as a
/// commit on top of its HEAD, made through a private index: the tree, its index and its
/// branch are left as they are. Returns the commit and whether it differs from HEAD.
pub fn snapshot(tree: &Path, label: &str) -> Result<(String, bool), Error> {
    snapshot_with(tree, label, &[])
}

/// [`snapshot`], with the ignored files `ignored` (relative to the tree) in it too.
pub(crate) fn snapshot_with(
    tree: &Path,
    label: &str,
    ignored: &[std::path::PathBuf],
) -> Result<(String, bool), Error> {
    let head = Git::at(tree)
        .args(["rev-parse", "--verify", "HEAD^{commit}"])
        .line()?;
    let dir = tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let index = dir.path().join("index");
    let with_index = |g: Git| g.env("GIT_INDEX_FILE", &index);
    with_index(Git::at(tree).args(["read-tree", &head])).output()?;
    with_index(Git::at(tree).args(["add", "-A", "--", "."])).output()?;
    crate::ignored::add(tree, &index, ignored, dir.path())?;
    let written = with_index(Git::at(tree).arg("write-tree")).line()?;
    let head_tree = Git::at(tree)
        .args(["rev-parse", &format!("{head}^{{tree}}")])
        .line()?;
    if written == head_tree {
        return Ok((head, false));
    }
    let commit = Git::at(tree)
        .env("GIT_AUTHOR_NAME", "Trellis")
        .env("GIT_AUTHOR_EMAIL", "trellis@localhost")
        .env("GIT_COMMITTER_NAME", "Trellis")
        .env("GIT_COMMITTER_EMAIL", "trellis@localhost")
        .args(["commit-tree", &written, "-p", &head, "-m"])
        .arg(format!("trellis: snapshot of worktree {label}"))
        .line()?;
    Ok((commit, true))
}

/// The branch the source has checked out.
pub(crate) fn source_branch(source: &Path) -> Result<String, Error> {
    Git::at(source)
        .args(["symbolic-ref", "-q", "--short", "HEAD"])
        .line()
        .map_err(|_| {
            Error::Refused(format!(
                "{} is on a detached HEAD: check out the branch to land on first",
                source.display()
            ))
        })
}

/// The tree's ignored files surveyed before it is removed: over the bound, or with a
/// repository of its own inside ([`nested_repos`]), the removal is refused (`action`
/// names the ending). `before`: nothing was changed yet (else the ending did something
/// already, and says what).
pub(crate) fn survey(
    record: &Record,
    action: &str,
    before: bool,
) -> Result<crate::ignored::Ignored, Error> {
    let unchanged = if before { "; nothing was changed" } else { "" };
    let nested = nested_repos(&record.path)?;
    if !nested.is_empty() {
        return Err(Error::Refused(format!(
            "{action} would remove {}, but it holds {}: no commit of this repository has their history or their uncommitted work{unchanged} (move them out of the worktree, or keep it: trellis worktree keep {})",
            record.path.display(),
            repos_said(&nested),
            record.label
        )));
    }
    let s = crate::ignored::survey(&record.path, &record.source)?;
    match &s.too_much {
        Some(why) => Err(Error::Refused(format!(
            "{action} would remove {}, but {why}{unchanged}",
            record.path.display()
        ))),
        None => Ok(s),
    }
}

/// Whether `dir` is the top of a repository of its own (its `.git`, a directory or a
/// file, never followed).
fn is_repo(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".git")).is_ok()
}

/// Repositories of their own among the files git does not track in `tree`, ignored ones
/// too with `ignored`: git lists such files one by one, and a repository as the one entry
/// that ends with `/` (it does not look inside), however deep it is — inside an ignored
/// directory or a cache too.
fn repos_among_others(tree: &Path, ignored: bool) -> Result<Vec<PathBuf>, Error> {
    use std::os::unix::ffi::OsStrExt;
    let mut g = Git::at(tree).args(["ls-files", "-z", "--others", "--exclude-standard"]);
    if ignored {
        g = g.arg("--ignored");
    }
    // Read as listed, the repositories kept: a tree's ignored files can be millions.
    let mut repos = Vec::new();
    g.each_record(|rel| {
        if rel.ends_with(b"/") {
            let rel = PathBuf::from(std::ffi::OsStr::from_bytes(rel));
            if is_repo(&tree.join(&rel)) {
                repos.push(rel);
            }
        }
    })?;
    Ok(repos)
}

/// Repositories of their own that git would add to `tree`'s next commit as a bare link
/// (mode 160000) to commits this repository does not have: the untracked ones.
pub(crate) fn untracked_repos(tree: &Path) -> Result<Vec<PathBuf>, Error> {
    repos_among_others(tree, false)
}

/// Every repository of its own inside `tree`: the untracked ones, those in ignored
/// directories (caches included), and the links the tree's index holds (submodules)
/// that are checked out. Removing the tree would take their history and their
/// uncommitted work with it.
pub(crate) fn nested_repos(tree: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = untracked_repos(tree)?;
    out.extend(repos_among_others(tree, true)?);
    // Every tracked file is listed: read as listed, the links kept.
    Git::at(tree)
        .args(["ls-files", "-z", "--stage"])
        .each_record(|entry| {
            // `MODE SHA STAGE\tPATH`
            let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                return;
            };
            if entry.starts_with(b"160000 ") {
                use std::os::unix::ffi::OsStrExt;
                let rel = PathBuf::from(std::ffi::OsStr::from_bytes(&entry[tab + 1..]));
                if is_repo(&tree.join(&rel)) {
                    out.push(rel);
                }
            }
        })?;
    out.sort();
    out.dedup();
    Ok(out)
}

/// Nested repositories as a refusal names them: the first few.
pub(crate) fn repos_said(repos: &[PathBuf]) -> String {
    let named: Vec<String> = repos
        .iter()
        .take(crate::guard::LISTED)
        .map(|p| p.to_string_lossy().trim_end_matches('/').to_string())
        .collect();
    let more = repos.len().saturating_sub(named.len());
    format!(
        "a repository of its own ({}{})",
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}
