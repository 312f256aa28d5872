//! `session/update` notifications: transcript chunks, tool calls, plan, usage, commands,
//! mode, config options, title, notices and compaction. Unknown kinds are counted and
//! skipped.

use crate::event::{EventBody, Role};
use crate::hot::HotUpdate;
use crate::session::{Entry, MessageBlock};
use crate::tool_call::{ToolCallPatch, ToolContent};
use crate::update::Ctx;
use crate::wire::{self, Message};

/// Applies one `session/update`: hot kinds as decoded in one pass (see [`crate::hot`]), the
/// rest (and anything the hot path cannot read) through the per-kind lenient decoders.
pub(crate) fn apply(cx: &mut Ctx<'_>, seq: u64, msg: &Message) {
    if cx.s.replaying() {
        cx.s.counters.replayed += 1;
        return;
    }
    let decoded = match &msg.decoded {
        Some(d) => Some((**d).clone()),
        None => msg
            .params
            .as_deref()
            .and_then(|p| crate::hot::decode_params(p.get())),
    };
    let Some(d) = decoded else {
        return slow(cx, seq, msg);
    };
    let Some(owner) = target(cx, d.session_id.as_deref()) else {
        return;
    };
    cx.s.counters.updates += 1;
    match d.update {
        HotUpdate::ToolCall {
            patch,
            announce,
            meta,
        } => {
            let tag = if announce {
                "tool_call"
            } else {
                "tool_call_update"
            };
            if let Err(e) = tool_call_patch(cx, seq, owner, patch, announce, meta.as_deref()) {
                cx.malformed(tag, format!("skipped a malformed {tag} update: {e}"));
            }
        }
        HotUpdate::Chunk {
            role,
            text,
            message_id,
        } => append_chunk(cx, owner, text, message_id, role),
    }
}

/// Whose update this is: this session (`Some(None)`), a subagent it announced
/// (`Some(Some(child))`), or nobody's (`None`, with a warning once per kind of fault): it
/// names another session, or none at all. Before the session id is known, any id passes.
fn target(cx: &mut Ctx<'_>, theirs: Option<&str>) -> Option<Option<usize>> {
    let Some(theirs) = theirs else {
        cx.s.counters.foreign_updates += 1;
        cx.warn_once(
            "no-session-id".into(),
            "ignored a session/update without a sessionId (the agent must name its session)".into(),
        );
        return None;
    };
    let routed = crate::subagents::route(cx, theirs);
    if routed.is_none() {
        cx.s.counters.foreign_updates += 1;
        let key = format!("foreign:{theirs}");
        cx.warn_once(key, format!("ignored updates for another session {theirs}"));
    }
    routed
}

fn slow(cx: &mut Ctx<'_>, seq: u64, msg: &Message) {
    let params = match msg.params_as::<wire::UpdateParams>() {
        Ok(p) => p,
        Err(e) => {
            cx.malformed(
                "session/update",
                format!("skipped a malformed session/update: {e}"),
            );
            return;
        }
    };
    let Some(owner) = target(cx, params.session_id.as_deref()) else {
        return;
    };
    let raw = params.update.get();
    let tag = match serde_json::from_str::<wire::UpdateTag>(raw) {
        Ok(t) => t.session_update.into_owned(),
        Err(e) => {
            cx.malformed(
                "session/update",
                format!("skipped a session/update without a kind: {e}"),
            );
            return;
        }
    };
    cx.s.counters.updates += 1;
    if let Some(child) = owner {
        return child_update(cx, seq, child, &tag, raw);
    }
    let result = match tag.as_str() {
        "user_message_chunk" => chunk(cx, None, raw, Role::User),
        "agent_message_chunk" => chunk(cx, None, raw, Role::Agent),
        "agent_thought_chunk" => chunk(cx, None, raw, Role::Thought),
        "tool_call" => tool_call(cx, seq, None, raw, true),
        "tool_call_update" => tool_call(cx, seq, None, raw, false),
        "subagent_update" => {
            crate::subagents::update(cx, None, raw).or_else(|e| bad(cx, "subagent_update", e))
        }
        "session_message" => crate::subagents::message(cx, None, raw, false)
            .or_else(|e| bad(cx, "session_message", e)),
        "session_message_chunk" => crate::subagents::message(cx, None, raw, true)
            .or_else(|e| bad(cx, "session_message_chunk", e)),
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
            cx.s.settings_changed_at = cx.t;
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
        "plan_update" => crate::plans::update(cx, raw),
        "plan_removed" => crate::plans::removed(cx, raw),
        "notice" => crate::agent_notes::notice(cx, raw),
        "compaction_update" => crate::agent_notes::compaction_update(cx, raw),
        "compaction_summary_chunk" => crate::agent_notes::compaction_chunk(cx, raw),
        "config_option_update" => serde_json::from_str::<wire::ConfigOptionsResult>(raw).map(|r| {
            let options = crate::session_config::parse_options(
                r.config_options
                    .as_ref()
                    .unwrap_or(&serde_json::Value::Null),
            );
            crate::requests::set_config(cx, options);
        }),
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
        cx.malformed(&tag, format!("skipped a malformed {tag} update: {e}"));
    }
}

/// A fault in an update that is not a decoding error: counted and warned like one.
fn bad(cx: &mut Ctx<'_>, tag: &str, e: String) -> Result<(), serde_json::Error> {
    cx.malformed(tag, format!("skipped a malformed {tag} update: {e}"));
    Ok(())
}

/// An update for subagent `child`: its messages, calls, plan, its own children and the
/// messages in its transcript. Anything else a child says is counted and skipped (once
/// warned per kind): the session's settings, usage and commands are the parent's.
fn child_update(cx: &mut Ctx<'_>, seq: u64, child: usize, tag: &str, raw: &str) {
    let c = Some(child);
    let result = match tag {
        "user_message_chunk" => chunk(cx, c, raw, Role::User),
        "agent_message_chunk" => chunk(cx, c, raw, Role::Agent),
        "agent_thought_chunk" => chunk(cx, c, raw, Role::Thought),
        "tool_call" => tool_call(cx, seq, c, raw, true),
        "tool_call_update" => tool_call(cx, seq, c, raw, false),
        "plan" => serde_json::from_str::<wire::PlanUpdate>(raw).map(|p| {
            let s = &mut cx.s.subagents.list[child];
            s.plan = p.entries.into_iter().filter_map(|e| e.0).collect();
            let subagent = std::sync::Arc::new(s.clone());
            cx.emit(EventBody::Subagent { subagent });
        }),
        "subagent_update" => {
            crate::subagents::update(cx, c, raw).or_else(|e| bad(cx, "subagent_update", e))
        }
        "session_message" => {
            crate::subagents::message(cx, c, raw, false).or_else(|e| bad(cx, "session_message", e))
        }
        "session_message_chunk" => crate::subagents::message(cx, c, raw, true)
            .or_else(|e| bad(cx, "session_message_chunk", e)),
        other => {
            cx.s.counters.updates -= 1;
            *cx.s
                .counters
                .unknown_updates
                .entry(format!("subagent:{other}"))
                .or_default() += 1;
            cx.warn_once(
                format!("child-update:{other}"),
                format!(
                    "ignored {other} from a subagent (only its messages, calls and plan are shown)"
                ),
            );
            Ok(())
        }
    };
    if let Err(e) = result {
        cx.malformed(tag, format!("skipped a malformed {tag} update: {e}"));
    }
}

fn chunk(
    cx: &mut Ctx<'_>,
    owner: Option<usize>,
    raw: &str,
    role: Role,
) -> Result<(), serde_json::Error> {
    let c: wire::ChunkUpdate = serde_json::from_str(raw)?;
    let text = crate::hot::block_text(c.content.get())?;
    append_chunk(cx, owner, text, c.message_id, role);
    Ok(())
}

/// Appends a chunk's text to the transcript of `owner` (this session's, or a subagent's),
/// joined to the last block when role and message id match, and emits it.
fn append_chunk(
    cx: &mut Ctx<'_>,
    owner: Option<usize>,
    text: String,
    message_id: Option<String>,
    role: Role,
) {
    let turn = cx.s.turn;
    let (transcript, subagent) = match owner {
        None => (&mut cx.s.transcript, None),
        Some(c) => {
            let s = &mut cx.s.subagents.list[c];
            (&mut s.entries, Some(s.session_id.clone()))
        }
    };
    let joined = match transcript.last_mut() {
        Some(Entry::Message(m)) if m.role == role && m.message_id == message_id => {
            m.text.push_str(&text);
            true
        }
        _ => false,
    };
    if !joined {
        transcript.push(Entry::Message(Box::new(MessageBlock {
            role,
            message_id: message_id.clone(),
            text: text.clone(),
            turn,
        })));
    }
    cx.emit(EventBody::MessageChunk {
        role,
        message_id,
        text,
        subagent,
    });
}

fn tool_call(
    cx: &mut Ctx<'_>,
    seq: u64,
    owner: Option<usize>,
    raw: &str,
    announce: bool,
) -> Result<(), serde_json::Error> {
    let patch: ToolCallPatch = serde_json::from_str(raw)?;
    let meta = serde_json::from_str::<wire::MetaOnly>(raw)
        .ok()
        .and_then(|m| m.meta)
        .map(|m| m.get().to_string())
        .filter(|m| m.contains("\"terminal_"));
    tool_call_patch(cx, seq, owner, patch, announce, meta.as_deref())
}

fn tool_call_patch(
    cx: &mut Ctx<'_>,
    seq: u64,
    owner: Option<usize>,
    patch: ToolCallPatch,
    announce: bool,
    meta: Option<&str>,
) -> Result<(), serde_json::Error> {
    if patch.tool_call_id.is_empty() {
        return Err(serde::de::Error::custom("missing toolCallId"));
    }
    let meta_only = patch.is_empty();
    let id = patch.tool_call_id.clone();
    let names_session = patch
        .content
        .as_ref()
        .is_some_and(|c| c.iter().any(|c| matches!(c, ToolContent::Session { .. })));
    let applied = crate::subagents::apply_call(cx, owner, patch, announce);
    cx.s.ledger.push_frame(applied.index, seq);
    // On a status change (or a call announced already running).
    if applied.created || applied.previous_status.is_some() {
        crate::anomaly::check(cx, applied.index, applied.previous_status);
    }
    // Command output in `_meta` (Codex) counts as a change of the call.
    let output = meta.is_some_and(|m| crate::terminal_meta::apply(cx, applied.index, m));
    let meta_only = meta_only && !output;
    if applied.created {
        if !announce {
            cx.s.counters.unannounced_calls += 1;
            cx.emit(EventBody::Warning {
                message: format!("update for unknown tool call {id}: kept as a placeholder"),
            });
        }
        let call = cx.s.ledger.snapshot(applied.index);
        cx.emit(EventBody::ToolCallCreated { call });
    } else if !meta_only {
        let call = cx.s.ledger.snapshot(applied.index);
        cx.emit(EventBody::ToolCallUpdated {
            previous_status: applied.previous_status,
            status: call.status,
            call,
        });
    }
    if names_session {
        crate::subagents::link_call(cx, applied.index);
    }
    Ok(())
}
