//! The comparison of a deck's sessions: opened, kept up to date as their states change,
//! measured from their worktrees off the UI thread (`crate::compare` draws it).

use std::time::Instant;

use trellis_core::attention::Attention;
use trellis_core::tool_call::{ToolKind, ToolStatus};

use super::{Deck, SessionKey, Slot};
use crate::compare::{Reported, Row, Tree, test_like, test_run};

impl Deck {
    /// Opens the comparison: the fan-out's sessions still on the deck, else all.
    pub fn open_compare(&mut self) {
        let mut keys: Vec<SessionKey> = self
            .sessions
            .fan
            .iter()
            .copied()
            .filter(|k| self.sessions.index_of(*k).is_some())
            .collect();
        if keys.len() < 2 {
            keys = self.sessions.slots.iter().map(|s| s.key).collect();
        }
        // The fan's worktrees whose sessions closed, still open.
        let closed = match &self.worktrees {
            Some(ops) if keys.iter().all(|k| self.sessions.fan.contains(k)) => self
                .sessions
                .fan_closed
                .iter()
                .filter(|l| ops.reminder(l).is_some())
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        self.compare = Some(crate::compare::Compare {
            keys,
            closed,
            ..Default::default()
        });
        self.refresh_compare();
    }

    /// The comparison's rows again (when it opens and when a member's state changes), and
    /// their worktrees measured again.
    pub fn refresh_compare(&mut self) {
        let now = Instant::now();
        let Some(c) = self.compare.as_mut() else {
            return;
        };
        c.keys
            .retain(|k| self.sessions.slots.iter().any(|s| s.key == *k));
        let rows = c
            .keys
            .iter()
            .filter_map(|k| {
                let i = self.sessions.slots.iter().position(|s| s.key == *k)?;
                Some(compare_row(
                    &self.sessions.slots[i],
                    i + 1,
                    now,
                    c.tree_of(*k),
                ))
            })
            .collect();
        c.rows = rows;
        c.selected = c.selected.min(c.rows.len().saturating_sub(1));
        self.measure_compare();
    }

    /// Measures the comparison's worktrees on a thread of their own (git can take a while
    /// on a large tree); each result comes back through [`Deck::next_measure`]. One round
    /// at a time: asked again meanwhile, another round follows the one on its way.
    pub fn measure_compare(&mut self) {
        let Some(c) = self.compare.as_mut() else {
            return;
        };
        if c.measuring.is_some() {
            c.again = true;
            return;
        }
        let Some(ops) = self.worktrees.clone() else {
            return;
        };
        let todo: Vec<(SessionKey, String)> = c
            .rows
            .iter()
            .filter_map(|r| Some((r.key, r.label.clone()?)))
            .collect();
        if todo.is_empty() {
            return;
        }
        // Room for every answer: the thread never waits on the UI.
        let (tx, rx) = tokio::sync::mpsc::channel(todo.len());
        c.measuring = Some(rx);
        c.again = false;
        let spawned = std::thread::Builder::new()
            .name("trellis-measure".into())
            .spawn(move || {
                for (key, label) in todo {
                    let tree = ops.measure(&label);
                    if tx.try_send(crate::compare::Measured { key, tree }).is_err() {
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            c.measuring = None;
            for r in c.rows.iter_mut().filter(|r| r.label.is_some()) {
                r.tree = crate::compare::Tree::Unknown(format!("cannot measure: {e}"));
            }
        }
    }

    /// What [`crate::compare::next_measure`] gave: a row filled in, or (`None`) the round over.
    pub fn measured(&mut self, m: Option<crate::compare::Measured>) {
        let Some(c) = self.compare.as_mut() else {
            return;
        };
        match m {
            Some(m) => c.measured(m),
            None => {
                c.measuring = None;
                if c.again {
                    self.measure_compare();
                }
            }
        }
    }
}

/// A session's row, from its ledger; its worktree is measured apart (`tree` is what was
/// known of it before).
pub fn compare_row(slot: &Slot, number: usize, now: Instant, tree: Tree) -> Row {
    let s = &slot.app.driver.session;
    let mut files = std::collections::BTreeSet::new();
    let (mut commands, mut failed) = (0, 0);
    let (mut added, mut removed) = (0, 0);
    let mut last_test = None;
    let calls = s.ledger.len();
    for p in 0..calls {
        let c = s.ledger.at(p);
        if c.status == ToolStatus::Failed {
            failed += 1;
        }
        match c.kind {
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move
                if c.status == ToolStatus::Completed =>
            {
                files.extend(trellis_core::enrich::paths_of(&c));
                if let Some((a, d)) = trellis_core::enrich::diff_stat(&c) {
                    added += a;
                    removed += d;
                }
            }
            ToolKind::Execute => {
                commands += 1;
                let cmd = trellis_core::enrich::command_of(&c).unwrap_or_else(|| c.display_title());
                if test_like(&cmd) || test_like(&c.title) {
                    last_test = Some(test_run(&c, s, &cmd));
                }
            }
            _ => {}
        }
    }
    let still = matches!(
        slot.attention,
        Attention::Working | Attention::Starting | Attention::Blocked(_)
    );
    let until = if still { now } else { slot.since };
    let label = s.worktree.as_ref().map(|w| w.label.clone());
    Row {
        key: slot.key,
        number,
        agent: slot.agent_name(),
        tree: if label.is_some() { tree } else { Tree::None },
        label,
        prompt: slot.first_prompt(),
        attention: slot.attention,
        reported: Reported {
            added,
            removed,
            files: files.len(),
        },
        calls,
        commands,
        last_test,
        failed,
        tokens: s.usage.as_ref().map(|u| u.used).filter(|&u| u > 0),
        cost: s
            .usage
            .as_ref()
            .and_then(|u| u.cost.as_ref())
            .map(|c| c.display()),
        took: until.saturating_duration_since(slot.started),
    }
}
