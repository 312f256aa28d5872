//! What the reducer takes and gives: [`Action`]s in (everything that can happen to a
//! session), [`Effect`]s out (what the edges must do). Data only: the reducer is
//! [`crate::update`].

use crate::event::Event;
use crate::permission::{Decider, Outcome, Verdict};
use crate::session::LocalRecord;
use crate::wire::{Dir, Message};

/// Everything that can happen to a session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Action {
    /// A JSON-RPC message on the agent's stdio. `seq` numbers frames in log order.
    Frame {
        seq: u64,
        t: f64,
        dir: Dir,
        msg: Message,
    },
    /// A line that was not JSON-RPC (it is kept verbatim in the log).
    InvalidLine {
        t: f64,
        dir: Dir,
        len: usize,
        error: String,
    },
    /// A client-side record (also written to the log). Boxed: the largest record (a
    /// session's header, once per session) would otherwise make every action, and every
    /// queued frame, twice the size of a frame.
    Local { t: f64, record: Box<LocalRecord> },
    /// The user (or an extension) answers an open permission request.
    Decide {
        t: f64,
        request_id: String,
        choice: Choice,
        decider: Decider,
        /// Why, in the decider's words (a hook's stderr, a plugin's reason): kept on the
        /// record, said on the card and in the event.
        reason: Option<String>,
    },
    /// The user wants the running turn cancelled.
    Cancel { t: f64 },
    /// The user wants a subagent's work cancelled (only one that lets the client).
    CancelSubagent { t: f64, session_id: String },
    /// The user (or an extension, or a headless answer file) answers an open elicitation.
    Elicit {
        t: f64,
        request_id: String,
        answer: crate::elicitation::ElicitAnswer,
        decider: Decider,
    },
}

/// An answer to a permission request.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// A specific option id.
    Option(String),
    /// The narrowest option for a verdict.
    Verdict(Verdict),
    Cancelled,
}

/// What the edges must do.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Effect {
    /// Deliver a normalized event (headless output, UI, extensions).
    Emit(Event),
    /// Answer the agent's permission request `request_id`, recording `decider` first.
    Answer {
        request_id: String,
        outcome: Outcome,
        decider: Decider,
        /// Why, in the decider's words, when it said.
        reason: Option<String>,
    },
    /// Answer the agent's elicitation `request_id`, recording `decider` first.
    Elicit {
        request_id: String,
        answer: crate::elicitation::ElicitAnswer,
        decider: Decider,
    },
    /// Send `session/cancel` for the session.
    SendCancel,
    /// Kill the client terminal `terminal_id` (a call past `--max-tool-calls`).
    KillTerminal { terminal_id: String },
    /// Send `session/cancel` for a subagent (child session id).
    CancelSubagent { session_id: String },
    /// Ask for the next page of the agent's sessions (`session/list` with `cursor`).
    ListSessions { cwd: Option<String>, cursor: String },
    /// Make the log durable (end of a turn).
    Sync,
    /// Send `text` as the session's next prompt, once no turn runs: a reason given with
    /// a reject, which the agent reads as the next message of the conversation.
    Prompt { text: String },
}

/// Why a decision was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecideError {
    #[error("no open permission request {0}")]
    NotOpen(String),
    #[error("permission request {0} was already answered")]
    AlreadyAnswered(String),
    #[error("option {option} was not offered for request {request}")]
    InvalidOption { request: String, option: String },
}
