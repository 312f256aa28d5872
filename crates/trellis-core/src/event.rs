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
use crate::wire::{AgentInfo, AvailableCommand, ExitStatus, PlanEntry, Usage};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub schema: u32,
    pub t: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(flatten)]
    pub body: EventBody,
}

/// Who wrote a message chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Agent,
    Thought,
}

#[derive(Debug, Clone, Serialize)]
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
    },
    PermissionResolved {
        request_id: String,
        call_id: String,
        outcome: Outcome,
        decider: Decider,
    },
    FileWritten {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        bytes: usize,
    },
    TerminalExited {
        terminal_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        #[serde(flatten)]
        status: ExitStatus,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    Usage {
        #[serde(flatten)]
        usage: Usage,
    },
    ModeChanged {
        mode: String,
    },
    CommandsUpdated {
        commands: Vec<AvailableCommand>,
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
    /// Bad input that was skipped; the session goes on.
    Warning {
        message: String,
    },
}
