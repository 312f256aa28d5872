//! Trellis core: the pure session model.
//!
//! Everything that happens to a session is an [`Action`]; [`update`] folds it into a
//! [`Session`] and returns [`Effect`]s for the edges to perform. No I/O, no clocks, no
//! threads: time arrives inside actions, so replaying a log reproduces a session exactly.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod action;
pub mod agent_sessions;
pub mod anomaly;
#[cfg(test)]
mod arbitrary;
pub mod attention;
mod bloom;
pub mod bulk;
pub mod civil;
pub mod cold;
pub mod compact_json;
pub mod diff;
pub mod elicitation;
pub mod enrich;
mod escape_scan;
pub mod event;
pub mod event_json;
pub mod ext;
pub mod glob;
pub mod hot;
mod json_literal;
pub mod ledger;
pub mod log;
pub mod path_map;
pub mod permission;
pub mod plans;
pub mod raw_json;
pub mod session;
pub mod session_config;
pub mod short_id;
pub mod subagents;
pub mod summary;
pub mod tool_call;
mod tool_content;
pub mod transcript;
pub mod update;
pub mod wire;

pub use elicitation::{ElicitAnswer, Elicitation};
pub use event::{Event, EventBody, SCHEMA_VERSION};
pub use ledger::Ledger;
pub use permission::{Decider, Outcome, Policy, Verdict};
pub use raw_json::RawJson;
pub use session::{LocalRecord, Session, WorktreeRef};
pub use tool_call::{ToolCall, ToolCallPatch, ToolKind, ToolStatus};
pub use update::{Action, Choice, Effect, update, update_into};
