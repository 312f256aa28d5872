//! The state of one ACP session, everything the log can rebuild.
//!
//! Invariants: the state is a pure fold of frames and local records (see `update`), so a
//! live session and a replay of its log end in equal states; open permission requests are
//! exactly those the agent asked and the client has not yet answered.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use crate::ledger::Ledger;
use crate::permission::{Decider, PermissionOption, Policy};
pub use crate::transcript::{AgentNotice, Compaction, Entry, MessageBlock};
use crate::wire::{AgentInfo, AvailableCommand, ExitStatus, PlanEntry, Usage};

/// A client terminal as the session saw it (live output kept after release).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TerminalState {
    pub command: String,
    pub output: String,
    /// Bytes dropped from the front to respect the cap.
    pub dropped: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitStatus>,
    pub released: bool,
    /// Ledger position of the latest call whose content shows this terminal.
    #[serde(skip)]
    pub call: Option<usize>,
    /// When the command started (session seconds): the answer to `terminal/create`, or
    /// the first output an agent reported in `_meta`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<f64>,
}

/// An agent request the client has not answered yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AgentRequest {
    Permission {
        /// The call's position in the ledger (a subagent's call ids are its own).
        call: usize,
        options: Vec<PermissionOption>,
        answering: bool,
    },
    Write {
        path: String,
        bytes: usize,
        content: std::sync::Arc<str>,
        /// `file_written` already went out (from the client's record).
        announced: bool,
    },
    TerminalCreate {
        command: String,
    },
    TerminalWait {
        terminal_id: String,
    },
    TerminalOutput {
        terminal_id: String,
    },
    /// `elicitation/create`; the question itself is in `Session::elicitations`.
    Elicitation {
        answering: bool,
    },
    Other,
}

/// A client request the agent has not answered yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientRequest {
    Initialize,
    NewSession {
        cwd: Option<String>,
    },
    /// `session/load`, or `session/resume` (`resume`: the agent replays no history).
    LoadSession {
        cwd: Option<String>,
        session_id: Option<String>,
        resume: bool,
    },
    Prompt,
    /// `session/set_mode` to this mode.
    SetMode(String),
    /// `session/set_config_option`.
    SetConfigOption,
    /// `session/list` (`next_page`: asked with a cursor, a page after the first).
    ListSessions {
        cwd: Option<String>,
        next_page: bool,
    },
    Other,
}

/// Counters of input that was skipped, for diagnostics.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counters {
    /// `session/update` kinds Trellis does not know, by tag.
    pub unknown_updates: BTreeMap<String, u64>,
    /// Notifications with a method Trellis does not know, by method.
    pub unknown_notifications: BTreeMap<String, u64>,
    /// Lines that were not JSON-RPC.
    pub invalid_lines: u64,
    /// Updates ignored because they named another session or none.
    pub foreign_updates: u64,
    /// Updates naming a call id never announced.
    pub unannounced_calls: u64,
    /// Anomalies found (see `crate::anomaly`).
    pub anomalies: u64,
    /// Messages that could not be decoded (bad params), by method or update kind.
    pub malformed: BTreeMap<String, u64>,
    /// Frames seen, both directions.
    pub frames: u64,
    /// `session/update` notifications applied.
    pub updates: u64,
    /// Updates the agent replayed while loading a session whose history was already
    /// shown from its log (see [`Session::continuing`]): not applied a second time.
    pub replayed: u64,
}

/// A git worktree Trellis made for a session: its label (the branch is
/// `trellis/<label>`), the repository it came from and the commit it started at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeRef {
    pub label: String,
    pub branch: String,
    /// The top level of the source repository.
    pub source: String,
    /// The commit the worktree started from.
    pub base: String,
}

/// Cap on terminal output kept per terminal (the front is dropped beyond it).
pub const TERMINAL_OUTPUT_CAP: usize = 4 << 20;

#[derive(Debug, Clone, Default)]
pub struct Session {
    /// The ACP session id (shared: every event carries it).
    pub id: Option<std::sync::Arc<str>>,
    /// The session's name in the hub that holds it (`HUB:KEY`, as `trellis ls`, `send` and
    /// `attach` take it), when one does: every event carries it too.
    pub hub_session: Option<std::sync::Arc<str>>,
    pub cwd: Option<String>,
    /// The worktree Trellis made for this session, when it runs in one.
    pub worktree: Option<WorktreeRef>,
    /// Where the agent runs when it was dialed (`HOST:PORT`): its files are its own
    /// unless it was offered this machine's.
    pub remote: Option<String>,
    /// A dialed agent's shared directories: its paths in calls become this machine's.
    pub paths: crate::path_map::PathMap,
    pub agent: AgentInfo,
    pub agent_capabilities: Option<serde_json::Value>,
    pub auth_methods: Vec<serde_json::Value>,
    /// The agent's list of its sessions, as it last answered `session/list`.
    pub agent_sessions: Option<crate::agent_sessions::AgentSessions>,
    pub transcript: Vec<Entry>,
    pub ledger: Ledger,
    pub plan: Vec<PlanEntry>,
    /// Plans the agent keeps by id (`plan_update`), in the order they first came.
    pub plans: Vec<crate::plans::NamedPlan>,
    pub usage: Option<Usage>,
    pub commands: Vec<AvailableCommand>,
    pub mode: Option<String>,
    pub title: Option<String>,
    /// The agent's config options (ACP `configOptions`), as last reported.
    pub config: Vec<crate::session_config::ConfigOption>,
    /// The legacy modes the agent offers (`modes.availableModes`); `mode` is the current one.
    pub modes: Vec<crate::session_config::ConfigChoice>,
    /// Answers (or errors) the agent gave to `session/set_mode` and
    /// `session/set_config_option` so far (a headless run waits for its settings).
    pub settings_answered: u64,
    /// Of those, the ones the agent refused.
    pub settings_refused: u64,
    /// Session time of the last change of mode or config options (see `crate::anomaly`).
    pub settings_changed_at: f64,
    /// Per kind of call: when the agent last asked permission for one, and whether an
    /// "always allow" answer was given for one (see `crate::anomaly`).
    pub asks_by_kind: BTreeMap<crate::tool_call::ToolKind, (f64, bool)>,
    pub terminals: BTreeMap<String, TerminalState>,
    /// Turns started so far (the current one, if open, is `turn`).
    pub turn: u32,
    pub turn_open: bool,
    /// When each turn began (session seconds; index `turn - 1`). Turns of a history from
    /// an earlier log have the time they were replayed.
    pub turn_started: Vec<f64>,
    /// Stop reason of the last finished turn.
    pub last_stop: Option<String>,
    pub counters: Counters,
    /// Set once the agent process has ended.
    pub agent_exited: Option<String>,
    pub ended: Option<String>,
    /// How permission requests are answered without the user.
    pub policy: Policy,
    /// At most this many tool calls run (`trellis run --max-tool-calls`): the call past
    /// it cancels the turn, and no call past it completes on Trellis's side (see
    /// `update::limit`).
    pub call_limit: Option<usize>,
    /// The number of calls started when the limit was passed, once it was.
    pub limit_hit: Option<usize>,
    pub(crate) agent_requests: FxHashMap<String, AgentRequest>,
    pub(crate) client_requests: FxHashMap<String, ClientRequest>,
    pub(crate) deciders: FxHashMap<String, Decider>,
    /// Why each request was answered as it was, when the decider said (by request id).
    pub(crate) reasons: FxHashMap<String, String>,
    pub(crate) warned: std::collections::HashSet<String>,
    /// Elicitations the agent asked and the client has not answered yet, oldest first.
    pub elicitations: Vec<std::sync::Arc<crate::elicitation::Elicitation>>,
    /// The elicitation modes the client advertised, once `initialize` was seen (a log
    /// without it takes every question as offered).
    pub elicitation_offered: Option<crate::elicitation::Offered>,
    /// Child sessions the agent announced, and the messages between sessions.
    pub subagents: crate::subagents::Subagents,
    /// Extension state per call: (extension, call id) → value. Saved in the log.
    pub call_state: BTreeMap<(String, String), serde_json::Value>,
    /// The history above came from an earlier session's log (a resumed session).
    pub seeded: bool,
    /// Turns of that history: this session's own turns (its log's, its checkpoints')
    /// are numbered from the next one, as `turn - turns_before`.
    pub turns_before: u32,
}

/// What is said when the connection to an agent elsewhere ended, with `message` (which
/// may say it already: "the connection to HOST was lost: …").
pub fn connection_ended(message: &str) -> String {
    // A connection that never opened, or was refused, says so itself.
    if message.starts_with("the connection to ")
        || message.starts_with("cannot reach ")
        || message.starts_with("could not connect: ")
    {
        message.to_string()
    } else {
        format!("the connection to the agent ended: {message}")
    }
}

impl Session {
    pub fn new(policy: Policy) -> Session {
        Session {
            policy,
            ..Session::default()
        }
    }

    /// A session that continues `prev` (rebuilt from its log): its transcript, calls,
    /// terminals, plan, usage, title and turn count stay, followed by `notice` (the
    /// divider); everything about the connection (ids, open requests, the end) starts
    /// afresh. While the agent answers a `session/load` of it, the history it replays is
    /// not applied again (counted in `counters.replayed`).
    /// When turn `turn` began (session seconds), if it did.
    pub fn turn_started_at(&self, turn: u32) -> Option<f64> {
        self.turn_started
            .get(usize::try_from(turn).ok()?.checked_sub(1)?)
            .copied()
    }

    pub fn continuing(prev: Session, policy: Policy, notice: String) -> Session {
        let mut s = Session::new(policy);
        s.hub_session = prev.hub_session;
        s.cwd = prev.cwd;
        s.transcript = prev.transcript;
        s.ledger = prev.ledger;
        s.ledger.archive();
        s.terminals = prev.terminals;
        s.plan = prev.plan;
        s.plans = prev.plans;
        s.usage = prev.usage;
        s.title = prev.title;
        s.turn = prev.turn;
        s.turn_started = prev.turn_started;
        s.turns_before = prev.turn;
        s.call_state = prev.call_state;
        // Kept for the history above (its entries point at them); a child of the new
        // connection is a new child.
        s.subagents = prev.subagents;
        s.subagents.archive();
        s.transcript.push(Entry::Notice {
            text: Box::new(notice),
        });
        s.seeded = true;
        s
    }

    /// True while a `session/load` of a seeded session (or of this one, after its agent
    /// ended or its connection was lost) is unanswered: what the agent sends now is the
    /// history the log already gave.
    pub(crate) fn replaying(&self) -> bool {
        (self.seeded || self.agent_exited.is_some())
            && self
                .client_requests
                .values()
                .any(|r| matches!(r, ClientRequest::LoadSession { resume: false, .. }))
    }

    /// Permission requests still waiting for an answer: (request id, call id).
    pub fn open_permissions(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .agent_requests
            .iter()
            .filter_map(|(id, r)| match r {
                AgentRequest::Permission { call, .. } => {
                    Some((id.clone(), self.ledger.at(*call).id.clone()))
                }
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    /// Permission requests waiting for someone to decide, oldest first:
    /// (request id, the call's position in the ledger, options). Requests already being
    /// answered are left out.
    pub fn pending_permissions(&self) -> Vec<(String, usize, Vec<PermissionOption>)> {
        let mut v: Vec<(String, usize, Vec<PermissionOption>)> = self
            .agent_requests
            .iter()
            .filter_map(|(id, r)| match r {
                AgentRequest::Permission {
                    call,
                    options,
                    answering: false,
                } => Some((id.clone(), *call, options.clone())),
                _ => None,
            })
            .collect();
        // Request ids are JSON numbers or strings: order numbers numerically.
        v.sort_by(|a, b| (a.0.len(), &a.0).cmp(&(b.0.len(), &b.0)));
        v
    }

    /// Who answered permission request `request_id`, if anyone did: while the answer is on
    /// its way, or after (found on the calls of the last 4 096 positions: a conflict is
    /// about a request just answered).
    pub fn answered_by(&self, request_id: &str) -> Option<Decider> {
        if let Some(d) = self.deciders.get(request_id) {
            return Some(d.clone());
        }
        let n = self.ledger.len();
        (n.saturating_sub(4096)..n).rev().find_map(|p| {
            self.ledger
                .at(p)
                .permissions
                .iter()
                .find(|r| r.request_id == request_id)
                .and_then(|r| r.decider.clone())
        })
    }

    /// Elicitations waiting for someone to answer, oldest first (those already being
    /// answered are left out).
    pub fn pending_elicitations(
        &self,
    ) -> impl Iterator<Item = &std::sync::Arc<crate::elicitation::Elicitation>> {
        self.elicitations.iter().filter(|e| {
            matches!(
                self.agent_requests.get(&e.request_id),
                Some(AgentRequest::Elicitation { answering: false })
            )
        })
    }

    /// The legacy mode as the agent names it (its id when it gave no name).
    pub fn mode_name(&self) -> Option<&str> {
        let mode = self.mode.as_deref()?;
        Some(
            self.modes
                .iter()
                .find(|m| m.value == mode)
                .map_or(mode, |m| m.name.as_str()),
        )
    }

    /// Plan progress: (completed, total).
    pub fn plan_progress(&self) -> (usize, usize) {
        let done = self.plan.iter().filter(|e| e.status == "completed").count();
        self.plans
            .iter()
            .map(crate::plans::NamedPlan::progress)
            .fold((done, self.plan.len()), |(d, t), (d2, t2)| (d + d2, t + t2))
    }
}

/// A record the client writes into the session log beside the raw frames
/// (`"dir": "client"`). Replaying them with the frames rebuilds the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
// The first record is the large one, written once per log and never held in bulk. (The
// lint fires only where serde_json's `Value` is the smaller, without `preserve_order`:
// `cargo clippy -p trellis-core` alone, not the workspace.)
#[allow(
    clippy::large_enum_variant,
    reason = "one per log; boxing would only move it"
)]
pub enum LocalRecord {
    /// First record of a Trellis log.
    SessionLog {
        schema: u32,
        agent: String,
        cwd: String,
        trellis: String,
        /// Wall-clock start, seconds since the Unix epoch.
        started: f64,
        /// The agent as the user named it (`--agent`: a preset, `demo` or a command line),
        /// to start it again when the session is resumed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        /// The log of the session this one continues (`trellis sessions resume`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continues: Option<String>,
        /// A fork (`trellis sessions fork`): the turn of `continues` it was forked before
        /// (its history is the turns before that one; none: all of them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continues_at: Option<u32>,
        /// A hand-off (`/agent NAME`): `continues` was handed to another agent with a
        /// brief, not forked with a transcript.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        handed_over: bool,
        /// The directory Trellis was started in, when the session runs elsewhere (the
        /// demo's scratch workspace, `--cwd`): a session is listed for both.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        launched_in: Option<String>,
        /// The worktree Trellis made for the session (`--worktree`): `cwd` is in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<WorktreeRef>,
        /// Where the agent runs when it was dialed (`HOST:PORT`), not started here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote: Option<String>,
        /// A dialed agent works on this machine's files (else its edits are on its own
        /// machine: nothing here is check pointed or rewound for them).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        shared_files: bool,
        /// Where the shared files are, as the agent names them and here: its paths in
        /// the calls are shown as this machine's.
        #[serde(default, skip_serializing_if = "crate::path_map::PathMap::is_empty")]
        paths: crate::path_map::PathMap,
    },
    /// Who answered a permission request (written just before the answer frame).
    PermissionDecided {
        request_id: String,
        decider: Decider,
        /// Why, in the decider's words, when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Who answered an elicitation (written just before the answer frame).
    ElicitationDecided {
        request_id: String,
        decider: Decider,
    },
    /// Output a client terminal produced.
    TerminalOutput { terminal_id: String, data: String },
    /// A client terminal's command ended.
    TerminalExited {
        terminal_id: String,
        #[serde(flatten)]
        status: ExitStatus,
    },
    /// The agent process ended.
    AgentExited {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        message: String,
    },
    /// The client closed the session.
    SessionEnded { reason: String },
    /// The connection to the agent is over (written when requests were still open): they
    /// are closed, since nobody can answer them any more.
    ConnectionClosed,
    /// A user's note in the log.
    Mark { text: String },
    /// The user ran `command` in `cwd` (`!cmd` at the prompt) in Trellis's terminal
    /// `terminal_id`: a card of its own, marked as the user's (its output and exit are
    /// the terminal's records).
    UserCommand {
        terminal_id: String,
        command: String,
        cwd: String,
    },
    /// The client wrote the file of agent request `request_id` (before answering it).
    /// `old` is the previous content when the file existed and was small enough to keep.
    FileWritten {
        request_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old: Option<String>,
        /// Whether the file was there before (none: a log from before this was said).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        existed: Option<bool>,
    },
    /// Agent stderr beyond what the log keeps (its head is logged line by line, then its
    /// tail after this record): `lines` and `bytes` left out between them.
    StderrElided { lines: u64, bytes: u64 },
    /// An extension's state for one call (the whole value after any merge).
    CallState {
        extension: String,
        call_id: String,
        value: serde_json::Value,
    },
    /// An extension holding `drive` acted on the session (written before the action is
    /// carried out: a prompt it sent, a cancel, a mode change).
    Driven {
        extension: String,
        #[serde(flatten)]
        action: crate::ext::DriveAction,
    },
}
