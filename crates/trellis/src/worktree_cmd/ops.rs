//! What the UI and a hub ask of worktrees: measurements for the comparison, the endings
//! (land, keep, discard) of a session's worktree, and the reminder of how to end one.

use trellis_worktree::{Stage, Status, Worktrees, end, measure};

use super::worktrees;

/// What the UI asks of worktrees: measurements for the comparison, and the endings.
pub struct Ops;

impl Ops {
    fn find(label: &str) -> Result<trellis_worktree::Found, String> {
        let wt = worktrees().map_err(|e| format!("{e:#}"))?;
        let here = std::env::current_dir().ok();
        wt.find(label, here.as_deref()).map_err(|e| e.to_string())
    }
}

fn message_of(work: Option<trellis_tui::deck::Work<'_>>, label: &str) -> Option<String> {
    work.map(|w| end::commit_message(w.prompt, Some(w.agent), label))
}

impl trellis_tui::deck::WorktreeOps for Ops {
    fn diff(&self, a: &str, b: &str) -> Result<String, String> {
        measure::compare(&Self::find(a)?, &Self::find(b)?).map_err(|e| e.to_string())
    }

    fn measure(&self, label: &str) -> trellis_tui::compare::Tree {
        use trellis_tui::compare::{Tree, TreeStat};
        let found = match Self::find(label) {
            Ok(f) => f,
            Err(e) => return Tree::Unknown(e),
        };
        match measure::diffstat(&found.record) {
            Ok(s) => Tree::Measured {
                stat: TreeStat {
                    added: s.added,
                    removed: s.removed,
                    files: s.files,
                },
                into: Worktrees::branch_of(&found.record.source),
            },
            Err(e) => Tree::Unknown(e.to_string()),
        }
    }

    fn landing(
        &self,
        label: &str,
        discard: &[String],
    ) -> Result<trellis_tui::compare::Landing, String> {
        use trellis_tui::compare::Landing;
        let found = Self::find(label)?;
        for other in discard {
            trellis_worktree::plan::ending(&Self::find(other)?, "discard")
                .map_err(|e| format!("{other} could not be discarded after it: {e}"))?;
        }
        match trellis_worktree::plan::landing(&found).map_err(|e| e.to_string())? {
            trellis_worktree::plan::Landing::FastForward { target, commit } => {
                Ok(Landing::FastForward { target, commit })
            }
            trellis_worktree::plan::Landing::Apply { target } => Ok(Landing::Apply { target }),
        }
    }

    fn check(&self, label: &str, action: &str) -> Result<(), String> {
        trellis_worktree::plan::ending(&Self::find(label)?, action).map_err(|e| e.to_string())
    }

    fn land_one(
        &self,
        chosen: &str,
        discard: &[String],
        work: Option<trellis_tui::deck::Work<'_>>,
    ) -> Result<Vec<String>, String> {
        let k = Self::find(chosen)?;
        let others = discard
            .iter()
            .map(|l| Self::find(l))
            .collect::<Result<Vec<_>, _>>()?;
        end::land_one(&k, &others, message_of(work, chosen).as_deref())
            .map(|o| o.lines)
            .map_err(|e| e.to_string())
    }

    fn end(
        &self,
        label: &str,
        action: &str,
        work: Option<trellis_tui::deck::Work<'_>>,
    ) -> Result<Vec<String>, String> {
        let f = Self::find(label)?;
        match action {
            "land" => end::land(&f, message_of(work, label).as_deref()),
            "apply" => end::apply(&f),
            "keep" => end::keep(&f),
            "discard" => end::discard(&f),
            other => return Err(format!("no ending {other:?}")),
        }
        .map(|o| o.lines)
        .map_err(|e| e.to_string())
    }
}

impl trellis_deck::Worktrees for Ops {
    fn reminder(&self, label: &str) -> Option<String> {
        let f = Self::find(label).ok()?;
        if f.status != Status::Owned {
            return None;
        }
        let stat = match measure::diffstat(&f.record) {
            Ok(s) if s.files == 0 => " (no changes)".to_string(),
            Ok(s) => format!(" (+{} −{} in {} file(s))", s.added, s.removed, s.files),
            Err(_) => String::new(),
        };
        let kept = if f.record.stage == Stage::Kept {
            "kept "
        } else {
            ""
        };
        Some(format!(
            "worktree {label}{stat} stays {kept}at {}: end it with `trellis worktree land|apply|keep|discard {label}`",
            f.record.path.display()
        ))
    }
}
