//! The tool-call ledger of one session: calls in arrival order, indexed by id.
//!
//! Calls are kept in chunks of [`CHUNK`]; once every call of a chunk is finished (and it
//! is not one of the newest), [`Ledger::settle`] may freeze it into the [`Cold`] store the
//! driver gave ([`Ledger::set_cold`]): the chunk leaves memory and is decoded again when
//! a call of it is read, and thawed back when one is changed. Without a store nothing is
//! frozen (replays, tests).
//!
//! Invariants: `at(p).position == p`; the call with id `i` (of a given subagent) is at
//! the position `position` gives, whether in memory or frozen; ids are unique per owner;
//! a frozen chunk holds only finished calls and is never changed in place.

use std::borrow::Cow;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::cold::{CHUNK, Cold, Thawed};
use crate::short_id::ShortId;
use crate::tool_call::{ToolCall, ToolCallPatch, ToolStatus};

mod reading;
pub use reading::Calls;

/// The newest chunks are never frozen: late updates to recent calls stay cheap.
const KEEP_HOT: usize = 2;

#[derive(Debug, Clone, Default)]
struct Hot {
    /// Shared so that snapshots (events, views) cost a reference count; mutation copies
    /// only while an older snapshot is still alive.
    calls: Vec<Arc<ToolCall>>,
    /// Log sequence numbers of the frames that touched each call (parallel to `calls`).
    /// Kept beside the calls, not in them: the list grows with every update, and a call
    /// copied because an old snapshot is alive would copy it each time.
    frames: Vec<Vec<u64>>,
    /// Finished calls as the spill will keep them, written when their last frame came
    /// (while the call is still in the cache) rather than when the chunk freezes, a
    /// thousand calls later (see [`crate::cold::Sealed`]); possibly shorter than `calls`.
    sealed: Vec<Option<crate::cold::Sealed>>,
}

#[derive(Debug, Default)]
pub struct Ledger {
    len: usize,
    /// Per chunk number: its calls while in memory; `None`: frozen in `cold`.
    chunks: Vec<Option<Box<Hot>>>,
    /// Positions of the calls in memory, by id.
    index: FxHashMap<ShortId, usize>,
    /// Calls of subagents in memory, keyed by (child's position in `Session::subagents`,
    /// call id): ids are the child's own and may repeat the parent's.
    nested: FxHashMap<(usize, ShortId), usize>,
    /// Each child's session id, by its position (learned as its calls come).
    owners: Vec<Option<Arc<str>>>,
    cold: Option<Arc<Cold>>,
    /// Calls before this position are an earlier session's (see [`Ledger::archive`]).
    archived: usize,
    /// Every chunk before this one is frozen (`settle` starts here).
    settled: usize,
    /// Calls before this position came over an earlier connection to the agent (see
    /// [`Ledger::reconnected`]).
    connected_from: usize,
}

impl Clone for Ledger {
    fn clone(&self) -> Ledger {
        Ledger {
            len: self.len,
            chunks: self.chunks.clone(),
            index: self.index.clone(),
            nested: self.nested.clone(),
            owners: self.owners.clone(),
            cold: self.cold.as_ref().map(|c| c.fork()),
            archived: self.archived,
            settled: self.settled,
            connected_from: self.connected_from,
        }
    }
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

/// A call that could not be read back (the spill failed): said so, never a panic.
fn unreadable(position: usize) -> Arc<ToolCall> {
    let mut c = ToolCall::placeholder(format!("unreadable-{position}"), 0.0, 0);
    c.title = "(this call could not be read back from the spill file)".into();
    c.status = ToolStatus::Unfinished;
    c.position = position;
    Arc::new(c)
}

impl Ledger {
    /// Lets finished chunks leave memory for `cold` (see [`Ledger::settle`]).
    pub fn set_cold(&mut self, cold: Arc<Cold>) {
        self.cold = Some(cold);
    }

    /// The store frozen chunks are in, if any.
    pub fn cold(&self) -> Option<&Arc<Cold>> {
        self.cold.as_ref()
    }

    /// Keeps every call (by position: the transcript still shows them) but forgets their
    /// ids and frames: the calls of an earlier session a resumed one continues. A new call
    /// that reuses an id is a new call, and frame numbers of the earlier log are not
    /// looked up in the new one.
    pub fn archive(&mut self) {
        self.index.clear();
        self.nested.clear();
        for hot in self.chunks.iter_mut().flatten() {
            for f in &mut hot.frames {
                f.clear();
            }
        }
        self.archived = self.len;
    }

    /// The agent's connection was lost and is set up again (a dial again, a restart):
    /// the calls so far stay reachable by id for updates about them (an agent that kept
    /// the session may finish one), but a `tool_call` that introduces an id of theirs is
    /// a new call — a new agent process counts its ids from the start again.
    pub fn reconnected(&mut self) {
        self.connected_from = self.len;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the call at `index` is frozen (out of memory) now.
    pub fn is_frozen(&self, index: usize) -> bool {
        matches!(self.chunks.get(index / CHUNK), Some(None))
    }

    /// The calls in memory, newest first (the recent ones, and every call not finished).
    pub fn recent(&self) -> impl Iterator<Item = &ToolCall> + Clone {
        self.chunks
            .iter()
            .rev()
            .flatten()
            .flat_map(|h| h.calls.iter().rev().map(|c| &**c))
    }

    /// Positions of the calls not finished (they are always in memory).
    pub fn open(&self) -> Vec<usize> {
        self.chunks
            .iter()
            .flatten()
            .flat_map(|h| h.calls.iter())
            .filter(|c| !c.status.is_terminal())
            .map(|c| c.position)
            .collect()
    }

    pub fn get(&self, id: &str) -> Option<Arc<ToolCall>> {
        self.position(id).map(|i| self.at(i))
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        let i = self.position(id)?;
        Some(self.at_mut(i))
    }

    /// The call at `index` (a reference count, or decoded when frozen).
    pub fn at(&self, index: usize) -> Arc<ToolCall> {
        match self.chunks.get(index / CHUNK) {
            Some(Some(hot)) => hot.calls[index % CHUNK].clone(),
            _ => self
                .cold
                .as_ref()
                .and_then(|c| c.call(index))
                .unwrap_or_else(|| unreadable(index)),
        }
    }

    /// The chunk holding `index`, in memory (thawed if it was frozen).
    fn hot(&mut self, index: usize) -> &mut Hot {
        let no = index / CHUNK;
        if self.chunks[no].is_none() {
            self.settled = self.settled.min(no);
            let thawed = self
                .cold
                .as_ref()
                .and_then(|c| c.thaw(no))
                .unwrap_or_else(|| {
                    let first = no * CHUNK;
                    let n = CHUNK.min(self.len - first);
                    Thawed {
                        calls: (first..first + n).map(unreadable).collect(),
                        frames: vec![Vec::new(); n],
                    }
                });
            for c in &thawed.calls {
                self.remember(c);
            }
            self.chunks[no] = Some(Box::new(Hot {
                calls: thawed.calls,
                frames: thawed.frames,
                sealed: Vec::new(),
            }));
        }
        self.chunks[no].get_or_insert_default()
    }

    /// Indexes a call in memory by its id.
    fn remember(&mut self, c: &ToolCall) {
        if c.position < self.archived {
            return;
        }
        // An id used again after a reconnection names the newest call: a thawed older
        // one does not take its place.
        let newest = |p: &mut usize| *p = (*p).max(c.position);
        match &c.subagent {
            None => {
                self.index
                    .entry(ShortId::new(&c.id))
                    .and_modify(newest)
                    .or_insert(c.position);
            }
            Some(sid) => {
                if let Some(o) = self.owners.iter().position(|s| s.as_ref() == Some(sid)) {
                    self.nested
                        .entry((o, ShortId::new(&c.id)))
                        .and_modify(newest)
                        .or_insert(c.position);
                }
            }
        }
    }

    /// Mutable access; bumps the call's revision (views re-render on it).
    pub fn at_mut(&mut self, index: usize) -> &mut ToolCall {
        let hot = self.hot(index);
        let call = Arc::make_mut(&mut hot.calls[index % CHUNK]);
        call.rev = call.rev.wrapping_add(1);
        call
    }

    /// A cheap, immutable snapshot of the call at `index`.
    pub fn snapshot(&self, index: usize) -> Arc<ToolCall> {
        self.at(index)
    }

    /// Records that frame `seq` touched the call at `index`; the texts of its content that
    /// this frame brought are noted as coming from it (see [`crate::bulk::Text::set_origin`]:
    /// texts an earlier frame brought keep theirs).
    pub fn push_frame(&mut self, index: usize, seq: u64) {
        if index >= self.len {
            return;
        }
        let hot = self.hot(index);
        let i = index % CHUNK;
        hot.frames[i].push(seq);
        for (n, c) in hot.calls[i].content.iter().enumerate() {
            if let crate::tool_call::ToolContent::Text { text } = c {
                text.set_origin(seq, n);
            }
        }
    }

    /// Writes the call at `index` as the spill will keep it, if it is finished and a store
    /// will take it: called once a frame is applied, while the call is in the cache. The
    /// chunk's freeze takes these bytes when the call has not changed since (its revision,
    /// its frames and whether its texts stay inline are the same), and writes it afresh
    /// otherwise.
    pub fn seal(&mut self, index: usize) {
        if self.cold.is_none() || index >= self.len || index < self.archived {
            return;
        }
        let no = index / CHUNK;
        let Some(Some(hot)) = self.chunks.get_mut(no) else {
            return;
        };
        let i = index % CHUNK;
        let call = &hot.calls[i];
        if !call.status.is_terminal() {
            return;
        }
        let sealed = crate::cold::Sealed::of(call, &hot.frames[i], false);
        if hot.sealed.len() <= i {
            // Calls finish one after another: the chunk's whole list at once, not grown
            // call by call.
            hot.sealed
                .reserve_exact(CHUNK.saturating_sub(hot.sealed.len()));
            hot.sealed.resize_with(i + 1, || None);
        }
        hot.sealed[i] = sealed;
    }

    /// Frames (log sequence numbers) that touched the call at `index`, in order.
    pub fn frames(&self, index: usize) -> Cow<'_, [u64]> {
        if index < self.archived {
            return Cow::Borrowed(&[]);
        }
        match self.chunks.get(index / CHUNK) {
            Some(Some(hot)) => Cow::Borrowed(
                hot.frames
                    .get(index % CHUNK)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            ),
            Some(None) => Cow::Owned(
                self.cold
                    .as_ref()
                    .and_then(|c| c.frames(index))
                    .unwrap_or_default(),
            ),
            None => Cow::Borrowed(&[]),
        }
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.position_in(None, id)
    }

    fn find_frozen(&self, owner: Option<&str>, id: &str) -> Option<usize> {
        let p = self.cold.as_ref()?.find(owner, id)?;
        (p >= self.archived && self.is_frozen(p)).then_some(p)
    }

    /// Position of call `id` of the session `owner` (none: this session; else the child at
    /// that position of `Session::subagents`).
    pub fn position_in(&self, owner: Option<usize>, id: &str) -> Option<usize> {
        self.position_of(owner, &ShortId::new(id))
    }

    /// [`Ledger::position_in`] for an id held as a [`ShortId`]: the maps are looked up by
    /// its bytes (a `&str` key would make a `str` of each key it is compared with).
    fn position_of(&self, owner: Option<usize>, id: &ShortId) -> Option<usize> {
        let found = match owner {
            None => self.index.get(id),
            Some(o) => self.nested.get(&(o, id.clone())),
        };
        if let Some(&i) = found {
            return Some(i);
        }
        let sid = match owner {
            None => None,
            Some(o) => Some(self.owners.get(o)?.as_deref()?),
        };
        self.find_frozen(sid, id)
    }

    /// Applies one message about a call. A `tool_call` for a known id and an update for an
    /// unknown id are both upserts: the first creates a placeholder, the merge rule is the same.
    /// `announce` is true for `tool_call` messages (the agent introduced the call).
    pub fn apply(
        &mut self,
        mut patch: ToolCallPatch,
        announce: bool,
        t: f64,
        turn: u32,
    ) -> Applied {
        self.apply_in(None, &mut patch, announce, t, turn)
    }

    /// [`Ledger::apply`] for a call of session `owner` (see [`Ledger::position_in`]);
    /// `subagent` names that child on a call it creates. The patch's fields are taken
    /// (see [`ToolCall::apply`]).
    pub fn apply_in(
        &mut self,
        owner: Option<(usize, &Arc<str>)>,
        patch: &mut ToolCallPatch,
        announce: bool,
        t: f64,
        turn: u32,
    ) -> Applied {
        if let Some((o, sid)) = owner {
            if self.owners.len() <= o {
                self.owners.resize(o + 1, None);
            }
            if self.owners[o].is_none() {
                self.owners[o] = Some(sid.clone());
            }
        }
        let known = self
            .position_of(owner.map(|(o, _)| o), &patch.tool_call_id)
            .filter(|&i| !(announce && i < self.connected_from));
        let (index, created) = match known {
            Some(i) => (i, false),
            None => {
                let i = self.len;
                // The patch's id is the call's (merging leaves the id alone).
                let id = std::mem::take(&mut patch.tool_call_id);
                let call_id = id.as_str().to_string();
                match owner {
                    None => self.index.insert(id, i),
                    Some((o, _)) => self.nested.insert((o, id), i),
                };
                let mut call = ToolCall::placeholder(call_id, t, turn);
                call.subagent = owner.map(|(_, id)| id.clone());
                call.position = i;
                if i / CHUNK == self.chunks.len() {
                    self.chunks.push(Some(Box::new(Hot {
                        calls: Vec::with_capacity(CHUNK),
                        frames: Vec::with_capacity(CHUNK),
                        sealed: Vec::new(),
                    })));
                }
                let hot = self.chunks[i / CHUNK].get_or_insert_default();
                hot.calls.push(Arc::new(call));
                hot.frames.push(Vec::new());
                self.len += 1;
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

    /// Freezes the chunks whose calls are all finished (but the newest [`KEEP_HOT`]) into
    /// the store, if there is one; returns how many calls left memory.
    pub fn settle(&mut self) -> usize {
        let Some(cold) = self.cold.clone() else {
            return 0;
        };
        if !cold.can_freeze() || self.chunks.len() <= KEEP_HOT {
            return 0;
        }
        let mut frozen = 0;
        for no in self.settled..self.chunks.len() - KEEP_HOT {
            let ready = match &self.chunks[no] {
                Some(hot) => {
                    hot.calls.len() == CHUNK && hot.calls.iter().all(|c| c.status.is_terminal())
                }
                None => false,
            };
            if !ready {
                continue;
            }
            let Some(hot) = self.chunks[no].take() else {
                continue;
            };
            let thawed = Thawed {
                calls: hot.calls,
                frames: hot.frames,
            };
            if !cold.freeze(no, &thawed, self.archived, &hot.sealed) {
                self.chunks[no] = Some(Box::new(Hot {
                    calls: thawed.calls,
                    frames: thawed.frames,
                    sealed: hot.sealed,
                }));
                break;
            }
            for c in &thawed.calls {
                match &c.subagent {
                    None => {
                        let key = ShortId::new(&c.id);
                        if self.index.get(&key) == Some(&c.position) {
                            self.index.remove(&key);
                        }
                    }
                    Some(sid) => {
                        if let Some(o) = self.owners.iter().position(|s| s.as_ref() == Some(sid)) {
                            let key = (o, ShortId::new(&c.id));
                            if self.nested.get(&key) == Some(&c.position) {
                                self.nested.remove(&key);
                            }
                        }
                    }
                }
            }
            frozen += thawed.calls.len();
        }
        while matches!(self.chunks.get(self.settled), Some(None)) {
            self.settled += 1;
        }
        frozen
    }
}
