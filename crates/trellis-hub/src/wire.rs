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
    Send {
        session: u32,
        text: String,
        /// Files the prompt names (sent as resource links).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    },
    /// Cancels the session's running turn.
    Cancel { session: u32 },
    /// Answers a pending permission request once. While someone holds a claim on it,
    /// only their claim answers it. An "always" choice saves a rule, so it is taken only
    /// with `always` naming where the rule goes (`session`, `project`, `global`) — after
    /// its reach was shown (`PendingInfo::always`) — and, over the listener, only from a
    /// token with the `admin` scope.
    Decide {
        session: u32,
        request_id: String,
        option_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claim: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        always: Option<String>,
        /// Why, with a reject: told to the agent as the session's next message (after
        /// the running turn) and kept on the call's record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Claims a pending request for a while (`lease_s`, 30 s unless said, 5–300): others
    /// are told who is answering it and cannot answer it meanwhile. The claim goes when
    /// it is used, released, expires, or its connection ends; claiming again renews it.
    Claim {
        session: u32,
        request_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_s: Option<u64>,
    },
    /// Lets go of a claim.
    Release {
        session: u32,
        request_id: String,
        claim: String,
    },
    /// Ends the session (as closing it in the UI does). `reason`: why, in words, when it
    /// is not a plain stop (an ending of its worktree from elsewhere, say).
    Stop {
        session: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Answers an agent's question once (`accept` with its content, `decline`,
    /// `cancel`); the content is checked against the question's form by the hub.
    Answer {
        session: u32,
        request_id: String,
        answer: Answer,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claim: Option<String>,
    },
    /// Starts a session in the hub (`trellis new`, `trellis run --detach`).
    New {
        /// The agent as the user names it (a preset, `demo`, a command line).
        agent: String,
        /// Its working directory (absolute); none: the agent's own default (the demo's
        /// scratch workspace).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// In a worktree of its own.
        #[serde(default)]
        worktree: bool,
        /// Its label (none: one made up).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree_label: Option<String>,
        /// Sent once the agent is ready.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// The asking client's directory (where `trellis sessions list` there finds it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        launched_in: Option<String>,
        /// A fork of an earlier session (`trellis sessions fork`): its turns before `at`
        /// as history, told to the agent as a transcript (or its own `session/fork`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fork: Option<ForkOf>,
    },
    /// A single-use pairing code for a phone (`trellis pair`), when the hub listens.
    Pair,
    /// Starts the hub's loopback listener on `addr` (`trellis serve --listen` for a hub
    /// that is already serving). Only a hub of its own (`trellis serve`) takes one.
    /// `hosts`: names it answers besides loopback ones (`--allow-host`).
    Listen {
        addr: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hosts: Vec<String>,
    },
    /// Stops the hub (`trellis serve --stop`): every session closes as a quit closes
    /// it, then the hub ends. Only a hub of its own (`trellis serve`) is stopped so.
    Shutdown,
    /// Follows a session (`trellis attach`): answered with where its log is, then its
    /// progress is pushed on this connection (the latest only: a slow reader skips,
    /// never slows the session). As the controller unless `observe`; `take` takes the
    /// control from another attachment.
    Watch {
        session: u32,
        #[serde(default)]
        observe: bool,
        #[serde(default)]
        take: bool,
    },
    /// A connection ended (never on the wire: the socket tells the hub's loop, which lets
    /// that connection's claims go).
    #[serde(skip)]
    Hangup,
}

impl Op {
    /// The session it acts on, if it acts on one.
    pub fn session(&self) -> Option<u32> {
        match self {
            Op::Send { session, .. }
            | Op::Cancel { session }
            | Op::Decide { session, .. }
            | Op::Answer { session, .. }
            | Op::Claim { session, .. }
            | Op::Release { session, .. }
            | Op::Stop { session, .. } => Some(*session),
            Op::Watch { session, .. } => Some(*session),
            Op::List
            | Op::New { .. }
            | Op::Pair
            | Op::Listen { .. }
            | Op::Shutdown
            | Op::Hangup => None,
        }
    }
}

/// Which session a new one forks, and before which of its turns (none: after the last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOf {
    /// Its id (a prefix of one), or its log.
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u32>,
}

/// An answer to an agent's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Answer {
    Accept {
        #[serde(default)]
        content: serde_json::Map<String, serde_json::Value>,
    },
    Decline,
    Cancel,
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
    /// The attachment (`Watching::attachment`) a request comes from: the hub acts on it
    /// only while that attachment controls the session (an observer's are refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<String>,
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
    /// A session started (`Op::New`): its key, and what starting it had to say.
    Started {
        session: u32,
        said: Vec<String>,
    },
    /// A session followed (`Op::Watch`): its log (rebuilt by the client as the session
    /// was), its agent, and whether this attachment controls it. `Progress` follows.
    Watching {
        log: String,
        agent: String,
        controller: bool,
        /// How the hub names this attachment (as `Progress::controller` would).
        you: String,
        /// This attachment's id, for its requests (`Request::attachment`).
        #[serde(default)]
        attachment: String,
    },
    /// A claim (`Op::Claim`): the token that answers with it, and how long it holds.
    Claimed {
        claim: String,
        expires_s: u64,
    },
    /// A pairing code (`Op::Pair`): the address to open, with the code in its fragment.
    Paired {
        url: String,
        expires_s: u64,
    },
    /// The hub's listener (`Op::Listen`): where it listens (`already`: it did before).
    Listening {
        addr: String,
        #[serde(default)]
        already: bool,
    },
    /// Pushed to a watcher whenever the session moved on.
    Progress(Progress),
    Error {
        /// `not_found`, `answered` (someone else answered first: `message` says who),
        /// `refused`, `bad_request`, `busy`.
        code: String,
        message: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HubInfo {
    pub name: String,
    pub pid: u32,
    /// `serve` (a hub of its own), `ui` (a UI's socket) or `run` (a headless run's).
    #[serde(default)]
    pub kind: String,
    /// The permission policy the hub's new sessions run under, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The plugins every new session of the hub runs besides the enabled ones
    /// (`--plugin`), and whether they may drive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
    #[serde(default)]
    pub allow_drive: bool,
    /// Where its loopback listener listens, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listening: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// The permission policy it runs under, in words.
    #[serde(default)]
    pub policy: String,
    /// The label of the worktree of Trellis's it runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInfo {
    pub request_id: String,
    /// Seconds it has waited for an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_s: Option<u64>,
    /// An edit's unified diff (bounded), so nobody approves blind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The call's input as the agent sent it, pretty (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// `permission` or `question`.
    pub kind: String,
    pub subject: String,
    /// The one-time choices: (option id, name).
    pub options: Vec<(String, String)>,
    /// Who holds a claim on it now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// Its "always" choices and the rule each would save, with its reach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<AlwaysInfo>,
    /// The one-time reject, which takes a reason (`Op::Decide::reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_once: Option<String>,
}

/// An "always" choice of a pending request: the rule it saves and what that rule matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlwaysInfo {
    pub option_id: String,
    pub name: String,
    /// The rule in words (`allow kind=edit path=src/lib.rs`).
    pub rule: String,
    /// Calls of the session the rule matches already (the newest 8 192 looked at).
    pub matches: usize,
}

/// Where a followed session is: pushed on a `Watch` connection, the latest only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Bytes of the log written so far (every record before this point is complete).
    pub log_len: u64,
    /// The state in a word, as `SessionInfo::state`.
    pub state: String,
    /// Who controls it now (`None`: nobody attached as controller).
    pub controller: Option<String>,
    /// The session is over in the hub: nothing more will be written.
    pub ended: bool,
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
