//! `session/update` notifications: transcript chunks, tool calls, plan, usage, commands,
//! mode, title. Unknown kinds are counted and skipped.

use crate::event::{EventBody, Role};
use crate::session::{Entry, MessageBlock};
use serde_json::value::RawValue;

use crate::tool_call::{ToolCallPatch, ToolKind, ToolStatus, parse_content, parse_locations};
use crate::update::Ctx;
use crate::wire::{self, Message};

/// `session/update` params read in one pass for the hot kinds (tool calls and chunks).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct HotParams<'a> {
    #[serde(default, borrow)]
    session_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    update: Hot<'a>,
}

/// The union of the fields of the hot update kinds; big values stay raw until needed.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Hot<'a> {
    #[serde(borrow)]
    session_update: std::borrow::Cow<'a, str>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<std::borrow::Cow<'a, str>>,
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
}

impl Hot<'_> {
    fn patch(self) -> Result<ToolCallPatch, serde_json::Error> {
        let content = match self.content {
            Some(raw) if raw.get() != "null" => Some(parse_content(raw.get())?),
            _ => None,
        };
        let locations = match self.locations {
            Some(raw) if raw.get() != "null" => Some(parse_locations(raw.get())?),
            _ => None,
        };
        Ok(ToolCallPatch {
            tool_call_id: self.tool_call_id.unwrap_or_default(),
            title: self.title,
            kind: self.kind.map(|k| ToolKind::parse(&k)),
            status: self.status.and_then(|s| ToolStatus::parse_wire(&s)),
            content,
            locations,
            raw_input: self.raw_input.filter(|r| r.get() != "null"),
            raw_output: self.raw_output.filter(|r| r.get() != "null"),
            name: self.name,
        })
    }
}

/// Applies one `session/update`: hot kinds in one pass, the rest (and anything the hot
/// path cannot read) through the per-kind lenient decoders.
pub(crate) fn apply(cx: &mut Ctx<'_>, seq: u64, msg: &Message) {
    let raw = msg.params.as_deref().map(RawValue::get).unwrap_or("{}");
    if let Ok(hot) = serde_json::from_str::<HotParams>(raw) {
        if let (Some(mine), Some(theirs)) = (&cx.s.id, &hot.session_id)
            && mine != theirs
        {
            let key = format!("foreign:{theirs}");
            cx.warn_once(key, format!("ignored updates for another session {theirs}"));
            return;
        }
        let tag = hot.update.session_update.clone();
        let role = match tag.as_ref() {
            "user_message_chunk" => Some(Role::User),
            "agent_message_chunk" => Some(Role::Agent),
            "agent_thought_chunk" => Some(Role::Thought),
            _ => None,
        };
        let done = match (tag.as_ref(), role) {
            ("tool_call" | "tool_call_update", _) => {
                let announce = tag == "tool_call";
                hot.update
                    .patch()
                    .map(|p| tool_call_patch(cx, seq, p, announce))
            }
            (_, Some(role)) => match hot.update.content {
                Some(content) => chunk_block(cx, content.get(), hot.update.message_id, role),
                None => Err(serde::de::Error::missing_field("content")),
            },
            _ => Err(serde::de::Error::custom("not a hot kind")),
        };
        if let Ok(result) = done {
            cx.s.counters.updates += 1;
            if let Err(e) = result {
                *cx.s.counters.malformed.entry(tag.to_string()).or_default() += 1;
                cx.emit(EventBody::Warning {
                    message: format!("skipped a malformed {tag} update: {e}"),
                });
            }
            return;
        }
    }
    slow(cx, seq, msg)
}

fn slow(cx: &mut Ctx<'_>, seq: u64, msg: &Message) {
    let params = match msg.params_as::<wire::UpdateParams>() {
        Ok(p) => p,
        Err(e) => {
            *cx.s
                .counters
                .malformed
                .entry("session/update".into())
                .or_default() += 1;
            cx.emit(EventBody::Warning {
                message: format!("skipped a malformed session/update: {e}"),
            });
            return;
        }
    };
    if let (Some(mine), Some(theirs)) = (&cx.s.id, &params.session_id)
        && mine != theirs
    {
        let key = format!("foreign:{theirs}");
        cx.warn_once(key, format!("ignored updates for another session {theirs}"));
        return;
    }
    let raw = params.update.get();
    let tag = match serde_json::from_str::<wire::UpdateTag>(raw) {
        Ok(t) => t.session_update.into_owned(),
        Err(e) => {
            *cx.s
                .counters
                .malformed
                .entry("session/update".into())
                .or_default() += 1;
            cx.emit(EventBody::Warning {
                message: format!("skipped a session/update without a kind: {e}"),
            });
            return;
        }
    };
    cx.s.counters.updates += 1;
    let result = match tag.as_str() {
        "user_message_chunk" => chunk(cx, raw, Role::User),
        "agent_message_chunk" => chunk(cx, raw, Role::Agent),
        "agent_thought_chunk" => chunk(cx, raw, Role::Thought),
        "tool_call" => tool_call(cx, seq, raw, true),
        "tool_call_update" => tool_call(cx, seq, raw, false),
        "plan" => serde_json::from_str::<wire::PlanUpdate>(raw).map(|p| {
            cx.s.plan = p.entries.into_iter().filter_map(|e| e.0).collect();
            let entries = cx.s.plan.clone();
            cx.emit(EventBody::Plan { entries });
        }),
        "available_commands_update" => serde_json::from_str::<wire::CommandsUpdate>(raw).map(|c| {
            cx.s.commands = c
                .available_commands
                .into_iter()
                .filter_map(|e| e.0)
                .collect();
            let commands = cx.s.commands.clone();
            cx.emit(EventBody::CommandsUpdated { commands });
        }),
        "current_mode_update" => serde_json::from_str::<wire::ModeUpdate>(raw).map(|m| {
            cx.s.mode = Some(m.current_mode_id.clone());
            cx.emit(EventBody::ModeChanged {
                mode: m.current_mode_id,
            });
        }),
        "session_info_update" => serde_json::from_str::<wire::SessionInfoUpdate>(raw).map(|i| {
            if let Some(title) = i.title {
                cx.s.title = title.clone();
                cx.emit(EventBody::TitleChanged { title });
            }
        }),
        "usage_update" => serde_json::from_str::<wire::Usage>(raw).map(|u| {
            cx.s.usage = Some(u.clone());
            cx.emit(EventBody::Usage { usage: u });
        }),
        "config_option_update" => {
            cx.s.config_options = serde_json::value::RawValue::from_string(raw.to_string()).ok();
            Ok(())
        }
        _ => {
            cx.s.counters.updates -= 1;
            *cx.s
                .counters
                .unknown_updates
                .entry(tag.clone())
                .or_default() += 1;
            cx.warn_once(
                format!("update:{tag}"),
                format!("ignored unknown session/update kind {tag}"),
            );
            Ok(())
        }
    };
    if let Err(e) = result {
        *cx.s.counters.malformed.entry(tag.clone()).or_default() += 1;
        cx.emit(EventBody::Warning {
            message: format!("skipped a malformed {tag} update: {e}"),
        });
    }
}

fn chunk(cx: &mut Ctx<'_>, raw: &str, role: Role) -> Result<(), serde_json::Error> {
    let c: wire::ChunkUpdate = serde_json::from_str(raw)?;
    chunk_block(cx, c.content.get(), c.message_id, role)?
}

/// Appends one content block to the transcript. The outer result is a decoding failure of
/// the block; the inner one is always Ok (kept for symmetry with tool calls).
fn chunk_block(
    cx: &mut Ctx<'_>,
    content: &str,
    message_id: Option<String>,
    role: Role,
) -> Result<Result<(), serde_json::Error>, serde_json::Error> {
    let block: wire::TextBlock = serde_json::from_str(content)?;
    let text = match (block.ty.as_str(), block.text, block.name, block.uri) {
        ("text", Some(text), _, _) => text,
        (_, _, Some(name), _) => format!("[{}: {name}]", block.ty),
        (_, _, _, Some(uri)) => format!("[{}: {uri}]", block.ty),
        (ty, ..) => format!("[{ty}]"),
    };
    let turn = cx.s.turn;
    let joined = match cx.s.transcript.last_mut() {
        Some(Entry::Message(m)) if m.role == role && m.message_id == message_id => {
            m.text.push_str(&text);
            true
        }
        _ => false,
    };
    if !joined {
        cx.s.transcript.push(Entry::Message(MessageBlock {
            role,
            message_id: message_id.clone(),
            text: text.clone(),
            turn,
        }));
    }
    cx.emit(EventBody::MessageChunk {
        role,
        message_id,
        text,
    });
    Ok(Ok(()))
}

fn tool_call(
    cx: &mut Ctx<'_>,
    seq: u64,
    raw: &str,
    announce: bool,
) -> Result<(), serde_json::Error> {
    let patch: ToolCallPatch = serde_json::from_str(raw)?;
    tool_call_patch(cx, seq, patch, announce)
}

fn tool_call_patch(
    cx: &mut Ctx<'_>,
    seq: u64,
    patch: ToolCallPatch,
    announce: bool,
) -> Result<(), serde_json::Error> {
    if patch.tool_call_id.is_empty() {
        return Err(serde::de::Error::custom("missing toolCallId"));
    }
    let meta_only = patch.is_empty();
    let (t, turn) = (cx.t, cx.s.turn);
    let id = patch.tool_call_id.clone();
    let applied = cx.s.ledger.apply(patch, announce, t, turn);
    cx.s.ledger.at_mut(applied.index).frames.push(seq);
    if applied.created {
        cx.s.transcript.push(Entry::ToolCall {
            index: applied.index,
        });
        if !announce {
            cx.s.counters.unannounced_calls += 1;
            cx.emit(EventBody::Warning {
                message: format!("update for unknown tool call {id}: kept as a placeholder"),
            });
        }
        let call = cx.s.ledger.at(applied.index).clone();
        cx.emit(EventBody::ToolCallCreated { call });
    } else if !meta_only {
        let call = cx.s.ledger.at(applied.index).clone();
        cx.emit(EventBody::ToolCallUpdated {
            previous_status: applied.previous_status,
            status: call.status,
            call,
        });
    }
    Ok(())
}
