//! Where hubs listen: `$XDG_RUNTIME_DIR/trellis/` (else `<tmp>/trellis-<uid>/`), a
//! directory of this user's alone (0700, owned by the user, not a link — checked every
//! time, never repaired). Each hub has a name and two files there: `NAME.lock`, which it
//! holds `flock`ed for as long as it lives (so a hub that died is told apart from a live
//! one whatever became of its pid), and `NAME.sock`.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The directory of this user's hubs, made if missing and checked.
pub fn runtime_dir() -> io::Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("trellis"),
        None => std::env::temp_dir().join(format!("trellis-{}", trellis_os::uid())),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    }
    check_private(&dir)?;
    Ok(dir)
}

/// A directory only this user can enter: a real directory (not a link), owned by the
/// user, no access for group or others.
pub fn check_private(dir: &Path) -> io::Result<()> {
    let m = std::fs::symlink_metadata(dir)?;
    let why = if !m.file_type().is_dir() {
        Some("is not a directory")
    } else if m.uid() != trellis_os::uid() {
        Some("belongs to another user")
    } else if m.mode() & 0o077 != 0 {
        Some("is open to other users (its mode must be 0700)")
    } else {
        None
    };
    match why {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}: no hub socket there", dir.display()),
        )),
        None => Ok(()),
    }
}

/// A hub's files.
#[derive(Debug, Clone)]
pub struct HubFiles {
    pub name: String,
    pub lock: PathBuf,
    pub sock: PathBuf,
}

impl HubFiles {
    pub fn new(dir: &Path, name: &str) -> HubFiles {
        HubFiles {
            name: name.to_string(),
            lock: dir.join(format!("{name}.lock")),
            sock: dir.join(format!("{name}.sock")),
        }
    }
}

/// Whether a hub name is one Trellis makes or accepts: letters, digits, `-`, `_`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The hubs in `dir`, by name (those with a socket file).
pub fn hubs(dir: &Path) -> Vec<HubFiles> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<HubFiles> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".sock")?.to_string();
            valid_name(&name).then(|| HubFiles::new(dir, &name))
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The lock of a hub's name, held.
#[derive(Debug)]
pub struct Held {
    _file: trellis_os::lock::Held,
}

/// Takes `files`'s lock if no living hub holds it. The lock file is opened without
/// following links and checked to be the one at the path after locking (a cleaner may
/// have removed it meanwhile: then it is taken again).
pub fn try_hold(files: &HubFiles) -> io::Result<Option<Held>> {
    for _ in 0..8 {
        let Some(held) = trellis_os::lock::try_take(&files.lock)? else {
            return Ok(None);
        };
        let meta = held.file().metadata()?;
        match std::fs::symlink_metadata(&files.lock) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => {
                return Ok(Some(Held { _file: held }));
            }
            _ => continue,
        }
    }
    Err(io::Error::other(format!(
        "{}: the lock keeps changing under us",
        files.lock.display()
    )))
}

/// Removes what a dead hub left (its socket, then its lock file), holding its lock; a
/// live hub's files are left alone. Returns whether they were stale.
pub fn clear_if_stale(files: &HubFiles) -> bool {
    let Ok(Some(held)) = try_hold(files) else {
        return false;
    };
    if let Ok(m) = std::fs::symlink_metadata(&files.sock)
        && m.uid() == trellis_os::uid()
        && !m.file_type().is_dir()
    {
        let _ = std::fs::remove_file(&files.sock);
    }
    let _ = std::fs::remove_file(&files.lock);
    drop(held);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_open_to_others_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_private(&open).is_err());
        let private = tmp.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_private(&private).is_ok());
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(check_private(&link).is_err());
    }

    #[test]
    fn one_hub_per_name_and_a_dead_one_is_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let f = HubFiles::new(tmp.path(), "h");
        let held = try_hold(&f).unwrap().unwrap();
        assert!(try_hold(&f).unwrap().is_none(), "a second holder");
        std::fs::write(&f.sock, "").unwrap();
        assert!(!clear_if_stale(&f), "a live hub's files stay");
        assert!(f.sock.exists());
        drop(held);
        assert!(clear_if_stale(&f));
        assert!(!f.sock.exists() && !f.lock.exists());
        assert!(valid_name("hub-12") && !valid_name("../x") && !valid_name(""));
    }
}
