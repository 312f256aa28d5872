//! What landing a worktree would do, found without changing anything: fast-forward the
//! source's branch (committing the worktree's uncommitted work first) or — the source
//! moved on — apply its changes to the source as staged changes; or why it cannot, before
//! anything is committed or any session is closed for it. [`crate::end::land`] acts only
//! on what these checks allow, so the question a UI asks says what will happen.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::git::Git;
use crate::record::Record;
use crate::state::{owned, snapshot, source_branch};
use crate::{Error, Found};

/// What a land of a worktree would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// `target` (the source's branch) fast-forwarded to the worktree's branch; `commit`:
    /// its uncommitted work is committed on the branch first.
    FastForward { target: String, commit: bool },
    /// `target` moved on since the worktree began: its changes are applied to the source
    /// as staged changes, nothing committed.
    Apply { target: String },
}

/// What the checks found, for [`crate::end::land`].
pub(crate) struct Checked {
    pub target: String,
    pub ff: bool,
    pub dirty: bool,
}

/// The paths a `-z` name list names.
fn names(out: &[u8]) -> HashSet<PathBuf> {
    out.split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect()
}

/// The checks a land makes before it changes anything (read-only: the snapshot goes
/// through a private index and is referenced by nothing). With `or_apply`, a source that
/// moved on is checked for the apply that takes the land's place (landing one of
/// several); without, it is only reported (`ff` false: a plain land refuses).
pub(crate) fn check(record: &Record, or_apply: bool) -> Result<Checked, Error> {
    let tree = &record.path;
    let on = Git::at(tree).args(["symbolic-ref", "-q", "HEAD"]).line();
    let want = format!("refs/heads/{}", record.branch);
    if on.as_deref().ok() != Some(want.as_str()) {
        return Err(Error::Refused(format!(
            "the worktree is not on its branch {} any more; land what it is on by hand",
            record.branch
        )));
    }
    let target = source_branch(&record.source)?;
    if let Some(onto) = record.onto.as_deref().filter(|o| *o != target) {
        return Err(Error::Refused(format!(
            "worktree {} was made from {onto}, and {} has {target} checked out: check out {onto} to land there (landing onto {target} would bring {onto}'s commits along). Nothing was changed",
            record.label,
            record.source.display()
        )));
    }
    // A commit on the branch keeps this answer: the branch's tip stays its parent.
    let ff = Git::at(&record.source)
        .args(["merge-base", "--is-ancestor", &target, &record.branch])
        .ok()?;
    let (snap, dirty) = snapshot(tree, &record.label)?;
    let safe_in = format!("the worktree's work is safe in {}", record.path.display());
    if ff {
        let endangered = crate::guard::endangered(&record.source, &target, &snap, false)?;
        if !endangered.is_empty() {
            return Err(crate::guard::refusal(
                "landing",
                &record.source,
                &endangered,
                &format!("land again ({safe_in})"),
            ));
        }
        // The source's own uncommitted changes to files the land would change: the
        // fast-forward would refuse them, after the worktree's work was committed.
        uncommitted_overlap(record, &target, &snap, "land", &safe_in)?;
    } else if or_apply {
        applies(record, &snap).map_err(|e| match e {
            Error::Refused(why) => Error::Refused(format!(
                "{target} moved on since worktree {} began, so a land would apply its changes instead, but {why}",
                record.label
            )),
            e => e,
        })?;
    }
    Ok(Checked { target, ff, dirty })
}

/// Refuses when the source has uncommitted changes, staged or not, to files the change
/// `from..to` writes: a fast-forward would refuse them, and an apply would mix the
/// worktree's changes into them (the user's own version then in no commit, no stash).
pub(crate) fn uncommitted_overlap(
    record: &Record,
    from: &str,
    to: &str,
    action: &str,
    safe_in: &str,
) -> Result<(), Error> {
    let changed = names(
        &Git::at(&record.source)
            .args(["diff", "--name-only", "-z", "--no-renames", from, to])
            .output()?,
    );
    let local = names(
        &Git::at(&record.source)
            .args(["diff", "--name-only", "-z", "--no-renames", "HEAD"])
            .output()?,
    );
    let mut both: Vec<String> = changed
        .intersection(&local)
        .map(|p| p.display().to_string())
        .collect();
    if both.is_empty() {
        return Ok(());
    }
    both.sort();
    let n = both.len();
    both.truncate(crate::guard::LISTED);
    Err(Error::Refused(format!(
        "{} has uncommitted changes (staged or not) to {n} file(s) the worktree changed too ({}): commit or stash them there, then {action} again (nothing was changed; {safe_in})",
        record.source.display(),
        both.join(", ")
    )))
}

/// What a worktree's work is measured from: where its state and the branch it was made
/// from part (after a sync, that branch's tip it took in — so what the source already has
/// is not counted as the worktree's; whatever the source has checked out now), else the
/// commit it began at.
pub(crate) fn base(record: &Record, snap: &str) -> String {
    // The branch it was made from, whatever the source has checked out now.
    record
        .onto
        .as_deref()
        .and_then(|onto| {
            Git::at(&record.path)
                .args(["merge-base", &format!("refs/heads/{onto}"), snap])
                .line()
                .ok()
        })
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| record.base.clone())
}

/// Whether the worktree's own changes (its state `snap` against [`base`]) apply to the
/// source as it is, as staged changes: an apply's checks, read-only.
fn applies(record: &Record, snap: &str) -> Result<(), Error> {
    let base = base(record, snap);
    uncommitted_overlap(
        record,
        &base,
        snap,
        "apply",
        &format!("the worktree's work is safe in {}", record.path.display()),
    )?;
    let endangered = crate::guard::endangered(&record.source, &base, snap, false)?;
    if !endangered.is_empty() {
        return Err(crate::guard::refusal(
            "applying",
            &record.source,
            &endangered,
            "try again",
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| Error::Io(format!("temporary directory: {e}")))?;
    let patch = dir.path().join("apply.patch");
    let mut output = std::ffi::OsString::from("--output=");
    output.push(patch.as_os_str());
    Git::at(&record.source)
        .args(["diff", "--binary", "--no-ext-diff", "--ignore-submodules"])
        .arg(output)
        .args([&base, snap])
        .output()?;
    if std::fs::metadata(&patch).map(|m| m.len()).unwrap_or(0) == 0 {
        return Err(Error::Refused(format!(
            "worktree {} has no changes to apply",
            record.label
        )));
    }
    Git::at(&record.source)
        .args(["apply", "--index", "--check", "--binary", "--whitespace=nowarn"])
        .arg(&patch)
        .output()
        .map(|_| ())
        .map_err(|_| {
            // The source's own uncommitted changes to these files refused already
            // (`uncommitted_overlap`): what is left is what its commits did to them.
            Error::Refused(format!(
                "its changes do not apply to {} as it is now: its commits since worktree {} began changed the same files; sync the worktree (trellis worktree sync {}), then apply again. Nothing was changed",
                record.source.display(),
                record.label,
                record.label
            ))
        })
}

/// The read-only checks of ending `action` (`land`, `apply`, `sync`, `discard`, `keep`) of
/// worktree `found`, made before any session is closed for it: what refuses, refuses with
/// the session still running.
pub fn ending(found: &Found, action: &str) -> Result<(), Error> {
    let record = owned(found)?;
    match action {
        "land" => {
            let c = check(&record, false)?;
            if c.ff {
                Ok(())
            } else {
                Err(Error::Diverged {
                    target: c.target,
                    branch: record.branch.clone(),
                    label: record.label.clone(),
                })
            }
        }
        "apply" => {
            crate::state::survey(&record, "applying", true)?;
            let (snap, _) = snapshot(&record.path, &record.label)?;
            applies(&record, &snap)
        }
        "discard" => crate::state::survey(&record, "discarding", true).map(|_| ()),
        "sync" => {
            let target = match &record.onto {
                Some(o) => o.clone(),
                None => source_branch(&record.source)?,
            };
            let endangered = crate::guard::endangered(&record.path, "HEAD", &target, true)?;
            if endangered.is_empty() {
                Ok(())
            } else {
                Err(crate::guard::refusal(
                    "syncing",
                    &record.path,
                    &endangered,
                    "sync again",
                ))
            }
        }
        _ => Ok(()),
    }
}

/// What a land of worktree `found` would do now, or why it cannot. Read-only: a session
/// may still run in it (the land itself waits for it to close).
pub fn landing(found: &Found) -> Result<Landing, Error> {
    let record = owned(found)?;
    let c = check(&record, true)?;
    Ok(if c.ff {
        Landing::FastForward {
            target: c.target,
            commit: c.dirty,
        }
    } else {
        Landing::Apply { target: c.target }
    })
}
