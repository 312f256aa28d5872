//! Git worktrees Trellis creates for sessions, and how they end.
//!
//! A session that asks for isolation runs in a worktree of its own: `git worktree add -b
//! trellis/<label>` at the source's HEAD, placed under Trellis's data directory (outside
//! the repository: nothing to add to `.gitignore`, no indexer walks it). Trellis records
//! what it made ([`record`]) and acts only on worktrees whose record still matches, checked
//! again right before acting. The endings ([`end`]) never delete a branch and never remove
//! a tree with work in it without first keeping a snapshot commit under
//! `refs/trellis/retired/`.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod carry;
pub mod checkpoint;
pub mod end;
mod git;
pub mod guard;
pub mod ignored;
pub mod label;
pub mod lease;
pub mod measure;
pub mod plan;
pub mod prune;
pub mod record;
mod state;

use std::path::{Path, PathBuf};

pub use carry::Carried;
pub use record::{Identity, Record, Stage};

use git::Git;

/// What can go wrong, in words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("git is not installed (or not on PATH)")]
    NoGit,
    #[error("{0} is not in a git repository")]
    NotARepository(PathBuf),
    #[error("the repository at {0} has no commit yet to start a worktree from")]
    NoCommits(PathBuf),
    #[error("{0}")]
    BadLabel(String),
    #[error(
        "a branch trellis/{0} exists already: Trellis never reuses or deletes a branch; choose another label"
    )]
    BranchExists(String),
    #[error("the label {0} is taken in this repository; choose another")]
    LabelTaken(String),
    #[error("no worktree labelled {0} (see `trellis worktree list`)")]
    NotFound(String),
    #[error("the label {label} names worktrees of several repositories: {}; run this from inside the one you mean", .sources.join(", "))]
    Ambiguous { label: String, sources: Vec<String> },
    #[error("{0}")]
    Refused(String),
    /// The source's branch moved on since the worktree parted from it.
    #[error(
        "{target} has commits that {branch} lacks, so it cannot fast-forward. Nothing was changed: bring them in with `trellis worktree sync {label}`, then land again — or stage its changes instead: `trellis worktree apply {label}`"
    )]
    Diverged {
        target: String,
        branch: String,
        label: String,
    },
    /// Sessions run in the worktree (their processes hold leases on it).
    #[error("{}", in_use(label, holders))]
    InUse {
        label: String,
        holders: Vec<lease::Holder>,
    },
    #[error("`{command}` failed: {said}")]
    Git { command: String, said: String },
    #[error("{0}")]
    Io(String),
}

fn in_use(label: &str, holders: &[lease::Holder]) -> String {
    let pids: Vec<String> = holders.iter().map(|h| h.pid.to_string()).collect();
    format!(
        "a session runs in worktree {label} (Trellis process {}), and its agent must not lose the tree under it: end it first — a UI's or a hub's session is listed by `trellis ls` and ended by `trellis stop HUB:KEY`; a headless `trellis run` is not listed there: let it finish, or stop it (kill -TERM {}). Nothing was changed",
        pids.join(", "),
        pids.join(" ")
    )
}

/// Trellis's worktrees: `<data>/worktrees/<repo>/<label>/` for the trees and
/// `<data>/worktrees/<repo>/<label>.json` for their records, `<repo>` naming the source
/// repository (its directory's name and a hash of its path).
#[derive(Debug, Clone)]
pub struct Worktrees {
    root: PathBuf,
}

/// What to make.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The label (`[a-z0-9][a-z0-9_-]*`); made up when absent.
    pub label: Option<String>,
    /// Copy the source's uncommitted work in.
    pub carry: bool,
    /// A command run (`sh -c`) in the new tree, with `TRELLIS_WORKTREE_ROOT` and
    /// `TRELLIS_SOURCE_ROOT` set.
    pub setup: Option<String>,
}

/// A worktree made for a session.
#[derive(Debug, Clone)]
pub struct Created {
    pub record: Record,
    /// Where the session runs: the tree, or the same subdirectory of it as the session's
    /// directory was of the source.
    pub cwd: PathBuf,
    pub carried: Carried,
    /// The setup command's failure, if it failed (the worktree is there nonetheless).
    pub setup_failed: Option<String>,
}

/// A record and what is found of its worktree now.
#[derive(Debug, Clone)]
pub struct Found {
    pub record: Record,
    pub file: PathBuf,
    pub status: Status,
}

/// A recorded worktree as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// There, and the one Trellis made.
    Owned,
    /// Its directory or git's record of it is gone (removed behind Trellis's back).
    Missing(String),
    /// Something is there, but not what Trellis made (never touched).
    Foreign(String),
    /// Ended (landed, applied, discarded): nothing left to find.
    Ended,
    /// `git worktree add` never finished (a process that died during it).
    Incomplete,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Owned => "owned",
            Status::Missing(_) => "missing",
            Status::Foreign(_) => "foreign",
            Status::Ended => "ended",
            Status::Incomplete => "incomplete",
        }
    }
}

/// A directory among Trellis's worktrees that no record explains.
#[derive(Debug, Clone)]
pub struct Orphan {
    pub path: PathBuf,
    pub why: String,
}

/// Everything `trellis worktree list` shows.
#[derive(Debug, Default)]
pub struct Listing {
    pub found: Vec<Found>,
    pub orphans: Vec<Orphan>,
    /// Records that could not be read (kept as they are).
    pub unreadable: Vec<String>,
}

pub(crate) fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Worktrees {
    /// Trellis's worktrees under `data_dir` (`<data_dir>/worktrees`).
    pub fn new(data_dir: &Path) -> Worktrees {
        Worktrees {
            root: data_dir.join("worktrees"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The top level of the repository `dir` is in, and `dir`'s place below it.
    pub fn source_of(dir: &Path) -> Result<(PathBuf, PathBuf), Error> {
        let top = match Git::at(dir).args(["rev-parse", "--show-toplevel"]).line() {
            Ok(t) if !t.is_empty() => PathBuf::from(t),
            Ok(_) | Err(Error::Git { .. }) => return Err(Error::NotARepository(dir.into())),
            Err(e) => return Err(e),
        };
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let here = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let below = here
            .strip_prefix(&top)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok((top, below))
    }

    /// The branch checked out at `dir`, if it is on one.
    pub fn branch_of(dir: &Path) -> Option<String> {
        Git::at(dir)
            .args(["symbolic-ref", "-q", "--short", "HEAD"])
            .line()
            .ok()
            .filter(|b| !b.is_empty())
    }

    /// The directory of one source repository's worktrees and records.
    fn repo_dir(&self, source: &Path) -> PathBuf {
        use sha2::Digest;
        let name = source
            .file_name()
            .map(|n| label::slug(&n.to_string_lossy()))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "repo".into());
        let hash = sha2::Sha256::digest(source.as_os_str().as_encoded_bytes());
        let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
        self.root.join(format!("{name}-{hex}"))
    }

    fn private_dir(dir: &Path) -> Result<(), Error> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
        let m = std::fs::symlink_metadata(dir)
            .map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
        if !m.file_type().is_dir() {
            return Err(Error::Io(format!("{} is not a directory", dir.display())));
        }
        Ok(())
    }

    /// Makes a worktree of the repository `dir` is in, for a session that will run in
    /// [`Created::cwd`].
    pub fn create(&self, dir: &Path, plan: &Plan) -> Result<Created, Error> {
        let (source, below) = Self::source_of(dir)?;
        let base = Git::at(&source)
            .args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
            .line()
            .map_err(|e| match e {
                Error::Git { .. } => Error::NoCommits(source.clone()),
                e => e,
            })?;
        if base.is_empty() {
            return Err(Error::NoCommits(source));
        }
        let repo = self.repo_dir(&source);
        Self::private_dir(&repo)?;
        let onto = Self::branch_of(&source);
        let mut tries = 0;
        let (record, file) = loop {
            tries += 1;
            let label = match &plan.label {
                Some(l) => label::check(l).map_err(Error::BadLabel)?,
                None => label::made_up(),
            };
            let branch = format!("trellis/{label}");
            let file = repo.join(format!("{label}.json"));
            let path = repo.join(&label);
            let taken = Git::at(&source)
                .args(["rev-parse", "--verify", "--quiet"])
                .arg(format!("refs/heads/{branch}"))
                .ok()?;
            let problem = if taken {
                Some(Error::BranchExists(label.clone()))
            } else if std::fs::symlink_metadata(&path).is_ok() {
                Some(Error::LabelTaken(label.clone()))
            } else {
                let record = Record {
                    version: record::VERSION,
                    label: label.clone(),
                    branch,
                    path,
                    source: source.clone(),
                    base: base.clone(),
                    created_at: now_s(),
                    stage: Stage::Creating,
                    identity: None,
                    carried: plan.carry,
                    ended_at: None,
                    snapshot: None,
                    onto: onto.clone(),
                };
                if record.create(&file)? {
                    break (record, file);
                }
                Some(Error::LabelTaken(label))
            };
            match problem {
                Some(e) if plan.label.is_some() || tries >= 16 => return Err(e),
                _ => continue,
            }
        };
        let mut record = record;
        // One `git worktree add` at a time per repository among Trellis processes: git
        // reads the other worktrees' records while it adds one, and fails on one another
        // add has half written ("failed to read .git/worktrees/…/commondir").
        let adding = end::Lock::at(&repo.join("add.lock"));
        let added = adding.and_then(|_held| {
            Git::at(&source)
                .args(["worktree", "add", "-b", &record.branch])
                .arg(&record.path)
                .arg(&base)
                .output()
        });
        if let Err(e) = added {
            // Nothing was made that needs a record (git cleans up after itself); the
            // record was ours, created exclusively.
            if std::fs::symlink_metadata(&record.path).is_err() {
                let _ = std::fs::remove_file(&file);
            }
            return Err(e);
        }
        record.identity = Some(Identity::of(&record.path).map_err(Error::Io)?);
        record.stage = Stage::Active;
        record.save(&file)?;
        let tree = record.path.clone();
        let mut carried = Carried::default();
        let fail = |e: Error, label: &str| {
            Error::Refused(format!(
                "{e}; the worktree is at {} (end it with `trellis worktree discard {label}`)",
                tree.display()
            ))
        };
        if plan.carry {
            carry::uncommitted(&source, &tree, &mut carried).map_err(|e| fail(e, &record.label))?;
        }
        carry::included(&source, &tree, &mut carried).map_err(|e| fail(e, &record.label))?;
        let setup_failed = plan
            .setup
            .as_deref()
            .and_then(|cmd| setup(cmd, &tree, &source).err());
        let cwd = if below.as_os_str().is_empty() || !tree.join(&below).is_dir() {
            tree.clone()
        } else {
            tree.join(&below)
        };
        Ok(Created {
            record,
            cwd,
            carried,
            setup_failed,
        })
    }

    /// Every record, with what is found of its worktree now, and the directories among
    /// Trellis's worktrees that no record explains.
    pub fn list(&self) -> Listing {
        let mut out = Listing::default();
        let Ok(repos) = std::fs::read_dir(&self.root) else {
            return out;
        };
        let mut repos: Vec<_> = repos.flatten().map(|e| e.path()).collect();
        repos.sort();
        for repo in repos {
            if !std::fs::symlink_metadata(&repo).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&repo) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            entries.sort();
            let mut explained = std::collections::HashSet::new();
            for file in entries
                .iter()
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
            {
                match Record::read(file) {
                    Ok(record) => {
                        explained.insert(record.path.clone());
                        let status = status(&record);
                        out.found.push(Found {
                            record,
                            file: file.clone(),
                            status,
                        });
                    }
                    Err(e) => out.unreadable.push(e),
                }
            }
            for dir in entries.iter().filter(|p| p.is_dir()) {
                if !explained.contains(dir) {
                    out.orphans.push(Orphan {
                        path: dir.clone(),
                        why: "no record: Trellis did not finish making it, or its record was removed; Trellis leaves it alone".into(),
                    });
                }
            }
        }
        out.found.sort_by(|a, b| {
            (a.record.created_at, &a.record.label).cmp(&(b.record.created_at, &b.record.label))
        });
        out
    }

    /// The worktree of Trellis's (there now, not ended) that `dir` is in, if it is in one.
    pub fn containing(&self, dir: &Path) -> Option<Found> {
        let dir = std::fs::canonicalize(dir).ok()?;
        let root = std::fs::canonicalize(&self.root).ok()?;
        if !dir.starts_with(&root) {
            return None;
        }
        self.list().found.into_iter().find(|f| {
            f.status == Status::Owned
                && std::fs::canonicalize(&f.record.path).is_ok_and(|p| dir.starts_with(p))
        })
    }

    /// A lease on the worktree `dir` is in, held by a session running there (see
    /// [`lease`]); none when `dir` is in no worktree of Trellis's.
    pub fn lease_for(&self, dir: &Path) -> Result<Option<lease::Lease>, Error> {
        match self.containing(dir) {
            Some(f) => lease::take(&f.file, &f.record.label).map(Some),
            None => Ok(None),
        }
    }

    /// The record labelled `label`; when several repositories have one, the one of the
    /// repository `here` is in.
    pub fn find(&self, label: &str, here: Option<&Path>) -> Result<Found, Error> {
        let mut all: Vec<Found> = self
            .list()
            .found
            .into_iter()
            .filter(|f| f.record.label == label)
            .collect();
        if all.len() > 1
            && let Some((top, _)) = here.and_then(|h| Self::source_of(h).ok())
        {
            all.retain(|f| f.record.source == top);
        }
        match all.len() {
            0 => Err(Error::NotFound(label.into())),
            1 => Ok(all.remove(0)),
            _ => Err(Error::Ambiguous {
                label: label.into(),
                sources: all
                    .iter()
                    .map(|f| f.record.source.display().to_string())
                    .collect(),
            }),
        }
    }
}

/// What is found of a recorded worktree now.
pub fn status(record: &Record) -> Status {
    match record.stage {
        Stage::Creating => return Status::Incomplete,
        s if !s.has_tree() => return Status::Ended,
        _ => {}
    }
    let Some(want) = &record.identity else {
        return Status::Incomplete;
    };
    match std::fs::symlink_metadata(&record.path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Status::Foreign(format!("{} is not a directory", record.path.display())),
        Err(_) => {
            return Status::Missing(format!(
                "{} was removed outside Trellis",
                record.path.display()
            ));
        }
    }
    match Identity::of(&record.path) {
        Ok(now) if want.matches(&now) => Status::Owned,
        Ok(now) => Status::Foreign(format!(
            "git's record of it ({}) is not the one Trellis made",
            now.admin.display()
        )),
        Err(_) if std::fs::symlink_metadata(&want.admin).is_err() => Status::Missing(format!(
            "git no longer knows it ({} is gone)",
            want.admin.display()
        )),
        Err(why) => Status::Foreign(why),
    }
}

/// Runs the setup command in the new tree; its output goes to standard error (never to
/// the standard output a headless run writes events on).
fn setup(cmd: &str, tree: &Path, source: &Path) -> Result<(), String> {
    use std::os::fd::AsFd;
    use std::os::unix::process::CommandExt;
    let err = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("[worktree] setup: {e}"))?;
    let out = err
        .try_clone()
        .map_err(|e| format!("[worktree] setup: {e}"))?;
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(tree)
        .env("TRELLIS_WORKTREE_ROOT", tree)
        .env("TRELLIS_SOURCE_ROOT", source)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(out))
        .stderr(std::process::Stdio::from(err))
        .process_group(0);
    trellis_os::priority::die_with_parent(&mut c);
    let mut child =
        trellis_os::reaper::spawn_owned(&mut c).map_err(|e| format!("[worktree] setup: {e}"))?;
    let pid = child.id();
    let status = child.wait();
    trellis_os::reaper::disown(pid);
    // Whatever it left running in its group ends with it.
    trellis_os::group::stop_leftovers(pid, std::time::Duration::from_secs(1));
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("[worktree] setup `{cmd}` failed ({s})")),
        Err(e) => Err(format!("[worktree] setup: {e}")),
    }
}
