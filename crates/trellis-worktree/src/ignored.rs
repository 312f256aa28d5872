//! The ignored files of a worktree about to be removed. Git removes a worktree's ignored
//! files with it (with or without `--force`), and no commit has them: a `.env` the user
//! edited there, a local config the agent wrote. Before a tree is removed its ignored files
//! go into the snapshot commit kept under `refs/trellis/retired/` — except:
//!
//! - a copy of the source's own file at the same place, unchanged (what
//!   `.worktreeinclude` copied in: the original is still in the source);
//! - a cache by its own declaration: a directory holding a `CACHEDIR.TAG` that begins with
//!   the signature of the Cache Directory Tagging Specification (Cargo's `target/`,
//!   pytest's and mypy's caches…; a file of that name without it is no tag), a
//!   Python virtual environment (`pyvenv.cfg`), `node_modules`, `__pycache__` — each named
//!   in what the ending says.
//!
//! What is kept is bounded ([`LIMIT_BYTES`], [`LIMIT_FILES`]); beyond the bound the tree
//! is not removed, and the ending says why.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::git::Git;

/// At most this many bytes of ignored files are kept in a snapshot.
pub const LIMIT_BYTES: u64 = 64 << 20;
/// At most this many ignored files are kept in a snapshot.
pub const LIMIT_FILES: usize = 20_000;

/// What a tree's ignored files come to.
#[derive(Debug, Default)]
pub struct Ignored {
    /// To keep in the snapshot (relative to the tree).
    pub keep: Vec<PathBuf>,
    pub bytes: u64,
    /// Caches that go with the tree (relative, with `/`).
    pub caches: Vec<String>,
    /// Why the tree cannot be removed (over the bound), if it cannot.
    pub too_much: Option<String>,
}

fn cache_dir(dir: &Path) -> bool {
    let name = dir.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    name == b"node_modules"
        || name == b"__pycache__"
        || tagged_cache(&dir.join("CACHEDIR.TAG"))
        || std::fs::symlink_metadata(dir.join("pyvenv.cfg")).is_ok_and(|m| m.is_file())
}

/// The header a `CACHEDIR.TAG` begins with (the Cache Directory Tagging Specification):
/// a file of that name without it is no tag, and its directory no cache.
const CACHE_TAG: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// Whether `tag` is a regular file (never followed) that begins with [`CACHE_TAG`].
fn tagged_cache(tag: &Path) -> bool {
    use std::io::Read;
    if !std::fs::symlink_metadata(tag).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; CACHE_TAG.len()];
    std::fs::File::open(tag)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == CACHE_TAG)
}

/// Whether `path` in the tree is a copy of `source`'s file at the same place.
fn same_as_source(tree: &Path, source: &Path, rel: &Path) -> bool {
    let (Ok(a), Ok(b)) = (
        std::fs::symlink_metadata(tree.join(rel)),
        std::fs::symlink_metadata(source.join(rel)),
    ) else {
        return false;
    };
    // A link is the same when it points at the same place (never followed).
    if a.file_type().is_symlink() || b.file_type().is_symlink() {
        return a.file_type().is_symlink()
            && b.file_type().is_symlink()
            && std::fs::read_link(tree.join(rel)).ok()
                == std::fs::read_link(source.join(rel)).ok();
    }
    if !a.is_file() || !b.is_file() || a.len() != b.len() || a.len() > 16 << 20 {
        return false;
    }
    matches!(
        (std::fs::read(tree.join(rel)), std::fs::read(source.join(rel))),
        (Ok(x), Ok(y)) if x == y
    )
}

/// The ignored files of the work tree at `tree` (its top), as the removal of the tree
/// must treat them. Links are never followed; other kinds of file (a FIFO) are not kept.
pub fn survey(tree: &Path, source: &Path) -> Result<Ignored, Error> {
    let listed = Git::at(tree)
        .args([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ])
        .paths()?;
    let mut out = Ignored::default();
    let mut stack: Vec<PathBuf> = Vec::new();
    for rel in listed {
        stack.push(rel);
        while let Some(rel) = stack.pop() {
            let full = tree.join(&rel);
            let Ok(meta) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            if meta.is_dir() {
                if cache_dir(&full) {
                    let name = rel.to_string_lossy();
                    out.caches.push(format!("{}/", name.trim_end_matches('/')));
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(&full) else {
                    continue;
                };
                for e in entries.flatten() {
                    stack.push(rel.join(e.file_name()));
                }
                continue;
            }
            if !(meta.is_file() || meta.file_type().is_symlink())
                || same_as_source(tree, source, &rel)
            {
                continue;
            }
            out.bytes += meta.len();
            out.keep.push(rel);
            if out.bytes > LIMIT_BYTES || out.keep.len() > LIMIT_FILES {
                out.too_much = Some(format!(
                    "it holds ignored files that no commit has, more than Trellis keeps in a snapshot ({} files or {} MiB: {}…); move them aside or delete them, then end it again",
                    LIMIT_FILES,
                    LIMIT_BYTES >> 20,
                    out.keep
                        .iter()
                        .take(3)
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                return Ok(out);
            }
        }
    }
    out.keep.sort();
    out.caches.sort();
    Ok(out)
}

/// Adds `keep` to the index `index` of the tree at `tree` (forced: they are ignored).
pub(crate) fn add(tree: &Path, index: &Path, keep: &[PathBuf], dir: &Path) -> Result<(), Error> {
    if keep.is_empty() {
        return Ok(());
    }
    let list = dir.join("ignored.list");
    let mut bytes = Vec::new();
    for p in keep {
        bytes.extend_from_slice(p.as_os_str().as_bytes());
        bytes.push(0);
    }
    std::fs::write(&list, bytes).map_err(|e| Error::Io(format!("{}: {e}", list.display())))?;
    let mut spec = std::ffi::OsString::from("--pathspec-from-file=");
    spec.push(list.as_os_str());
    Git::at(tree)
        .env("GIT_INDEX_FILE", index)
        // The names are names, not patterns.
        .env("GIT_LITERAL_PATHSPECS", "1")
        .args(["add", "-f", "--pathspec-file-nul"])
        .arg(spec)
        .output()?;
    Ok(())
}
