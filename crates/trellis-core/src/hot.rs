//! One-pass decoding of the hot `session/update` kinds — tool calls and message chunks,
//! nearly all of an agent's traffic — straight from the line: a frame is scanned once, its
//! content (a tool call's items, a chunk's block: most of its bytes) read as it goes.
//!
//! Invariant: decoding either yields exactly what the lenient per-kind decoders would, or
//! gives up (`None`) and leaves the frame to them; it never half-applies.

use std::borrow::Cow;

use serde::Deserialize;

pub(crate) use crate::json_literal::{Raw, unescape};
use crate::short_id::ShortId;
use crate::tool_call::{ToolCallPatch, ToolKind, ToolStatus, parse_locations};
use crate::tool_content::{FastItem, fast_content};
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
    pub session_id: Option<ShortId>,
    pub update: HotUpdate,
}

#[derive(Deserialize)]
pub(crate) struct HotEnvelope<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<Raw<'a>>,
    #[serde(borrow)]
    pub params: HotParams<'a>,
}

/// `session/update` params for the hot kinds.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HotParams<'a> {
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    /// Boxed: the reading moves it up three levels, and the box is what moves.
    #[serde(borrow)]
    update: Box<Hot<'a>>,
}

/// The union of the fields of the hot update kinds; big values stay raw until needed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Hot<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    #[serde(default)]
    tool_call_id: Option<ShortId>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Content<'a>,
    #[serde(default, borrow)]
    locations: Option<Locations<'a>>,
    #[serde(default)]
    raw_input: Option<crate::raw_json::RawJson>,
    #[serde(default)]
    raw_output: Option<crate::raw_json::RawJson>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    message_id: Option<String>,
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<Raw<'a>>,
}

/// `locations` as a reader gave it: its text (serde_json's reading, decoded with the
/// lenient list reader) or the locations themselves (the hand reader's, [`scan`]).
pub(crate) enum Locations<'a> {
    Raw(&'a str),
    Read(Vec<crate::tool_call::Location>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Locations<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Raw::deserialize(d).map(|r| Locations::Raw(r.0))
    }
}

fn not_null(raw: Option<Raw<'_>>) -> Option<&str> {
    raw.map(|r| r.0).filter(|r| *r != "null")
}

impl HotParams<'_> {
    pub(crate) fn decode(self) -> Option<Decoded> {
        let h = *self.update;
        let role = match h.session_update.as_ref() {
            "user_message_chunk" => Some(Role::User),
            "agent_message_chunk" => Some(Role::Agent),
            "agent_thought_chunk" => Some(Role::Thought),
            _ => None,
        };
        let update = match (h.session_update.as_ref(), role) {
            ("tool_call" | "tool_call_update", _) => {
                let announce = h.session_update == "tool_call";
                let content = match h.content {
                    Content::Items(items) => Some(fast_content(items)?),
                    Content::Absent => None,
                    Content::Block(_) => return None,
                };
                let locations = match h.locations {
                    Some(Locations::Raw("null")) | None => None,
                    Some(Locations::Raw(raw)) => Some(parse_locations(raw).ok()?),
                    Some(Locations::Read(read)) => Some(read),
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
                let Content::Block(block) = h.content else {
                    return None;
                };
                let text = block.into_text()?;
                HotUpdate::Chunk {
                    role,
                    text,
                    message_id: h.message_id,
                }
            }
            _ => return None,
        };
        Some(Decoded {
            session_id: self.session_id.as_deref().map(ShortId::new),
            update,
        })
    }
}

/// A line's envelope read as the hot kinds need it: by hand where that reader can
/// ([`scan`]), else by serde_json; `None` where serde_json refuses it too.
pub(crate) fn envelope(line: &str) -> Option<HotEnvelope<'_>> {
    scan::envelope(line).or_else(|| serde_json::from_str::<HotEnvelope>(line).ok())
}

/// Decodes `session/update` params text, if it is a hot kind.
pub(crate) fn decode_params(raw: &str) -> Option<Decoded> {
    serde_json::from_str::<HotParams>(raw).ok()?.decode()
}

/// `content` as the hot kinds carry it, read in the frame's one pass: a tool call's
/// items on the fast path's terms ([`fast_content`] says whether they all are), a chunk's
/// block, or nothing (absent or null). Anything else fails the frame's hot decoding, and
/// the lenient decoders take it.
#[derive(Default)]
enum Content<'a> {
    #[default]
    Absent,
    Items(Vec<FastItem<'a>>),
    Block(HotBlock<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a content array, a content block or null")
            }
            fn visit_unit<E>(self) -> Result<Content<'a>, E> {
                Ok(Content::Absent)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content<'a>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Content::Items(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Content<'a>, A::Error> {
                HotBlock::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Content::Block)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
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

impl TextBlock {
    /// The block's transcript text: text as is, anything else as a short tag.
    fn into_text(self) -> String {
        match (self.ty.as_str(), self.text, self.name, self.uri) {
            ("text", Some(text), _, _) => text,
            (_, _, Some(name), _) => format!("[{}: {name}]", self.ty),
            (_, _, _, Some(uri)) => format!("[{}: {uri}]", self.ty),
            (ty, ..) => format!("[{ty}]"),
        }
    }
}

/// [`TextBlock`] as the hot path reads it: the text stays raw until [`unescape`] makes
/// it a `String` in one pass (serde_json would unescape it through a scratch buffer and
/// copy it), and the type is borrowed.
#[derive(Deserialize)]
struct HotBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    ty: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Raw<'a>>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

impl HotBlock<'_> {
    /// [`TextBlock::into_text`] of the same block; `None` where reading it as a
    /// [`TextBlock`] would fail (a text that is no string, or not one serde_json reads).
    fn into_text(self) -> Option<String> {
        let text = match self.text.map(|r| r.0) {
            Some("null") | None => None,
            Some(raw) => Some(unescape(raw)?),
        };
        Some(
            TextBlock {
                ty: self.ty.into_owned(),
                text,
                uri: self.uri,
                name: self.name,
            }
            .into_text(),
        )
    }
}

/// The transcript text of a content block: text as is, anything else as a short tag.
pub(crate) fn block_text(content: &str) -> Result<String, serde_json::Error> {
    serde_json::from_str::<TextBlock>(content).map(TextBlock::into_text)
}

mod scan;

#[cfg(test)]
mod tests;
