//! One session of the deck: its front end, where it is grouped, what the human has seen
//! of it, and its state derived again on every change.

use std::collections::HashMap;
use std::time::Instant;

use trellis_core::attention::{Attention, Facts};
use trellis_core::event::EventBody;
use trellis_driver::Note;

use super::{Front, Opened, SessionKey, SessionNote};

/// One session of the deck.
pub struct Slot<F> {
    pub key: SessionKey,
    /// Its front end.
    pub app: F,
    pub restart: Option<trellis_driver::Restart>,
    pub source: String,
    pub branch: Option<String>,
    /// The session it forks or was handed over from.
    pub from: Option<super::Lineage>,
    /// The agent as the user named it (for the new-session form's default).
    pub agent_arg: String,
    pub started: Instant,
    /// The last turn the human saw end.
    pub seen_turn: u32,
    pub attention: Attention,
    /// Since when `attention` holds.
    pub since: Instant,
    /// Lines added and removed by the session's completed edits, per call.
    edits: HashMap<usize, (usize, usize)>,
    seq: u64,
    /// Who follows the session from elsewhere (`trellis attach`), and who controls it.
    pub watched: trellis_hub::watch::Watched,
    /// Claims on its pending requests by someone elsewhere.
    pub claims: trellis_driver::claims::Claims,
}

impl<F: Front> Slot<F> {
    pub fn new(key: SessionKey, opened: Opened<F>, agent_arg: String) -> Slot<F> {
        let now = Instant::now();
        let mut slot = Slot {
            key,
            app: opened.app,
            restart: opened.restart,
            source: opened.source,
            branch: opened.branch,
            from: opened.from,
            agent_arg,
            started: now,
            seen_turn: 0,
            attention: Attention::Starting,
            since: now,
            edits: HashMap::new(),
            seq: 0,
            watched: Default::default(),
            claims: Default::default(),
        };
        // A session that starts with history (resumed) has its edits counted once.
        let ledger = &slot.app.driver().session.ledger;
        for p in 0..ledger.len() {
            if let Some(stat) = completed_edit(&ledger.at(p)) {
                slot.edits.insert(p, stat);
            }
        }
        slot.attention = slot.derive();
        slot
    }

    pub fn facts(&self) -> Facts {
        let d = self.app.driver();
        Facts {
            ready: d.ready(),
            closed: d.closed() && d.connection().is_some(),
            login: self.app.login_waits(),
            seen_turn: self.seen_turn,
        }
    }

    pub fn derive(&self) -> Attention {
        Attention::of(&self.app.driver().session, &self.facts())
    }

    /// What the session is called: the agent's title, else its first prompt's words.
    pub fn title(&self) -> String {
        let t = self
            .app
            .driver()
            .session
            .title
            .clone()
            .or_else(|| self.first_prompt());
        trellis_text::one_line(t.as_deref().unwrap_or("new session")).into_owned()
    }

    /// The session's agent as the human knows it.
    pub fn agent_name(&self) -> String {
        self.app.agent().to_string()
    }

    /// The session's first prompt, as the user wrote it.
    pub fn first_prompt(&self) -> Option<String> {
        self.app
            .driver()
            .session
            .transcript
            .iter()
            .find_map(|e| match e {
                trellis_core::transcript::Entry::Message(m)
                    if m.role == trellis_core::transcript::Role::User =>
                {
                    Some(m.text.clone())
                }
                _ => None,
            })
    }

    /// `+added −removed` over the session's completed edits (what its agent reported).
    pub fn diffstat(&self) -> (usize, usize) {
        self.edits
            .values()
            .fold((0, 0), |(a, d), (x, y)| (a + x, d + y))
    }

    /// Tells whoever follows the session how far its log is written and what state it
    /// is in (nothing to do when nobody follows).
    pub fn publish(&self, ended: bool) {
        if !self.watched.followed() {
            return;
        }
        let len = self
            .app
            .log_path()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        self.watched.publish(len, self.attention.word(), ended);
    }

    /// Numbers the notes of a batch.
    pub(crate) fn number(&mut self, notes: Vec<Note>) -> Vec<SessionNote> {
        notes
            .into_iter()
            .map(|note| {
                self.seq += 1;
                SessionNote {
                    key: self.key,
                    seq: self.seq,
                    note,
                }
            })
            .collect()
    }

    /// What a batch of notes changes beside the view: the edits' line counts.
    pub(crate) fn observe(&mut self, notes: &[SessionNote]) {
        for n in notes {
            if let Note::Event(ev) = &n.note
                && matches!(
                    ev.body,
                    EventBody::ToolCallCreated { .. } | EventBody::ToolCallUpdated { .. }
                )
                && let Some(p) = ev.position
            {
                let call = self.app.driver().session.ledger.at(p);
                match completed_edit(&call) {
                    Some(stat) => self.edits.insert(p, stat),
                    None => self.edits.remove(&p),
                };
            }
        }
    }
}

/// The lines a call changed, if it is an edit that completed: one waiting for permission,
/// rejected or failed changed nothing.
fn completed_edit(call: &trellis_core::ToolCall) -> Option<(usize, usize)> {
    if call.status != trellis_core::tool_call::ToolStatus::Completed {
        return None;
    }
    trellis_core::enrich::diff_stat(call)
}
