//! Checkpoints of a working tree, and putting files back from one.
//!
//! A checkpoint is the working tree as it is (tracked changes and untracked files; not
//! ignored ones, nor an untracked file over [`SIZE_BOUND`], which are left out and said)
//! written as a commit through a private index and kept alive by a ref of Trellis's
//! (`refs/trellis/checkpoints/…`). The user's index, HEAD, branches and stash are never
//! touched. The private index starts as a copy of the user's, so that git's stat cache
//! spares hashing files that did not change.
//!
//! A restore first takes a checkpoint of the tree as it is (so that the restore can be
//! undone), then puts back, from the chosen checkpoint, only the files the caller says may
//! be put back; every other difference is kept and listed. Files are written by git from
//! a private index (`checkout-index`), never through a link, and only inside the tree.

use std::path::{Path, PathBuf};

use crate::Error;
use crate::git::Git;

/// Untracked files larger than this are left out of a checkpoint (and said): a build
/// artefact or a dataset would make every checkpoint as large.
pub const SIZE_BOUND: u64 = 8 << 20;

/// A checkpoint taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The top level of the repository.
    pub top: PathBuf,
    pub commit: String,
    /// Untracked files left out for their size (relative to the top), with it.
    pub left_out: Vec<(PathBuf, u64)>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Put back as they were (relative to the top).
    pub restored: Vec<PathBuf>,
    /// Made since the checkpoint, and removed.
    pub removed: Vec<PathBuf>,
    /// Different from the checkpoint but left as they are, each with why.
    pub kept: Vec<(PathBuf, &'static str)>,
    /// The checkpoint of the tree as it was before the restore.
    pub undo: String,
}

/// The top level of the repository `dir` is in.
pub fn top(dir: &Path) -> Result<PathBuf, Error> {
    Git::at(dir)
        .args(["rev-parse", "--show-toplevel"])
        .line()
        .map(PathBuf::from)
        .map_err(|e| match e {
            Error::Git { .. } => Error::NotARepository(dir.to_path_buf()),
            e => e,
        })
}

/// Takes a checkpoint of the repository `dir` is in and points `refname` at it.
pub fn take(dir: &Path, refname: &str, message: &str) -> Result<Taken, Error> {
    take_unless(
        dir,
        refname,
        message,
        &std::sync::atomic::AtomicBool::new(false),
    )
}

/// [`take`], but no ref is written once `late` is set (the turn it was for has begun: the
/// tree may already hold its changes).
pub fn take_unless(
    dir: &Path,
    refname: &str,
    message: &str,
    late: &std::sync::atomic::AtomicBool,
) -> Result<Taken, Error> {
    let top = top(dir)?;
    let scratch =
        tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let index = scratch.path().join("index");
    seed_index(&top, &index)?;
    let with_index = |g: Git| g.env("GIT_INDEX_FILE", &index);
    // Large untracked files stay out (they are in no checkpoint: a restore never
    // touches them).
    let untracked =
        with_index(Git::at(&top).args(["ls-files", "-z", "-o", "--exclude-standard"])).paths()?;
    let mut left_out = Vec::new();
    for p in untracked {
        if let Ok(m) = std::fs::symlink_metadata(top.join(&p))
            && m.is_file()
            && m.len() > SIZE_BOUND
        {
            left_out.push((p, m.len()));
        }
    }
    let mut add = verbatim(with_index(Git::at(&top))).args(["add", "-A"]);
    if !left_out.is_empty() {
        let list = scratch.path().join("left-out");
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b":(top)\0");
        for (p, _) in &left_out {
            use std::os::unix::ffi::OsStrExt;
            bytes.extend_from_slice(b":(top,exclude,literal)");
            bytes.extend_from_slice(p.as_os_str().as_bytes());
            bytes.push(0);
        }
        std::fs::write(&list, bytes).map_err(|e| Error::Io(format!("{}: {e}", list.display())))?;
        let mut spec = std::ffi::OsString::from("--pathspec-from-file=");
        spec.push(list.as_os_str());
        add = add.args(["--pathspec-file-nul"]).arg(spec);
    } else {
        add = add.args(["--", ":(top)"]);
    }
    add.output().map_err(|e| match e {
        Error::Git { said, .. } if said.contains("does not have a commit checked out") => {
            Error::Refused(format!(
                "git cannot record the tree: {}; commit in that repository, or add it to .gitignore",
                said.lines().next().unwrap_or_default().trim_start_matches("error: ")
            ))
        }
        e => e,
    })?;
    let tree = with_index(Git::at(&top).arg("write-tree")).line()?;
    let head = Git::at(&top)
        .args(["rev-parse", "-q", "--verify", "HEAD^{commit}"])
        .line()
        .ok()
        .filter(|h| !h.is_empty());
    let mut commit = trellis_author(Git::at(&top)).args(["commit-tree", &tree]);
    if let Some(h) = &head {
        commit = commit.args(["-p", h]);
    }
    let commit = commit.arg("-m").arg(message).line()?;
    if late.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(Error::Refused(
            "it came too late: the turn had begun".into(),
        ));
    }
    Git::at(&top)
        .args(["update-ref", refname, &commit])
        .output()?;
    Ok(Taken {
        top,
        commit,
        left_out,
    })
}

/// The most directories a [`Keeper`] watches; a larger tree is looked at every turn.
pub const WATCH_LIMIT: usize = 20_000;

/// One session's checkpoints, turn after turn. A watch on the tree (Linux) says whether
/// anything changed since the last checkpoint: when nothing did, the new ref points at
/// the last one's commit and git does not look at the tree at all (a turn's start then
/// costs one `git update-ref`); when something did, or with no watch, it is [`take`].
pub struct Keeper {
    dir: PathBuf,
    top: Option<PathBuf>,
    /// Made at the first checkpoint, before it looks (`None` inside: no watch here).
    watch: Option<Option<trellis_os::watch::Watch>>,
    last: Option<Taken>,
}

impl Keeper {
    pub fn new(dir: &Path) -> Keeper {
        Keeper {
            dir: dir.to_path_buf(),
            top: None,
            watch: None,
            last: None,
        }
    }

    /// [`take_unless`], or the last checkpoint again when the watch saw nothing change
    /// since; `true` with it in that case.
    pub fn take(
        &mut self,
        refname: &str,
        message: &str,
        late: &std::sync::atomic::AtomicBool,
    ) -> Result<(Taken, bool), Error> {
        let top = match &self.top {
            Some(t) => t.clone(),
            None => {
                let t = top(&self.dir)?;
                self.top = Some(t.clone());
                t
            }
        };
        // Watching starts before the first look: whatever changes during a look is seen
        // by the next one.
        let watch = self
            .watch
            .get_or_insert_with(|| trellis_os::watch::Watch::new(&top, &[".git"], WATCH_LIMIT));
        let unchanged = watch.as_mut().is_some_and(|w| !w.changed());
        if unchanged && let Some(last) = &self.last {
            if late.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Refused(
                    "it came too late: the turn had begun".into(),
                ));
            }
            Git::at(&top)
                .args(["update-ref", refname, &last.commit])
                .output()?;
            return Ok((last.clone(), true));
        }
        // What the watch saw is used up: a look that fails leaves nothing to stand on.
        self.last = None;
        let taken = take_unless(&self.dir, refname, message, late)?;
        self.last = Some(taken.clone());
        Ok((taken, false))
    }
}

/// Puts back, from checkpoint `to`, the files that differ from it and that `may` allows,
/// after keeping the tree as it is on `undo_ref` (a checkpoint like any other: [`undo`]
/// puts it back). Nothing is written or removed that the undo checkpoint does not hold:
/// a file left out of it (ignored, or over [`SIZE_BOUND`]), a directory where the
/// checkpoint has a file, a file or link where it has a directory are kept and said.
pub fn restore(
    dir: &Path,
    to: &str,
    may: &dyn Fn(&Path) -> Option<&'static str>,
    undo_ref: &str,
) -> Result<Restored, Error> {
    let target = commit_of(dir, to)?;
    let message = format!("{UNDO_MESSAGE}{target}");
    let now = take(dir, undo_ref, &message)?;
    let top = now.top.clone();
    let changes = diff(&top, &target, &now.commit)?;
    let held = files_of(&top, &now.commit)?;
    let mut done = Restored {
        undo: now.commit.clone(),
        ..Restored::default()
    };
    // Left out of the undo checkpoint for its size, where the rewind would write (the
    // checkpoint has that path) or the agent's file was: in no checkpoint, so untouched,
    // and said.
    if !now.left_out.is_empty() {
        let wanted = files_of(&top, &target)?;
        for (path, _) in &now.left_out {
            if wanted.contains(path) || may(path) != Some(KEPT_NOT_AGENTS) {
                done.kept.push((path.clone(), KEPT_UNSAVED));
            }
        }
    }
    let mut put_back = Vec::new();
    for (added, path) in changes {
        if let Some(why) = may(&path) {
            done.kept.push((path, why));
        } else if let Some(why) = unsafe_to_touch(&top, &path, &held) {
            done.kept.push((path, why));
        } else if added {
            // Made since the checkpoint (and in the undo checkpoint): removed.
            remove_inside(&top, &path)?;
            done.removed.push(path);
        } else {
            put_back.push(path);
        }
    }
    write_from(&top, &target, &put_back)?;
    done.restored = put_back;
    remove_emptied(&top, &target, &done.removed);
    if done.restored.is_empty() && done.removed.is_empty() {
        // Nothing changed: no undo point to keep.
        Git::at(&top)
            .args(["update-ref", "-d", undo_ref])
            .output()?;
        done.undo.clear();
    }
    Ok(done)
}

/// Puts back the tree as it was before the rewind that left `undo_commit`: only the files
/// that rewind changed and that are still as it left them (a file made or changed since
/// is kept), after keeping the tree as it is on `undo_ref`.
pub fn undo(dir: &Path, undo_commit: &str, undo_ref: &str) -> Result<Restored, Error> {
    let undo_commit = commit_of(dir, undo_commit)?;
    let said = Git::at(dir)
        .args(["log", "-1", "--format=%B", &undo_commit])
        .output()?;
    let said = String::from_utf8_lossy(&said);
    let Some(target) = said.trim().strip_prefix(UNDO_MESSAGE).map(str::to_string) else {
        return Err(Error::Refused(format!(
            "{undo_commit} is not the tree before a rewind"
        )));
    };
    let top = top(dir)?;
    // What the rewind could have changed, and how it left each: as the checkpoint it
    // went back to has it.
    let rewound: Vec<PathBuf> = diff(&top, &target, &undo_commit)?
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    let as_left = |p: &Path| -> bool {
        let spec = format!("{target}:{}", p.to_string_lossy());
        let wanted = Git::at(&top)
            .args(["rev-parse", "-q", "--verify", &spec])
            .line()
            .ok()
            .filter(|s| !s.is_empty());
        let on_disk = std::fs::symlink_metadata(top.join(p)).ok();
        match (wanted, on_disk) {
            (None, None) => true,
            (Some(blob), Some(m)) if m.is_file() => Git::at(&top)
                .args(["hash-object", "--"])
                .arg(top.join(p))
                .line()
                .is_ok_and(|h| h == blob),
            _ => false,
        }
    };
    let may = |p: &Path| (!(rewound.iter().any(|r| r == p) && as_left(p))).then_some(KEPT_SINCE);
    let mut done = restore(dir, &undo_commit, &may, undo_ref)?;
    // Files the rewind did not touch are no news.
    done.kept.retain(|(p, _)| rewound.iter().any(|r| r == p));
    Ok(done)
}

/// The message of an undo checkpoint, before the commit the rewind went back to.
const UNDO_MESSAGE: &str = "trellis: the tree before a rewind to ";

/// Why a file was kept.
pub const KEPT_NOT_AGENTS: &str = "changed by someone other than the agent";
pub const KEPT_NOT_AS_LEFT: &str = "no longer as the agent left it";
pub const KEPT_OUTSIDE: &str = "outside the session's directory";
pub const KEPT_SINCE: &str = "changed since the rewind";
pub const KEPT_UNSAVED: &str =
    "what is there now (ignored, or over 8 MB) is in no checkpoint: left as it is";
pub const KEPT_DIR: &str = "a directory stands there now";
pub const KEPT_THROUGH: &str =
    "a file or link stands where the checkpoint has a directory above it";

fn commit_of(dir: &Path, rev: &str) -> Result<String, Error> {
    Git::at(dir)
        .args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")])
        .line()
        .map_err(|_| Error::Refused(format!("no checkpoint {rev} in this repository")))
}

/// The paths that differ from `from` to `to`, each with whether `to` added it.
fn diff(top: &Path, from: &str, to: &str) -> Result<Vec<(bool, PathBuf)>, Error> {
    let out = Git::at(top)
        .args([
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-status",
            from,
            to,
        ])
        .output()?;
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    let mut v = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        use std::os::unix::ffi::OsStrExt;
        v.push((
            status == b"A",
            PathBuf::from(std::ffi::OsStr::from_bytes(path)),
        ));
    }
    Ok(v)
}

/// Every file of `commit`.
fn files_of(top: &Path, commit: &str) -> Result<std::collections::HashSet<PathBuf>, Error> {
    Ok(Git::at(top)
        .args(["ls-tree", "-r", "-z", "--name-only", commit])
        .paths()?
        .into_iter()
        .collect())
}

/// Why writing or removing `rel` could lose what no checkpoint holds, if it could.
fn unsafe_to_touch(
    top: &Path,
    rel: &Path,
    held: &std::collections::HashSet<PathBuf>,
) -> Option<&'static str> {
    let mut at = top.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        at.push(c);
        let Ok(m) = std::fs::symlink_metadata(&at) else {
            // Nothing there, nor below.
            return None;
        };
        if i + 1 < parts.len() {
            if !m.is_dir() {
                return Some(KEPT_THROUGH);
            }
        } else if m.is_dir() {
            return Some(KEPT_DIR);
        } else if !held.contains(rel) {
            return Some(KEPT_UNSAVED);
        }
    }
    None
}

/// Writes `paths` as commit `target` has them, through a private index.
fn write_from(top: &Path, target: &str, paths: &[PathBuf]) -> Result<(), Error> {
    if paths.is_empty() {
        return Ok(());
    }
    let scratch =
        tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let index = scratch.path().join("index");
    let with_index = |g: Git| g.env("GIT_INDEX_FILE", &index);
    with_index(Git::at(top).args(["read-tree", target])).output()?;
    let list = scratch.path().join("paths");
    let mut bytes = Vec::new();
    for p in paths {
        use std::os::unix::ffi::OsStrExt;
        bytes.extend_from_slice(p.as_os_str().as_bytes());
        bytes.push(0);
    }
    std::fs::write(&list, &bytes).map_err(|e| Error::Io(format!("{}: {e}", list.display())))?;
    let file = std::fs::File::open(&list).map_err(|e| Error::Io(e.to_string()))?;
    verbatim(with_index(Git::at(top)))
        .args(["checkout-index", "-f", "-z", "--stdin"])
        .stdin(file)
        .output()?;
    Ok(())
}

/// Removes the directories `removed` left empty that `target` does not have.
fn remove_emptied(top: &Path, target: &str, removed: &[PathBuf]) {
    let mut dirs: Vec<PathBuf> = removed
        .iter()
        .flat_map(|p| {
            p.ancestors()
                .skip(1)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in dirs {
        let spec = format!("{target}:{}", d.to_string_lossy());
        let in_target = Git::at(top)
            .args(["cat-file", "-e", &spec])
            .ok()
            .unwrap_or(true);
        let path = top.join(&d);
        let real_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if !in_target && real_dir {
            // Fails, as it should, when something is in it.
            let _ = std::fs::remove_dir(&path);
        }
    }
}

/// The checkpoints under `prefix` (`refs/trellis/checkpoints/S/`): each ref's last name
/// and its commit, in ref order.
pub fn list(dir: &Path, prefix: &str) -> Result<Vec<(String, String)>, Error> {
    let out = Git::at(dir)
        .args(["for-each-ref", "--format=%(refname) %(objectname)", prefix])
        .output()?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let (r, c) = l.split_once(' ')?;
            Some((r.strip_prefix(prefix)?.to_string(), c.to_string()))
        })
        .collect())
}

/// Deletes the refs under `prefix` (the checkpoints of a session that is removed).
pub fn forget(dir: &Path, prefix: &str) -> Result<usize, Error> {
    let refs = list(dir, prefix)?;
    for (name, _) in &refs {
        Git::at(dir)
            .args(["update-ref", "-d", &format!("{prefix}{name}")])
            .output()?;
    }
    Ok(refs.len())
}

/// Starts the private index `index` as a copy of the user's (git's stat cache), or of
/// HEAD when there is none.
fn seed_index(top: &Path, index: &Path) -> Result<(), Error> {
    let theirs = Git::at(top)
        .args(["rev-parse", "--git-path", "index"])
        .line()?;
    let theirs = top.join(theirs);
    match trellis_os::fd::open_regular(&theirs) {
        Ok(Some(mut from)) => {
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(index)
                .map_err(|e| Error::Io(format!("{}: {e}", index.display())))?;
            std::io::copy(&mut from, &mut to).map_err(|e| Error::Io(format!("index: {e}")))?;
            Ok(())
        }
        _ => {
            // A repository without an index yet (no commit, nothing staged).
            let head = Git::at(top)
                .args(["rev-parse", "-q", "--verify", "HEAD^{tree}"])
                .line()
                .ok()
                .filter(|h| !h.is_empty());
            if let Some(h) = head {
                Git::at(top)
                    .env("GIT_INDEX_FILE", index)
                    .args(["read-tree", &h])
                    .output()?;
            }
            Ok(())
        }
    }
}

/// Removes `rel` under `top`, refusing a path that leaves the tree through a link.
fn remove_inside(top: &Path, rel: &Path) -> Result<(), Error> {
    let mut at = top.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        let std::path::Component::Normal(name) = c else {
            return Err(Error::Refused(format!(
                "{} is not a path inside the tree",
                rel.display()
            )));
        };
        at.push(name);
        let last = i + 1 == parts.len();
        match std::fs::symlink_metadata(&at) {
            Ok(m) if !last && !m.is_dir() => {
                return Err(Error::Refused(format!(
                    "{} is reached through a link or a file; left as it is",
                    rel.display()
                )));
            }
            Ok(_) => {}
            // Gone already.
            Err(_) => return Ok(()),
        }
    }
    std::fs::remove_file(&at).map_err(|e| Error::Io(format!("{}: {e}", at.display())))
}

/// Files as bytes, both ways: no line-ending conversion, no attribute (a filter, `text`)
/// from the tree. A checkpoint holds the file as it is, and gives back the same bytes.
fn verbatim(g: Git) -> Git {
    // The empty tree: attributes are read from it instead of the work tree.
    g.env(
        "GIT_ATTR_SOURCE",
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    )
    .args([
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.eol=lf",
        "-c",
        "core.safecrlf=false",
    ])
}

fn trellis_author(g: Git) -> Git {
    g.env("GIT_AUTHOR_NAME", "Trellis")
        .env("GIT_AUTHOR_EMAIL", "trellis@localhost")
        .env("GIT_COMMITTER_NAME", "Trellis")
        .env("GIT_COMMITTER_EMAIL", "trellis@localhost")
}
