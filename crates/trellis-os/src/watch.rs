//! Whether anything changed under a tree since the last look, without looking at every
//! file: on Linux, inotify on every directory of the tree (a directory that appears is
//! watched as it is seen); elsewhere there is no watch, and the caller looks itself.
//!
//! Fail-closed: a queue that overflowed, a directory that could not be watched, a read
//! that failed — any doubt — counts as a change, and a watch that lost a directory says
//! "changed" from then on. Only what goes through the file system's calls is seen: a file
//! written through a memory map alone is not.

use std::path::{Path, PathBuf};

/// A watch on a tree; see the module.
pub struct Watch {
    #[cfg(target_os = "linux")]
    inner: linux::Inner,
}

impl Watch {
    /// Watches every directory under `top` (links are not followed) but those named as in
    /// `skip` (`.git`), at most `limit` of them. `None` where it cannot: not Linux, too
    /// many directories, no inotify (the system's limits).
    pub fn new(top: &Path, skip: &[&str], limit: usize) -> Option<Watch> {
        #[cfg(target_os = "linux")]
        {
            linux::Inner::new(top, skip, limit).map(|inner| Watch { inner })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (top, skip, limit);
            None
        }
    }

    /// Whether anything changed under the tree since the last call (or since [`new`]):
    /// what was queued is read, and new directories are watched.
    ///
    /// [`new`]: Watch::new
    pub fn changed(&mut self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.inner.changed()
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }
}

/// The directories under `top` (itself first), not through links, skipping `skip`'s
/// names; `None` past `limit`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn directories(top: &Path, skip: &[&str], limit: usize) -> Option<Vec<PathBuf>> {
    let mut out = vec![top.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let Ok(entries) = std::fs::read_dir(&out[i]) else {
            i += 1;
            continue;
        };
        for e in entries.flatten() {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let skipped = e.file_name().to_str().is_some_and(|n| skip.contains(&n));
            if is_dir && !skipped {
                out.push(e.path());
                if out.len() > limit {
                    return None;
                }
            }
        }
        i += 1;
    }
    Some(out)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

    fn mask() -> AddWatchFlags {
        AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW
    }

    pub(super) struct Inner {
        fd: Inotify,
        /// Watch → its directory (to watch what appears in it).
        dirs: HashMap<WatchDescriptor, PathBuf>,
        skip: Vec<String>,
        limit: usize,
        /// A directory could not be watched, or a read failed: every look is a change
        /// from then on.
        broken: bool,
    }

    impl Inner {
        pub(super) fn new(top: &Path, skip: &[&str], limit: usize) -> Option<Inner> {
            let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
            let mut inner = Inner {
                fd,
                dirs: HashMap::new(),
                skip: skip.iter().map(|s| (*s).to_string()).collect(),
                limit,
                broken: false,
            };
            for d in super::directories(top, skip, limit)? {
                if !inner.add(&d) {
                    return None;
                }
            }
            Some(inner)
        }

        /// Watches `dir`; false when it could not (a directory gone since counts as
        /// watched: its parent's event says it changed).
        fn add(&mut self, dir: &Path) -> bool {
            if self.dirs.len() >= self.limit {
                return false;
            }
            match self.fd.add_watch(dir, mask()) {
                Ok(wd) => {
                    self.dirs.insert(wd, dir.to_path_buf());
                    true
                }
                Err(nix::errno::Errno::ENOENT) => true,
                Err(_) => false,
            }
        }

        pub(super) fn changed(&mut self) -> bool {
            let mut changed = self.broken;
            let mut new_dirs = Vec::new();
            loop {
                let events = match self.fd.read_events() {
                    Ok(events) => events,
                    Err(nix::errno::Errno::EAGAIN) => break,
                    Err(_) => {
                        self.broken = true;
                        changed = true;
                        break;
                    }
                };
                if events.is_empty() {
                    break;
                }
                for ev in events {
                    if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
                        self.dirs.remove(&ev.wd);
                        continue;
                    }
                    changed = true;
                    let appeared = ev
                        .mask
                        .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
                    if ev.mask.contains(AddWatchFlags::IN_ISDIR)
                        && appeared
                        && let (Some(parent), Some(name)) = (self.dirs.get(&ev.wd), ev.name)
                    {
                        let skipped = name
                            .to_str()
                            .is_some_and(|n| self.skip.iter().any(|s| s == n));
                        if !skipped {
                            new_dirs.push(parent.join(name));
                        }
                    }
                }
            }
            let skip: Vec<String> = self.skip.clone();
            let skip: Vec<&str> = skip.iter().map(String::as_str).collect();
            for d in new_dirs {
                match super::directories(&d, &skip, self.limit) {
                    Some(all) => {
                        for d in all {
                            if !self.add(&d) {
                                self.broken = true;
                            }
                        }
                    }
                    None => self.broken = true,
                }
            }
            changed
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Watch;

    /// A change anywhere in the tree is seen once; one in a directory made since too;
    /// nothing in `.git` is.
    #[test]
    fn changes_under_the_tree_are_seen_once() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::fs::create_dir_all(t.path().join(".git")).unwrap();
        std::fs::write(t.path().join("a/b/f"), "1").unwrap();
        let mut w = Watch::new(t.path(), &[".git"], 100).unwrap();
        assert!(!w.changed());
        std::fs::write(t.path().join("a/b/f"), "2").unwrap();
        assert!(w.changed());
        assert!(!w.changed());
        std::fs::write(t.path().join(".git/index"), "x").unwrap();
        assert!(!w.changed(), ".git is not watched");
        std::fs::create_dir_all(t.path().join("new/deeper")).unwrap();
        assert!(w.changed());
        std::fs::write(t.path().join("new/deeper/g"), "1").unwrap();
        assert!(w.changed(), "a directory made since is watched");
        std::fs::remove_file(t.path().join("a/b/f")).unwrap();
        assert!(w.changed());
        assert!(!w.changed());
        assert!(Watch::new(t.path(), &[], 2).is_none(), "past its limit");
    }
}
