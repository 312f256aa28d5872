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

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::pace::Pacer;
use trellis_core::Event;

use crate::host::Shared;
use crate::lock;
use crate::slot::{Job, Slot};

/// Events queued for one extension before they are handed over without waiting for the
/// end of the input batch.
const DELIVER_AT: usize = 256;

/// Events held for an extension whose events may wait before they are handed over
/// without waiting for the storm to pause: a bound on what is held (the longest hold is
/// `MAX_HOLD`, but a fast agent sends more than a hundred thousand events in that time).
const HOLD_AT: usize = 65_536;

pub(crate) struct Outbox {
    /// Per slot, in the host's order.
    queues: Mutex<Vec<Vec<Arc<Event>>>>,
    /// When held events go; `.1`: some arrived since the last hand-over.
    pacer: Mutex<(Pacer, bool)>,
}

impl Outbox {
    pub(crate) fn new(slots: usize) -> Outbox {
        Outbox {
            queues: Mutex::new(vec![Vec::new(); slots]),
            pacer: Mutex::new((Pacer::default(), false)),
        }
    }

    /// Queues an event for every slot `event_for` gives it to.
    pub(crate) fn queue(
        &self,
        slots: &[Arc<Slot>],
        shared: &Shared,
        mut event_for: impl FnMut(&Slot) -> Option<Arc<Event>>,
    ) {
        let mut queues = lock(&self.queues);
        let (mut full, mut full_held, mut held) = (false, false, false);
        for (slot, q) in slots.iter().zip(queues.iter_mut()) {
            let Some(ev) = event_for(slot) else { continue };
            q.push(ev);
            if slot.paced {
                held = true;
                full_held |= q.len() >= HOLD_AT;
            } else {
                full |= q.len() >= DELIVER_AT;
            }
        }
        drop(queues);
        if held {
            lock(&self.pacer).1 = true;
        }
        if full || full_held {
            self.hand_over(slots, shared, |s| !s.paced || full_held);
        }
    }

    /// Hands every queued event over.
    pub(crate) fn deliver(&self, slots: &[Arc<Slot>], shared: &Shared) {
        lock(&self.pacer).0.timed_out();
        self.hand_over(slots, shared, |_| true);
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
        self.hand_over(slots, shared, |s| !s.paced || release);
    }

    /// Hands over the events held for `slot` (before something that needs its answer).
    pub(crate) fn deliver_to(&self, slots: &[Arc<Slot>], shared: &Shared, slot: &Slot) {
        self.hand_over(slots, shared, |s| s.index == slot.index);
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

    fn hand_over(&self, slots: &[Arc<Slot>], shared: &Shared, which: impl Fn(&Slot) -> bool) {
        let mut queues = lock(&self.queues);
        for (slot, batch) in slots.iter().zip(queues.iter_mut()) {
            if batch.is_empty() || !which(slot) {
                continue;
            }
            // Batches the worker is done with: their events are released here, and one
            // vector is kept for the next batch.
            let mut spent = std::mem::take(&mut *lock(&slot.spent));
            let next = spent.pop().map(|mut v| {
                v.clear();
                v
            });
            drop(spent);
            let full = std::mem::replace(batch, next.unwrap_or_default());
            slot.send(Job::Events(full), shared);
        }
    }
}
