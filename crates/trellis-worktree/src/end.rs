//! How a worktree ends: land, apply, keep, discard (and sync, which brings the source's
//! new commits in so that a land can fast-forward).
//!
//! Every ending takes the label's lock, reads the record again and checks that the tree is
//! still the one Trellis made, right before acting. Branches are never deleted; a tree is
//! removed only after its whole state (uncommitted and untracked files included) is kept
//! as a commit a ref points to, or once everything in it is on a branch.

use std::path::Path;

use crate::git::Git;
use crate::record::{Record, Stage};
pub use crate::state::snapshot;
use crate::state::{owned, snapshot_with, source_branch, survey};
use crate::{Error, Found, Status, now_s, status};

/// How long an ending waits for another one on the same label.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What an ending did, for the user.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub lines: Vec<String>,
    pub record: Option<Record>,
}

impl Outcome {
    fn say(&mut self, s: impl Into<String>) {
        self.lines.push(s.into());
    }
}

/// `flock` on `<label>.lock` beside the record: created without following links, never
/// removed.
pub(crate) struct Lock {
    _held: trellis_os::lock::Held,
}

impl Lock {
    fn take(record_file: &Path) -> Result<Lock, Error> {
        Lock::at(&record_file.with_extension("lock"))
    }

    /// `flock` on `file` (created without following links, never removed), waited for.
    pub(crate) fn at(file: &Path) -> Result<Lock, Error> {
        match trellis_os::lock::take_within(file, LOCK_WAIT) {
            Ok(Some(held)) => Ok(Lock { _held: held }),
            Ok(None) => Err(Error::Refused(format!(
                "another Trellis holds {} (ending this worktree, or adding one)",
                file.display()
            ))),
            Err(e) => Err(Error::Io(format!("{}: {e}", file.display()))),
        }
    }
}

/// Refuses while a session runs in the worktree: an ending that changes or removes the
/// tree must not do it under a live agent.
fn idle(found: &Found) -> Result<(), Error> {
    let holders = crate::lease::holders(found);
    if holders.is_empty() {
        Ok(())
    } else {
        Err(Error::InUse {
            label: found.record.label.clone(),
            holders,
        })
    }
}

/// Keeps the snapshot under `refs/trellis/retired/<label>-<sha>` (never replacing a ref).
fn retire_ref(record: &Record, commit: &str) -> Result<String, Error> {
    let short: String = commit.chars().take(12).collect();
    let name = format!("refs/trellis/retired/{}-{short}", record.label);
    let exists = Git::at(&record.source)
        .args(["rev-parse", "--verify", "--quiet", &name])
        .line();
    match exists {
        Ok(at) if at == commit => return Ok(name),
        Ok(_) => {
            return Err(Error::Refused(format!(
                "{name} exists and points elsewhere"
            )));
        }
        Err(Error::Git { .. }) => {}
        Err(e) => return Err(e),
    }
    // The empty old value: create only.
    Git::at(&record.source)
        .args([
            "update-ref",
            "-m",
            "trellis: retired worktree",
            &name,
            commit,
            "",
        ])
        .output()?;
    Ok(name)
}

/// Refuses, before anything is committed, a worktree holding a repository of its own
/// that is not tracked: `git add -A` would commit it as a bare link (no submodule, no
/// `.gitmodules` entry) to commits no ref of this repository keeps.
fn no_untracked_repos(record: &Record, action: &str, then: &str) -> Result<(), Error> {
    let repos = crate::state::untracked_repos(&record.path)?;
    if repos.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "{action} would commit {} in {} as a bare link to commits this repository does not have; nothing was changed: move it out of the worktree, then {then}",
        crate::state::repos_said(&repos),
        record.path.display()
    )))
}

/// Removes the tree, checked once more to be Trellis's right before.
fn remove_tree(record: &Record, force: bool) -> Result<(), Error> {
    if status(record) != Status::Owned {
        return Err(Error::Refused(format!(
            "{} changed while it was being ended; left as it is",
            record.path.display()
        )));
    }
    let mut g = Git::at(&record.source).args(["worktree", "remove"]);
    if force {
        g = g.arg("--force");
    }
    g.arg(&record.path).output()?;
    Ok(())
}

fn finish(found: &Found, mut record: Record, stage: Stage) -> Result<Record, Error> {
    record.stage = stage;
    record.ended_at = Some(now_s());
    record.save(&found.file)?;
    Ok(record)
}

/// A commit message for a session's work: its prompt's first line as the subject (cut at
/// a word), the whole prompt below it (bounded), and who did it where.
pub fn commit_message(prompt: &str, agent: Option<&str>, label: &str) -> String {
    const SUBJECT: usize = 72;
    const BODY: usize = 4000;
    let prompt = prompt.trim();
    let first = prompt.lines().next().unwrap_or("").trim();
    let subject = if first.chars().count() <= SUBJECT {
        first.to_string()
    } else {
        let cut: String = first.chars().take(SUBJECT - 1).collect();
        let cut = match cut.rfind(' ') {
            Some(i) if i > SUBJECT / 2 => cut[..i].to_string(),
            _ => cut,
        };
        format!("{cut}…")
    };
    let mut msg = subject;
    if prompt != first || first.chars().count() > SUBJECT {
        let body: String = prompt.chars().take(BODY).collect();
        msg.push_str("\n\n");
        msg.push_str(&body);
    }
    msg.push_str(&format!(
        "\n\nDone by {} in Trellis worktree {label}.",
        agent.unwrap_or("an agent")
    ));
    msg
}

/// Fast-forwards the source's branch to the worktree's: the worktree's uncommitted work is
/// committed on its branch first (`message`, else one naming the worktree; the user's
/// identity and hooks), the source must not have moved on (else: [`sync`] first), no file
/// of the source that no commit has may be in the way ([`crate::guard`]), then the tree
/// is removed (everything in it is on the branch).
pub fn land(found: &Found, message: Option<&str>) -> Result<Outcome, Error> {
    let _lock = Lock::take(&found.file)?;
    let record = owned(found)?;
    idle(found)?;
    let mut out = Outcome::default();
    let tree = &record.path;
    // Every check before anything is committed (against the whole state the commit below
    // would hold), so a refusal leaves the worktree as it was too.
    let crate::plan::Checked {
        target, ff, dirty, ..
    } = crate::plan::check(&record, false)?;
    // The source moved on: refused before anything is committed (a sync commits, and
    // says so; an apply needs no commit).
    if !ff {
        return Err(Error::Diverged {
            target,
            branch: record.branch.clone(),
            label: record.label.clone(),
        });
    }
    no_untracked_repos(&record, "landing", "land again")?;
    if dirty {
        let msg = message
            .map(str::to_string)
            .unwrap_or_else(|| format!("Work of Trellis worktree {}", record.label));
        Git::at(tree).args(["add", "-A", "--", "."]).output()?;
        Git::at(tree).args(["commit", "-q", "-m", &msg]).output()?;
        out.say(format!(
            "committed the worktree's uncommitted work on {}",
            record.branch
        ));
    }
    Git::at(&record.source)
        .args([
            "merge",
            "--ff-only",
            "--no-overwrite-ignore",
            "-q",
            &record.branch,
        ])
        .output()
        .map_err(|e| {
            Error::Refused(format!(
                "{target} was not moved: {e}\n(the source has uncommitted changes to files the worktree changed — work carried in with --carry is still there too: commit or stash them in {}, then land again; the worktree's work is safe on {})",
                record.source.display(),
                record.branch
            ))
        })?;
    out.say(format!("{target} fast-forwarded to {}", record.branch));
    // Everything but its ignored files is on the branch now: those go into a snapshot
    // first (or the tree stays).
    let removed = survey(&record, "landing", false).and_then(|kept| {
        let mut record = record.clone();
        if !kept.keep.is_empty() {
            let (snap, _) = snapshot_with(tree, &record.label, &kept.keep)?;
            let name = retire_ref(&record, &snap)?;
            out.say(format!(
                "its {} ignored file(s) kept as {name}",
                kept.keep.len()
            ));
            record.snapshot = Some(name);
        }
        remove_tree(&record, false)?;
        said_caches(&kept, &mut out);
        Ok(record)
    });
    match removed {
        Ok(record) => {
            out.say(format!(
                "removed {} (branch {} kept)",
                tree.display(),
                record.branch
            ));
            out.record = Some(finish(found, record, Stage::Landed)?);
        }
        Err(e) => {
            out.say(format!("the tree stays at {}: {e}", tree.display()));
            out.record = Some(finish(found, record, Stage::Kept)?);
        }
    }
    Ok(out)
}

/// Merges the source's branch into the worktree's, so that a land can fast-forward; a
/// merge that conflicts is aborted, leaving the worktree as it was.
pub fn sync(found: &Found) -> Result<Outcome, Error> {
    let _lock = Lock::take(&found.file)?;
    let record = owned(found)?;
    idle(found)?;
    // The branch it was made from, whatever the source has checked out now.
    let target = match &record.onto {
        Some(o) => o.clone(),
        None => source_branch(&record.source)?,
    };
    let mut out = Outcome::default();
    // Its untracked files are committed below before the merge (they are its work, safe
    // on its branch then): only ignored ones, which no commit takes, are in the way.
    let endangered: Vec<_> = crate::guard::endangered(&record.path, "HEAD", &target, true)?
        .into_iter()
        .filter(|e| e.what != "untracked")
        .collect();
    if !endangered.is_empty() {
        return Err(crate::guard::refusal(
            "syncing",
            &record.path,
            &endangered,
            "sync again",
        ));
    }
    no_untracked_repos(&record, "syncing", "sync again")?;
    // Its uncommitted work is committed first (a merge must not mix with it), and said.
    let (_, dirty) = snapshot(&record.path, &record.label)?;
    if dirty {
        let msg = format!("Work of Trellis worktree {} (before a sync)", record.label);
        Git::at(&record.path)
            .args(["add", "-A", "--", "."])
            .output()?;
        Git::at(&record.path)
            .args(["commit", "-q", "-m", &msg])
            .output()?;
        out.say(format!(
            "committed the worktree's uncommitted work on {} (\"{msg}\") before merging",
            record.branch
        ));
    }
    match Git::at(&record.path)
        .args(["merge", "--no-edit", "--no-overwrite-ignore", "-q", &target])
        .output()
    {
        Ok(_) => out.say(format!("merged {target} into {}", record.branch)),
        Err(_) => {
            let conflicts = Git::at(&record.path)
                .args(["diff", "--name-only", "--diff-filter=U"])
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o)
                        .lines()
                        .take(crate::guard::LISTED)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let merging = Git::at(&record.path)
                .args(["rev-parse", "-q", "--verify", "MERGE_HEAD"])
                .ok()?;
            if merging {
                Git::at(&record.path).args(["merge", "--abort"]).output()?;
            }
            let committed = if dirty {
                " (its uncommitted work stays committed on its branch)"
            } else {
                ""
            };
            let named = if conflicts.is_empty() {
                String::new()
            } else {
                format!(" in {conflicts}")
            };
            return Err(Error::Refused(format!(
                "merging {target} into {} conflicts{named}: the merge was undone, the worktree is as it was{committed}. Merge by hand there (git merge {target}), or stage its changes instead: trellis worktree apply {}",
                record.branch, record.label
            )));
        }
    }
    out.record = Some(record);
    Ok(out)
}

/// The worktree's changes since it parted from the source (committed or not) as staged
/// changes in the source, all or nothing; then the tree is retired as [`discard`] does.
pub fn apply(found: &Found) -> Result<Outcome, Error> {
    let _lock = Lock::take(&found.file)?;
    let record = owned(found)?;
    idle(found)?;
    let kept = survey(&record, "applying", true)?;
    let mut out = Outcome::default();
    let (snap, _) = snapshot(&record.path, &record.label)?;
    // Its own work: from where it parts from the branch it was made from.
    let base = crate::plan::base(&record, &snap);
    crate::plan::uncommitted_overlap(
        &record,
        &base,
        &snap,
        "apply",
        &format!("the worktree's work is safe in {}", record.path.display()),
    )?;
    // The paths the patch writes, in the source as it is (at HEAD).
    let endangered = crate::guard::endangered(&record.source, &base, &snap, false)?;
    if !endangered.is_empty() {
        return Err(crate::guard::refusal(
            "applying",
            &record.source,
            &endangered,
            "apply again",
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let patch = dir.path().join("apply.patch");
    let mut output = std::ffi::OsString::from("--output=");
    output.push(patch.as_os_str());
    Git::at(&record.source)
        .args(["diff", "--binary", "--no-ext-diff", "--ignore-submodules"])
        .arg(output)
        .args([&base, &snap])
        .output()?;
    if std::fs::metadata(&patch).map(|m| m.len()).unwrap_or(0) == 0 {
        return Err(Error::Refused(format!(
            "worktree {} has no changes to apply",
            record.label
        )));
    }
    // The user's own staged changes (to other files: those to its files refused above)
    // stay in the index beside the applied ones: said, so that a commit takes both
    // knowingly.
    let mine = Git::at(&record.source)
        .args(["diff", "--cached", "--name-only", "-z"])
        .output()?
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .count();
    Git::at(&record.source)
        .args(["apply", "--index", "--binary", "--whitespace=nowarn"])
        .arg(&patch)
        .output()
        .map_err(|e| {
            // git names the patch, a temporary file gone by the time this is read.
            let said = e
                .to_string()
                .replace(&patch.display().to_string(), "its changes");
            Error::Refused(format!(
                "the changes do not apply to {} as it is now (nothing was changed): {said}",
                record.source.display()
            ))
        })?;
    out.say(format!(
        "the changes of {} are staged in {}",
        record.branch,
        record.source.display()
    ));
    if mine > 0 {
        out.say(format!(
            "your own {mine} staged file(s) stay staged beside them (`git diff --cached` shows both)"
        ));
    }
    retire(found, record, &kept, "", Stage::Applied, &mut out)?;
    Ok(out)
}

/// The end of a tree: its whole state — ignored files included, as [`crate::ignored`]
/// says — kept as a commit under `refs/trellis/retired/`, then the tree removed (the
/// branch stays), the record ended. `what`: how the snapshot is described.
fn retire(
    found: &Found,
    mut record: Record,
    survey: &crate::ignored::Ignored,
    what: &str,
    stage: Stage,
    out: &mut Outcome,
) -> Result<(), Error> {
    let (snap, _) = snapshot_with(&record.path, &record.label, &survey.keep)?;
    let name = retire_ref(&record, &snap)?;
    out.say(format!("snapshot{what} kept as {name}"));
    if !survey.keep.is_empty() {
        out.say(format!(
            "its {} ignored file(s) are in the snapshot too",
            survey.keep.len()
        ));
    }
    record.snapshot = Some(name);
    remove_tree(&record, true)?;
    out.say(format!(
        "removed {} (branch {} kept)",
        record.path.display(),
        record.branch
    ));
    said_caches(survey, out);
    out.record = Some(finish(found, record, stage)?);
    Ok(())
}

/// The caches that went with a tree, named.
fn said_caches(survey: &crate::ignored::Ignored, out: &mut Outcome) {
    if !survey.caches.is_empty() {
        out.say(format!(
            "caches removed with it (rebuilt by their tools): {}",
            survey.caches.join(", ")
        ));
    }
}

/// Leaves the worktree where it is, still Trellis's (listed as kept).
pub fn keep(found: &Found) -> Result<Outcome, Error> {
    let _lock = Lock::take(&found.file)?;
    let record = owned(found)?;
    let mut out = Outcome::default();
    out.say(format!(
        "kept {} on {}",
        record.path.display(),
        record.branch
    ));
    out.record = Some(finish(found, record, Stage::Kept)?);
    Ok(out)
}

/// Keeps the worktree's whole state as `refs/trellis/retired/<label>-<sha>`, then removes
/// the tree. A worktree already removed behind Trellis's back is only marked ended.
pub fn discard(found: &Found) -> Result<Outcome, Error> {
    let _lock = Lock::take(&found.file)?;
    let mut out = Outcome::default();
    let now = Record::read(&found.file).map_err(Error::Io)?;
    if let Status::Missing(why) = status(&now) {
        out.say(format!(
            "{why}; nothing to remove (branch {} kept)",
            now.branch
        ));
        out.record = Some(finish(found, now, Stage::Discarded)?);
        return Ok(out);
    }
    let record = owned(found)?;
    idle(found)?;
    let kept = survey(&record, "discarding", true)?;
    let (_, dirty) = snapshot(&record.path, &record.label)?;
    let what = if dirty {
        " of the uncommitted work"
    } else {
        ""
    };
    retire(found, record, &kept, what, Stage::Discarded, &mut out)?;
    Ok(out)
}

/// Lands one worktree of several made for the same work (or, when the source moved on,
/// applies its changes as staged changes), then discards each of the others behind its
/// snapshot ref. `message`: the commit message of its uncommitted work (what the work
/// was). A land that fails changes nothing; a discard that fails after it leaves that
/// worktree open, said in the outcome.
pub fn land_one(chosen: &Found, others: &[Found], message: Option<&str>) -> Result<Outcome, Error> {
    let mut out = Outcome::default();
    match land(chosen, message) {
        Ok(o) => out.lines.extend(o.lines),
        Err(e @ Error::Diverged { .. }) => {
            out.say(format!(
                "{} cannot land ({e}); applying it instead",
                chosen.record.label
            ));
            out.lines.extend(apply(chosen)?.lines);
        }
        Err(e) => return Err(e),
    }
    // Landed: what follows cannot undo it, and is said as what it is — a worktree that
    // could not be discarded stays, saying why.
    for f in others {
        match discard(f) {
            Ok(o) => out.lines.extend(o.lines),
            Err(e) => out.say(format!(
                "{} was not discarded (it stays, open): {e}",
                f.record.label
            )),
        }
    }
    Ok(out)
}
