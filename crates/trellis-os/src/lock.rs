//! Lock files that several Trellis processes share (the session index, a worktree's
//! record, a hub's name): opened the one safe way — private to the user, created if
//! missing, never through a link, not inherited by children — and locked with `flock`,
//! which the system lets go when the holder dies, so a crashed process never leaves one
//! held.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// A held lock; let go when dropped (or when its process ends).
#[derive(Debug)]
pub struct Held(File);

impl Held {
    /// The lock file, open (to compare it with what is at its path now, say).
    pub fn file(&self) -> &File {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Opens (creating it, mode 0600) the lock file at `path`, refusing a link there.
pub fn open(path: &Path) -> io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    opts.open(path)
}

/// Takes the lock at `path` if no one holds it: `None` when someone does.
pub fn try_take(path: &Path) -> io::Result<Option<Held>> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(Held(file))),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the lock at `path`, waiting at most `wait` for its holder: `None` when it is
/// still held then.
pub fn take_within(path: &Path, wait: Duration) -> io::Result<Option<Held>> {
    let file = open(path)?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(Held(file))),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_lock_is_taken_once_waited_for_and_refused_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = super::try_take(&path).unwrap().unwrap();
        assert!(super::try_take(&path).unwrap().is_none());
        assert!(
            super::take_within(&path, Duration::from_millis(50))
                .unwrap()
                .is_none()
        );
        drop(held);
        assert!(super::try_take(&path).unwrap().is_some());
        #[cfg(unix)]
        {
            let link = dir.path().join("link.lock");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            assert!(super::try_take(&link).is_err(), "a link is never followed");
        }
    }
}
