//! How a chunk of calls is kept in the spill: a table of where each call starts (and
//! where the last ends), then each call as compact JSON, its output texts as places in the
//! session log; written from the calls without copying them ([`write_frozen`], field by
//! field: it was a tenth of a headless run's CPU through serde), read back one call or the
//! whole chunk ([`FrozenCall`], serde).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::bulk::{BulkSource, Text};
use crate::compact_json::{self, write_str};
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
    raw_input: Option<crate::raw_json::RawJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_output: Option<crate::raw_json::RawJson>,
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

/// A finished call already written as the spill keeps it, with what it was written from:
/// true as long as the call's revision (bumped on every change), its frames and whether
/// its texts stay inline are the same.
#[derive(Debug, Clone)]
pub struct Sealed {
    rev: u32,
    frames: usize,
    inline: bool,
    /// Not shrunk to fit: a sealed call lives only until its chunk freezes (two chunks'
    /// worth at most), and one allocation of room is cheaper than a grow and a shrink.
    bytes: Vec<u8>,
}

impl Sealed {
    pub(crate) fn of(c: &ToolCall, frames: &[u64], inline: bool) -> Option<Sealed> {
        let mut bytes = Vec::with_capacity(1024);
        write_frozen(&mut bytes, c, frames, inline).ok()?;
        Some(Sealed {
            rev: c.rev,
            frames: frames.len(),
            inline,
            bytes,
        })
    }

    pub(crate) fn fits(&self, c: &ToolCall, frames: &[u64], inline: bool) -> bool {
        self.rev == c.rev && self.frames == frames.len() && self.inline == inline
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Appends `c` as the spill keeps it — the JSON [`FrozenCall`] reads back — written from
/// the call without copying it; its texts as places in the log unless `inline` (their
/// frames are in another log) or no frame said where they came from.
pub(super) fn write_frozen(
    out: &mut Vec<u8>,
    c: &ToolCall,
    frames: &[u64],
    inline: bool,
) -> Result<(), compact_json::Error> {
    let ToolCall {
        id,
        title,
        kind,
        status,
        content,
        locations,
        raw_input,
        raw_output,
        name,
        announced,
        status_history,
        permissions,
        turn,
        anomalies,
        subagent,
        rev,
        position,
    } = c;
    let int = |out: &mut Vec<u8>, key: &[u8], v: u64| {
        out.extend_from_slice(key);
        out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    };
    out.extend_from_slice(b"{\"id\":");
    write_str(out, id);
    if !title.is_empty() {
        out.extend_from_slice(b",\"title\":");
        write_str(out, title);
    }
    out.extend_from_slice(b",\"kind\":");
    compact_json::write_name(out, kind.as_str());
    out.extend_from_slice(b",\"status\":");
    compact_json::write_name(out, status.as_str());
    if !content.is_empty() {
        out.extend_from_slice(b",\"content\":[");
        for (i, item) in content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_content(out, item, inline);
        }
        out.push(b']');
    }
    if !locations.is_empty() {
        out.extend_from_slice(b",\"locations\":");
        crate::event_json::write_locations(out, locations);
    }
    if let Some(r) = raw_input {
        out.extend_from_slice(b",\"raw_input\":");
        out.extend_from_slice(r.get().as_bytes());
    }
    if let Some(r) = raw_output {
        out.extend_from_slice(b",\"raw_output\":");
        out.extend_from_slice(r.get().as_bytes());
    }
    if let Some(n) = name {
        out.extend_from_slice(b",\"name\":");
        write_str(out, n);
    }
    out.extend_from_slice(if *announced {
        b",\"announced\":true,\"history\":["
    } else {
        b",\"announced\":false,\"history\":["
    });
    for (i, h) in status_history.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        compact_json::write_name(out, h.status.as_str());
        out.push(b',');
        crate::event_json::write_f64(out, h.t);
        out.push(b']');
    }
    out.push(b']');
    if !permissions.is_empty() {
        out.extend_from_slice(b",\"permissions\":");
        compact_json::to_vec_into(out, permissions)?;
    }
    int(out, b",\"turn\":", u64::from(*turn));
    if !anomalies.is_empty() {
        out.extend_from_slice(b",\"anomalies\":");
        compact_json::to_vec_into(out, anomalies)?;
    }
    if let Some(s) = subagent {
        out.extend_from_slice(b",\"subagent\":");
        write_str(out, s);
    }
    int(out, b",\"rev\":", u64::from(*rev));
    int(out, b",\"position\":", *position as u64);
    if !frames.is_empty() {
        out.extend_from_slice(b",\"frames\":[");
        for (i, f) in frames.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(itoa::Buffer::new().format(*f).as_bytes());
        }
        out.push(b']');
    }
    out.push(b'}');
    Ok(())
}

/// One content item as [`FrozenContent`] reads it back.
fn write_content(out: &mut Vec<u8>, item: &ToolContent, inline: bool) {
    let int = |out: &mut Vec<u8>, key: &[u8], v: u64| {
        out.extend_from_slice(key);
        out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    };
    match item {
        ToolContent::Text { text } => match text.origin() {
            Some((seq, item)) if !inline => {
                int(out, b"{\"Logged\":{\"seq\":", seq);
                int(out, b",\"item\":", item as u64);
                int(out, b",\"len\":", text.len() as u64);
                int(out, b",\"lines\":", text.output_lines() as u64);
                out.extend_from_slice(b"}}");
            }
            _ => {
                out.extend_from_slice(b"{\"Text\":{\"text\":");
                text.write_json(out);
                out.extend_from_slice(b"}}");
            }
        },
        ToolContent::Block { block } => {
            out.extend_from_slice(b"{\"Block\":{\"block\":");
            out.extend_from_slice(block.get().as_bytes());
            out.extend_from_slice(b"}}");
        }
        ToolContent::Diff {
            path,
            old_text,
            new_text,
        } => {
            out.extend_from_slice(b"{\"Diff\":{\"path\":");
            write_str(out, path);
            out.extend_from_slice(b",\"old_text\":");
            match old_text {
                Some(t) => write_str(out, t),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(b",\"new_text\":");
            write_str(out, new_text);
            out.extend_from_slice(b"}}");
        }
        ToolContent::Terminal { terminal_id } => {
            out.extend_from_slice(b"{\"Terminal\":{\"terminal_id\":");
            write_str(out, terminal_id);
            out.extend_from_slice(b"}}");
        }
        ToolContent::Session { session_id } => {
            out.extend_from_slice(b"{\"Session\":{\"session_id\":");
            write_str(out, session_id);
            out.extend_from_slice(b"}}");
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

#[cfg(test)]
mod tests;
