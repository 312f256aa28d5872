//! One-pass decoding of the hot `session/update` kinds — tool calls and message chunks,
//! nearly all of an agent's traffic — straight from the line, so a frame is scanned once to
//! validate and route it and its content once more to extract it.
//!
//! Invariant: decoding either yields exactly what the lenient per-kind decoders would, or
//! gives up (`None`) and leaves the frame to them; it never half-applies.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::tool_call::{ToolCallPatch, ToolKind, ToolStatus, parse_content, parse_locations};
use crate::transcript::Role;

/// A decoded hot update.
#[derive(Debug, Clone)]
pub enum HotUpdate {
    ToolCall {
        patch: ToolCallPatch,
        announce: bool,
        /// The update's `_meta`, when it says something about a terminal.
        meta: Option<String>,
    },
    Chunk {
        role: Role,
        text: String,
        message_id: Option<String>,
    },
}

/// A decoded `session/update`.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub session_id: Option<String>,
    pub update: HotUpdate,
}

#[derive(Deserialize)]
pub(crate) struct HotEnvelope<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub params: HotParams<'a>,
}

/// `session/update` params for the hot kinds.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HotParams<'a> {
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    update: Hot<'a>,
}

/// The union of the fields of the hot update kinds; big values stay raw until needed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Hot<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    locations: Option<&'a RawValue>,
    #[serde(default)]
    raw_input: Option<Box<RawValue>>,
    #[serde(default)]
    raw_output: Option<Box<RawValue>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    message_id: Option<String>,
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

fn not_null(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get).filter(|r| *r != "null")
}

impl HotParams<'_> {
    pub(crate) fn decode(self) -> Option<Decoded> {
        let h = self.update;
        let role = match h.session_update.as_ref() {
            "user_message_chunk" => Some(Role::User),
            "agent_message_chunk" => Some(Role::Agent),
            "agent_thought_chunk" => Some(Role::Thought),
            _ => None,
        };
        let update = match (h.session_update.as_ref(), role) {
            ("tool_call" | "tool_call_update", _) => {
                let announce = h.session_update == "tool_call";
                let content = match not_null(h.content) {
                    Some(raw) => Some(parse_content(raw).ok()?),
                    None => None,
                };
                let locations = match not_null(h.locations) {
                    Some(raw) => Some(parse_locations(raw).ok()?),
                    None => None,
                };
                let patch = ToolCallPatch {
                    tool_call_id: h.tool_call_id.unwrap_or_default(),
                    title: h.title,
                    kind: h.kind.map(|k| ToolKind::parse(&k)),
                    status: h.status.and_then(|s| ToolStatus::parse_wire(&s)),
                    content,
                    locations,
                    raw_input: h.raw_input.filter(|r| r.get() != "null"),
                    raw_output: h.raw_output.filter(|r| r.get() != "null"),
                    name: h.name,
                };
                let meta = not_null(h.meta)
                    .filter(|m| m.contains("\"terminal_"))
                    .map(str::to_string);
                HotUpdate::ToolCall {
                    patch,
                    announce,
                    meta,
                }
            }
            (_, Some(role)) => {
                let text = block_text(h.content?.get()).ok()?;
                HotUpdate::Chunk {
                    role,
                    text,
                    message_id: h.message_id,
                }
            }
            _ => return None,
        };
        Some(Decoded {
            session_id: self.session_id.map(Cow::into_owned),
            update,
        })
    }
}

/// Decodes `session/update` params text, if it is a hot kind.
pub(crate) fn decode_params(raw: &str) -> Option<Decoded> {
    serde_json::from_str::<HotParams>(raw).ok()?.decode()
}

/// A content block reduced to what the transcript needs.
#[derive(Deserialize)]
pub struct TextBlock {
    #[serde(rename = "type", default)]
    pub ty: String,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// The transcript text of a content block: text as is, anything else as a short tag.
pub(crate) fn block_text(content: &str) -> Result<String, serde_json::Error> {
    let block: TextBlock = serde_json::from_str(content)?;
    Ok(
        match (block.ty.as_str(), block.text, block.name, block.uri) {
            ("text", Some(text), _, _) => text,
            (_, _, Some(name), _) => format!("[{}: {name}]", block.ty),
            (_, _, _, Some(uri)) => format!("[{}: {uri}]", block.ty),
            (ty, ..) => format!("[{ty}]"),
        },
    )
}
