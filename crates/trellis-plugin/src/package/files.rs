//! A package's files as Trellis reads them: the script a command names (a regular file of
//! the package, never a link out of it), every file with its mode (bounded in number and
//! bytes), and the content hash over them, which sees any change to what would run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files a package may hold (hashing and copying stop beyond these).
pub const MAX_FILES: usize = 10_000;
pub const MAX_BYTES: u64 = 256 << 20;

/// Where `script` (an argument of the command, relative to the package directory, where
/// the process starts) is: a regular file of the package, not a link out of it.
pub fn check_script(root: &Path, script: &str) -> Result<PathBuf, String> {
    let root = root
        .canonicalize()
        .map_err(|e| format!("the package directory: {e}"))?;
    let path = root.join(script);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(format!("{script}: no such file in the package"));
    }
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("{script}: {e} (a link to nothing?)"))?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "{script} is outside the package (a plugin runs only its own files)"
        ));
    }
    if !resolved.is_file() {
        return Err(format!("{script} is not a regular file"));
    }
    Ok(resolved)
}

/// One file of a package as [`files`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A regular file: whether it is executable, and its bytes.
    File { exec: bool, bytes: Vec<u8> },
    /// A symbolic link, by its target as written (never followed here).
    Link(PathBuf),
}

impl Entry {
    /// What the content hash takes of it: a kind (0 a file, 1 an executable one, 2 a link)
    /// and its bytes (a link's target exactly as written). Links were once hashed as a
    /// file holding `link:TARGET`, which a file holding that text hashed the same as: a
    /// package with links hashes anew since, and an installed one is enabled again once.
    fn hashed(&self) -> (u8, &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        match self {
            Entry::File { exec, bytes } => (u8::from(*exec), bytes),
            Entry::Link(t) => (2, t.as_os_str().as_bytes()),
        }
    }
}

/// The first link among `files` (read from `root`) that leads out of the package or to
/// nothing, by its path: a package holds what it runs and reads, and a link out would
/// let it reach past that (install copies links only when they stay inside).
pub fn link_out(root: &Path, files: &BTreeMap<String, Entry>) -> Option<String> {
    let root = root.canonicalize().ok()?;
    files.iter().find_map(|(rel, e)| {
        let Entry::Link(target) = e else {
            return None;
        };
        let resolved = root
            .join(rel)
            .parent()
            .map(|d| d.join(target))
            .and_then(|x| x.canonicalize().ok());
        (!resolved.is_some_and(|r| r.starts_with(&root))).then(|| rel.clone())
    })
}

/// Every file under `root` (relative path → its [`Entry`]),
/// bounded by [`MAX_FILES`] and [`MAX_BYTES`]. `.git` is left out.
pub fn files(root: &Path) -> Result<BTreeMap<String, Entry>, String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in rd {
            let e = e.map_err(|e| e.to_string())?;
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let ft = e.file_type().map_err(|e| e.to_string())?;
            if ft.is_dir() {
                stack.push(p);
                continue;
            }
            if out.len() >= MAX_FILES {
                return Err(format!("more than {MAX_FILES} files in the package"));
            }
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).map_err(|e| e.to_string())?;
                out.insert(rel, Entry::Link(t));
            } else if ft.is_file() {
                let m = e.metadata().map_err(|e| e.to_string())?;
                total += m.len();
                if total > MAX_BYTES {
                    return Err(format!("more than {} MiB in the package", MAX_BYTES >> 20));
                }
                // Read no further than the bound, should the file grow meanwhile.
                // (A file swapped for a FIFO meanwhile is refused, not waited on.)
                let mut bytes = Vec::new();
                trellis_os::fd::open_regular(&p)
                    .and_then(|f| f.ok_or_else(|| std::io::Error::other("not a regular file")))
                    .and_then(|f| {
                        f.take(MAX_BYTES + 1 - (total - m.len()))
                            .read_to_end(&mut bytes)
                    })
                    .map_err(|e| format!("{rel}: {e}"))?;
                total = total - m.len() + bytes.len() as u64;
                if total > MAX_BYTES {
                    return Err(format!("more than {} MiB in the package", MAX_BYTES >> 20));
                }
                let exec = m.permissions().mode() & 0o111 != 0;
                out.insert(rel, Entry::File { exec, bytes });
            }
            // Sockets, FIFOs, devices: not package content, never read.
        }
    }
    Ok(out)
}

/// The content hash of a package directory.
pub fn content_hash(root: &Path) -> Result<String, String> {
    let mut h = Sha256::new();
    for (rel, entry) in files(root)? {
        let (kind, bytes) = entry.hashed();
        h.update((rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        h.update([kind]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let digest = h.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_must_be_a_regular_file_of_the_package() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("p");
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("plugin.py"), "").unwrap();
        std::fs::write(d.path().join("outside.py"), "").unwrap();
        std::os::unix::fs::symlink("../outside.py", root.join("escape.py")).unwrap();
        std::os::unix::fs::symlink("plugin.py", root.join("inside.py")).unwrap();
        assert!(check_script(&root, "./plugin.py").is_ok());
        assert!(check_script(&root, "inside.py").is_ok());
        let e = check_script(&root, "./missing.py").unwrap_err();
        assert_eq!(e, "./missing.py: no such file in the package");
        let e = check_script(&root, "./escape.py").unwrap_err();
        assert!(e.starts_with("./escape.py is outside the package"), "{e}");
        let e = check_script(&root, "../outside.py").unwrap_err();
        assert!(e.starts_with("../outside.py is outside the package"), "{e}");
        let e = check_script(&root, "./lib").unwrap_err();
        assert_eq!(e, "./lib is not a regular file");
        let abs = d.path().join("outside.py");
        let e = check_script(&root, abs.to_str().unwrap()).unwrap_err();
        assert!(e.contains("is outside the package"), "{e}");
    }

    #[test]
    fn a_link_out_of_the_package_is_found_and_a_file_is_never_taken_for_a_link() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("p");
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("plugin.py"), "").unwrap();
        // A regular file whose text looks like a link stays a file.
        std::fs::write(root.join("note.txt"), "link:../../etc/passwd").unwrap();
        std::os::unix::fs::symlink("../plugin.py", root.join("lib/inside.py")).unwrap();
        let f = files(&root).unwrap();
        assert!(matches!(f["note.txt"], Entry::File { .. }));
        assert_eq!(f["lib/inside.py"], Entry::Link("../plugin.py".into()));
        assert_eq!(link_out(&root, &f), None);
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        assert_eq!(
            link_out(&root, &files(&root).unwrap()).as_deref(),
            Some("etc")
        );
        std::fs::remove_file(root.join("etc")).unwrap();
        std::os::unix::fs::symlink("missing", root.join("dangling")).unwrap();
        assert_eq!(
            link_out(&root, &files(&root).unwrap()).as_deref(),
            Some("dangling")
        );
    }

    #[test]
    fn the_hash_sees_every_change_to_what_would_run() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("plugin.json"), "{}").unwrap();
        std::fs::create_dir(d.path().join("lib")).unwrap();
        std::fs::write(d.path().join("lib/a.py"), "print(1)").unwrap();
        let h1 = content_hash(d.path()).unwrap();
        assert_eq!(h1, content_hash(d.path()).unwrap());
        std::fs::write(d.path().join("lib/a.py"), "print(2)").unwrap();
        let h2 = content_hash(d.path()).unwrap();
        assert_ne!(h1, h2);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            d.path().join("lib/a.py"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(h2, content_hash(d.path()).unwrap());
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("l")).unwrap();
        let h3 = content_hash(d.path()).unwrap();
        std::fs::remove_file(d.path().join("l")).unwrap();
        std::os::unix::fs::symlink("/etc/hosts", d.path().join("l")).unwrap();
        let h4 = content_hash(d.path()).unwrap();
        assert_ne!(h3, h4);
        // A file holding what a link's entry once hashed as is not that link.
        std::fs::remove_file(d.path().join("l")).unwrap();
        std::fs::write(d.path().join("l"), "link:/etc/hosts").unwrap();
        assert_ne!(h4, content_hash(d.path()).unwrap());
    }
}
