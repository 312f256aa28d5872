//! The reducer's part of subagents (the model is [`crate::subagents`]): routing by session
//! id, the tree's announcements and messages, a child's calls in the ledger, cancelling a
//! child's work.

use std::sync::Arc;

use serde_json::Value;

use crate::event::EventBody;
use crate::session::Entry;
use crate::subagents::{MAX_DEPTH, MAX_SUBAGENTS, Subagent};

use super::ctx::Ctx;

/// Where an update for `theirs` goes: this session (`Some(None)`), a known child
/// (`Some(Some(i))`), or nowhere (`None`: another session's).
pub(crate) fn route(cx: &Ctx<'_>, theirs: &str) -> Option<Option<usize>> {
    match &cx.s.id {
        Some(mine) if **mine == *theirs => Some(None),
        None => Some(None),
        Some(_) => cx.s.subagents.position(theirs).map(Some),
    }
}

/// Applies a message about a call of session `owner` (none: this session; else the child
/// at that position) to the ledger; a call it creates goes to that session's transcript.
pub(crate) fn apply_call(
    cx: &mut Ctx<'_>,
    owner: Option<usize>,
    patch: &mut crate::ToolCallPatch,
    announce: bool,
) -> crate::ledger::Applied {
    let (t, turn) = (cx.t, cx.s.turn);
    if !cx.s.paths.is_empty() {
        cx.s.paths.localize(patch);
    }
    let child = owner.map(|c| (c, cx.s.subagents.list[c].session_id.clone()));
    let applied = cx.s.ledger.apply_in(
        child.as_ref().map(|(c, id)| (*c, id)),
        patch,
        announce,
        t,
        turn,
    );
    if applied.created {
        let entry = Entry::ToolCall {
            index: applied.index,
        };
        match owner {
            None => cx.s.transcript.push(entry),
            Some(c) => {
                let s = &mut cx.s.subagents.list[c];
                s.entries.push(entry);
                s.calls += 1;
            }
        }
    }
    applied
}

/// A patch field: omitted (`None`), `null` (`Some(None)`), or a value.
fn patch<'a>(v: &'a Value, key: &str) -> Option<Option<&'a Value>> {
    v.get(key).map(|x| if x.is_null() { None } else { Some(x) })
}

fn patch_str(v: &Value, key: &str) -> Option<Option<String>> {
    patch(v, key).map(|x| x.and_then(Value::as_str).map(str::to_string))
}

/// `subagent_update` on session `owner` (none: this session; else the child announcing a
/// child of its own).
pub(crate) fn update(cx: &mut Ctx<'_>, owner: Option<usize>, raw: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let Some(id) = v
        .get("sessionId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return Err("no sessionId for the child".into());
    };
    if cx.s.id.as_deref() == Some(id) {
        return Err("a session cannot be its own subagent".into());
    }
    let parent = owner.map(|i| cx.s.subagents.list[i].session_id.clone());
    let i = match cx.s.subagents.position(id) {
        Some(i) => {
            // The association is fixed at the announcement; another parent cannot take it.
            if cx.s.subagents.list[i].parent != parent {
                return Err(format!(
                    "subagent {id} is already the child of another session"
                ));
            }
            i
        }
        None => {
            let mut depth = 0;
            let mut up = owner;
            while let Some(o) = up {
                depth += 1;
                up = cx.s.subagents.list[o]
                    .parent
                    .as_deref()
                    .and_then(|p| cx.s.subagents.position(p));
            }
            if depth >= MAX_DEPTH {
                return Err(format!(
                    "subagent {id} is nested deeper than {MAX_DEPTH} levels: not followed"
                ));
            }
            if cx.s.subagents.list.len() >= MAX_SUBAGENTS {
                return Err(format!(
                    "more than {MAX_SUBAGENTS} subagents: {id} is not followed"
                ));
            }
            let id: Arc<str> = id.into();
            let i = cx.s.subagents.add(Subagent {
                session_id: id,
                parent,
                title: None,
                description: None,
                state: None,
                stop_reason: None,
                error: None,
                can_cancel: false,
                cwd: None,
                call_id: None,
                calls: 0,
                plan: Vec::new(),
                entries: Vec::new(),
            });
            // Shown where it was announced until a call of the parent names it.
            match owner {
                None => cx.s.transcript.push(Entry::Subagent { index: i }),
                Some(o) => cx.s.subagents.list[o]
                    .entries
                    .push(Entry::Subagent { index: i }),
            }
            i
        }
    };
    let s = &mut cx.s.subagents.list[i];
    if let Some(t) = patch_str(&v, "title") {
        s.title = t;
    }
    if let Some(d) = patch_str(&v, "description") {
        s.description = d;
    }
    if let Some(c) = patch_str(&v, "cwd") {
        s.cwd = c;
    }
    if let Some(caps) = patch(&v, "capabilities") {
        s.can_cancel = caps
            .and_then(|c| c.get("cancel"))
            .is_some_and(Value::is_object);
    }
    if let Some(state) = patch(&v, "state") {
        let word = state
            .and_then(|x| x.get("state"))
            .and_then(Value::as_str)
            .map(str::to_string);
        s.state = word;
        s.stop_reason = None;
        s.error = None;
        if s.state.as_deref() == Some("idle") {
            let st = state.unwrap_or(&Value::Null);
            s.stop_reason = st
                .get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_string);
            s.error = st
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }
    let subagent = Arc::new(s.clone());
    cx.emit(EventBody::Subagent { subagent });
    Ok(())
}

/// A parent's call whose content names a child: the child is shown under that call.
pub(crate) fn link_call(cx: &mut Ctx<'_>, index: usize) {
    let call = cx.s.ledger.at(index);
    let owner = call.subagent.clone();
    let named: Vec<String> = call
        .content
        .iter()
        .filter_map(|c| match c {
            crate::tool_call::ToolContent::Session { session_id } => Some(session_id.clone()),
            _ => None,
        })
        .collect();
    for id in named {
        let Some(i) = cx.s.subagents.position(&id) else {
            cx.warn_once(
                format!("session-ref:{id}"),
                format!("a tool call names session {id}, which no subagent_update announced"),
            );
            continue;
        };
        let s = &mut cx.s.subagents.list[i];
        if s.call_id.is_none() && s.parent == owner {
            s.call_id = Some(cx.s.ledger.at(index).id.clone());
            let subagent = Arc::new(s.clone());
            cx.emit(EventBody::Subagent { subagent });
        }
    }
}

/// `session_message` (an upsert) or `session_message_chunk` (text appended) in the
/// transcript of `within`.
pub(crate) fn message(
    cx: &mut Ctx<'_>,
    within: Option<usize>,
    raw: &str,
    chunk: bool,
) -> Result<(), String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let Some(message_id) = v.get("messageId").and_then(Value::as_str) else {
        return Err("no messageId".into());
    };
    let within = within.map(|i| cx.s.subagents.list[i].session_id.clone());
    let subs = &mut cx.s.subagents;
    let i = subs.message_slot(within, message_id);
    let text_of =
        |b: &Value| -> String { crate::hot::block_text(&b.to_string()).unwrap_or_default() };
    let m = &mut subs.messages[i];
    if chunk {
        m.text
            .push_str(&text_of(v.get("content").unwrap_or(&Value::Null)));
    } else {
        if let Some(s) = patch_str(&v, "senderSessionId") {
            m.sender = s;
        }
        if let Some(r) = patch_str(&v, "recipientSessionId") {
            m.recipient = r;
        }
        if let Some(c) = patch(&v, "content") {
            m.text = c
                .and_then(Value::as_array)
                .map(|blocks| blocks.iter().map(text_of).collect())
                .unwrap_or_default();
        }
    }
    let message = m.clone();
    cx.emit(EventBody::SessionMessage { message });
    Ok(())
}

/// Whether the client may cancel subagent `id`'s work now: the agent lets it (`cancel` in
/// the child's capabilities) and the child is working.
pub(crate) fn may_cancel(cx: &Ctx<'_>, id: &str) -> Result<(), String> {
    let s =
        cx.s.subagents
            .get(id)
            .ok_or_else(|| format!("no subagent {id}"))?;
    if !s.can_cancel {
        return Err(format!(
            "the agent does not let the client cancel subagent {}",
            s.label()
        ));
    }
    if !matches!(
        s.state.as_deref(),
        Some("running" | "requires_action") | None
    ) {
        return Err(format!("subagent {} is not working", s.label()));
    }
    Ok(())
}

/// The child a client `session/cancel` names, if it names one.
pub(crate) fn cancelled_child(cx: &Ctx<'_>, msg: &crate::wire::Message) -> Option<usize> {
    let v: Value = serde_json::from_str(msg.params.as_deref()?.get()).ok()?;
    let id = v.get("sessionId")?.as_str()?;
    cx.s.subagents.position(id)
}

/// The client cancelled subagent `child`'s work: its open calls (and its own children's)
/// are marked cancelled and its open permission requests answered `cancelled`; the
/// session's own turn goes on.
pub(crate) fn cancel_seen(cx: &mut Ctx<'_>, child: usize) {
    // The child and its descendants.
    let mut ids: Vec<Arc<str>> = vec![cx.s.subagents.list[child].session_id.clone()];
    let mut k = 0;
    while k < ids.len() {
        let parent = ids[k].clone();
        ids.extend(
            cx.s.subagents
                .list
                .iter()
                .filter(|s| s.parent.as_deref() == Some(&*parent))
                .map(|s| s.session_id.clone()),
        );
        k += 1;
    }
    super::turn::mark_open_calls_of(cx, crate::ToolStatus::Cancelled, |call| {
        call.subagent.as_ref().is_some_and(|s| ids.contains(s))
    });
    for (request_id, _) in cx.s.open_permissions() {
        let asks_child = matches!(
            cx.s.agent_requests.get(&request_id),
            Some(crate::session::AgentRequest::Permission { call, .. })
                if cx.s.ledger.at(*call).subagent.as_ref().is_some_and(|s| ids.contains(s))
        );
        if asks_child {
            let _ = super::turn::decide(
                cx,
                &request_id,
                crate::action::Choice::Cancelled,
                crate::permission::Decider::Cancel,
                None,
            );
        }
    }
}
