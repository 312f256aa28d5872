//! How a chunk of calls is kept in the spill: a table of where each call starts (and
//! where the last ends), then each call as compact JSON, its output texts as places in the
//! session log; written from the calls without copying them, read back one call or the
//! whole chunk.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::bulk::{BulkSource, Text};
use crate::permission::PermissionRecord;
use crate::tool_call::{Location, StatusChange, ToolCall, ToolContent, ToolKind, ToolStatus};

/// The table at the head of a chunk: where each call starts, and where the last ends.
pub(super) fn table(b: &[u8]) -> Result<Vec<u32>, String> {
    let first = table_prefix(b, 1)?[0] as usize;
    if first < 8 || !first.is_multiple_of(4) || first > b.len() {
        return Err("spill chunk damaged".into());
    }
    let ends = table_prefix(b, first / 4)?;
    if ends.windows(2).any(|w| w[0] > w[1]) || ends.last().is_some_and(|&e| e as usize > b.len()) {
        return Err("spill chunk damaged".into());
    }
    Ok(ends)
}

/// The first `n` entries of a chunk's table.
pub(super) fn table_prefix(b: &[u8], n: usize) -> Result<Vec<u32>, String> {
    if b.len() < 4 * n {
        return Err("spill chunk damaged".into());
    }
    Ok(b[..4 * n]
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// A call as the spill keeps it (read back).
#[derive(Deserialize)]
pub(super) struct FrozenCall {
    id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    title: String,
    kind: ToolKind,
    status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    content: Vec<FrozenContent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_input: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_output: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    announced: bool,
    history: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    permissions: Vec<PermissionRecord>,
    turn: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    anomalies: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subagent: Option<String>,
    rev: u32,
    position: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    frames: Vec<u64>,
}

#[derive(Deserialize)]
pub(super) enum FrozenContent {
    /// A text in the session log: its frame (`seq`) and item, length and lines.
    Logged {
        seq: u64,
        item: usize,
        len: usize,
        lines: usize,
    },
    /// A text kept here (no frame said it, or the frame is in another log).
    Text {
        text: String,
    },
    Block {
        block: Box<RawValue>,
    },
    Diff {
        path: String,
        old_text: Option<String>,
        new_text: String,
    },
    Terminal {
        terminal_id: String,
    },
    Session {
        session_id: String,
    },
}

/// A call as the spill keeps it, written from the call without copying it (the same
/// fields as [`FrozenCall`]).
#[derive(Serialize)]
pub(super) struct FrozenRef<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    title: &'a str,
    kind: ToolKind,
    status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    content: Vec<ContentRef<'a>>,
    #[serde(skip_serializing_if = "<[Location]>::is_empty")]
    locations: &'a [Location],
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_input: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_output: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    announced: bool,
    history: Vec<(&'static str, f64)>,
    #[serde(skip_serializing_if = "<[PermissionRecord]>::is_empty")]
    permissions: &'a [PermissionRecord],
    turn: u32,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    anomalies: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent: Option<&'a str>,
    rev: u32,
    position: usize,
    #[serde(skip_serializing_if = "<[u64]>::is_empty")]
    frames: &'a [u64],
}

#[derive(Serialize)]
pub(super) enum ContentRef<'a> {
    Logged {
        seq: u64,
        item: usize,
        len: usize,
        lines: usize,
    },
    Text {
        text: std::sync::Arc<String>,
    },
    Block {
        block: &'a RawValue,
    },
    Diff {
        path: &'a str,
        old_text: Option<&'a str>,
        new_text: &'a str,
    },
    Terminal {
        terminal_id: &'a str,
    },
    Session {
        session_id: &'a str,
    },
}

impl<'a> FrozenRef<'a> {
    pub(super) fn of(c: &'a ToolCall, frames: &'a [u64], inline: bool) -> FrozenRef<'a> {
        let content = c
            .content
            .iter()
            .map(|item| match item {
                ToolContent::Text { text } => match text.origin() {
                    Some((seq, item)) if !inline => ContentRef::Logged {
                        seq,
                        item,
                        len: text.len(),
                        lines: text.output_lines(),
                    },
                    _ => ContentRef::Text { text: text.load() },
                },
                ToolContent::Block { block } => ContentRef::Block { block },
                ToolContent::Diff {
                    path,
                    old_text,
                    new_text,
                } => ContentRef::Diff {
                    path,
                    old_text: old_text.as_deref(),
                    new_text,
                },
                ToolContent::Terminal { terminal_id } => ContentRef::Terminal { terminal_id },
                ToolContent::Session { session_id } => ContentRef::Session { session_id },
            })
            .collect();
        FrozenRef {
            id: &c.id,
            title: &c.title,
            kind: c.kind,
            status: c.status.as_str(),
            content,
            locations: &c.locations,
            raw_input: c.raw_input.as_deref(),
            raw_output: c.raw_output.as_deref(),
            name: c.name.as_deref(),
            announced: c.announced,
            history: c
                .status_history
                .iter()
                .map(|h| (h.status.as_str(), h.t))
                .collect(),
            permissions: &c.permissions,
            turn: c.turn,
            anomalies: &c.anomalies,
            subagent: c.subagent.as_deref(),
            rev: c.rev,
            position: c.position,
            frames,
        }
    }
}

impl FrozenCall {
    pub(super) fn position(&self) -> usize {
        self.position
    }

    pub(super) fn into_call(self, bulk: &Arc<dyn BulkSource>) -> (ToolCall, Vec<u64>) {
        let status = |s: &str| ToolStatus::parse(s).unwrap_or(ToolStatus::Unfinished);
        let content = self
            .content
            .into_iter()
            .map(|c| match c {
                FrozenContent::Logged {
                    seq,
                    item,
                    len,
                    lines,
                } => ToolContent::Text {
                    text: Text::logged(bulk, seq, item, len, lines),
                },
                FrozenContent::Text { text } => ToolContent::Text {
                    text: Text::new(text),
                },
                FrozenContent::Block { block } => ToolContent::Block { block },
                FrozenContent::Diff {
                    path,
                    old_text,
                    new_text,
                } => ToolContent::Diff {
                    path,
                    old_text,
                    new_text,
                },
                FrozenContent::Terminal { terminal_id } => ToolContent::Terminal { terminal_id },
                FrozenContent::Session { session_id } => ToolContent::Session { session_id },
            })
            .collect();
        let call = ToolCall {
            id: self.id,
            title: self.title,
            kind: self.kind,
            status: status(&self.status),
            content,
            locations: self.locations,
            raw_input: self.raw_input,
            raw_output: self.raw_output,
            name: self.name,
            announced: self.announced,
            status_history: self
                .history
                .iter()
                .map(|(s, t)| StatusChange {
                    status: status(s),
                    t: *t,
                })
                .collect(),
            permissions: self.permissions,
            turn: self.turn,
            anomalies: self.anomalies,
            subagent: self.subagent.map(Arc::from),
            rev: self.rev,
            position: self.position,
        };
        (call, self.frames)
    }
}
