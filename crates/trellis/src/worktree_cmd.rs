//! `trellis worktree …` (list and the endings) and `--worktree` for a new session.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use trellis_store::{Config, Paths};
use trellis_worktree::{Plan, Stage, Status, Worktrees, end};

use crate::output::safe;

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
}

fn worktrees() -> anyhow::Result<Worktrees> {
    let paths = Paths::from_env().context("no data directory (set XDG_DATA_HOME or HOME)")?;
    Ok(Worktrees::new(&paths.data_dir))
}

pub fn main(cmd: WorktreeCmd) -> anyhow::Result<ExitCode> {
    let wt = worktrees()?;
    let here = std::env::current_dir().ok();
    let find = |label: &str| wt.find(label, here.as_deref());
    let outcome = match cmd {
        WorktreeCmd::List { all, json } => {
            list(&wt, all, json);
            return Ok(ExitCode::SUCCESS);
        }
        WorktreeCmd::Land { label, message } => end::land(&find(&label)?, message.as_deref()),
        WorktreeCmd::Sync { label } => end::sync(&find(&label)?),
        WorktreeCmd::Apply { label } => end::apply(&find(&label)?),
        WorktreeCmd::Keep { label } => end::keep(&find(&label)?),
        WorktreeCmd::Discard { label } => end::discard(&find(&label)?),
    }?;
    for line in outcome.lines {
        println!("{}", safe(&line));
    }
    Ok(ExitCode::SUCCESS)
}

fn list(wt: &Worktrees, all: bool, json: bool) {
    let listing = wt.list();
    for f in &listing.found {
        if f.status == Status::Ended && !all {
            continue;
        }
        let r = &f.record;
        let stat = (f.status == Status::Owned)
            .then(|| end::diffstat(r))
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
                "diffstat": stat.map(|(a, d, n)| serde_json::json!({"added": a, "removed": d, "files": n})),
            });
            println!("{v}");
            continue;
        }
        let state = match (&f.status, r.stage) {
            (Status::Owned, Stage::Kept) => "kept".to_string(),
            (Status::Owned, _) => "owned".to_string(),
            (Status::Ended, s) => s.word().to_string(),
            (s, _) => s.word().to_string(),
        };
        let stat = stat
            .map(|(a, d, n)| format!("  +{a} −{d} in {n} file(s)"))
            .unwrap_or_default();
        println!(
            "{:<24} {:<10} {}{}",
            safe(&r.label),
            state,
            safe(&r.path.display().to_string()),
            stat
        );
        println!("{:<24} from {}", "", safe(&r.source.display().to_string()));
        if let Some(w) = why {
            println!("{:<24} {}", "", safe(w));
        }
        if let Some(s) = &r.snapshot {
            println!("{:<24} snapshot {}", "", safe(s));
        }
    }
    for o in &listing.orphans {
        if json {
            println!(
                "{}",
                serde_json::json!({"path": o.path, "status": "orphaned", "why": o.why})
            );
        } else {
            println!(
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
        eprintln!("trellis: {}", safe(u));
    }
    if !json && listing.found.is_empty() && listing.orphans.is_empty() {
        println!("no worktrees (trellis --worktree or trellis run --worktree make one)");
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

/// What `--worktree` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub label: Option<String>,
    /// Without a worktree the session does not start.
    pub required: bool,
}

/// `--worktree` (a made-up label), `--worktree=LABEL`, `--worktree=required`,
/// `--worktree=required:LABEL`.
pub fn parse_ask(v: &str) -> Result<Ask, String> {
    let (required, label) = match v {
        "" => (false, None),
        "required" => (true, None),
        v => match v.strip_prefix("required:") {
            Some(l) => (true, Some(l)),
            None => (false, Some(v)),
        },
    };
    let label = label.map(trellis_worktree::label::check).transpose()?;
    Ok(Ask { label, required })
}

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
            anyhow::bail!("--worktree=required: no worktree: {e:#}")
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
        said.push(format!(
            "carried: {}{} file(s){}",
            if made.carried.patch {
                "changes to tracked files, "
            } else {
                ""
            },
            made.carried.files,
            if made.carried.skipped.is_empty() {
                String::new()
            } else {
                format!(", skipped {}", made.carried.skipped.join(", "))
            }
        ));
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
    said.push(format!(
        "end it with `trellis worktree land|apply|keep|discard {}`",
        r.label
    ));
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

/// The worktree endings the UI's comparison asks for.
pub struct Ops;

impl trellis_tui::deck::WorktreeOps for Ops {
    fn diff(&self, a: &str, b: &str) -> Result<String, String> {
        let wt = worktrees().map_err(|e| format!("{e:#}"))?;
        let here = std::env::current_dir().ok();
        let fa = wt.find(a, here.as_deref()).map_err(|e| e.to_string())?;
        let fb = wt.find(b, here.as_deref()).map_err(|e| e.to_string())?;
        end::compare(&fa, &fb).map_err(|e| e.to_string())
    }

    fn keep(&self, keep: &str, discard: &[String]) -> Result<Vec<String>, String> {
        let wt = worktrees().map_err(|e| format!("{e:#}"))?;
        let here = std::env::current_dir().ok();
        let k = wt.find(keep, here.as_deref()).map_err(|e| e.to_string())?;
        let others = discard
            .iter()
            .map(|l| wt.find(l, here.as_deref()).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        end::keep_one(&k, &others)
            .map(|o| o.lines)
            .map_err(|e| e.to_string())
    }

    fn end(&self, label: &str, action: &str) -> Result<Vec<String>, String> {
        let wt = worktrees().map_err(|e| format!("{e:#}"))?;
        let here = std::env::current_dir().ok();
        let f = wt.find(label, here.as_deref()).map_err(|e| e.to_string())?;
        match action {
            "land" => end::land(&f, None),
            "apply" => end::apply(&f),
            "keep" => end::keep(&f),
            "discard" => end::discard(&f),
            other => return Err(format!("no ending {other:?}")),
        }
        .map(|o| o.lines)
        .map_err(|e| e.to_string())
    }
}

/// Lines for stderr, each as `trellis: …`, made harmless.
pub fn print(lines: &[String]) {
    for l in lines {
        eprintln!("trellis: {}", safe(l));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_values() {
        assert_eq!(
            parse_ask("").unwrap(),
            Ask {
                label: None,
                required: false
            }
        );
        assert_eq!(
            parse_ask("required").unwrap(),
            Ask {
                label: None,
                required: true
            }
        );
        assert_eq!(
            parse_ask("required:fix-1").unwrap(),
            Ask {
                label: Some("fix-1".into()),
                required: true
            }
        );
        assert_eq!(parse_ask("fix").unwrap().label.as_deref(), Some("fix"));
        assert!(parse_ask("../x").is_err());
        assert!(parse_ask("required:Bad").is_err());
    }
}
