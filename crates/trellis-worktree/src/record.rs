//! Ownership records: what Trellis created, so that it never touches what it did not.
//!
//! A record is written (exclusively) before `git worktree add` runs and completed after:
//! the worktree's path, branch, base commit and source repository, and the identity of
//! git's administrative directory for it (`.git/worktrees/<name>`: its inode and creation
//! time). A worktree whose administrative directory is not that one — removed and made
//! again by hand under the same name, say — is not Trellis's, whatever its path.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;

/// Records larger than this are not Trellis's.
const RECORD_LIMIT: u64 = 64 * 1024;

/// Where a worktree is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The record is written, `git worktree add` not yet finished (a process that died
    /// here leaves this behind).
    Creating,
    /// In use by a session, or waiting for an ending.
    Active,
    /// Ended by `keep`: left as it is, still Trellis's.
    Kept,
    /// Ended by `land`: the source branch fast-forwarded to it, the tree removed.
    Landed,
    /// Ended by `apply`: its changes staged in the source, the tree removed (snapshot kept).
    Applied,
    /// Ended by `discard`: snapshot kept, the tree removed.
    Discarded,
}

impl Stage {
    pub fn word(self) -> &'static str {
        match self {
            Stage::Creating => "creating",
            Stage::Active => "active",
            Stage::Kept => "kept",
            Stage::Landed => "landed",
            Stage::Applied => "applied",
            Stage::Discarded => "discarded",
        }
    }

    /// Whether the tree is meant to exist.
    pub fn has_tree(self) -> bool {
        matches!(self, Stage::Active | Stage::Kept)
    }
}

/// The identity of git's administrative directory of a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub admin: PathBuf,
    pub dev: u64,
    pub ino: u64,
    /// Creation time (ns since the epoch) where the file system keeps one.
    pub created_ns: Option<u128>,
}

impl Identity {
    /// The identity of the worktree at `tree` as it is now: its `.git` file names the
    /// administrative directory, which must name the tree back.
    pub fn of(tree: &Path) -> Result<Identity, String> {
        let dotgit = tree.join(".git");
        let meta =
            std::fs::symlink_metadata(&dotgit).map_err(|e| format!("{}: {e}", dotgit.display()))?;
        if !meta.file_type().is_file() || meta.len() > 4096 {
            return Err(format!(
                "{} is not a worktree's .git file",
                dotgit.display()
            ));
        }
        let text =
            std::fs::read_to_string(&dotgit).map_err(|e| format!("{}: {e}", dotgit.display()))?;
        let admin = text
            .trim_end()
            .strip_prefix("gitdir: ")
            .map(PathBuf::from)
            .ok_or_else(|| format!("{} names no gitdir", dotgit.display()))?;
        let admin = if admin.is_absolute() {
            admin
        } else {
            tree.join(admin)
        };
        let meta =
            std::fs::symlink_metadata(&admin).map_err(|e| format!("{}: {e}", admin.display()))?;
        if !meta.file_type().is_dir() {
            return Err(format!("{} is not a directory", admin.display()));
        }
        // The administrative directory names its worktree back (`gitdir`).
        let back = std::fs::read_to_string(admin.join("gitdir"))
            .map_err(|e| format!("{}: {e}", admin.join("gitdir").display()))?;
        let back = PathBuf::from(back.trim_end());
        if !same_file(&back, &dotgit) {
            return Err(format!(
                "{} belongs to {}, not to {}",
                admin.display(),
                back.display(),
                tree.display()
            ));
        }
        use std::os::unix::fs::MetadataExt;
        let created_ns = meta
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos());
        Ok(Identity {
            admin,
            dev: meta.dev(),
            ino: meta.ino(),
            created_ns,
        })
    }

    /// Whether `now` is the same directory as the one recorded.
    pub fn matches(&self, now: &Identity) -> bool {
        self.dev == now.dev
            && self.ino == now.ino
            && same_file(&self.admin, &now.admin)
            && match (self.created_ns, now.created_ns) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// One worktree Trellis created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub version: u32,
    pub label: String,
    /// `trellis/<label>`.
    pub branch: String,
    /// The worktree's directory (under Trellis's data directory).
    pub path: PathBuf,
    /// The top level of the repository it was made from.
    pub source: PathBuf,
    /// The commit it started from (the source's HEAD then).
    pub base: String,
    /// Unix seconds.
    pub created_at: u64,
    pub stage: Stage,
    /// Set once `git worktree add` finished.
    pub identity: Option<Identity>,
    /// Whether the source's uncommitted work was copied in.
    #[serde(default)]
    pub carried: bool,
    /// Unix seconds of the ending.
    #[serde(default)]
    pub ended_at: Option<u64>,
    /// Where the snapshot taken before the tree was removed lives
    /// (`refs/trellis/retired/<label>-<sha>`).
    #[serde(default)]
    pub snapshot: Option<String>,
    /// The branch the source had checked out when the worktree was made: what it lands
    /// onto and syncs from (none in records made before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onto: Option<String>,
}

pub const VERSION: u32 = 1;

impl Record {
    /// Reads a record, refusing anything that is not a small regular file of the format.
    pub fn read(file: &Path) -> Result<Record, String> {
        let meta =
            std::fs::symlink_metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
        if !meta.file_type().is_file() {
            return Err(format!("{}: not a regular file", file.display()));
        }
        if meta.len() > RECORD_LIMIT {
            return Err(format!("{}: too large for a record", file.display()));
        }
        let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let r: Record = serde_json::from_slice(&text)
            .map_err(|e| format!("{}: not a worktree record ({e})", file.display()))?;
        if r.version != VERSION {
            return Err(format!(
                "{}: record version {} (this Trellis reads {VERSION})",
                file.display(),
                r.version
            ));
        }
        Ok(r)
    }

    /// Writes a new record; fails if one is there already (that label is taken).
    pub fn create(&self, file: &Path) -> Result<bool, Error> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        match opts.open(file) {
            Ok(mut f) => {
                f.write_all(&self.bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| Error::Io(format!("{}: {e}", file.display())))?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::Io(format!("{}: {e}", file.display()))),
        }
    }

    /// Replaces the record (written beside it, renamed over it).
    pub fn save(&self, file: &Path) -> Result<(), Error> {
        let dir = file.parent().unwrap_or(Path::new("."));
        let io = |e: std::io::Error| Error::Io(format!("{}: {e}", file.display()));
        let mut tmp = tempfile::Builder::new()
            .prefix(".record-")
            .tempfile_in(dir)
            .map_err(io)?;
        tmp.write_all(&self.bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(file).map_err(|e| io(e.error))?;
        Ok(())
    }

    fn bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }
}
