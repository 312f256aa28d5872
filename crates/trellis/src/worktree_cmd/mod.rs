//! `trellis worktree …` (list and the endings) and `--worktree` for a new session.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use trellis_store::{Config, Paths};
use trellis_worktree::{Plan, Stage, Status, Worktrees, end, measure};

use crate::output::safe;

mod close;
mod ops;
use close::close_sessions;
pub use ops::Ops;

#[derive(Subcommand)]
pub enum WorktreeCmd {
    /// Trellis's worktrees: owned (active or kept), missing (removed behind Trellis's
    /// back), foreign (replaced by someone else's), incomplete or orphaned; --all adds the
    /// ended ones.
    List {
        #[arg(long)]
        all: bool,
        /// One JSON object per worktree.
        #[arg(long)]
        json: bool,
    },
    /// Fast-forward the source's branch to the worktree's (its uncommitted work committed
    /// there first), then remove the tree. Refused when the source moved on: sync first.
    Land {
        label: String,
        /// The message of the commit of uncommitted work.
        #[arg(long, short)]
        message: Option<String>,
    },
    /// Merge the source's branch into the worktree's, so that it can land (a conflict is
    /// aborted, leaving the worktree as it was).
    Sync { label: String },
    /// Stage the worktree's changes in the source (no history), keep a snapshot under
    /// refs/trellis/retired/, remove the tree.
    Apply { label: String },
    /// Leave the worktree as it is (still Trellis's, listed as kept).
    Keep { label: String },
    /// Keep the worktree's whole state under refs/trellis/retired/<label>-<sha>, then
    /// remove the tree. The branch stays.
    Discard { label: String },
    /// Delete the trellis/<label> branches of worktrees that have ended, each only when
    /// another ref keeps its commits (the branch it landed on, its retired snapshot) and
    /// no worktree has it checked out. Trellis deletes no branch unless asked so.
    Prune {
        /// Say what would be deleted, delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Every repository's (by default: the repository of the current directory).
        #[arg(long)]
        all: bool,
    },
}

fn worktrees() -> anyhow::Result<Worktrees> {
    let paths = Paths::from_env().context("no data directory (set XDG_DATA_HOME or HOME)")?;
    Ok(Worktrees::new(&paths.data_dir))
}

pub fn main(cmd: WorktreeCmd) -> anyhow::Result<ExitCode> {
    let wt = worktrees()?;
    let here = std::env::current_dir().ok();
    let find = |label: &str| wt.find(label, here.as_deref());
    let label = match &cmd {
        WorktreeCmd::Land { label, .. }
        | WorktreeCmd::Sync { label }
        | WorktreeCmd::Apply { label }
        | WorktreeCmd::Keep { label }
        | WorktreeCmd::Discard { label } => Some(label.clone()),
        _ => None,
    };
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let outcome = ending(cmd, &wt, &find).map_err(|e| match &label {
        Some(l) => meanwhile(&wt, here.as_deref(), l, started, e),
        None => e,
    })?;
    let Some(outcome) = outcome else {
        return Ok(ExitCode::SUCCESS);
    };
    for line in outcome.lines {
        out!("{}", safe(&line));
    }
    Ok(ExitCode::SUCCESS)
}

/// What is about to land or be applied, before it is: the worktree's diff stat against
/// its base.
fn say_stat(found: &trellis_worktree::Found, label: &str) -> anyhow::Result<()> {
    let stat = measure::stat(found)?;
    if stat.is_empty() {
        out!("worktree {} has no changes against its base", safe(label));
    } else {
        out!("worktree {} against its base:", safe(label));
        for line in stat.lines() {
            out!("  {}", safe(line));
        }
    }
    Ok(())
}

/// An ending that failed because another command ended the worktree meanwhile (its
/// checks before the lock read a tree that went away) is said as that, not as what git
/// said of a directory that is gone.
fn meanwhile(
    wt: &Worktrees,
    here: Option<&std::path::Path>,
    label: &str,
    started: u64,
    e: anyhow::Error,
) -> anyhow::Error {
    match wt.find(label, here) {
        // Ended since this command began (one ended before is said as ended already).
        Ok(f)
            if !f.record.stage.has_tree()
                && f.record.stage != Stage::Creating
                && f.record.ended_at.is_some_and(|t| t >= started) =>
        {
            anyhow::anyhow!(
                "worktree {} was ended meanwhile by another command ({}); nothing more was done here",
                safe(label),
                f.record.stage.word()
            )
        }
        _ => e,
    }
}

/// Runs a `trellis worktree` command: the outcome of an ending, or none (list, prune).
fn ending(
    cmd: WorktreeCmd,
    wt: &Worktrees,
    find: &dyn Fn(&str) -> Result<trellis_worktree::Found, trellis_worktree::Error>,
) -> anyhow::Result<Option<end::Outcome>> {
    let outcome = match cmd {
        WorktreeCmd::List { all, json } => {
            list(wt, all, json);
            return Ok(None);
        }
        WorktreeCmd::Prune { dry_run, all } => {
            let only = if all {
                None
            } else {
                let here = std::env::current_dir().context("cannot read the current directory")?;
                match Worktrees::source_of(&here) {
                    Ok((top, _)) => Some(top),
                    Err(_) => anyhow::bail!(
                        "{} is in no git repository: run it in the repository whose branches to prune, or give --all",
                        here.display()
                    ),
                }
            };
            prune(wt, dry_run, only.as_deref());
            return Ok(None);
        }
        WorktreeCmd::Land { label, message } => {
            let found = find(&label)?;
            close_sessions(&found, "land")?;
            say_stat(&found, &label)?;
            let message = message.or_else(|| work_of(&found.record));
            end::land(&found, message.as_deref())
        }
        WorktreeCmd::Sync { label } => {
            let found = find(&label)?;
            close_sessions(&found, "sync")?;
            end::sync(&found)
        }
        WorktreeCmd::Apply { label } => {
            let found = find(&label)?;
            close_sessions(&found, "apply")?;
            say_stat(&found, &label)?;
            end::apply(&found)
        }
        WorktreeCmd::Keep { label } => end::keep(&find(&label)?),
        WorktreeCmd::Discard { label } => {
            let found = find(&label)?;
            close_sessions(&found, "discard")?;
            end::discard(&found)
        }
    }?;
    Ok(Some(outcome))
}

/// What the work of a worktree was, in the words of the session that did it (its first
/// prompt, from the session history), for the commit that lands it.
fn work_of(record: &trellis_worktree::Record) -> Option<String> {
    let (index, _) = crate::sessions::open_index().ok()?;
    let rows = index
        .list(&trellis_index::ListFilter {
            within: Some(record.path.to_string_lossy().into_owned()),
            ..Default::default()
        })
        .ok()?;
    // The oldest session that ran there.
    let row = rows.iter().rev().find(|r| r.first_prompt.is_some())?;
    Some(end::commit_message(
        row.first_prompt.as_deref()?,
        row.agent.as_deref(),
        &record.label,
    ))
}

/// The refs that keep a pruned branch's commits, as said: branches first, then a
/// worktree's retired snapshot, checkpoints last, at most three named.
fn keepers(refs: &[String]) -> String {
    let rank = |r: &String| {
        if r.starts_with("refs/trellis/checkpoints/") {
            2
        } else if r.starts_with("refs/") {
            1
        } else {
            0
        }
    };
    let mut sorted: Vec<&String> = refs.iter().collect();
    sorted.sort_by_key(|r| rank(r));
    let named: Vec<&str> = sorted.iter().take(3).map(|r| r.as_str()).collect();
    match refs.len().saturating_sub(named.len()) {
        0 => named.join(", "),
        more => format!("{} and {more} more", named.join(", ")),
    }
}

/// `trellis worktree prune`: each ended worktree's branch, deleted (or kept, saying why).
fn prune(wt: &Worktrees, dry: bool, only: Option<&std::path::Path>) {
    let done = trellis_worktree::prune::prune(&wt.list(), dry, only);
    if done.is_empty() {
        out!("no branch of an ended worktree is left to prune");
    }
    for p in &done {
        let branch = safe(&p.branch);
        let source = p.source.display().to_string();
        let source = safe(&source);
        match &p.kept {
            Some(why) => out!("kept {branch} in {source}: {}", safe(why)),
            None => out!(
                "{} {branch} in {source} (its commits are in {})",
                if dry { "would delete" } else { "deleted" },
                safe(&keepers(&p.kept_by))
            ),
        }
    }
}

fn list(wt: &Worktrees, all: bool, json: bool) {
    let listing = wt.list();
    for f in &listing.found {
        if f.status == Status::Ended && !all {
            continue;
        }
        let r = &f.record;
        let stat = (f.status == Status::Owned)
            .then(|| measure::diffstat(r).ok())
            .flatten();
        let why = match &f.status {
            Status::Missing(w) | Status::Foreign(w) => Some(w.as_str()),
            _ => None,
        };
        if json {
            let v = serde_json::json!({
                "label": r.label, "branch": r.branch, "path": r.path, "source": r.source,
                "base": r.base, "stage": r.stage.word(), "status": f.status.word(),
                "why": why, "created_at": r.created_at, "ended_at": r.ended_at,
                "snapshot": r.snapshot,
                "diffstat": stat.map(|s| serde_json::json!({"added": s.added, "removed": s.removed, "files": s.files})),
            });
            out!("{v}");
            continue;
        }
        let state = match (&f.status, r.stage) {
            (Status::Owned, Stage::Kept) => "kept".to_string(),
            (Status::Owned, _) => "owned".to_string(),
            (Status::Ended, s) => s.word().to_string(),
            (s, _) => s.word().to_string(),
        };
        let stat = stat
            .map(|s| format!("  +{} −{} in {} file(s)", s.added, s.removed, s.files))
            .unwrap_or_default();
        out!(
            "{:<24} {:<10} {}{}",
            safe(&r.label),
            state,
            safe(&r.path.display().to_string()),
            stat
        );
        out!("{:<24} from {}", "", safe(&r.source.display().to_string()));
        if let Some(w) = why {
            out!("{:<24} {}", "", safe(w));
        }
        if let Some(s) = &r.snapshot {
            out!("{:<24} snapshot {}", "", safe(s));
        }
    }
    for o in &listing.orphans {
        if json {
            out!(
                "{}",
                serde_json::json!({"path": o.path, "status": "orphaned", "why": o.why})
            );
        } else {
            out!(
                "{:<24} {:<10} {}\n{:<24} {}",
                "-",
                "orphaned",
                safe(&o.path.display().to_string()),
                "",
                safe(&o.why)
            );
        }
    }
    for u in &listing.unreadable {
        say!("trellis: {}", safe(u));
    }
    if json || !listing.orphans.is_empty() {
        return;
    }
    let ended = listing
        .found
        .iter()
        .filter(|f| f.status == Status::Ended)
        .count();
    if listing.found.is_empty() {
        out!("no worktrees (trellis --worktree or trellis run --worktree make one)");
    } else if !all && ended == listing.found.len() {
        // Every one has ended: say so, rather than print nothing at all.
        out!(
            "no live worktrees; {ended} ended (trellis worktree list --all shows them, with their snapshots)"
        );
    }
}

/// One line per worktree that needs a look (missing, foreign, incomplete, orphaned), for
/// `/status` and `trellis status`.
pub fn status_lines() -> Vec<String> {
    let Ok(wt) = worktrees() else {
        return Vec::new();
    };
    let listing = wt.list();
    let mut out = Vec::new();
    let mut owned = 0;
    for f in &listing.found {
        match &f.status {
            Status::Owned => owned += 1,
            Status::Ended => {}
            Status::Missing(w) | Status::Foreign(w) => {
                out.push(format!("{} {}: {w}", f.record.label, f.status.word()))
            }
            Status::Incomplete => out.push(format!(
                "{} incomplete: {}",
                f.record.label,
                f.record.path.display()
            )),
        }
    }
    for o in &listing.orphans {
        out.push(format!("orphaned: {}", o.path.display()));
    }
    if owned > 0 || !out.is_empty() {
        out.insert(
            0,
            format!(
                "Worktrees: {owned} owned (trellis worktree list), {} to look at",
                out.len()
            ),
        );
    }
    out
}

use crate::session_args::Ask;

/// Makes the worktree a new session asked for and moves the session into it; what to
/// tell the user comes back as lines (printed on stderr before a UI starts, shown in the
/// UI after). A failure is said loudly and the session runs where it was, unless the
/// worktree is required.
pub fn isolate(
    ask: Option<&Ask>,
    carry: bool,
    resolved: &mut crate::agents::Resolved,
    config: &Config,
) -> anyhow::Result<(Option<trellis_core::WorktreeRef>, Vec<String>)> {
    let mut said = Vec::new();
    let Some(ask) = ask else {
        if carry {
            anyhow::bail!("--carry copies uncommitted work into a new worktree: add --worktree");
        }
        return Ok((None, said));
    };
    let plan = Plan {
        label: ask.label.clone(),
        carry,
        setup: config.worktree.setup.clone(),
    };
    let made = worktrees().and_then(|wt| Ok(wt.create(&resolved.spec.cwd, &plan)?));
    let made = match made {
        Ok(m) => m,
        Err(e) if ask.required => {
            anyhow::bail!("no worktree could be made (and one is required): {e:#}")
        }
        // A label the user chose that cannot be had is their word not taken: said, never
        // worked around.
        Err(e) if ask.label.is_some() => {
            anyhow::bail!(
                "--worktree={}: no worktree: {e:#}",
                ask.label.as_deref().unwrap_or_default()
            )
        }
        // The demo never plays in a repository it did not make: in place, it could only
        // refuse.
        Err(e)
            if resolved.name == "demo"
                && trellis_agents::demo::foreign_repository(&resolved.spec.cwd).is_some() =>
        {
            anyhow::bail!(
                "no worktree for the demo ({e:#}); it does not play in {} itself, a repository it did not make",
                resolved.spec.cwd.display()
            )
        }
        Err(e) => {
            said.push(format!(
                "NOT ISOLATED: no worktree ({e:#}); the session runs in {} itself (--worktree=required makes this an error)",
                resolved.spec.cwd.display()
            ));
            return Ok((None, said));
        }
    };
    let r = &made.record;
    said.push(format!(
        "worktree {}: {} (branch {}, from {} at {})",
        r.label,
        r.path.display(),
        r.branch,
        r.source.display(),
        &r.base.get(..10).unwrap_or(&r.base)
    ));
    if carry {
        said.push(carried_line(&made.carried));
    }
    if let Some(why) = &made.setup_failed {
        if ask.required {
            anyhow::bail!(
                "--worktree=required: {why} (the worktree stays: trellis worktree discard {})",
                r.label
            );
        }
        said.push(why.clone());
    }
    resolved.spec.cwd = made.cwd.clone();
    Ok((
        Some(trellis_core::WorktreeRef {
            label: r.label.clone(),
            branch: r.branch.clone(),
            source: r.source.display().to_string(),
            base: r.base.clone(),
        }),
        said,
    ))
}

/// A lease on the worktree of Trellis's that a session in `cwd` runs in (none when `cwd`
/// is in none): while it is held, endings from elsewhere close the session first or
/// refuse ([`trellis_worktree::lease`]). Keep it as long as the session lives.
pub fn lease(cwd: &std::path::Path) -> anyhow::Result<Option<trellis_worktree::lease::Lease>> {
    Ok(worktrees()?.lease_for(cwd)?)
}

/// What to remind a user of the worktree `w` once the session is over (how to end it),
/// while it is still open.
pub fn reminder(w: &trellis_core::WorktreeRef) -> Option<String> {
    trellis_deck::Worktrees::reminder(&Ops, &w.label)
}

/// Lines for stderr, each as `trellis: …`, made harmless.
/// What `--carry` brought, in words: the changes to tracked files (a patch) and the
/// files copied, which are untracked ones or ignored ones `.worktreeinclude` names.
fn carried_line(c: &trellis_worktree::Carried) -> String {
    let copied = match c.files {
        0 => None,
        1 => Some("1 file copied (untracked, or named in .worktreeinclude)".to_string()),
        n => Some(format!(
            "{n} files copied (untracked, or named in .worktreeinclude)"
        )),
    };
    let mut line = match (c.patch, copied) {
        (true, Some(f)) => format!("carried: the changes to tracked files, and {f}"),
        (true, None) => "carried: the changes to tracked files".to_string(),
        (false, Some(f)) => format!("carried: {f}"),
        (false, None) => "carried: nothing (no uncommitted work)".to_string(),
    };
    if !c.skipped.is_empty() {
        line.push_str(&format!("; skipped {}", c.skipped.join(", ")));
    }
    line
}

pub fn print(lines: &[String]) {
    for l in lines {
        say!("trellis: {}", safe(l));
    }
}

/// Where a session in `dir` is grouped (its repository's top level, the source's for a
/// worktree of Trellis's) and the branch or label shown for it.
pub fn place_of(
    dir: &std::path::Path,
    worktree: Option<&trellis_core::WorktreeRef>,
) -> (String, Option<String>) {
    if let Some(w) = worktree {
        return (w.source.clone(), Some(w.label.clone()));
    }
    match Worktrees::source_of(dir) {
        Ok((top, _)) => {
            let branch = Worktrees::branch_of(&top);
            (top.display().to_string(), branch)
        }
        Err(_) => (dir.display().to_string(), None),
    }
}
