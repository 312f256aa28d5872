//! Several sessions in one terminal, as the UI shows them: the deck's sessions
//! ([`trellis_deck::Sessions`], one `App` each, with its own driver, view, prompt draft and
//! inspector), one of them in front beside the sessions rail, the deck's keys, the
//! new-session form, the inbox's page and the comparison.
//!
//! Background sessions cost no rendering: their notes only mark cards to lay out again
//! when they come to the front.

mod comparing;
mod inbox;
mod keys;

use std::sync::Arc;

use trellis_core::attention::Attention;
use trellis_deck::Sessions;

pub use keys::{DeckAction, DeckKey, DeckKeys, LEADER};
pub use trellis_deck::{
    Announcement, Command, ForkFrom, HubSettings, Lineage, NewSession, Notify, Pending, SessionKey,
    SessionNote, Worktrees, elicit_answer,
};

use crate::app::App;

impl trellis_deck::Front for App {
    fn driver(&self) -> &trellis_driver::Driver {
        &self.driver
    }

    fn driver_mut(&mut self) -> &mut trellis_driver::Driver {
        &mut self.driver
    }

    fn agent(&self) -> &str {
        &self.agent
    }

    fn log_path(&self) -> Option<&std::path::Path> {
        self.log_path.as_deref()
    }

    fn login_waits(&self) -> bool {
        self.login.is_some()
    }

    fn tell(&mut self, line: String) {
        self.message = Some(line);
    }

    fn take_told(&mut self) -> Option<String> {
        self.message.take()
    }

    fn show(&mut self, notes: Vec<trellis_driver::Note>) {
        crate::show_notes(self, notes);
        self.inspect_when_loaded();
    }

    fn add_status(&mut self, report: trellis_deck::StatusReport) {
        self.status_reports.push(report);
    }

    fn redraw(&mut self) {
        self.full_redraw = true;
    }
}

/// A session started for the deck, with its UI.
pub type Opened = trellis_deck::Opened<App>;
/// Starts a session for the deck, with its UI.
pub type Opener = trellis_deck::Opener<App>;
/// One session of the deck, with its UI.
pub type Slot = trellis_deck::Slot<App>;

/// What a session's work was, for the commit that lands it.
#[derive(Debug, Clone, Copy)]
pub struct Work<'a> {
    /// Its first prompt, as the user wrote it.
    pub prompt: &'a str,
    /// Its agent, as the rail names it.
    pub agent: &'a str,
}

/// What the UI asks of worktrees (the UI crate runs no git). Called off the UI's thread
/// for measurements, so it is shared.
pub trait WorktreeOps: trellis_deck::Worktrees {
    /// The diff from worktree `a` to worktree `b` (labels).
    fn diff(&self, a: &str, b: &str) -> Result<String, String>;
    /// What worktree `label`'s work is against its base (committed, uncommitted and
    /// untracked), and the branch a land would move. Slow: run off the UI's thread.
    fn measure(&self, label: &str) -> crate::compare::Tree;
    /// What a land of worktree `label` would do now — with `discard` discarded after it —
    /// or why it cannot (nothing changes).
    fn landing(&self, label: &str, discard: &[String]) -> Result<crate::compare::Landing, String>;
    /// The read-only checks of ending `action` of worktree `label`: what would refuse,
    /// refuses before any session is closed for it.
    fn check(&self, label: &str, action: &str) -> Result<(), String>;
    /// Lands (or applies) `chosen` — its uncommitted work committed as `work` says — and
    /// discards the others behind snapshot refs.
    fn land_one(
        &self,
        chosen: &str,
        discard: &[String],
        work: Option<Work<'_>>,
    ) -> Result<Vec<String>, String>;
    /// One ending (`land`, `apply`, `keep`, `discard`) of worktree `label`; `work`: what
    /// a land's commit says.
    fn end(&self, label: &str, action: &str, work: Option<Work<'_>>)
    -> Result<Vec<String>, String>;
}

/// The new-session form: agent and directory, defaults from the session in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub agent: String,
    pub dir: String,
    pub worktree: bool,
    /// 0: agent, 1: directory.
    pub field: usize,
    pub error: Option<String>,
}

/// The inbox: every pending request of every session, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inbox {
    pub selected: usize,
    /// A question being answered here: its session and request (the form is the
    /// session's own, so what is typed shows in its dialog too).
    pub answering: Option<(SessionKey, String)>,
}

/// Several sessions, one in front.
pub struct Deck {
    /// The sessions, their states and the hub's socket.
    pub sessions: Sessions<App>,
    pub keys: DeckKeys,
    /// ASCII marks instead of Unicode ones.
    pub ascii: bool,
    /// Show the rail (there is always a strip when the terminal is narrow).
    pub rail: bool,
    pub form: Option<Form>,
    pub inbox: Option<Inbox>,
    /// The next key is read as if Alt were held.
    leader: bool,
    /// A close asked for while the session works: the next close confirms it.
    confirm_close: Option<SessionKey>,
    pub compare: Option<crate::compare::Compare>,
    /// What the comparison and the endings ask of worktrees.
    pub worktrees: Option<Arc<dyn WorktreeOps>>,
}

impl Deck {
    /// A deck of one session.
    pub fn new(first: Opened, agent_arg: String) -> Deck {
        let mut deck = Deck::empty();
        deck.add(first, agent_arg);
        deck
    }

    /// A deck with no session yet.
    pub fn empty() -> Deck {
        Deck {
            sessions: Sessions::empty(),
            keys: DeckKeys::default(),
            ascii: false,
            rail: true,
            form: None,
            inbox: None,
            leader: false,
            confirm_close: None,
            compare: None,
            worktrees: None,
        }
    }

    /// Adds a session (at the end of the rail) and brings it to the front.
    pub fn add(&mut self, opened: Opened, agent_arg: String) -> SessionKey {
        let key = self.sessions.add(opened, agent_arg);
        self.hint_keys();
        key
    }

    /// What the deck asks of worktrees (the comparison, endings, reminders).
    pub fn set_worktrees(&mut self, ops: Arc<dyn WorktreeOps>) {
        self.sessions.worktrees = Some(ops.clone());
        self.worktrees = Some(ops);
    }

    /// The status bar's hint while several sessions run: the keys that move between them
    /// (as bound now), on every session; none for one session. Every session's help lists
    /// them.
    pub fn hint_keys(&mut self) {
        let hint = (self.sessions.slots.len() > 1).then(|| {
            let key = |a: DeckAction| self.keys.spec(a).map(crate::help::show_spec);
            let mut parts = Vec::new();
            if let (Some(first), Some(last)) = (
                key(DeckAction::Go(1)),
                key(DeckAction::Go(self.sessions.slots.len().min(9) as u8)),
            ) {
                parts.push(format!("{first}…{last} switch"));
            }
            if let Some(k) = key(DeckAction::Inbox) {
                parts.push(format!("{k} inbox"));
            }
            if let Some(k) = key(DeckAction::Attention) {
                parts.push(format!("{k} needs you"));
            }
            if self.sessions.fan.len() > 1
                && let Some(k) = key(DeckAction::Compare)
            {
                parts.push(format!("{k} compare"));
            }
            parts.push("F1 keys".into());
            parts.join(" · ")
        });
        let keys = self.keys.listed();
        for s in &mut self.sessions.slots {
            s.app.deck_hint = hint.clone();
            s.app.session_keys = keys.clone();
        }
    }

    pub fn front(&mut self) -> &mut App {
        &mut self.sessions.slots[self.sessions.front].app
    }

    /// Brings slot `i` to the front: its view is laid out again at the next frame.
    pub fn show(&mut self, i: usize) {
        if i < self.sessions.slots.len() && i != self.sessions.front {
            self.sessions.front = i;
            self.confirm_close = None;
            let app = &mut self.sessions.slots[i].app;
            app.full_redraw = true;
            app.message = None;
            app.failures.clear();
            self.seen();
        }
    }

    /// The session in front is seen: a finished turn there is no longer news.
    pub fn seen(&mut self) {
        let slot = &mut self.sessions.slots[self.sessions.front];
        let turn = slot.app.driver.session.turn;
        if slot.seen_turn != turn && !slot.app.driver.session.turn_open {
            slot.seen_turn = turn;
            self.sessions.refresh(self.sessions.front);
        }
    }

    /// Close asked for the session in front: `true` when it may go now (it is idle, or
    /// this is the second ask).
    pub fn may_close(&mut self) -> bool {
        let slot = &self.sessions.slots[self.sessions.front];
        let busy = matches!(
            slot.attention,
            Attention::Working | Attention::Blocked(_) | Attention::Starting
        );
        if busy && self.confirm_close != Some(slot.key) {
            self.confirm_close = Some(slot.key);
            let close = self
                .keys
                .spec(DeckAction::Close)
                .unwrap_or("close")
                .to_string();
            let what = match slot.attention {
                Attention::Working => "is working",
                Attention::Starting => "is starting",
                Attention::Blocked(_) => "waits for your answer",
                _ => "is busy",
            };
            self.sessions.slots[self.sessions.front].app.message =
                Some(format!("this session {what}: {close} again closes it"));
            return false;
        }
        self.confirm_close = None;
        true
    }

    /// The form for a new session, from the one in front.
    pub fn open_form(&mut self, worktree: bool) {
        let slot = &self.sessions.slots[self.sessions.front];
        let dir = slot
            .app
            .driver
            .session
            .worktree
            .as_ref()
            .map(|w| w.source.clone())
            .or_else(|| slot.app.driver.session.cwd.clone())
            .unwrap_or_default();
        self.form = Some(Form {
            agent: slot.agent_arg.clone(),
            dir,
            worktree,
            field: 0,
            error: None,
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use trellis_core::attention::Blocked;

    pub(crate) fn opened(name: &str) -> Opened {
        Opened {
            app: App::new(
                trellis_core::Session::new(trellis_core::permission::Policy::Ask),
                name.into(),
                false,
            ),
            restart: None,
            source: "/src/repo".into(),
            branch: None,
            from: None,
        }
    }

    fn login() -> trellis_acp::Login {
        trellis_acp::Login {
            method: "m".into(),
            name: "log in".into(),
            description: None,
            program: "true".into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The UI's front end says when its agent waits for a login in the terminal: a
    /// session in the background is announced as blocked on it, the one in front is not
    /// (it alerts on its own). The rest of the rules are the deck's (`trellis-deck`).
    #[test]
    fn the_uis_login_is_what_blocks_a_session_on_a_login() {
        let mut d = Deck::new(opened("a"), "demo".into());
        d.add(opened("b"), "demo".into());
        d.show(0);
        d.sessions.announce.clear();
        d.sessions.slots[1].app.login = Some(login());
        d.sessions.refresh(1);
        assert_eq!(d.sessions.announce.len(), 1);
        assert_eq!(
            d.sessions.announce[0].attention,
            Attention::Blocked(Blocked::Login)
        );
        d.sessions.slots[0].app.login = Some(login());
        d.sessions.refresh(0);
        assert_eq!(
            d.sessions.announce.len(),
            1,
            "the session in front alerts itself"
        );
    }
}
