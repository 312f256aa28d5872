//! What a new worktree takes from its source besides the commit: the uncommitted work
//! (`--carry`) and the ignored files `.worktreeinclude` names. The source is only read.

use std::io;
use std::path::{Component, Path};

use crate::Error;
use crate::git::Git;

/// What was copied into a new worktree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Carried {
    /// Whether changes to tracked files were applied.
    pub patch: bool,
    /// Files (and links) copied.
    pub files: usize,
    /// Paths skipped: neither a regular file nor a link (FIFOs, sockets, devices), or a
    /// path that would leave the tree.
    pub skipped: Vec<String>,
}

/// The source's changes to tracked files (staged and not, against HEAD) applied to the
/// new tree, and its untracked files that are not ignored copied in.
pub(crate) fn uncommitted(source: &Path, tree: &Path, out: &mut Carried) -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let patch = dir.path().join("carry.patch");
    Git::at(source)
        .args(["diff", "--binary", "--no-ext-diff", "--ignore-submodules"])
        .arg(concat_os("--output=", &patch))
        .arg("HEAD")
        .output()?;
    let len = std::fs::metadata(&patch).map(|m| m.len()).unwrap_or(0);
    if len > 0 {
        Git::at(tree)
            .args(["apply", "--binary", "--whitespace=nowarn"])
            .arg(&patch)
            .output()?;
        out.patch = true;
    }
    let untracked = Git::at(source)
        .args(["ls-files", "-z", "--others", "--exclude-standard"])
        .paths()?;
    copy_all(source, tree, &untracked, out)
}

/// The ignored files of the source that `.worktreeinclude` (gitignore syntax) names.
pub(crate) fn included(source: &Path, tree: &Path, out: &mut Carried) -> Result<(), Error> {
    let list = source.join(".worktreeinclude");
    match std::fs::symlink_metadata(&list) {
        Ok(m) if m.file_type().is_file() => {}
        Ok(_) => {
            out.skipped
                .push(".worktreeinclude (not a regular file)".into());
            return Ok(());
        }
        Err(_) => return Ok(()),
    }
    let named = Git::at(source)
        .args(["ls-files", "-z", "--others", "--ignored"])
        .arg(concat_os("--exclude-from=", &list))
        .paths()?;
    if named.is_empty() {
        return Ok(());
    }
    let ignored: std::collections::HashSet<_> = Git::at(source)
        .args([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
        ])
        .paths()?
        .into_iter()
        .collect();
    let both: Vec<_> = named.into_iter().filter(|p| ignored.contains(p)).collect();
    copy_all(source, tree, &both, out)
}

fn concat_os(prefix: &str, path: &Path) -> std::ffi::OsString {
    let mut s = std::ffi::OsString::from(prefix);
    s.push(path.as_os_str());
    s
}

fn copy_all(
    source: &Path,
    tree: &Path,
    paths: &[std::path::PathBuf],
    out: &mut Carried,
) -> Result<(), Error> {
    for rel in paths {
        if !plain_relative(rel) {
            out.skipped.push(rel.to_string_lossy().into_owned());
            continue;
        }
        match copy_one(&source.join(rel), tree, rel) {
            Ok(true) => out.files += 1,
            Ok(false) => out.skipped.push(rel.to_string_lossy().into_owned()),
            Err(e) => {
                return Err(Error::Io(format!(
                    "copying {} into the worktree: {e}",
                    rel.display()
                )));
            }
        }
    }
    Ok(())
}

/// A path of normal components only (no root, no `..`, no `.`).
fn plain_relative(p: &Path) -> bool {
    !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Copies one file or link to `tree/rel` without following links on either side:
/// directories on the way are made (a link met there is refused), the file is created
/// exclusively. `Ok(false)`: not a kind that is copied.
fn copy_one(src: &Path, tree: &Path, rel: &Path) -> io::Result<bool> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let meta = std::fs::symlink_metadata(src)?;
    let ft = meta.file_type();
    if !ft.is_file() && !ft.is_symlink() {
        return Ok(false);
    }
    let mut dir = tree.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for c in &comps[..comps.len().saturating_sub(1)] {
        dir.push(c);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{} is not a directory in the worktree",
                    dir.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::create_dir(&dir)?,
            Err(e) => return Err(e),
        }
    }
    let dst = tree.join(rel);
    if ft.is_symlink() {
        let target = std::fs::read_link(src)?;
        std::os::unix::fs::symlink(target, &dst)?;
        return Ok(true);
    }
    let mut from = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(src)?;
    // Checked again on the open file: it may have been swapped since.
    if !from.metadata()?.file_type().is_file() {
        return Ok(false);
    }
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(meta.permissions().mode() & 0o777)
        .open(&dst)?;
    io::copy(&mut from, &mut to)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{copy_one, plain_relative};
    use std::path::Path;

    #[test]
    fn a_fifo_is_skipped_without_being_opened_and_a_link_on_the_way_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, tree) = (tmp.path().join("src"), tmp.path().join("tree"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::create_dir_all(&tree).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(src.join("fifo"))
                .status()
                .unwrap()
                .success()
        );
        assert!(!copy_one(&src.join("fifo"), &tree, Path::new("fifo")).unwrap());
        assert!(!tree.join("fifo").exists());
        // A link where a directory should be, in the tree: refused, nothing written.
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("d")).unwrap();
        std::fs::write(src.join("f"), "x").unwrap();
        assert!(copy_one(&src.join("f"), &tree, Path::new("d/f")).is_err());
        assert!(!outside.join("f").exists());
        // An existing file is never overwritten.
        std::fs::write(tree.join("f"), "theirs").unwrap();
        assert!(copy_one(&src.join("f"), &tree, Path::new("f")).is_err());
        assert_eq!(std::fs::read_to_string(tree.join("f")).unwrap(), "theirs");
    }

    #[test]
    fn only_plain_relative_paths_are_copied() {
        assert!(plain_relative(Path::new("a/b.txt")));
        assert!(!plain_relative(Path::new("../x")));
        assert!(!plain_relative(Path::new("/etc/passwd")));
        assert!(!plain_relative(Path::new("a/../../x")));
        assert!(!plain_relative(Path::new("")));
    }
}
