//! `session/update` notifications: transcript chunks, tool calls, plan, usage, commands,
//! mode, config options, title, notices and compaction. Unknown kinds are counted and
//! skipped.

use super::ctx::Ctx;
use crate::event::{EventBody, Role};
use crate::hot::HotUpdate;
use crate::session::{Entry, MessageBlock};
use crate::tool_call::{ToolCallPatch, ToolContent};
use crate::wire::{self, Message};

/// Applies one `session/update`: hot kinds as decoded in one pass (see [`crate::hot`]), the
/// rest (and anything the hot path cannot read) through the per-kind lenient decoders.
pub(crate) fn apply(cx: &mut Ctx<'_>, seq: u64, msg: &mut Message) {
    if cx.s.replaying() {
        cx.s.counters.replayed += 1;
        return;
    }
    // Taken, not copied: the frame is the reducer's own and nothing reads it after this
    // (and kept in its box: its fields are taken from it where they are used).
    let decoded = msg.decoded.take().or_else(|| {
        msg.params
            .as_deref()
            .and_then(|p| crate::hot::decode_params(p.get()))
            .map(Box::new)
    });
    let Some(mut d) = decoded else {
        return slow(cx, seq, msg);
    };
    // This session's own line (nearly every one), told by comparing bytes: the id is
    // made a `str` only to route another session's.
    let own = match (&d.session_id, &cx.s.id) {
        (Some(theirs), Some(mine)) => theirs == &**mine,
        _ => false,
    };
    let routed = if own {
        Some(None)
    } else {
        target(cx, d.session_id.as_deref())
    };
    let Some(owner) = routed else {
        return;
    };
    cx.s.counters.updates += 1;
    match &mut d.update {
        HotUpdate::ToolCall {
            patch,
            announce,
            meta,
        } => {
            let announce = *announce;
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
        } => append_chunk(cx, owner, std::mem::take(text), message_id.take(), *role),
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
    let routed = super::subagents::route(cx, theirs);
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
    let kind = KINDS
        .iter()
        .find(|k| k.tag == tag)
        .filter(|k| owner.is_none() || k.from_subagents);
    let Some(kind) = kind else {
        return unknown(cx, owner, &tag, raw);
    };
    cx.s.counters.updates += 1;
    let update = Update { seq, owner, raw };
    if let Err(e) = (kind.apply)(cx, update) {
        cx.malformed(&tag, format!("skipped a malformed {tag} update: {e}"));
    }
}

/// Unknown updates of one kind shown as text in the transcript; the rest are counted.
const UNKNOWN_SHOWN: u64 = 3;
/// Characters of an unknown update shown.
const UNKNOWN_CHARS: usize = 300;

/// An update kind this client does not know: counted, warned once per kind, and (the
/// session's own, the first few of each kind) shown in the transcript as text, never
/// silently dropped. From a subagent: anything but its messages, calls, plan and
/// children is counted and warned (the session's settings, usage and commands are the
/// parent's).
fn unknown(cx: &mut Ctx<'_>, owner: Option<usize>, tag: &str, raw: &str) {
    let (key, warn_key, message) = match owner {
        None => (
            tag.to_string(),
            format!("update:{tag}"),
            format!("ignored unknown session/update kind {tag}"),
        ),
        Some(_) => (
            format!("subagent:{tag}"),
            format!("child-update:{tag}"),
            format!("ignored {tag} from a subagent (only its messages, calls and plan are shown)"),
        ),
    };
    let n = {
        let n = cx.s.counters.unknown_updates.entry(key).or_default();
        *n += 1;
        *n
    };
    cx.warn_once(warn_key, message);
    if owner.is_none() && n <= UNKNOWN_SHOWN + 1 {
        let kind: String = tag.chars().take(64).collect();
        let text = if n <= UNKNOWN_SHOWN {
            let flat: String = raw
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(UNKNOWN_CHARS + 1)
                .collect();
            let cut = if flat.chars().count() > UNKNOWN_CHARS {
                let kept: String = flat.chars().take(UNKNOWN_CHARS).collect();
                format!("{kept}…")
            } else {
                flat
            };
            format!("the agent sent a `{kind}` update, which this client does not show: {cut}")
        } else {
            format!("more `{kind}` updates are counted in /status, not shown")
        };
        cx.notice(text);
    }
}

/// One `session/update` as a handler gets it: its frame number, whose it is (none: this
/// session's; else the subagent at that position) and its `update` object.
#[derive(Clone, Copy)]
struct Update<'a> {
    seq: u64,
    owner: Option<usize>,
    raw: &'a str,
}

/// An update kind: its tag, whether a subagent may send it, and its handler (an error is
/// counted and warned as a malformed update of that kind).
struct Kind {
    tag: &'static str,
    from_subagents: bool,
    apply: fn(&mut Ctx<'_>, Update<'_>) -> Result<(), String>,
}

const fn kind(
    tag: &'static str,
    from_subagents: bool,
    apply: fn(&mut Ctx<'_>, Update<'_>) -> Result<(), String>,
) -> Kind {
    Kind {
        tag,
        from_subagents,
        apply,
    }
}

fn json<T>(r: Result<T, serde_json::Error>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// The one dispatch table of the update kinds the slow path reads, for the session and
/// its subagents alike.
const KINDS: &[Kind] = &[
    kind("user_message_chunk", true, |cx, u| {
        json(chunk(cx, u.owner, u.raw, Role::User))
    }),
    kind("agent_message_chunk", true, |cx, u| {
        json(chunk(cx, u.owner, u.raw, Role::Agent))
    }),
    kind("agent_thought_chunk", true, |cx, u| {
        json(chunk(cx, u.owner, u.raw, Role::Thought))
    }),
    kind("tool_call", true, |cx, u| {
        json(tool_call(cx, u.seq, u.owner, u.raw, true))
    }),
    kind("tool_call_update", true, |cx, u| {
        json(tool_call(cx, u.seq, u.owner, u.raw, false))
    }),
    kind("subagent_update", true, |cx, u| {
        super::subagents::update(cx, u.owner, u.raw)
    }),
    kind("session_message", true, |cx, u| {
        super::subagents::message(cx, u.owner, u.raw, false)
    }),
    kind("session_message_chunk", true, |cx, u| {
        super::subagents::message(cx, u.owner, u.raw, true)
    }),
    kind("plan", true, plan),
    kind("available_commands_update", false, |cx, u| {
        let c: wire::CommandsUpdate = json(serde_json::from_str(u.raw))?;
        cx.s.commands = c
            .available_commands
            .into_iter()
            .filter_map(|e| e.0)
            .collect();
        let commands = cx.s.commands.clone();
        cx.emit(EventBody::CommandsUpdated { commands });
        Ok(())
    }),
    kind("current_mode_update", false, |cx, u| {
        let m: wire::ModeUpdate = json(serde_json::from_str(u.raw))?;
        cx.s.settings_changed_at = cx.t;
        cx.s.mode = Some(m.current_mode_id.clone());
        cx.emit(EventBody::ModeChanged {
            mode: m.current_mode_id,
        });
        Ok(())
    }),
    kind("session_info_update", false, |cx, u| {
        let i: wire::SessionInfoUpdate = json(serde_json::from_str(u.raw))?;
        if let Some(title) = i.title {
            cx.s.title = title.clone();
            cx.emit(EventBody::TitleChanged { title });
        }
        Ok(())
    }),
    kind("usage_update", false, |cx, u| {
        let usage: wire::Usage = json(serde_json::from_str(u.raw))?;
        cx.s.usage = Some(usage.clone());
        cx.emit(EventBody::Usage { usage });
        Ok(())
    }),
    kind("plan_update", false, |cx, u| {
        json(super::plans::update(cx, u.raw))
    }),
    kind("plan_removed", false, |cx, u| {
        json(super::plans::removed(cx, u.raw))
    }),
    kind("notice", false, |cx, u| {
        json(super::agent_notes::notice(cx, u.raw))
    }),
    kind("compaction_update", false, |cx, u| {
        json(super::agent_notes::compaction_update(cx, u.raw))
    }),
    kind("compaction_summary_chunk", false, |cx, u| {
        json(super::agent_notes::compaction_chunk(cx, u.raw))
    }),
    kind("config_option_update", false, |cx, u| {
        let r: wire::ConfigOptionsResult = json(serde_json::from_str(u.raw))?;
        let options = crate::session_config::parse_options(
            r.config_options
                .as_ref()
                .unwrap_or(&serde_json::Value::Null),
        );
        super::requests::set_config(cx, options);
        Ok(())
    }),
];

/// The legacy whole `plan`: the session's, or a subagent's own.
fn plan(cx: &mut Ctx<'_>, u: Update<'_>) -> Result<(), String> {
    let p: wire::PlanUpdate = json(serde_json::from_str(u.raw))?;
    let entries: Vec<_> = p.entries.into_iter().filter_map(|e| e.0).collect();
    match u.owner {
        None => {
            cx.s.plan = entries.clone();
            cx.emit(EventBody::Plan { entries });
        }
        Some(child) => {
            let s = &mut cx.s.subagents.list[child];
            s.plan = entries;
            let subagent = std::sync::Arc::new(s.clone());
            cx.emit(EventBody::Subagent { subagent });
        }
    }
    Ok(())
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
    let mut patch: ToolCallPatch = serde_json::from_str(raw)?;
    let meta = serde_json::from_str::<wire::MetaOnly>(raw)
        .ok()
        .and_then(|m| m.meta)
        .map(|m| m.get().to_string())
        .filter(|m| m.contains("\"terminal_"));
    tool_call_patch(cx, seq, owner, &mut patch, announce, meta.as_deref())
}

fn tool_call_patch(
    cx: &mut Ctx<'_>,
    seq: u64,
    owner: Option<usize>,
    patch: &mut ToolCallPatch,
    announce: bool,
    meta: Option<&str>,
) -> Result<(), serde_json::Error> {
    if patch.tool_call_id.is_empty() {
        return Err(serde::de::Error::custom("missing toolCallId"));
    }
    // Only the user's own commands carry that mark.
    if patch.tool_call_id.starts_with(crate::tool_call::USER_CALL) {
        return Err(serde::de::Error::custom(
            "a call id the client keeps for the user's own commands",
        ));
    }
    let meta_only = patch.is_empty();
    let names_session = patch
        .content
        .as_ref()
        .is_some_and(|c| c.iter().any(|c| matches!(c, ToolContent::Session { .. })));
    let terminals: Vec<String> = patch
        .content
        .iter()
        .flatten()
        .filter_map(|c| match c {
            ToolContent::Terminal { terminal_id } => Some(terminal_id.clone()),
            _ => None,
        })
        .collect();
    let applied = super::subagents::apply_call(cx, owner, patch, announce);
    for tid in terminals {
        cx.s.terminals.entry(tid.clone()).or_default().call = Some(applied.index);
        super::limit::terminal(cx, &tid, Some(applied.index));
    }
    cx.s.ledger.push_frame(applied.index, seq);
    // On a status change (or a call announced already running).
    if applied.created || applied.previous_status.is_some() {
        super::anomaly::check(cx, applied.index, applied.previous_status);
    }
    // Command output in `_meta` (Codex) counts as a change of the call.
    let output = meta.is_some_and(|m| super::terminal_meta::apply(cx, applied.index, m));
    let meta_only = meta_only && !output;
    if applied.created {
        let call = cx.s.ledger.snapshot(applied.index);
        if !announce {
            cx.s.counters.unannounced_calls += 1;
            cx.emit(EventBody::Warning {
                message: format!(
                    "update for unknown tool call {}: kept as a placeholder",
                    call.id
                ),
            });
        }
        cx.emit_about(applied.index, EventBody::ToolCallCreated { call });
    } else if !meta_only {
        let call = cx.s.ledger.snapshot(applied.index);
        cx.emit_about(
            applied.index,
            EventBody::ToolCallUpdated {
                previous_status: applied.previous_status,
                status: call.status,
                call,
            },
        );
    }
    if names_session {
        super::subagents::link_call(cx, applied.index);
    }
    cx.s.ledger.seal(applied.index);
    Ok(())
}
