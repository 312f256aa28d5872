//! Normalized event schema, version 1: the stream headless mode prints and extensions
//! receive. Documented in `docs/events.md`.
//!
//! Invariants: every event carries `schema` (= [`SCHEMA_VERSION`]), `type`, `t` (seconds since
//! the session started) and `session` (ACP session id once known). Fields are only ever
//! added; consumers must ignore fields they do not know.

use std::sync::Arc;

use serde::Serialize;

use crate::permission::{Decider, Outcome, PermissionOption};
use crate::tool_call::{ToolCall, ToolKind, ToolStatus};
pub use crate::transcript::Role;
use crate::wire::{AgentInfo, AvailableCommand, ExitStatus, PlanEntry, Usage};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Event {
    pub schema: u32,
    pub t: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Arc<str>>,
    /// The session's name in the hub that holds it (`HUB:KEY`), when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub_session: Option<Arc<str>>,
    #[serde(flatten)]
    pub body: EventBody,
    /// The verbatim ACP message this event came from, where there is one (the whole
    /// JSON-RPC line). Given to extensions; not printed by headless runs.
    #[serde(skip)]
    pub acp: Option<Arc<str>>,
    /// The event as JSON, made at most once however many plugin processes receive it
    /// (they hold the host's shared copy of the event).
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub wire: std::sync::OnceLock<Arc<str>>,
    /// The ledger position of the call the event is about (tool call created or updated,
    /// permission asked or resolved, terminal exited, anomaly), so front ends never look
    /// it up again by id. Not part of the event schema.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub position: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventBody {
    SessionStarted {
        agent: AgentInfo,
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        load_session: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        mode: Option<String>,
        /// Where the agent runs when Trellis dialed it (`HOST:PORT`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote: Option<String>,
    },
    SessionEnded {
        reason: String,
    },
    TurnStarted {
        turn: u32,
        prompt: String,
    },
    TurnEnded {
        turn: u32,
        stop_reason: String,
        /// Calls still open when the turn ended, now marked cancelled/unfinished.
        unfinished: Vec<String>,
    },
    MessageChunk {
        role: Role,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        text: String,
        /// The subagent (child session id) this is about; none: the session itself.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
        subagent: Option<Arc<str>>,
    },
    ToolCallCreated {
        call: Arc<ToolCall>,
    },
    ToolCallUpdated {
        #[serde(skip_serializing_if = "Option::is_none")]
        previous_status: Option<ToolStatus>,
        status: ToolStatus,
        call: Arc<ToolCall>,
    },
    PermissionRequested {
        request_id: String,
        call_id: String,
        title: String,
        kind: ToolKind,
        options: Vec<PermissionOption>,
        /// The subagent (child session id) this is about; none: the session itself.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
        subagent: Option<Arc<str>>,
    },
    PermissionResolved {
        request_id: String,
        call_id: String,
        outcome: Outcome,
        decider: Decider,
        /// Why, in the decider's words (a hook's or a plugin's), when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The subagent (child session id) this is about; none: the session itself.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
        subagent: Option<Arc<str>>,
    },
    /// Delivered after the write and before the ACP response goes out.
    FileWritten {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        bytes: usize,
        /// Content before the write (`None`: the file did not exist or was too large
        /// to keep). Given to extensions; not printed by headless runs.
        #[serde(skip)]
        old: Option<Arc<str>>,
        #[serde(skip)]
        new: Arc<str>,
    },
    TerminalExited {
        terminal_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// When the command started (session seconds), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        started: Option<f64>,
        #[serde(flatten)]
        status: ExitStatus,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    /// A plan the agent keeps by id was made or replaced.
    PlanUpdated {
        plan: crate::plans::NamedPlan,
    },
    /// A plan the agent kept by id is gone.
    PlanRemoved {
        plan_id: String,
    },
    Usage {
        #[serde(flatten)]
        usage: Usage,
    },
    ModeChanged {
        mode: String,
    },
    /// A call broke a permission rule (see `crate::anomaly`).
    Anomaly {
        call_id: String,
        rule: String,
        message: String,
    },
    /// A notice from the agent, for the user.
    Notice {
        severity: String,
        title: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// The agent compacted (or is compacting) its context: the compaction as it now
    /// stands (summary chunks are joined, not announced one by one).
    Compaction {
        compaction: crate::transcript::Compaction,
    },
    /// The agent's config options changed (set up, updated, or set by the user).
    ConfigChanged {
        options: Vec<crate::session_config::ConfigOption>,
    },
    CommandsUpdated {
        commands: Vec<AvailableCommand>,
    },
    /// A subagent was announced or changed (`subagent_update`, or a call of its parent
    /// now shows it): the child as it now stands.
    Subagent {
        subagent: Arc<crate::subagents::Subagent>,
    },
    /// A message between sessions (`session_message`, `session_message_chunk`) as it now
    /// stands.
    SessionMessage {
        message: crate::subagents::SessionMessage,
    },
    /// The agent answered `session/list` (the sessions picker asked): how many sessions
    /// it listed, and whether it has more than that first page.
    AgentSessionsListed {
        count: usize,
        more: bool,
    },
    TitleChanged {
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// The agent process ended while the session was open.
    AgentExited {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        message: String,
    },
    /// The agent asks the user for input (`elicitation/create`): a form or a link.
    ElicitationRequested {
        #[serde(flatten)]
        elicitation: Arc<crate::elicitation::Elicitation>,
    },
    /// An elicitation was answered (or closed unanswered).
    ElicitationResolved {
        request_id: String,
        /// `accept`, `decline`, `cancel`, or `error` (the client's answer was an error).
        action: String,
        /// What was sent with `accept` (a form's values).
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
        content: Option<serde_json::Map<String, serde_json::Value>>,
        decider: Decider,
    },
    /// The agent says the step behind a URL elicitation is done (`elicitation/complete`).
    ElicitationCompleted {
        elicitation_id: String,
    },
    /// An extension's per-call state changed (recorded in the session log).
    CallState {
        call_id: String,
        extension: String,
        value: serde_json::Value,
    },
    /// Bad input that was skipped; the session goes on.
    Warning {
        message: String,
    },
}

impl EventBody {
    /// The event's type name, as in its `type` field (used for subscriptions).
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::SessionStarted { .. } => "session_started",
            EventBody::SessionEnded { .. } => "session_ended",
            EventBody::TurnStarted { .. } => "turn_started",
            EventBody::TurnEnded { .. } => "turn_ended",
            EventBody::MessageChunk { .. } => "message_chunk",
            EventBody::ToolCallCreated { .. } => "tool_call_created",
            EventBody::ToolCallUpdated { .. } => "tool_call_updated",
            EventBody::PermissionRequested { .. } => "permission_requested",
            EventBody::PermissionResolved { .. } => "permission_resolved",
            EventBody::ElicitationRequested { .. } => "elicitation_requested",
            EventBody::ElicitationResolved { .. } => "elicitation_resolved",
            EventBody::ElicitationCompleted { .. } => "elicitation_completed",
            EventBody::FileWritten { .. } => "file_written",
            EventBody::TerminalExited { .. } => "terminal_exited",
            EventBody::Plan { .. } => "plan",
            EventBody::PlanUpdated { .. } => "plan_updated",
            EventBody::PlanRemoved { .. } => "plan_removed",
            EventBody::Usage { .. } => "usage",
            EventBody::ModeChanged { .. } => "mode_changed",
            EventBody::ConfigChanged { .. } => "config_changed",
            EventBody::Notice { .. } => "notice",
            EventBody::Anomaly { .. } => "anomaly",
            EventBody::Compaction { .. } => "compaction",
            EventBody::CommandsUpdated { .. } => "commands_updated",
            EventBody::Subagent { .. } => "subagent",
            EventBody::SessionMessage { .. } => "session_message",
            EventBody::AgentSessionsListed { .. } => "agent_sessions_listed",
            EventBody::TitleChanged { .. } => "title_changed",
            EventBody::AgentExited { .. } => "agent_exited",
            EventBody::CallState { .. } => "call_state",
            EventBody::Warning { .. } => "warning",
        }
    }
}

/// Every event type name, in documentation order.
pub const EVENT_KINDS: &[&str] = &[
    "session_started",
    "session_ended",
    "turn_started",
    "turn_ended",
    "message_chunk",
    "tool_call_created",
    "tool_call_updated",
    "permission_requested",
    "permission_resolved",
    "elicitation_requested",
    "elicitation_resolved",
    "elicitation_completed",
    "file_written",
    "terminal_exited",
    "plan",
    "plan_updated",
    "plan_removed",
    "usage",
    "mode_changed",
    "config_changed",
    "anomaly",
    "notice",
    "compaction",
    "commands_updated",
    "subagent",
    "session_message",
    "agent_sessions_listed",
    "title_changed",
    "agent_exited",
    "call_state",
    "warning",
];

#[cfg(test)]
mod tests {
    /// `EVENT_KINDS` (what extensions subscribe by, and the host's dispatch mask) names
    /// exactly the event types `docs/events.md` documents, in its order: a new event
    /// missing from it would never reach any extension.
    #[test]
    fn every_documented_event_type_is_known_to_extensions() {
        let doc = include_str!("../../../docs/events.md");
        let table = doc
            .split("| `type` | fields |\n|---|---|\n")
            .nth(1)
            .expect("the events table");
        let documented: Vec<&str> = table
            .lines()
            .take_while(|l| l.starts_with("| `"))
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        assert_eq!(documented, super::EVENT_KINDS);
        assert!(super::EVENT_KINDS.len() <= 64, "the dispatch mask is a u64");
    }
}
