//! Which sessions run in a worktree: each holds a lease while it lives, and an ending that
//! would pull the tree from under a session refuses while a lease is held.
//!
//! A lease is a file `<label>.lease-<pid>-<n>` beside the worktree's record, created
//! exclusively (never through a link) and held with `flock` by the process that runs the
//! session; it goes when the session's front end drops it. A process that died released
//! its lock with it: such a file is stale and is cleared by whoever looks. Several Trellis
//! processes (a UI, a hub, a headless run, an ending in another terminal) see the same
//! answer, and none can be fooled by a file another user planted (the directory is the
//! user's own, 0700).

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Found};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A session's hold on a worktree: released when dropped.
#[derive(Debug)]
pub struct Lease {
    file: std::fs::File,
    path: PathBuf,
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Removed while still locked, so nobody takes the name for a stale one meanwhile.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// A process holding a lease on a worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
}

fn prefix(label: &str) -> String {
    format!("{label}.lease-")
}

/// Takes a lease on the worktree whose record is `record_file`.
pub fn take(record_file: &Path, label: &str) -> Result<Lease, Error> {
    let dir = record_file.parent().unwrap_or(Path::new("."));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}{}-{n}", prefix(label), std::process::id()));
    let io = |e: std::io::Error| Error::Io(format!("{}: {e}", path.display()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(io)?;
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::Error(e) => io(e),
        std::fs::TryLockError::WouldBlock => Error::Io(format!("{} is locked", path.display())),
    })?;
    Ok(Lease { file, path })
}

/// The processes whose sessions hold a lease on `found`'s worktree now (stale leases are
/// cleared on the way).
pub fn holders(found: &Found) -> Vec<Holder> {
    let dir = found.file.parent().unwrap_or(Path::new("."));
    let prefix = prefix(&found.record.label);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('-')
            .and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        let path = e.path();
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        match f.try_lock() {
            Ok(()) => {
                // Its process is gone: the lease went with it.
                let _ = std::fs::remove_file(&path);
                let _ = f.unlock();
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                if !out.contains(&Holder { pid }) {
                    out.push(Holder { pid });
                }
            }
            Err(std::fs::TryLockError::Error(_)) => {}
        }
    }
    out.sort_by_key(|h| h.pid);
    out
}
