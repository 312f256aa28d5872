//! The sessions of one hub: several sessions at once, each run by its own driver behind a
//! front end ([`Front`]: the UI's, or [`Headless`] for `trellis serve`), their states for
//! the human, their pending requests, and the calls of the hub's socket (`trellis ls`,
//! `send`, `approve`, `attach`, `run --detach`) carried out on them.
//!
//! The UI is one client of it: it draws what the deck says, and adds the session in front,
//! its keys, the inbox's page and the comparison. `trellis serve` runs the same deck with
//! no screen ([`serve`]).
//!
//! A session's state for its human ([`Attention`]) is derived from its reducer's state on
//! every change, never kept beside it; the deck only remembers what the human has seen
//! (the last turn end looked at) and since when each state holds (to find the oldest
//! one that needs the human). What crosses between the deck and a session is a message:
//! notes out, each with the session's key and a sequence number ([`SessionNote`]);
//! commands in ([`Command`]).

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod calls;
mod close;
mod front;
mod notify;
mod serve;
mod sessions;
mod slot;
mod socket;

use std::path::PathBuf;
use std::time::Instant;

use trellis_core::attention::{Attention, Blocked};
use trellis_driver::Note;

pub use calls::{next_call, remote};
pub use close::USER_CLOSED;
pub use front::{Front, Headless, StatusReport};
pub use notify::run_hook;
pub use serve::serve;
pub use sessions::{Sessions, recv_any};
pub use slot::Slot;
pub use socket::elicit_answer;

/// A session's key in a deck (never reused while the deck lives).
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

/// A session started for the deck (the deck knows no configuration: the binary starts
/// it).
pub struct Opened<F> {
    pub app: F,
    pub restart: Option<trellis_driver::Restart>,
    /// Where the session is grouped: the top level of its repository (the source's, for
    /// a worktree), else its directory.
    pub source: String,
    /// The branch or worktree label shown on its row.
    pub branch: Option<String>,
    /// The session it forks or was handed over from (the rail shows them as one thread).
    pub from: Option<Lineage>,
}

/// Where a session came from, when it continues another one's thread: a fork, a rewound
/// conversation, a hand-off to another agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The earlier session's log.
    pub log: PathBuf,
    /// The turn it forks before (none: after the last).
    pub at: Option<u32>,
    /// Handed over to another agent with a brief (not forked with a transcript).
    pub handoff: bool,
}

/// A new session asked for (from the UI's form, or through the socket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The agent as the user names it (a preset, `demo`, a command line).
    pub agent: String,
    /// None: the agent's own default (the demo's scratch workspace).
    pub cwd: Option<PathBuf>,
    /// In a worktree of its own.
    pub worktree: bool,
    /// Its label (none: one made up).
    pub worktree_label: Option<String>,
    /// Where it was asked for, when elsewhere (a client of a hub, in its directory).
    pub launched_in: Option<PathBuf>,
    /// A fork of an earlier session.
    pub fork: Option<ForkFrom>,
}

/// Which session a new one forks, from where, and what its agent is given of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkFrom {
    /// Its id, or its log.
    pub session: String,
    /// The turn it forks before (none: after the last).
    pub at: Option<u32>,
    /// The turns before as a transcript with the first prompt (else nothing: a hand-off
    /// whose brief the user edits and sends).
    pub transcript: bool,
}

/// Starts a session for the deck.
pub type Opener<F> = Box<dyn FnMut(NewSession) -> Result<Opened<F>, String>>;

/// What the deck asks of worktrees (it runs no git).
pub trait Worktrees: Send + Sync {
    /// What to remind the user of worktree `label` when its session has closed: how to
    /// end it, while it is still open; nothing once it has ended.
    fn reminder(&self, label: &str) -> Option<String>;
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
    /// The one-time choices (the inbox answers with these only: "always" is made in the
    /// session's own dialog, where the rule's scope shows).
    pub options: Vec<(String, String)>,
    /// The "always" choices, offered to those elsewhere who may make rules.
    pub always: Vec<(String, String)>,
    pub since: Instant,
}

/// The settings a hub's new sessions get (its `--permission`, `--plugin`,
/// `--allow-drive`), in words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubSettings {
    pub policy: Option<String>,
    pub plugins: Vec<String>,
    pub allow_drive: bool,
}
