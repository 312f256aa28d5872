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

use crate::transcript::Entry;
use crate::wire::PlanEntry;
use rustc_hash::FxHashMap;
use serde::Serialize;

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
            Entry::Message(m) if m.role == crate::transcript::Role::Agent => Some(m.text.as_str()),
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

    /// Adds a child announced now; returns its position.
    pub(crate) fn add(&mut self, child: Subagent) -> usize {
        let i = self.list.len();
        self.by_id.insert(child.session_id.clone(), i);
        self.list.push(child);
        i
    }

    /// Position of message `message_id` in the transcript of `within` (none: this
    /// session's), made empty when it is new.
    pub(crate) fn message_slot(&mut self, within: Option<Arc<str>>, message_id: &str) -> usize {
        let key = (within, message_id.to_string());
        if let Some(&i) = self.message_index.get(&key) {
            return i;
        }
        let i = self.messages.len();
        self.messages.push(SessionMessage {
            within: key.0.clone(),
            message_id: key.1.clone(),
            sender: None,
            recipient: None,
            text: String::new(),
        });
        self.message_index.insert(key, i);
        i
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
