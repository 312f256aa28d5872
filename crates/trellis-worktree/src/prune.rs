//! `trellis worktree prune`: the `trellis/<label>` branches of worktrees that have ended
//! (landed, applied, discarded), deleted when asked — and only when nothing is lost: the
//! branch's commit is kept by another ref (the branch it landed on, the retired snapshot
//! that holds its state), no worktree has it checked out, and it still points where it
//! was looked at (the delete is a compare-and-swap). Trellis deletes no branch on its
//! own; the worktree's record and retired snapshots stay.

use crate::git::Git;
use crate::{Error, Listing, Status};

/// What a prune did (or, dry, would do) with one branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pruned {
    pub branch: String,
    pub source: std::path::PathBuf,
    /// Deleted (or to be deleted); else kept, and why.
    pub kept: Option<String>,
    /// The refs that keep its commit.
    pub kept_by: Vec<String>,
}

/// The branches of the ended worktrees in `listing` — of the repository `only` when given
/// (its top, or a worktree of its) — each deleted unless `dry` (or kept, saying why).
/// What keeps a branch's commits is never another branch being pruned here: the reason
/// given still holds once the prune is over.
pub fn prune(listing: &Listing, dry: bool, only: Option<&std::path::Path>) -> Vec<Pruned> {
    let of_only = |source: &std::path::Path| match only {
        None => true,
        Some(top) => {
            source == top
                || listing
                    .found
                    .iter()
                    .any(|o| o.record.path == top && o.record.source == source)
        }
    };
    let ended: Vec<_> = listing
        .found
        .iter()
        .filter(|f| f.status == Status::Ended && of_only(&f.record.source))
        .collect();
    let candidates: Vec<String> = ended
        .iter()
        .map(|f| format!("refs/heads/{}", f.record.branch))
        .collect();
    let mut out = Vec::new();
    for f in ended {
        let r = &f.record;
        let full = format!("refs/heads/{}", r.branch);
        let tip = match Git::at(&r.source)
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(&full)
            .line()
        {
            Ok(t) if !t.is_empty() => t,
            // Gone already (deleted by hand, or the repository moved): nothing to do.
            _ => continue,
        };
        let mut p = Pruned {
            branch: r.branch.clone(),
            source: r.source.clone(),
            kept: None,
            kept_by: Vec::new(),
        };
        match why_not(&r.source, &full, &tip, &candidates) {
            Ok(keepers) => {
                p.kept_by = keepers;
                if !dry
                    && let Err(e) = Git::at(&r.source)
                        .args([
                            "update-ref",
                            "-m",
                            "trellis worktree prune",
                            "-d",
                            &full,
                            &tip,
                        ])
                        .output()
                {
                    p.kept = Some(e.to_string());
                }
            }
            Err(why) => p.kept = Some(why),
        }
        out.push(p);
    }
    out
}

/// The refs that keep `tip` besides `branch` and the other branches being pruned
/// (`candidates`) — or why the branch must stay.
fn why_not(
    source: &std::path::Path,
    branch: &str,
    tip: &str,
    candidates: &[String],
) -> Result<Vec<String>, String> {
    let worktrees = Git::at(source)
        .args(["worktree", "list", "--porcelain"])
        .output()
        .map_err(|e| e.to_string())?;
    let checked_out = String::from_utf8_lossy(&worktrees)
        .lines()
        .any(|l| l.strip_prefix("branch ") == Some(branch));
    if checked_out {
        return Err("a worktree has it checked out".into());
    }
    let refs = Git::at(source)
        .args(["for-each-ref", "--format=%(refname)", "--contains", tip])
        .output()
        .map_err(|e: Error| e.to_string())?;
    let others: Vec<String> = String::from_utf8_lossy(&refs)
        .lines()
        .filter(|r| *r != branch)
        .map(str::to_string)
        .collect();
    if others.is_empty() {
        return Err("no other ref has its commits".into());
    }
    let keepers: Vec<String> = others
        .into_iter()
        .filter(|r| !candidates.iter().any(|c| c == r))
        .collect();
    if keepers.is_empty() {
        return Err(
            "only branches of other ended worktrees have its commits (kept: they may go too)"
                .into(),
        );
    }
    Ok(keepers)
}
