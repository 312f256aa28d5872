//! What crosses between the host and the runtime that feeds it: messages from the
//! extensions' workers ([`HostMsg`]) and what the runtime must do ([`Out`]).

use serde_json::Value;

/// Why an offer was not answered: in words, and whether that was counted as a failure of
/// the extension already (its callback failed).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimFailed {
    pub reason: String,
    pub counted: bool,
}

/// From workers (and host functions) to the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum HostMsg {
    /// Reply to a permission offer: `Ok(true)` claimed, `Ok(false)` passed, `Err` failed.
    Claim {
        extension: String,
        request_id: String,
        result: Result<bool, ClaimFailed>,
    },
    Respond {
        extension: String,
        request_id: String,
        option_id: String,
        /// Why, in its words, when it said.
        reason: Option<String>,
    },
    /// An extension's answer to a question it holds.
    Answer {
        extension: String,
        request_id: String,
        answer: trellis_core::ElicitAnswer,
    },
    CallState {
        extension: String,
        call_id: String,
        value: Value,
    },
    Notify {
        extension: String,
        text: String,
    },
    OpenInspector {
        call_id: String,
    },
    Repaint,
    Disabled {
        extension: String,
        reason: String,
    },
    /// A disabled extension changed (a plugin being tried): `Ok` it runs again, `Err` why
    /// it cannot in this session.
    Revived {
        extension: String,
        result: Result<(), String>,
    },
    /// Something of an extension's failed, for the first time of its kind (`what`): said
    /// where the user looks once, `/status` keeps the rest.
    Failing {
        extension: String,
        what: String,
        message: String,
    },
    /// An extension holding `drive` acts on the session.
    Drive {
        extension: String,
        action: trellis_core::ext::DriveAction,
    },
}

/// What the runtime must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Answer a request with an option; the decider is the extension.
    Decide {
        request_id: String,
        option_id: String,
        extension: String,
        /// Why, in the extension's words, when it said.
        reason: Option<String>,
    },
    /// Nobody claimed the request: the dialog (or the headless fallback) takes it.
    Dialog {
        request_id: String,
    },
    /// Answer the agent's question with an extension's answer; the decider is the
    /// extension.
    Elicit {
        request_id: String,
        answer: trellis_core::ElicitAnswer,
        extension: String,
    },
    /// No extension took the question: the dialog (or, headless, `--answers` and the
    /// default decline) takes it.
    Question {
        request_id: String,
    },
    /// Record an extension's call state in the session log.
    CallState {
        extension: String,
        call_id: String,
        value: Value,
    },
    Notify(String),
    OpenInspector(String),
    Repaint,
    /// Something the user should know (a hand-on).
    Notice(String),
    /// An extension or hook failed — its first failure of a kind, or it was disabled: said
    /// once where the user looks, and the front end says where to see more (the UI's
    /// `/status`, a run's closing status).
    Failure {
        text: String,
        /// The extension was disabled (nothing more of it will fail).
        stopped: bool,
    },
    /// An extension holding `drive` acts on the session (the front end records it with
    /// the extension as its origin).
    Drive {
        extension: String,
        action: trellis_core::ext::DriveAction,
    },
}
