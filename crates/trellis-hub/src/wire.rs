//! The messages on a hub's socket: one JSON object per line each way. A client sends a
//! request with an id; the hub answers it with the same id. Every text in a reply came
//! from agents and must be made harmless before it reaches a terminal.

use serde::{Deserialize, Serialize};

/// Longest request line a hub reads; a longer one ends the connection.
pub const REQUEST_LIMIT: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Every session of the hub, with its state and pending requests.
    List,
    /// Queues a prompt (sent when the agent is ready and its turn is free).
    Send { session: u32, text: String },
    /// Cancels the session's running turn.
    Cancel { session: u32 },
    /// Answers a pending permission request once (one-time choices only).
    Decide {
        session: u32,
        request_id: String,
        option_id: String,
    },
    /// Ends the session (as closing it in the UI does).
    Stop { session: u32 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    #[serde(flatten)]
    pub op: Op,
    /// Who asks (`trellis approve`, a script's name): recorded as who answered.
    #[serde(default)]
    pub client: String,
    /// Makes a mutation idempotent: a retry with the same id gets the first outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: u64,
    #[serde(flatten)]
    pub body: Body,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Body {
    Sessions {
        hub: HubInfo,
        sessions: Vec<SessionInfo>,
    },
    Done {
        said: String,
    },
    Error {
        /// `not_found`, `answered` (someone else answered first: `message` says who),
        /// `refused`, `bad_request`, `busy`.
        code: String,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubInfo {
    pub name: String,
    pub pid: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's key in its hub.
    pub key: u32,
    /// The ACP session id, once the agent gave one.
    pub acp_id: Option<String>,
    pub agent: String,
    /// The state in a word (`permission`, `question`, `login`, `error`, `done`,
    /// `working`, `starting`, `idle`, `exited`).
    pub state: String,
    /// Lower needs the human more (blocked 0, error 1, done 2, working 3, idle 4).
    pub rank: u8,
    pub title: String,
    pub cwd: String,
    /// The repository it is grouped under.
    pub source: String,
    pub branch: Option<String>,
    /// Seconds in its current state.
    pub for_s: u64,
    pub pending: Vec<PendingInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInfo {
    pub request_id: String,
    /// `permission` or `question`.
    pub kind: String,
    pub subject: String,
    /// The one-time choices: (option id, name).
    pub options: Vec<(String, String)>,
}

impl Response {
    pub fn error(id: u64, code: &str, message: impl Into<String>) -> Response {
        Response {
            id,
            body: Body::Error {
                code: code.into(),
                message: message.into(),
            },
        }
    }

    pub fn done(id: u64, said: impl Into<String>) -> Response {
        Response {
            id,
            body: Body::Done { said: said.into() },
        }
    }
}
