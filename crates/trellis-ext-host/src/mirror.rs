//! The mirror of the session extensions read: kept current from the events the host
//! dispatches, so extensions on their own threads read consistent snapshots without
//! touching the UI's session.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use trellis_core::ext::SessionInfo;
use trellis_core::{Event, EventBody, ToolCall};

/// Session state as extensions see it.
///
/// Calls are held as the ledger's snapshots while the ledger holds them; once the ledger
/// froze a call's chunk (see `trellis_core::cold`), the mirror lets go of its snapshot
/// too and reads the call from the same store when asked: extensions see every call,
/// memory holds only the recent ones.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    pub info: SessionInfo,
    /// Calls in memory, in ledger order (by place, which is unique to a call): an update's
    /// call is found by a binary search, at the end for nearly all. (Two maps, by place and
    /// by id, were a tenth of a headless run's main thread; a call is looked up by id only
    /// for a permission question.)
    calls: Vec<Arc<ToolCall>>,
    cold: Option<Arc<trellis_core::cold::Cold>>,
    /// With a store, the ledger's snapshots carry their places: the calls so far are the
    /// furthest place seen, plus one (those let go included).
    seen: usize,
    /// `calls.len()` after the last sweep.
    swept_at: usize,
    /// Calls are taken from the ledger when the host is synced ([`Mirror::sync`]) rather
    /// than from each event: a snapshot held from one event to the next would make the
    /// ledger copy the call at its next update.
    deferred: bool,
    /// Ledger places of calls changed since the last sync.
    dirty: Vec<usize>,
    pub call_state: HashMap<(String, String), Value>,
}

/// Calls held at least before a sweep lets frozen ones go.
const SWEEP_FLOOR: usize = 2 * trellis_core::cold::CHUNK;

impl Mirror {
    pub fn set_cold(&mut self, cold: Arc<trellis_core::cold::Cold>) {
        self.cold = Some(cold);
    }

    /// Every call, in order: those frozen (by position), then those held.
    pub fn calls(&self) -> Vec<Arc<ToolCall>> {
        let mut out = Vec::with_capacity(self.info.calls);
        if let Some(cold) = &self.cold {
            for no in cold.frozen_chunks() {
                if let Some(t) = cold.chunk(no) {
                    out.extend(
                        t.calls
                            .iter()
                            .filter(|c| self.held(c.position).is_err())
                            .cloned(),
                    );
                }
            }
        }
        out.extend(self.calls.iter().cloned());
        out
    }

    /// The call `id` of `subagent` (none: the session's own).
    pub fn call(&self, subagent: Option<Arc<str>>, id: &str) -> Option<Arc<ToolCall>> {
        // A subagent's call ids are its own.
        let held = self
            .calls
            .iter()
            .rev()
            .find(|c| c.id == id && c.subagent.as_deref() == subagent.as_deref());
        if let Some(c) = held {
            return Some(c.clone());
        }
        let cold = self.cold.as_ref()?;
        let p = cold.find(subagent.as_deref(), id)?;
        cold.call(p)
    }

    /// Where the call at ledger place `place` is held, or where it would go.
    fn held(&self, place: usize) -> Result<usize, usize> {
        match self.calls.last() {
            // New calls come last.
            Some(c) if c.position < place => Err(self.calls.len()),
            _ => self.calls.binary_search_by_key(&place, |c| c.position),
        }
    }

    /// Takes calls from the ledger at sync time from now on (see `deferred`).
    pub fn defer(&mut self) {
        self.deferred = true;
    }

    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Holds the newest snapshot of every call changed since the last sync, in ledger
    /// order (so new calls come in the order they were made); `snapshot` reads the
    /// ledger.
    pub fn sync(&mut self, snapshot: &dyn Fn(usize) -> Arc<ToolCall>) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for p in dirty.drain(..) {
            self.put(&snapshot(p));
        }
        // Kept for its capacity.
        self.dirty = dirty;
    }

    /// Holds `call` (the newest snapshot of it).
    pub fn put(&mut self, call: &Arc<ToolCall>) {
        match self.held(call.position) {
            Ok(i) => self.calls[i] = call.clone(),
            // A frozen call changed again goes back among the others.
            Err(i) => self.calls.insert(i, call.clone()),
        }
        self.seen = self.seen.max(call.position + 1);
        self.info.calls = self.count();
        if self.cold.is_some() && self.calls.len() > (2 * self.swept_at).max(SWEEP_FLOOR) {
            self.sweep();
        }
    }

    /// Lets go of the snapshots of calls the ledger froze (a call's place is its own, so
    /// a frozen chunk holds every call placed in it), without building a key.
    fn sweep(&mut self) {
        let Some(cold) = self.cold.clone() else {
            return;
        };
        cold.retain_unfrozen(&mut self.calls, |c| c.position);
        self.swept_at = self.calls.len();
    }

    /// Calls so far: those held, or with a store (or deferred) every place the ledger gave.
    fn count(&self) -> usize {
        if self.cold.is_some() || self.deferred {
            self.seen.max(self.calls.len())
        } else {
            self.calls.len()
        }
    }

    /// What `host/session` says, kept from `ev` for every host — also one whose
    /// extensions read no calls (the calls are not held then; only how many there are).
    pub fn observe_info(&mut self, ev: &Event) {
        if ev.session.is_some() && self.info.id != ev.session {
            self.info.id.clone_from(&ev.session);
        }
        if ev.hub_session.is_some() && self.info.hub_session != ev.hub_session {
            self.info.hub_session.clone_from(&ev.hub_session);
        }
        match &ev.body {
            EventBody::SessionStarted {
                agent, cwd, mode, ..
            } => {
                self.info.agent = agent.name.clone();
                self.info.cwd.clone_from(cwd);
                self.info.mode.clone_from(mode);
            }
            EventBody::TurnStarted { turn, .. } => {
                self.info.turn = *turn;
                self.info.turn_open = true;
            }
            EventBody::TurnEnded { .. } => self.info.turn_open = false,
            EventBody::ToolCallCreated { .. } | EventBody::ToolCallUpdated { .. } => {
                if let Some(p) = ev.position {
                    self.seen = self.seen.max(p + 1);
                    self.info.calls = self.seen;
                }
            }
            EventBody::Usage { usage } => self.info.usage = Some(usage.clone()),
            EventBody::ModeChanged { mode } => self.info.mode = Some(mode.clone()),
            EventBody::TitleChanged { title } => self.info.title.clone_from(title),
            _ => {}
        }
    }

    pub fn observe(&mut self, ev: &Event) {
        match &ev.body {
            EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
                if ev.session.is_some() && self.info.id != ev.session {
                    self.info.id.clone_from(&ev.session);
                }
                if ev.hub_session.is_some() && self.info.hub_session != ev.hub_session {
                    self.info.hub_session.clone_from(&ev.hub_session);
                }
                match ev.position {
                    Some(p) if self.deferred => {
                        self.dirty.push(p);
                        self.seen = self.seen.max(p + 1);
                        self.info.calls = self.count();
                    }
                    _ => self.put(call),
                }
            }
            EventBody::CallState {
                call_id,
                extension,
                value,
            } => {
                self.observe_info(ev);
                self.call_state
                    .insert((extension.clone(), call_id.clone()), value.clone());
            }
            _ => self.observe_info(ev),
        }
    }
}

#[cfg(test)]
mod mirror_tests {
    use super::*;
    use trellis_core::cold::{CHUNK, Cold, MemorySpill};
    struct NoLog;
    impl trellis_core::bulk::BulkSource for NoLog {
        fn text(&self, _: u64, _: usize) -> Option<String> {
            None
        }
    }

    /// The mirror lets go of what the ledger froze and still sees every call, and counts
    /// each once (also one that changed again after it was let go).
    #[test]
    fn frozen_calls_leave_the_mirror_and_are_still_seen() {
        let cold = Cold::new(Arc::new(MemorySpill::default()), Arc::new(NoLog));
        let mut l = trellis_core::Ledger::default();
        l.set_cold(cold.clone());
        let mut m = Mirror::default();
        m.set_cold(cold);
        let n = 4 * CHUNK;
        for i in 0..n {
            let patch: trellis_core::ToolCallPatch = serde_json::from_str(&format!(
                r#"{{"toolCallId":"c{i}","title":"T{i}","status":"completed"}}"#
            ))
            .unwrap_or_default();
            let a = l.apply(patch, true, 0.0, 1);
            m.put(&l.snapshot(a.index));
            if i % CHUNK == CHUNK - 1 {
                l.settle();
            }
        }
        l.settle();
        // One more put sweeps what is frozen now.
        for _ in 0..2 * CHUNK {
            m.put(&l.snapshot(n - 1));
        }
        m.sweep();
        assert!(m.calls.len() <= 2 * CHUNK, "held: {}", m.calls.len());
        assert_eq!(m.info.calls, n);
        let all = m.calls();
        assert_eq!(all.len(), n);
        assert!(all.iter().enumerate().all(|(i, c)| c.id == format!("c{i}")));
        assert_eq!(
            m.call(None, "c3").map(|c| c.title.clone()).as_deref(),
            Some("T3")
        );
        // A frozen call changed again comes back, and is counted once.
        let patch: trellis_core::ToolCallPatch =
            serde_json::from_str(r#"{"toolCallId":"c3","title":"again"}"#).unwrap_or_default();
        let a = l.apply(patch, false, 1.0, 2);
        m.put(&l.snapshot(a.index));
        assert_eq!(m.info.calls, n);
        assert_eq!(m.calls().len(), n);
        assert_eq!(
            m.call(None, "c3").map(|c| c.title.clone()).as_deref(),
            Some("again")
        );
    }

    /// Deferred, the mirror holds no snapshot between syncs (so the ledger changes its
    /// calls in place), and a sync brings every changed call in, in ledger order, as the
    /// ledger has it then.
    #[test]
    fn a_deferred_mirror_takes_calls_from_the_ledger_when_synced() {
        let mut l = trellis_core::Ledger::default();
        let mut m = Mirror::default();
        m.defer();
        let event = |l: &trellis_core::Ledger, index: usize| Event {
            schema: 1,
            t: 0.0,
            session: None,
            hub_session: None,
            body: EventBody::ToolCallUpdated {
                previous_status: None,
                status: trellis_core::ToolStatus::InProgress,
                call: l.snapshot(index),
            },
            acp: None,
            wire: Default::default(),
            position: Some(index),
        };
        let mut apply = |l: &mut trellis_core::Ledger, json: &str| {
            let patch: trellis_core::ToolCallPatch = serde_json::from_str(json).unwrap_or_default();
            let a = l.apply(patch, true, 0.0, 1);
            let ev = event(l, a.index);
            m.observe(&ev);
            a.index
        };
        let b = apply(
            &mut l,
            r#"{"toolCallId":"b","title":"B","status":"pending"}"#,
        );
        let a = apply(
            &mut l,
            r#"{"toolCallId":"a","title":"A","status":"pending"}"#,
        );
        apply(&mut l, r#"{"toolCallId":"b","status":"completed"}"#);
        // The events are gone; nothing else holds the ledger's calls.
        assert_eq!(
            Arc::strong_count(&l.snapshot(b)),
            2,
            "only the ledger holds b"
        );
        assert!(m.call(None, "b").is_none(), "not before the sync");
        assert_eq!(m.info.calls, 2, "counted at once");
        m.sync(&|p| l.snapshot(p));
        let calls = m.calls();
        assert_eq!(
            calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert_eq!(
            m.call(None, "b").map(|c| c.status),
            Some(trellis_core::ToolStatus::Completed)
        );
        assert_eq!(m.call(None, "a").map(|c| c.position), Some(a));
        assert!(!m.has_dirty());
    }
}
