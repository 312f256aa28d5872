//! Several sessions in one terminal: the deck holds one front end ([`App`]) per session,
//! each with its own driver, view, prompt draft and inspector, and shows one of them at a
//! time beside the sessions rail.
//!
//! A session's state for its human ([`Attention`]) is derived from its reducer's state on
//! every change, never kept beside it; the deck only remembers what the human has seen
//! (the last turn end looked at) and since when each state holds (to find the oldest
//! one that needs the human). Background sessions cost no rendering: their notes only
//! mark cards to lay out again when they come to the front.
//!
//! What crosses between the deck and a session is a message: notes out, each with the
//! session's key and a sequence number ([`SessionNote`]); commands in ([`Command`]).

use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use std::collections::HashMap;
use trellis_core::attention::{Attention, Blocked, Facts};
use trellis_core::event::EventBody;
use trellis_driver::Note;

use crate::app::App;
use crate::keymap::{Key, KeySpecError, parse_keys};

/// A session's key in this deck (never reused while the deck lives).
pub type SessionKey = u32;

/// A note of one session, numbered in the order that session produced them.
#[derive(Debug)]
pub struct SessionNote {
    pub key: SessionKey,
    pub seq: u64,
    pub note: Note,
}

/// What a front end asks of a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Prompt {
        text: String,
        files: Vec<PathBuf>,
    },
    Cancel,
    /// Answers a permission request once (never an "always" rule: those are made only in
    /// the session's own dialog, where their scope is shown).
    Decide {
        request_id: String,
        option_id: String,
    },
    /// The human looked at the session (a finished turn is no longer news).
    Seen,
}

/// What the binary does to start a session (the UI crate knows no configuration).
pub struct Opened {
    pub app: App,
    pub restart: Option<crate::Restart>,
    /// Where the session is grouped: the top level of its repository (the source's, for
    /// a worktree), else its directory.
    pub source: String,
    /// The branch or worktree label shown on its row.
    pub branch: Option<String>,
}

/// A new session asked for from the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The agent as the user names it (a preset, `demo`, a command line).
    pub agent: String,
    pub cwd: PathBuf,
    /// In a worktree of its own.
    pub worktree: bool,
}

/// Worktree endings the comparison asks for (the UI crate runs no git).
pub trait WorktreeOps {
    /// The diff from worktree `a` to worktree `b` (labels).
    fn diff(&self, a: &str, b: &str) -> Result<String, String>;
    /// Lands (or applies) `keep` and discards the others behind snapshot refs.
    fn keep(&self, keep: &str, discard: &[String]) -> Result<Vec<String>, String>;
    /// One ending (`land`, `apply`, `keep`, `discard`) of worktree `label`.
    fn end(&self, label: &str, action: &str) -> Result<Vec<String>, String>;
}

/// Starts a session for the deck.
pub type Opener = Box<dyn FnMut(NewSession) -> Result<Opened, String>>;

/// One session of the deck.
pub struct Slot {
    pub key: SessionKey,
    pub app: App,
    pub restart: Option<crate::Restart>,
    pub source: String,
    pub branch: Option<String>,
    /// The agent as the user named it (for the new-session form's default).
    pub agent_arg: String,
    pub started: Instant,
    /// The last turn the human saw end.
    pub seen_turn: u32,
    pub attention: Attention,
    /// Since when `attention` holds.
    pub since: Instant,
    /// Lines added and removed by the session's edits, per call.
    edits: HashMap<usize, (usize, usize)>,
    seq: u64,
}

impl Slot {
    pub fn new(key: SessionKey, opened: Opened, agent_arg: String) -> Slot {
        let now = Instant::now();
        let mut slot = Slot {
            key,
            app: opened.app,
            restart: opened.restart,
            source: opened.source,
            branch: opened.branch,
            agent_arg,
            started: now,
            seen_turn: 0,
            attention: Attention::Starting,
            since: now,
            edits: HashMap::new(),
            seq: 0,
        };
        // A session that starts with history (resumed) has its edits counted once.
        let ledger = &slot.app.driver.session.ledger;
        for p in 0..ledger.len() {
            if let Some(stat) = trellis_core::enrich::diff_stat(&ledger.at(p)) {
                slot.edits.insert(p, stat);
            }
        }
        slot.attention = slot.derive();
        slot
    }

    fn facts(&self) -> Facts {
        let d = &self.app.driver;
        Facts {
            ready: d.ready(),
            closed: d.closed() && d.connection().is_some(),
            login: self.app.login.is_some(),
            seen_turn: self.seen_turn,
        }
    }

    fn derive(&self) -> Attention {
        Attention::of(&self.app.driver.session, &self.facts())
    }

    /// What the session is called: the agent's title, else its first prompt's words.
    pub fn title(&self) -> String {
        let s = &self.app.driver.session;
        let t = s.title.clone().or_else(|| {
            s.transcript.iter().find_map(|e| match e {
                trellis_core::transcript::Entry::Message(m)
                    if m.role == trellis_core::transcript::Role::User =>
                {
                    Some(m.text.clone())
                }
                _ => None,
            })
        });
        trellis_text::one_line(t.as_deref().unwrap_or("new session")).into_owned()
    }

    /// `+added −removed` over the session's edits.
    pub fn diffstat(&self) -> (usize, usize) {
        self.edits
            .values()
            .fold((0, 0), |(a, d), (x, y)| (a + x, d + y))
    }

    /// Numbers the notes of a batch.
    fn number(&mut self, notes: Vec<Note>) -> Vec<SessionNote> {
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
    fn observe(&mut self, notes: &[SessionNote]) {
        for n in notes {
            if let Note::Event(ev) = &n.note
                && matches!(
                    ev.body,
                    EventBody::ToolCallCreated { .. } | EventBody::ToolCallUpdated { .. }
                )
                && let Some(p) = ev.position
            {
                let call = self.app.driver.session.ledger.at(p);
                if let Some(stat) = trellis_core::enrich::diff_stat(&call) {
                    self.edits.insert(p, stat);
                }
            }
        }
    }
}

/// A state change worth telling the human about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    pub key: SessionKey,
    pub attention: Attention,
    pub agent: String,
    /// The ACP session id, once the agent gave one.
    pub session_id: Option<String>,
}

/// Which state changes of background sessions are announced, and the command run for
/// each (`[notify]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    pub enabled: bool,
    pub blocked: bool,
    pub error: bool,
    pub done: bool,
    pub command: Option<String>,
}

impl Default for Notify {
    fn default() -> Self {
        Notify {
            enabled: true,
            blocked: true,
            error: true,
            done: true,
            command: None,
        }
    }
}

/// Keys of the deck, active in every focus (they type no text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeckAction {
    Go(u8),
    Next,
    Prev,
    /// The session that needs the human most: oldest Blocked, then Error, then Done.
    Attention,
    New,
    NewWorktree,
    Close,
    Rail,
    Inbox,
    Compare,
}

impl DeckAction {
    pub const ALL: [(DeckAction, &'static str, &'static str); 18] = [
        (DeckAction::Go(1), "session_1", "<A-1>"),
        (DeckAction::Go(2), "session_2", "<A-2>"),
        (DeckAction::Go(3), "session_3", "<A-3>"),
        (DeckAction::Go(4), "session_4", "<A-4>"),
        (DeckAction::Go(5), "session_5", "<A-5>"),
        (DeckAction::Go(6), "session_6", "<A-6>"),
        (DeckAction::Go(7), "session_7", "<A-7>"),
        (DeckAction::Go(8), "session_8", "<A-8>"),
        (DeckAction::Go(9), "session_9", "<A-9>"),
        (DeckAction::Next, "session_next", "<A-j>"),
        (DeckAction::Prev, "session_prev", "<A-k>"),
        (DeckAction::Attention, "session_attention", "<A-a>"),
        (DeckAction::New, "session_new", "<A-n>"),
        (DeckAction::NewWorktree, "session_new_worktree", "<A-N>"),
        (DeckAction::Close, "session_close", "<A-w>"),
        (DeckAction::Rail, "session_rail", "<A-r>"),
        (DeckAction::Inbox, "inbox", "<A-i>"),
        (DeckAction::Compare, "session_compare", "<A-c>"),
    ];

    pub fn describe(self) -> &'static str {
        match self {
            DeckAction::Go(_) => "go to session 1…9 (the rail's numbers)",
            DeckAction::Next => "next session",
            DeckAction::Prev => "previous session",
            DeckAction::Attention => {
                "the session that needs you: oldest blocked, then error, then done"
            }
            DeckAction::New => "new session (agent and directory of the one in front)",
            DeckAction::NewWorktree => "new session in a new worktree",
            DeckAction::Close => "close the session in front (asks when it works)",
            DeckAction::Rail => "show or hide the sessions rail",
            DeckAction::Inbox => "every session's pending requests, oldest first",
            DeckAction::Compare => {
                "compare the sessions of a fan-out (or all): diffs, tests, cost; keep one"
            }
        }
    }

    /// Whether a name in `[ui.keys]` is one of the deck's.
    pub fn is_name(name: &str) -> bool {
        name == "leader" || DeckAction::ALL.iter().any(|(_, n, _)| *n == name)
    }
}

/// The deck's bindings, and the leader key for terminals that do not send Alt: the key
/// after the leader is read as if Alt were held.
#[derive(Debug, Clone)]
pub struct DeckKeys {
    bindings: Vec<(Key, DeckAction, String)>,
    leader: Option<(Key, String)>,
}

/// The leader's default, `Ctrl-]` (no readline or shell binding uses it).
pub const LEADER: &str = "<C-]>";

impl Default for DeckKeys {
    fn default() -> Self {
        DeckKeys::new(&std::collections::BTreeMap::new()).unwrap_or(DeckKeys {
            bindings: Vec::new(),
            leader: None,
        })
    }
}

impl DeckKeys {
    /// Defaults overridden by `config` (name → spec, `None` disables); names that are not
    /// the deck's are left to the transcript's keymap.
    pub fn new(
        config: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<DeckKeys, KeySpecError> {
        let one = |spec: &str| -> Result<Key, KeySpecError> {
            match parse_keys(spec)?.as_slice() {
                [k] => Ok(*k),
                _ => Err(KeySpecError(format!(
                    "{spec:?}: session keys are single keys (with <A-…> or after the leader)"
                ))),
            }
        };
        let mut bindings = Vec::new();
        for (action, name, default) in DeckAction::ALL {
            let spec = match config.get(name) {
                Some(None) => continue,
                Some(Some(s)) => s.clone(),
                None => default.to_string(),
            };
            bindings.push((one(&spec)?, action, spec));
        }
        let leader = match config.get("leader") {
            Some(None) => None,
            Some(Some(s)) => Some((one(s)?, s.clone())),
            None => Some((one(LEADER)?, LEADER.to_string())),
        };
        Ok(DeckKeys { bindings, leader })
    }

    /// The spec bound to `action` (for the help screen and hints).
    pub fn spec(&self, action: DeckAction) -> Option<&str> {
        self.bindings
            .iter()
            .find(|(_, a, _)| *a == action)
            .map(|(_, _, s)| s.as_str())
    }

    pub fn leader(&self) -> Option<&str> {
        self.leader.as_ref().map(|(_, s)| s.as_str())
    }

    fn action(&self, key: Key) -> Option<DeckAction> {
        self.bindings
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|(_, a, _)| *a)
    }

    fn is_leader(&self, key: Key) -> bool {
        self.leader.as_ref().is_some_and(|(k, _)| *k == key)
    }

    /// Every binding, for the help screen.
    pub fn listed(&self) -> Vec<(String, &'static str)> {
        let mut out: Vec<(String, &'static str)> = Vec::new();
        let go: Vec<&str> = self
            .bindings
            .iter()
            .filter(|(_, a, _)| matches!(a, DeckAction::Go(_)))
            .map(|(_, _, s)| s.as_str())
            .collect();
        if let (Some(first), Some(last)) = (go.first(), go.last()) {
            out.push((format!("{first}…{last}"), DeckAction::Go(1).describe()));
        }
        for (_, a, s) in &self.bindings {
            if !matches!(a, DeckAction::Go(_)) {
                out.push((s.clone(), a.describe()));
            }
        }
        if let Some((_, s)) = &self.leader {
            out.push((
                format!("{s} then a key"),
                "the session key of that key with Alt (for terminals that do not send Alt)",
            ));
        }
        out
    }
}

/// Crossterm reads `Ctrl-]` (0x1d) as `Ctrl-5`: both are the same key here.
fn normalize(key: Key) -> Key {
    match key {
        Key {
            code: KeyCode::Char('5'),
            ctrl: true,
            alt: false,
        } => Key {
            code: KeyCode::Char(']'),
            ctrl: true,
            alt: false,
        },
        k => k,
    }
}

/// What a key is to the deck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeckKey {
    Action(DeckAction),
    /// Taken by the deck, nothing to do (the leader; a key after it that is no session
    /// key; a key release).
    Swallowed,
    /// The session's key.
    Pass,
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
}

/// One pending request as the inbox lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub key: SessionKey,
    pub index: usize,
    pub agent: String,
    pub source: String,
    pub branch: Option<String>,
    pub kind: Blocked,
    pub request_id: String,
    /// What is asked: the command, the file and its diff summary, or the question.
    pub subject: String,
    /// The one-time choices (never "always": those are made in the session's own dialog).
    pub options: Vec<(String, String)>,
    pub since: Instant,
}

/// Several sessions, one in front.
pub struct Deck {
    pub slots: Vec<Slot>,
    pub front: usize,
    pub opener: Option<Opener>,
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
    next_key: SessionKey,
    /// Announcements waiting for the loop to write them (bell, title, OSC 9/777).
    pub announce: Vec<Announcement>,
    pub notify: Notify,
    /// Sessions started together for the same prompt (`trellis fan`).
    pub fan: Vec<SessionKey>,
    pub compare: Option<crate::compare::Compare>,
    pub worktrees: Option<Box<dyn WorktreeOps>>,
    /// This UI's socket (`trellis ls`, `send`, `approve`…), while it is served.
    pub hub: Option<trellis_hub::serve::Served>,
    /// Answers to the last mutations by operation id: a retry gets the first outcome.
    pub(crate) done_ops: std::collections::VecDeque<(String, trellis_hub::wire::Body)>,
}

impl Deck {
    /// A deck of one session.
    pub fn new(first: Opened, agent_arg: String) -> Deck {
        let mut deck = Deck {
            slots: Vec::new(),
            front: 0,
            opener: None,
            keys: DeckKeys::default(),
            ascii: false,
            rail: true,
            form: None,
            inbox: None,
            leader: false,
            confirm_close: None,
            next_key: 1,
            announce: Vec::new(),
            notify: Notify::default(),
            fan: Vec::new(),
            compare: None,
            worktrees: None,
            hub: None,
            done_ops: std::collections::VecDeque::new(),
        };
        deck.add(first, agent_arg);
        deck
    }

    /// Adds a session (at the end of the rail) and brings it to the front.
    pub fn add(&mut self, opened: Opened, agent_arg: String) -> SessionKey {
        let key = self.next_key;
        self.next_key += 1;
        self.slots.push(Slot::new(key, opened, agent_arg));
        self.front = self.slots.len() - 1;
        key
    }

    pub fn front(&mut self) -> &mut App {
        &mut self.slots[self.front].app
    }

    pub fn index_of(&self, key: SessionKey) -> Option<usize> {
        self.slots.iter().position(|s| s.key == key)
    }

    /// Brings slot `i` to the front: its view is laid out again at the next frame.
    pub fn show(&mut self, i: usize) {
        if i < self.slots.len() && i != self.front {
            self.front = i;
            self.confirm_close = None;
            let app = &mut self.slots[i].app;
            app.full_redraw = true;
            app.message = None;
            self.seen();
        }
    }

    /// The session in front is seen: a finished turn there is no longer news.
    pub fn seen(&mut self) {
        let slot = &mut self.slots[self.front];
        let turn = slot.app.driver.session.turn;
        if slot.seen_turn != turn && !slot.app.driver.session.turn_open {
            slot.seen_turn = turn;
            self.refresh(self.front);
        }
    }

    /// Handles what one session's driver reported: the same as for a single session,
    /// then its state derived again (and announced when it asks for the human).
    pub fn handle(&mut self, i: usize, incoming: trellis_driver::Incoming) -> Vec<SessionNote> {
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        slot.app.driver.handle(incoming, &mut notes);
        let numbered = slot.number(notes);
        slot.observe(&numbered);
        numbered
    }

    /// Derives slot `i`'s state again; a change into Blocked or Error, or into Done for a
    /// session in the background, is announced (Done only when nothing else waits).
    pub fn refresh(&mut self, i: usize) {
        let now = self.slots[i].derive();
        let was = self.slots[i].attention;
        if now == was {
            return;
        }
        let slot = &mut self.slots[i];
        slot.attention = now;
        slot.since = Instant::now();
        let background = i != self.front;
        let others_wait = self
            .slots
            .iter()
            .enumerate()
            .any(|(j, s)| j != i && s.attention.wants_human());
        let n = &self.notify;
        let tell = n.enabled
            && background
            && match now {
                Attention::Blocked(_) => n.blocked,
                Attention::Error => n.error,
                Attention::Done => n.done && !others_wait,
                _ => false,
            };
        if tell {
            let slot = &self.slots[i];
            self.announce.push(Announcement {
                key: slot.key,
                attention: now,
                agent: slot.app.agent.clone(),
                session_id: slot.app.driver.session.id.as_deref().map(str::to_string),
            });
        }
    }

    /// The session that needs the human most: the oldest Blocked, then Error, then Done.
    pub fn wanted(&self) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.attention.wants_human())
            .min_by_key(|(_, s)| (s.attention.rank(), s.since))
            .map(|(i, _)| i)
    }

    /// Every pending request of every session, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        let mut out = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            let s = &slot.app.driver.session;
            for (request_id, call, options) in s.pending_permissions() {
                let c = s.ledger.at(call);
                let mut subject = trellis_core::enrich::card_title(&c);
                if let Some((a, d)) = trellis_core::enrich::diff_stat(&c) {
                    subject.push_str(&format!(" (+{a} −{d})"));
                }
                out.push(Pending {
                    key: slot.key,
                    index,
                    agent: slot.app.agent.clone(),
                    source: slot.source.clone(),
                    branch: slot.branch.clone(),
                    kind: Blocked::Permission,
                    request_id,
                    subject,
                    options: options
                        .iter()
                        .filter(|o| {
                            !matches!(
                                o.kind,
                                trellis_core::permission::record::OptionKind::AllowAlways
                                    | trellis_core::permission::record::OptionKind::RejectAlways
                            )
                        })
                        .map(|o| (o.option_id.clone(), o.name.clone()))
                        .collect(),
                    since: slot.since,
                });
            }
            for e in s.pending_elicitations() {
                out.push(Pending {
                    key: slot.key,
                    index,
                    agent: slot.app.agent.clone(),
                    source: slot.source.clone(),
                    branch: slot.branch.clone(),
                    kind: Blocked::Question,
                    request_id: e.request_id.clone(),
                    subject: e.message.clone(),
                    options: Vec::new(),
                    since: slot.since,
                });
            }
        }
        out.sort_by_key(|p| p.since);
        out
    }

    /// Carries out a command for session `key`; what it reported, numbered.
    pub fn command(&mut self, key: SessionKey, cmd: Command) -> Vec<SessionNote> {
        let Some(i) = self.index_of(key) else {
            return Vec::new();
        };
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        match cmd {
            Command::Prompt { text, files } => slot.app.driver.prompt(text, files),
            Command::Cancel => slot.app.driver.cancel(&mut notes),
            Command::Decide {
                request_id,
                option_id,
            } => slot.app.driver.decide(
                request_id,
                trellis_core::Choice::Option(option_id),
                trellis_core::Decider::User,
                &mut notes,
            ),
            Command::Seen => {
                let turn = slot.app.driver.session.turn;
                slot.seen_turn = turn;
            }
        }
        let numbered = self.slots[i].number(notes);
        self.refresh(i);
        numbered
    }

    /// What a key is to the deck: one of its actions, swallowed (the leader, or a key
    /// after it that is no session key), or the session's.
    pub fn key(&mut self, k: &KeyEvent) -> DeckKey {
        if k.kind == KeyEventKind::Release {
            return DeckKey::Swallowed;
        }
        let key = normalize(Key::from_event(k));
        if std::mem::take(&mut self.leader) {
            let as_alt = Key { alt: true, ..key };
            return match self.keys.action(as_alt) {
                Some(a) => DeckKey::Action(a),
                None => DeckKey::Swallowed,
            };
        }
        if self.keys.is_leader(key) {
            self.leader = true;
            return DeckKey::Swallowed;
        }
        match self.keys.action(key) {
            Some(a) => DeckKey::Action(a),
            None => DeckKey::Pass,
        }
    }

    /// Whether the leader was pressed and the next key is awaited.
    pub fn leading(&self) -> bool {
        self.leader
    }

    /// Close asked for the session in front: `true` when it may go now (it is idle, or
    /// this is the second ask).
    pub fn may_close(&mut self) -> bool {
        let slot = &self.slots[self.front];
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
            let word = slot.attention.word();
            self.slots[self.front].app.message =
                Some(format!("this session is {word}: {close} again closes it"));
            return false;
        }
        self.confirm_close = None;
        true
    }

    /// Opens the comparison: the fan-out's sessions still on the deck, else all.
    pub fn open_compare(&mut self) {
        let mut keys: Vec<SessionKey> = self
            .fan
            .iter()
            .copied()
            .filter(|k| self.index_of(*k).is_some())
            .collect();
        if keys.len() < 2 {
            keys = self.slots.iter().map(|s| s.key).collect();
        }
        self.compare = Some(crate::compare::Compare {
            keys,
            ..Default::default()
        });
        self.refresh_compare();
    }

    /// Every session as a hub's client sees it.
    pub fn session_infos(&self) -> Vec<trellis_hub::wire::SessionInfo> {
        let pending = self.pending();
        self.slots
            .iter()
            .map(|s| {
                let session = &s.app.driver.session;
                trellis_hub::wire::SessionInfo {
                    key: s.key,
                    acp_id: session.id.as_deref().map(str::to_string),
                    agent: s.app.agent.clone(),
                    state: s.attention.word().into(),
                    rank: s.attention.rank(),
                    title: s.title(),
                    cwd: session.cwd.clone().unwrap_or_default(),
                    source: s.source.clone(),
                    branch: s.branch.clone(),
                    for_s: s.since.elapsed().as_secs(),
                    pending: pending
                        .iter()
                        .filter(|p| p.key == s.key)
                        .map(|p| trellis_hub::wire::PendingInfo {
                            request_id: p.request_id.clone(),
                            kind: match p.kind {
                                Blocked::Question => "question".into(),
                                _ => "permission".into(),
                            },
                            subject: p.subject.clone(),
                            options: p.options.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// A permission request answered through the socket by `who`: once, one-time choices
    /// only; someone who comes second is told who answered.
    pub fn decide_attached(
        &mut self,
        key: SessionKey,
        request_id: &str,
        option_id: &str,
        who: String,
    ) -> Result<Vec<SessionNote>, (&'static str, String)> {
        use trellis_core::permission::record::OptionKind;
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let s = &self.slots[i].app.driver.session;
        let Some((_, _, options)) = s
            .pending_permissions()
            .into_iter()
            .find(|(r, ..)| r == request_id)
        else {
            return Err(match s.answered_by(request_id) {
                Some(by) => ("answered", format!("already answered by {by}")),
                None => ("not_found", format!("no pending request {request_id}")),
            });
        };
        match options.iter().find(|o| o.option_id == option_id) {
            None => Err(("bad_request", format!("no choice {option_id}"))),
            Some(o) if matches!(o.kind, OptionKind::AllowAlways | OptionKind::RejectAlways) => {
                Err((
                    "refused",
                    "\"always\" is chosen in the session's own dialog, where the rule's scope shows"
                        .into(),
                ))
            }
            Some(_) => {
                let slot = &mut self.slots[i];
                let mut notes = Vec::new();
                slot.app.driver.decide(
                    request_id.to_string(),
                    trellis_core::Choice::Option(option_id.to_string()),
                    trellis_core::Decider::Attached(who),
                    &mut notes,
                );
                let numbered = self.slots[i].number(notes);
                self.refresh(i);
                Ok(numbered)
            }
        }
    }

    /// The comparison's rows again (when it opens and when a member's state changes).
    pub fn refresh_compare(&mut self) {
        let now = Instant::now();
        let Some(c) = self.compare.as_mut() else {
            return;
        };
        c.keys.retain(|k| self.slots.iter().any(|s| s.key == *k));
        c.rows = c
            .keys
            .iter()
            .filter_map(|k| {
                let i = self.slots.iter().position(|s| s.key == *k)?;
                Some(crate::compare::row(&self.slots[i], i + 1, now))
            })
            .collect();
        c.selected = c.selected.min(c.rows.len().saturating_sub(1));
    }

    /// The form for a new session, from the one in front.
    pub fn open_form(&mut self, worktree: bool) {
        let slot = &self.slots[self.front];
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
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(c: char, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), m)
    }

    fn opened(name: &str) -> Opened {
        Opened {
            app: App::new(
                trellis_core::Session::new(trellis_core::permission::Policy::Ask),
                name.into(),
                false,
            ),
            restart: None,
            source: "/src/repo".into(),
            branch: None,
        }
    }

    #[test]
    fn alt_keys_and_the_leader() {
        let mut d = Deck::new(opened("a"), "demo".into());
        assert_eq!(
            d.key(&key('3', KeyModifiers::ALT)),
            DeckKey::Action(DeckAction::Go(3))
        );
        assert_eq!(d.key(&key('x', KeyModifiers::NONE)), DeckKey::Pass);
        assert_eq!(
            d.key(&key('N', KeyModifiers::ALT | KeyModifiers::SHIFT)),
            DeckKey::Action(DeckAction::NewWorktree)
        );
        // Ctrl-] as crossterm reads it, then a plain `a`: the jump.
        assert_eq!(d.key(&key('5', KeyModifiers::CONTROL)), DeckKey::Swallowed);
        assert!(d.leading());
        assert_eq!(
            d.key(&key('a', KeyModifiers::NONE)),
            DeckKey::Action(DeckAction::Attention)
        );
        // A key after the leader that is no session key is dropped, not typed.
        assert_eq!(d.key(&key(']', KeyModifiers::CONTROL)), DeckKey::Swallowed);
        assert_eq!(d.key(&key('z', KeyModifiers::NONE)), DeckKey::Swallowed);
        assert_eq!(d.key(&key('z', KeyModifiers::NONE)), DeckKey::Pass);
    }

    #[test]
    fn keys_are_rebound_and_checked() {
        let mut cfg = std::collections::BTreeMap::new();
        cfg.insert("session_next".to_string(), Some("<F8>".to_string()));
        cfg.insert("inbox".to_string(), None);
        let k = DeckKeys::new(&cfg).unwrap();
        assert_eq!(k.spec(DeckAction::Next), Some("<F8>"));
        assert_eq!(k.spec(DeckAction::Inbox), None);
        cfg.insert("session_prev".to_string(), Some("gT".to_string()));
        assert!(DeckKeys::new(&cfg).is_err(), "two keys");
        assert!(DeckAction::is_name("leader") && !DeckAction::is_name("inspect"));
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

    #[test]
    fn a_background_change_is_announced_once_per_change_and_per_kind() {
        let mut d = Deck::new(opened("a"), "demo".into());
        d.add(opened("b"), "demo".into());
        d.show(0);
        d.announce.clear();
        d.slots[1].app.login = Some(login());
        d.refresh(1);
        d.refresh(1);
        assert_eq!(d.announce.len(), 1, "once per change");
        assert_eq!(d.announce[0].attention, Attention::Blocked(Blocked::Login));
        assert_eq!(d.announce[0].key, d.slots[1].key);
        // The session in front is never announced by the deck (it alerts on its own).
        d.slots[0].app.login = Some(login());
        d.refresh(0);
        assert_eq!(d.announce.len(), 1);
        // An agent that died: Error, announced; switched off per kind, not announced.
        d.slots[1].app.login = None;
        d.slots[1].app.driver.session.agent_exited = Some("killed".into());
        d.refresh(1);
        assert_eq!(d.announce.len(), 2);
        assert_eq!(d.announce[1].attention, Attention::Error);
        d.notify.blocked = false;
        d.slots[1].app.driver.session.agent_exited = None;
        d.slots[1].app.login = Some(login());
        d.refresh(1);
        assert_eq!(d.announce.len(), 2, "blocked announcements switched off");
        d.notify = Notify {
            enabled: false,
            ..Notify::default()
        };
        d.slots[1].app.driver.session.agent_exited = Some("again".into());
        d.refresh(1);
        assert_eq!(d.announce.len(), 2, "the off switch");
    }

    #[test]
    fn the_wanted_session_is_the_oldest_most_urgent() {
        let mut d = Deck::new(opened("a"), "demo".into());
        d.add(opened("b"), "demo".into());
        d.add(opened("c"), "demo".into());
        let t0 = Instant::now();
        d.slots[0].attention = Attention::Done;
        d.slots[0].since = t0;
        d.slots[1].attention = Attention::Blocked(Blocked::Permission);
        d.slots[1].since = t0 + std::time::Duration::from_secs(2);
        d.slots[2].attention = Attention::Blocked(Blocked::Question);
        d.slots[2].since = t0 + std::time::Duration::from_secs(1);
        assert_eq!(d.wanted(), Some(2), "the older blocked one first");
        d.slots[2].attention = Attention::Idle;
        assert_eq!(d.wanted(), Some(1));
        d.slots[1].attention = Attention::Working;
        assert_eq!(d.wanted(), Some(0));
        d.slots[0].attention = Attention::Idle;
        assert_eq!(d.wanted(), None);
    }
}
