//! The tool-call ledger of one session: calls in arrival order, indexed by id.
//!
//! Invariant: `index[id] == position of the call with that id in calls`; ids are unique.

use std::sync::Arc;

use crate::fxhash::FxHashMap;

use crate::tool_call::{ToolCall, ToolCallPatch, ToolStatus};

#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Shared so that snapshots (events, views) cost a reference count; mutation copies
    /// only while an older snapshot is still alive.
    calls: Vec<Arc<ToolCall>>,
    index: FxHashMap<String, usize>,
    /// Calls of subagents, keyed by (child's position in `Session::subagents`, call id):
    /// ids are the child's own and may repeat the parent's.
    nested: FxHashMap<(usize, String), usize>,
    /// Log sequence numbers of the frames that touched each call (parallel to `calls`).
    /// Kept beside the calls, not in them: the list grows with every update, and a call
    /// copied because an old snapshot is alive would copy it each time.
    frames: Vec<Vec<u64>>,
}

/// What applying a message to the ledger did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    pub index: usize,
    /// The call did not exist before this message.
    pub created: bool,
    /// Status before, when the message changed it.
    pub previous_status: Option<ToolStatus>,
}

impl Ledger {
    /// Keeps every call (by position: the transcript still shows them) but forgets their
    /// ids and frames: the calls of an earlier session a resumed one continues. A new call
    /// that reuses an id is a new call, and frame numbers of the earlier log are not
    /// looked up in the new one.
    pub fn archive(&mut self) {
        self.index.clear();
        self.nested.clear();
        for f in &mut self.frames {
            f.clear();
        }
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn calls(&self) -> impl DoubleEndedIterator<Item = &ToolCall> + ExactSizeIterator + Clone {
        self.calls.iter().map(|c| &**c)
    }

    pub fn get(&self, id: &str) -> Option<&ToolCall> {
        self.index.get(id).map(|&i| &*self.calls[i])
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        let i = *self.index.get(id)?;
        Some(self.at_mut(i))
    }

    pub fn at(&self, index: usize) -> &ToolCall {
        &self.calls[index]
    }

    /// Mutable access; bumps the call's revision (views re-render on it).
    pub fn at_mut(&mut self, index: usize) -> &mut ToolCall {
        let call = Arc::make_mut(&mut self.calls[index]);
        call.rev = call.rev.wrapping_add(1);
        call
    }

    /// A cheap, immutable snapshot of the call at `index`.
    pub fn snapshot(&self, index: usize) -> Arc<ToolCall> {
        self.calls[index].clone()
    }

    /// Records that frame `seq` touched the call at `index`; the texts of its content that
    /// this frame brought are noted as coming from it (see [`crate::bulk::Text::set_origin`]:
    /// texts an earlier frame brought keep theirs).
    pub fn push_frame(&mut self, index: usize, seq: u64) {
        if let Some(f) = self.frames.get_mut(index) {
            f.push(seq);
        }
        if let Some(call) = self.calls.get(index) {
            for (i, c) in call.content.iter().enumerate() {
                if let crate::tool_call::ToolContent::Text { text } = c {
                    text.set_origin(seq, i);
                }
            }
        }
    }

    /// Frames (log sequence numbers) that touched the call at `index`, in order.
    pub fn frames(&self, index: usize) -> &[u64] {
        self.frames.get(index).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Position of call `id` of the session `owner` (none: this session; else the child at
    /// that position of `Session::subagents`).
    pub fn position_in(&self, owner: Option<usize>, id: &str) -> Option<usize> {
        match owner {
            None => self.position(id),
            Some(o) => self.nested.get(&(o, id.to_string())).copied(),
        }
    }

    /// Applies one message about a call. A `tool_call` for a known id and an update for an
    /// unknown id are both upserts: the first creates a placeholder, the merge rule is the same.
    /// `announce` is true for `tool_call` messages (the agent introduced the call).
    pub fn apply(&mut self, patch: ToolCallPatch, announce: bool, t: f64, turn: u32) -> Applied {
        self.apply_in(None, patch, announce, t, turn)
    }

    /// [`Ledger::apply`] for a call of session `owner` (see [`Ledger::position_in`]);
    /// `subagent` names that child on a call it creates.
    pub fn apply_in(
        &mut self,
        owner: Option<(usize, &Arc<str>)>,
        patch: ToolCallPatch,
        announce: bool,
        t: f64,
        turn: u32,
    ) -> Applied {
        let known = match owner {
            None => self.index.get(&patch.tool_call_id).copied(),
            Some((o, _)) => self.position_in(Some(o), &patch.tool_call_id),
        };
        let (index, created) = match known {
            Some(i) => (i, false),
            None => {
                let i = self.calls.len();
                match owner {
                    None => self.index.insert(patch.tool_call_id.clone(), i),
                    Some((o, _)) => self.nested.insert((o, patch.tool_call_id.clone()), i),
                };
                let mut call = ToolCall::placeholder(patch.tool_call_id.clone(), t, turn);
                call.subagent = owner.map(|(_, id)| id.clone());
                self.calls.push(Arc::new(call));
                self.frames.push(Vec::new());
                (i, true)
            }
        };
        let call = self.at_mut(index);
        if announce {
            call.announced = true;
        }
        let previous_status = call.apply(patch, t);
        Applied {
            index,
            created,
            previous_status,
        }
    }
}
