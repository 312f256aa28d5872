//! Subagents: child sessions the agent announces (`subagent_update`) and drives on the same
//! connection (ACP subagent sessions, v1 with `clientCapabilities.subagents`).
//!
//! Invariants:
//! - A child exists once a `subagent_update` on this session, or on a child already known,
//!   announced it; its parent never changes. Updates, permission requests and elicitations
//!   naming a child are attributed to it; any other session stays foreign.
//! - A child's calls live in the one ledger (their ids are the child's: the ledger keys them
//!   by child, see [`crate::Ledger::apply_in`]); its messages and calls form its own
//!   transcript (`Subagent::entries`), never the parent's.
//! - `subagent_update` is a patch: an omitted field keeps its value, `null` clears it.
//! - The tree is a fold of frames like everything else: `log show` rebuilds it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::event::EventBody;
use crate::fxhash::FxHashMap;
use crate::session::Entry;
use crate::update::Ctx;
use crate::wire::PlanEntry;

/// Most children one session keeps; announcements beyond it are refused with a warning
/// (an agent announcing endlessly cannot grow the client without bound).
pub const MAX_SUBAGENTS: usize = 4096;

/// Deepest nesting followed (a child's child's…): views and `log show` draw the tree
/// recursively.
pub const MAX_DEPTH: usize = 8;

/// One child session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Subagent {
    /// The child's ACP session id.
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub session_id: Arc<str>,
    /// The child that announced this one (a nested subagent); none: this session did.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub parent: Option<Arc<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `running`, `idle`, `requires_action`, `unknown`, or the agent's own word; none: not
    /// reported (or cleared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why its work stopped, on an idle state (`end_turn`, `cancelled`, `error`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The failure's message, on an idle state with `stopReason: error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The agent lets the client cancel this child's work (`capabilities.cancel`).
    pub can_cancel: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The parent's call that shows this child (the first whose content names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Calls the child made so far.
    pub calls: usize,
    /// The child's plan (its `plan` updates).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanEntry>,
    /// The child's transcript: its messages and thoughts (joined) and its calls.
    #[serde(skip)]
    pub entries: Vec<Entry>,
}

impl Subagent {
    /// How the child is named on screen: its title, else its description, else its id.
    pub fn label(&self) -> &str {
        self.title
            .as_deref()
            .or(self.description.as_deref())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(&self.session_id)
    }

    /// Ledger positions of the child's calls, in order.
    pub fn call_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries.iter().filter_map(|e| match e {
            Entry::ToolCall { index } => Some(*index),
            _ => None,
        })
    }

    /// The last thing the child said (its last agent message), for a one-line summary.
    pub fn last_message(&self) -> Option<&str> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::Message(m) if m.role == crate::event::Role::Agent => Some(m.text.as_str()),
            _ => None,
        })
    }
}

/// A message between sessions (`session_message`, `session_message_chunk`), as it now
/// stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionMessage {
    /// The transcript it belongs to: a child's id, or none for this session.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub within: Option<Arc<str>>,
    pub message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// The text of its content blocks, joined.
    pub text: String,
}

/// Every child of the session and the messages between sessions.
#[derive(Debug, Clone, Default)]
pub struct Subagents {
    pub list: Vec<Subagent>,
    by_id: FxHashMap<Arc<str>, usize>,
    pub messages: Vec<SessionMessage>,
    /// Position in `messages` per (within, message id).
    message_index: FxHashMap<(Option<Arc<str>>, String), usize>,
}

impl Subagents {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Keeps every child (the history shows them) but forgets their ids: the children of an
    /// earlier connection are not this one's (see [`crate::Ledger::archive`]).
    pub fn archive(&mut self) {
        self.by_id.clear();
        self.message_index.clear();
    }

    /// Position of the child `id` in `list`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<&Subagent> {
        self.position(id).map(|i| &self.list[i])
    }

    /// The child a parent's call shows (its content names it, or the child names the call).
    /// Only a child of the call's own session: a call never shows itself or an ancestor.
    pub fn for_call(&self, call: &crate::ToolCall) -> Option<&Subagent> {
        call.content
            .iter()
            .find_map(|c| match c {
                crate::tool_call::ToolContent::Session { session_id } => {
                    self.get(session_id).filter(|s| s.parent == call.subagent)
                }
                _ => None,
            })
            .or_else(|| {
                self.list
                    .iter()
                    .find(|s| s.call_id.as_deref() == Some(&*call.id) && s.parent == call.subagent)
            })
    }

    /// Messages in the transcript of `within` (none: this session's), or naming the child
    /// `within` as sender or recipient.
    pub fn messages_of<'a>(
        &'a self,
        child: &'a str,
    ) -> impl Iterator<Item = &'a SessionMessage> + 'a {
        self.messages.iter().filter(move |m| {
            m.within.as_deref() == Some(child)
                || m.sender.as_deref() == Some(child)
                || m.recipient.as_deref() == Some(child)
        })
    }
}

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
    patch: crate::ToolCallPatch,
    announce: bool,
) -> crate::ledger::Applied {
    let (t, turn) = (cx.t, cx.s.turn);
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
            let i = cx.s.subagents.list.len();
            cx.s.subagents.by_id.insert(id.clone(), i);
            cx.s.subagents.list.push(Subagent {
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
    let key = (within.clone(), message_id.to_string());
    let subs = &mut cx.s.subagents;
    let i = match subs.message_index.get(&key) {
        Some(&i) => i,
        None => {
            let i = subs.messages.len();
            subs.message_index.insert(key, i);
            subs.messages.push(SessionMessage {
                within,
                message_id: message_id.to_string(),
                sender: None,
                recipient: None,
                text: String::new(),
            });
            i
        }
    };
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

impl crate::Session {
    /// Ledger position of call `id` of session `subagent` (a child's id; none: this
    /// session's): a subagent's call ids are its own.
    pub fn call_position(&self, subagent: Option<&str>, id: &str) -> Option<usize> {
        match subagent {
            None => self.ledger.position(id),
            Some(child) => self
                .ledger
                .position_in(Some(self.subagents.position(child)?), id),
        }
    }

    /// Ledger position of the call `call` (a snapshot: its id and its session).
    pub fn position_of(&self, call: &crate::ToolCall) -> Option<usize> {
        self.call_position(call.subagent.as_deref(), &call.id)
    }

    /// The call that starts subagent `child` (its parent's call that shows it).
    pub fn call_of_subagent(&self, child: usize) -> Option<usize> {
        let s = self.subagents.list.get(child)?;
        self.call_position(s.parent.as_deref(), s.call_id.as_deref()?)
    }

    /// The call of this session's own transcript that shows call `index`: the call
    /// itself, or for a subagent's call, the call that starts its subagent (up the tree).
    pub fn shown_call(&self, index: usize) -> Option<usize> {
        let mut i = index;
        for _ in 0..=MAX_DEPTH {
            let call = self.ledger.at(i);
            let Some(child) = call.subagent.as_deref() else {
                return Some(i);
            };
            i = self.call_of_subagent(self.subagents.position(child)?)?;
        }
        None
    }
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
    crate::update::mark_open_calls_of(cx, crate::ToolStatus::Cancelled, |call| {
        call.subagent.as_ref().is_some_and(|s| ids.contains(s))
    });
    for (request_id, _) in cx.s.open_permissions() {
        let asks_child = matches!(
            cx.s.agent_requests.get(&request_id),
            Some(crate::session::AgentRequest::Permission { call, .. })
                if cx.s.ledger.at(*call).subagent.as_ref().is_some_and(|s| ids.contains(s))
        );
        if asks_child {
            let _ = crate::update::decide(
                cx,
                &request_id,
                crate::update::Choice::Cancelled,
                crate::permission::Decider::Cancel,
            );
        }
    }
}
