//! Events dispatched and not yet handed to the extensions' workers, and when they are.
//!
//! The runtime queues each event once ([`Outbox::queue`]) and hands the queues over once
//! per batch of agent input, so a burst costs one wake-up per extension, not one per
//! event. Extensions whose events may wait (`Extension::events_may_wait`: plugin
//! adapters) get theirs when a storm pauses ([`crate::pace`]), at the latest every
//! [`crate::pace::MAX_HOLD`] or every [`HOLD_AT`] events, so that during a storm neither
//! their workers nor their processes wake; anything sent to such an extension that needs
//! its answer (a permission offer, a user action) takes its held events along first, so
//! it sees events in order. Held events do not count against the extension's queue
//! bound (it is not behind; the host chose to wait): a plugin's bound is the bytes
//! waiting for its stdin.
//!
//! What is held takes little memory, because during a storm it is memory the session
//! would otherwise not touch (fresh pages cost the session's own thread a fault and a
//! page clearing each): one entry per event for all the waiting extensions together
//! (which of them it is for is a bit set), in fixed-size chunks (no vector grows and
//! moves), and a tool-call event — nearly all of a storm — is held as its call snapshot
//! and time only, the event around it made at the hand-over, once for all of them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::pace::Pacer;
use trellis_core::{Event, EventBody, SCHEMA_VERSION, ToolCall, ToolStatus};

use crate::lock;
use crate::shared::Shared;
use crate::slot::{Job, Slot};

/// Events queued for one extension before they are handed over without waiting for the
/// end of the input batch.
const DELIVER_AT: usize = 256;

/// Events held for the extensions whose events may wait before they are handed over
/// without waiting for the storm to pause: a bound on what is held (the longest hold is
/// `MAX_HOLD`, but a fast agent sends more than a hundred thousand events in that time).
const HOLD_AT: usize = 65_536;

/// Held entries per chunk.
const CHUNK: usize = 1024;

/// Chunks kept for the next storm once handed over (the rest is freed).
const SPARE_CHUNKS: usize = 16;

/// Extensions whose events can be held: a bit each in an entry. Events for any further
/// one are handed over at the end of each batch, like a built-in's.
const HELD_SLOTS: usize = 64;

/// An event held for extensions that wait.
enum Held {
    /// A tool-call event as its parts (`update`: the statuses of an update), made into
    /// an event when handed over.
    Call {
        t: f64,
        session: Option<Arc<str>>,
        hub_session: Option<Arc<str>>,
        call: Arc<ToolCall>,
        update: Option<(Option<ToolStatus>, ToolStatus)>,
    },
    Event(Arc<Event>),
}

impl Held {
    /// `made`: the shared event, when one was made for extensions that do not wait.
    fn of(ev: &Event, made: Option<&Arc<Event>>) -> Held {
        // Only what the parts can make again exactly (no verbatim ACP line, no JSON yet).
        let plain = ev.schema == SCHEMA_VERSION && ev.acp.is_none() && ev.wire.get().is_none();
        let (t, session, hub_session) = (ev.t, ev.session.clone(), ev.hub_session.clone());
        match &ev.body {
            EventBody::ToolCallCreated { call } if plain => Held::Call {
                t,
                session,
                hub_session,
                call: call.clone(),
                update: None,
            },
            EventBody::ToolCallUpdated {
                previous_status,
                status,
                call,
            } if plain => Held::Call {
                t,
                session,
                hub_session,
                call: call.clone(),
                update: Some((*previous_status, *status)),
            },
            _ => Held::Event(made.cloned().unwrap_or_else(|| Arc::new(ev.clone()))),
        }
    }

    fn event(self) -> Arc<Event> {
        match self {
            Held::Event(ev) => ev,
            Held::Call {
                t,
                session,
                hub_session,
                call,
                update,
            } => Arc::new(Event {
                schema: SCHEMA_VERSION,
                t,
                session,
                hub_session,
                body: match update {
                    None => EventBody::ToolCallCreated { call },
                    Some((previous_status, status)) => EventBody::ToolCallUpdated {
                        previous_status,
                        status,
                        call,
                    },
                },
                acp: None,
                wire: Default::default(),
                position: None,
            }),
        }
    }
}

struct Entry {
    held: Held,
    /// Bit i: for the extension `Queues::held_slots[i]`.
    slots: u64,
}

struct Queues {
    /// Per slot, in the host's order: events for extensions that do not wait.
    per_slot: Vec<Vec<Arc<Event>>>,
    /// Per slot: its bit in held entries (`None`: its events are not held).
    bit: Vec<Option<u32>>,
    /// Per bit: the slot.
    held_slots: Vec<usize>,
    /// Held events in order, in chunks of `CHUNK`.
    held: Vec<Vec<Entry>>,
    held_len: usize,
    spare: Vec<Vec<Entry>>,
}

impl Queues {
    fn hold(&mut self, entry: Entry) {
        if self.held.last().is_none_or(|c| c.len() == CHUNK) {
            let chunk = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK));
            self.held.push(chunk);
        }
        if let Some(c) = self.held.last_mut() {
            c.push(entry);
            self.held_len += 1;
        }
    }
}

pub(crate) struct Outbox {
    queues: Mutex<Queues>,
    /// When held events go; `.1`: some arrived since the last hand-over.
    pacer: Mutex<(Pacer, bool)>,
}

impl Outbox {
    pub(crate) fn new(slots: &[Arc<Slot>]) -> Outbox {
        let mut held_slots = Vec::new();
        let bit = slots
            .iter()
            .map(|s| {
                (s.paced && held_slots.len() < HELD_SLOTS).then(|| {
                    held_slots.push(s.index);
                    (held_slots.len() - 1) as u32
                })
            })
            .collect();
        Outbox {
            queues: Mutex::new(Queues {
                per_slot: vec![Vec::new(); slots.len()],
                bit,
                held_slots,
                held: Vec::new(),
                held_len: 0,
                spare: Vec::new(),
            }),
            pacer: Mutex::new((Pacer::default(), false)),
        }
    }

    /// Queues `ev` for every slot that `wants` it.
    pub(crate) fn queue(
        &self,
        slots: &[Arc<Slot>],
        shared: &Shared,
        ev: &Event,
        wants: impl Fn(&Slot) -> bool,
    ) {
        let mut q = lock(&self.queues);
        let mut made: Option<Arc<Event>> = None;
        let (mut mask, mut full) = (0u64, false);
        for (i, slot) in slots.iter().enumerate() {
            if !wants(slot) {
                continue;
            }
            if let Some(bit) = q.bit[i] {
                mask |= 1 << bit;
                continue;
            }
            let ev = made.get_or_insert_with(|| Arc::new(ev.clone())).clone();
            let per = &mut q.per_slot[i];
            per.push(ev);
            full |= per.len() >= DELIVER_AT;
        }
        let mut full_held = false;
        if mask != 0 {
            q.hold(Entry {
                held: Held::of(ev, made.as_ref()),
                slots: mask,
            });
            full_held = q.held_len >= HOLD_AT;
        }
        drop(q);
        if mask != 0 {
            lock(&self.pacer).1 = true;
        }
        if full || full_held {
            self.hand_over(slots, shared, None, full_held);
        }
    }

    /// Hands every queued event over.
    pub(crate) fn deliver(&self, slots: &[Arc<Slot>], shared: &Shared) {
        lock(&self.pacer).0.timed_out();
        self.hand_over(slots, shared, None, true);
    }

    /// Hands over what may not wait, and what may once the storm has paused.
    pub(crate) fn deliver_paced(&self, slots: &[Arc<Slot>], shared: &Shared, now: Instant) {
        let release = {
            let mut p = lock(&self.pacer);
            if std::mem::take(&mut p.1) {
                p.0.arrive(now, false)
            } else if p.0.wait(now).is_some_and(|w| w.is_zero()) {
                p.0.timed_out();
                true
            } else {
                false
            }
        };
        self.hand_over(slots, shared, None, release);
    }

    /// Hands over the events held for `slot` (before something that needs its answer).
    pub(crate) fn deliver_to(&self, slots: &[Arc<Slot>], shared: &Shared, slot: &Slot) {
        self.hand_over(slots, shared, Some(slot.index), true);
    }

    /// How long held events may still wait (`None`: nothing is held).
    pub(crate) fn held_for(&self, now: Instant) -> Option<Duration> {
        let p = lock(&self.pacer);
        if p.1 {
            // Arrived since the last hand-over: due after this batch.
            return Some(Duration::ZERO);
        }
        p.0.wait(now)
    }

    /// Hands over the queued events (`only`: of that slot alone), and the held ones too
    /// when `held`.
    fn hand_over(&self, slots: &[Arc<Slot>], shared: &Shared, only: Option<usize>, held: bool) {
        let which = |i: usize| only.is_none_or(|o| o == i);
        let mut q = lock(&self.queues);
        for (i, slot) in slots.iter().enumerate() {
            if q.per_slot[i].is_empty() || !which(i) {
                continue;
            }
            let next = recycled(slot);
            let full = std::mem::replace(&mut q.per_slot[i], next.unwrap_or_default());
            slot.send(Job::Events(full), shared);
        }
        if q.held_len == 0 || !held {
            return;
        }
        let release = q
            .held_slots
            .iter()
            .enumerate()
            .filter(|&(_, &i)| which(i))
            .fold(0u64, |m, (bit, _)| m | 1 << bit);
        if release == 0 {
            return;
        }
        let mut batches: Vec<Option<Vec<Arc<Event>>>> = vec![None; q.held_slots.len()];
        let chunks = std::mem::take(&mut q.held);
        q.held_len = 0;
        for mut chunk in chunks {
            for entry in chunk.drain(..) {
                let give = entry.slots & release;
                let rest = entry.slots & !release;
                if give == 0 {
                    q.hold(entry);
                    continue;
                }
                // One event for all it goes to (a plugin's JSON is made once from it).
                let ev = entry.held.event();
                let mut bits = give;
                while bits != 0 {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let slot = &slots[q.held_slots[bit]];
                    batches[bit]
                        .get_or_insert_with(|| recycled(slot).unwrap_or_default())
                        .push(ev.clone());
                }
                if rest != 0 {
                    q.hold(Entry {
                        held: Held::Event(ev),
                        slots: rest,
                    });
                }
            }
            if q.spare.len() < SPARE_CHUNKS {
                q.spare.push(chunk);
            }
        }
        for (bit, batch) in batches.into_iter().enumerate() {
            if let Some(batch) = batch {
                slots[q.held_slots[bit]].send(Job::Events(batch), shared);
            }
        }
    }
}

/// A vector the slot's worker is done with (its events are released here, on the thread
/// that made them), emptied for the next batch.
fn recycled(slot: &Slot) -> Option<Vec<Arc<Event>>> {
    let mut spent = std::mem::take(&mut *lock(&slot.spent));
    let next = spent.pop().map(|mut v| {
        v.clear();
        v
    });
    drop(spent);
    next
}
