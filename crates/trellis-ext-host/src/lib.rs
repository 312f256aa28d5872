//! The extension host: loads extensions (built-in ones today, plugin processes later,
//! both through `trellis_core::ext::Extension`), grants what the user's config allows,
//! delivers events through per-extension bounded queues on worker threads, runs the
//! extension step of the permission chain, renders UI contributions safely and keeps the
//! diagnostics `/status` shows.
//!
//! The host never lets an extension reach the agent stream or the UI loop directly: the
//! runtime feeds it reducer effects ([`ExtHost::on_effects`]) and messages from workers
//! ([`ExtHost::on_msg`], [`ExtHost::tick`]), and performs the [`Out`]s it returns.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod admit;
pub mod board;
mod chain;
pub mod diag;
pub mod host;
mod messages;
mod mirror;
mod options;
mod outbox;
mod pace;
pub mod settings;
mod shared;
pub mod slot;
pub mod ui;
mod worker;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use trellis_core::event::EVENT_KINDS;
use trellis_core::ext::arbiter::Arbiter;
use trellis_core::ext::{Capability, Extension, PermissionAsk, QuestionAsk};
use trellis_core::{Effect, Event, EventBody};

pub use diag::{ExtState, ExtStatus, StatusReport};
pub use messages::{ClaimFailed, HostMsg, Out};
pub use options::{DRIVE_PER_MINUTE, ExtConfig, HostOptions};
use outbox::Outbox;
pub use shared::Shared;
use slot::Job;
pub use slot::Slot;
pub use ui::Ui;
pub use worker::install_panic_guard;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// An extension to load, with where it comes from.
pub struct Candidate {
    pub ext: Box<dyn Extension>,
    pub builtin: bool,
}

pub struct ExtHost {
    pub(crate) slots: Vec<Arc<Slot>>,
    /// Events dispatched but not yet handed to each extension's worker (see
    /// [`ExtHost::deliver`]).
    outbox: Arc<Outbox>,
    pub(crate) shared: Arc<Shared>,
    arbiter: Arbiter,
    asks: BTreeMap<String, Arc<PermissionAsk>>,
    /// Why an extension answered a request as it did, until the answer is carried out.
    reasons: BTreeMap<String, String>,
    /// Requests whose holder failed in its callback, counted (and said) already: their
    /// hand-on is not counted again.
    counted: std::collections::BTreeSet<String>,
    /// Questions offered to extensions holding `answer-questions`, by request id.
    questions: BTreeMap<String, Arc<QuestionAsk>>,
    notes: Vec<String>,
    /// Some extension reads session state (observe, call-state, or a claimant that is
    /// offered calls): keep the mirror.
    mirror_on: bool,
    /// A hub's host of hub-wide plugins: it reads no one session, so `host/session`
    /// says none.
    hub_wide: bool,
    permission_timeout: f64,
    pub ui: Arc<Ui>,
}

impl Drop for ExtHost {
    fn drop(&mut self) {
        self.shutdown(Duration::from_secs(3));
    }
}

impl std::fmt::Debug for ExtHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtHost")
            .field(
                "extensions",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

pub(crate) fn kind_of_call_bit(k: trellis_core::ToolKind) -> u16 {
    trellis_core::ToolKind::ALL
        .iter()
        .position(|x| *x == k)
        .map(|i| 1u16 << i)
        .unwrap_or(0)
}

pub(crate) fn kind_bit(kind: &str) -> u64 {
    EVENT_KINDS
        .iter()
        .position(|k| *k == kind)
        .map(|i| 1u64 << i)
        .unwrap_or(0)
}

impl ExtHost {
    /// Loads `candidates` in order (their declared order is the claim order), applying
    /// the config's consent. Returns the host and the receiver of worker messages.
    pub fn new(
        candidates: Vec<Candidate>,
        opts: HostOptions,
    ) -> (ExtHost, UnboundedReceiver<HostMsg>) {
        let (tx, rx) = unbounded_channel();
        let mut shared = Shared::new(tx, opts.path_map.clone(), opts.store_dir.clone());
        shared.headless = opts.headless;
        shared.store_seed = opts.store_seed.clone();
        shared.drive_per_minute = opts.drive_per_minute;
        let shared = Arc::new(shared);
        let _ = shared.me.set(Arc::downgrade(&shared));
        let mut notes = opts.notes.clone();
        let slots = admit::admit(candidates, &opts, &mut notes);
        let registering = admit::start_workers(&slots, &shared);
        for (slot, rrx) in slots.iter().zip(registering) {
            let reg = rrx.and_then(|r| r.recv().ok()).unwrap_or_default();
            admit::registered(slot, reg, &shared);
        }
        let outbox = Arc::new(Outbox::new(&slots));
        let ui = Arc::new(Ui::build(&slots, &shared, outbox.clone()));
        let mirror_on = !opts.hub_wide
            && slots.iter().any(|s| {
                // Claimants are offered the call as it stands: they need the mirror too.
                s.has(Capability::Observe)
                    || s.has(Capability::CallState)
                    || s.has(Capability::InterceptPermissions)
            });
        let host = ExtHost {
            mirror_on,
            hub_wide: opts.hub_wide,
            outbox,
            slots,
            shared,
            arbiter: Arbiter::new(opts.permission_timeout),
            permission_timeout: opts.permission_timeout,
            asks: BTreeMap::new(),
            reasons: BTreeMap::new(),
            counted: std::collections::BTreeSet::new(),
            questions: BTreeMap::new(),
            notes,
            ui,
        };
        (host, rx)
    }

    pub fn slots(&self) -> &[Arc<Slot>] {
        &self.slots
    }

    /// Queues one event for every extension that observes and subscribed to it, in
    /// order; [`ExtHost::deliver`] hands the queued events to the workers (the runtime
    /// calls it once per batch of input, so a burst costs one wake-up per extension, not
    /// one per event). Also keeps the mirror extensions read.
    pub fn dispatch(&self, ev: &Event) {
        if self.mirror_on {
            self.shared.mirror_mut().observe(ev);
        } else if !self.hub_wide {
            // `host/session` says the same to every extension, whatever it reads.
            self.shared.mirror_mut().observe_info(ev);
        }
        let bit = kind_bit(ev.body.kind());
        let call_bit = match &ev.body {
            EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
                kind_of_call_bit(call.kind)
            }
            _ => u16::MAX,
        };
        self.outbox.queue(&self.slots, &self.shared, ev, |slot| {
            slot.mask.get().copied().unwrap_or(0) & bit != 0
                && slot.call_kinds.get().copied().unwrap_or(u16::MAX) & call_bit != 0
                && !slot.is_disabled()
        });
    }

    /// From now on the mirror takes calls from the ledger at [`ExtHost::sync_calls`]
    /// instead of from each event (the driver, which holds the ledger, syncs before it
    /// hands events over and before a permission or question reaches extensions).
    pub fn defer_calls(&mut self) {
        if self.mirror_on {
            self.shared.mirror_mut().defer();
        }
    }

    /// Brings the mirror's calls up to date: `snapshot` reads the ledger's call at a place.
    pub fn sync_calls(&self, snapshot: &dyn Fn(usize) -> Arc<trellis_core::ToolCall>) {
        if self.mirror_on && self.shared.mirror().has_dirty() {
            self.shared.mirror_mut().sync(snapshot);
        }
    }

    /// Hands every queued event to its extension's worker.
    pub fn deliver(&self) {
        self.outbox.deliver(&self.slots, &self.shared);
    }

    /// [`ExtHost::deliver`] as the session runs (the runtime calls it after each batch of
    /// input): extensions whose events may wait get theirs when the storm pauses
    /// ([`crate::pace`]); call it again once [`ExtHost::held_for`] has passed.
    pub fn deliver_paced(&self) {
        self.deliver_paced_at(Instant::now());
    }

    /// [`ExtHost::deliver_paced`] at `now` (tests give the clock).
    pub fn deliver_paced_at(&self, now: Instant) {
        self.outbox.deliver_paced(&self.slots, &self.shared, now);
    }

    /// How long held events may still wait (`None`: nothing is held).
    pub fn held_for(&self) -> Option<Duration> {
        self.held_for_at(Instant::now())
    }

    /// [`ExtHost::held_for`] at `now`.
    pub fn held_for_at(&self, now: Instant) -> Option<Duration> {
        self.outbox.held_for(now)
    }

    /// Feeds the reducer's effects: events are dispatched; a permission request the
    /// rules left open starts the extension step of the chain.
    pub fn on_effects(&mut self, fx: &[Effect], now: f64) -> Vec<Out> {
        self.on_effects_synced(fx, now, None)
    }

    /// [`ExtHost::on_effects`] for a host whose calls are deferred: the mirror is synced
    /// through `snapshot` before a permission request or a question is offered.
    pub fn on_effects_synced(
        &mut self,
        fx: &[Effect],
        now: f64,
        snapshot: Option<&dyn Fn(usize) -> Arc<trellis_core::ToolCall>>,
    ) -> Vec<Out> {
        let sync = |h: &Self| {
            if let Some(s) = snapshot {
                h.sync_calls(s);
            }
        };
        let mut out = Vec::new();
        for e in fx {
            let Effect::Emit(ev) = e else { continue };
            match &ev.body {
                EventBody::PermissionRequested {
                    request_id,
                    call_id,
                    options,
                    subagent,
                    ..
                } => {
                    let answered = fx.iter().any(
                        |f| matches!(f, Effect::Answer { request_id: r, .. } if r == request_id),
                    );
                    self.dispatch(ev);
                    if !answered {
                        sync(self);
                        let call = self.shared.mirror().call(subagent.clone(), call_id);
                        let call = call.unwrap_or_else(|| {
                            Arc::new(trellis_core::ToolCall::placeholder(call_id.clone(), now, 0))
                        });
                        let ask = Arc::new(PermissionAsk {
                            session: ev.session.clone(),
                            request_id: request_id.clone(),
                            call,
                            options: options.clone(),
                            acp: ev.acp.clone(),
                            deadline: self.permission_timeout,
                        });
                        let step =
                            self.arbiter
                                .start(request_id, options.clone(), self.claimants(), now);
                        self.asks.insert(request_id.clone(), ask);
                        self.step(request_id, step, now, &mut out);
                    }
                }
                EventBody::PermissionResolved { request_id, .. } => {
                    self.arbiter.forget(request_id);
                    self.asks.remove(request_id);
                    self.dispatch(ev);
                }
                EventBody::ElicitationRequested { elicitation } => {
                    self.dispatch(ev);
                    // Answered in the same step (refused, or by the caller): nothing to
                    // offer.
                    let answered = fx.iter().any(|f| {
                        matches!(f, Effect::Elicit { request_id: r, .. } if *r == elicitation.request_id)
                    });
                    if !answered && self.has_question_claimants() {
                        sync(self);
                        let id = elicitation.request_id.clone();
                        let ask = Arc::new(QuestionAsk {
                            session: ev.session.clone(),
                            question: elicitation.clone(),
                            acp: ev.acp.clone(),
                            deadline: self.permission_timeout,
                        });
                        let step = self
                            .arbiter
                            .start_question(&id, self.question_claimants(), now);
                        self.questions.insert(id.clone(), ask);
                        self.step(&id, step, now, &mut out);
                    }
                }
                EventBody::ElicitationResolved { request_id, .. } => {
                    self.arbiter.forget(request_id);
                    self.questions.remove(request_id);
                    self.dispatch(ev);
                }
                _ => self.dispatch(ev),
            }
        }
        out
    }

    /// Whether an extension asked for the verbatim ACP message with each event (the
    /// connection then keeps every frame's line).
    pub fn wants_acp(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.has(Capability::Observe) && s.registration().is_some_and(|r| r.acp_payloads))
    }

    /// Lets the mirror read frozen calls from the ledger's store (and let go of them).
    pub fn set_cold(&mut self, cold: Arc<trellis_core::cold::Cold>) {
        self.shared.mirror_mut().set_cold(cold);
    }

    /// Seeds the mirror from a session built without dispatching (e.g. a replayed log).
    pub fn seed(&self, session: &trellis_core::Session) {
        let mut m = self.shared.mirror_mut();
        if let Some(cold) = session.ledger.cold() {
            m.set_cold(cold.clone());
        }
        for c in session.ledger.calls() {
            m.put(&c);
        }
        for ((ext, call), v) in &session.call_state {
            m.call_state.insert((ext.clone(), call.clone()), v.clone());
        }
        m.info.id.clone_from(&session.id);
        m.info.cwd.clone_from(&session.cwd);
    }

    /// Waits (up to `limit`) until every queued job has been handled. For tests and for
    /// the end of a headless run, so the final status is complete.
    pub fn flush(&self, limit: Duration) -> bool {
        self.deliver();
        let start = Instant::now();
        if !self.drained(start, limit) {
            return false;
        }
        // Then each extension finishes what it does elsewhere (a plugin process answers
        // once it has handled everything before), and the host handles what that brought.
        for s in &self.slots {
            s.send(Job::Sync, &self.shared);
        }
        self.drained(start, limit)
    }

    /// The extensions with jobs still queued or running, each with how many: what a
    /// [`ExtHost::flush`] that ran out of time left unhandled.
    pub fn busy(&self) -> Vec<(String, u64)> {
        self.slots
            .iter()
            .filter_map(|s| {
                let n = s.pending.load(Ordering::Acquire);
                (n > 0).then(|| (s.name.clone(), n as u64))
            })
            .collect()
    }

    fn drained(&self, start: Instant, limit: Duration) -> bool {
        loop {
            if self
                .slots
                .iter()
                .all(|s| s.pending.load(Ordering::Acquire) == 0)
            {
                return true;
            }
            if start.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stops every extension: each worker finishes the job it is on, then calls
    /// `on_shutdown` (plugin adapters stop their process) and ends. Waits at most
    /// `limit` in all. Nothing is delivered afterwards.
    pub fn shutdown(&self, limit: Duration) {
        let start = Instant::now();
        let mut done = Vec::new();
        for s in &self.slots {
            let (tx, rx) = std::sync::mpsc::channel();
            if s.stop(tx) {
                done.push(rx);
            }
        }
        for rx in done {
            let left = limit.saturating_sub(start.elapsed());
            let _ = rx.recv_timeout(left);
        }
    }

    /// Every key of extension `name`'s store, sorted (tests and `trellis plugin test`).
    pub fn store_dump(&self, name: &str) -> Vec<(String, Value)> {
        let mut v: Vec<(String, Value)> = self
            .shared
            .with_store(name, |s| match s {
                shared::StoreBox::Disk(d) => d.entries(),
                shared::StoreBox::Memory(m) => {
                    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
                }
            })
            .0;
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Reads a key of the host's own store namespace (saved rules, UI choices).
    pub fn host_store_get(&self, key: &str) -> Option<Value> {
        self.shared
            .with_store(ui::HOST_NS, |s| match s {
                shared::StoreBox::Disk(d) => d.get(key).cloned(),
                shared::StoreBox::Memory(m) => m.get(key).cloned(),
            })
            .0
    }

    /// Writes a key of the host's own store namespace (atomically, on disk).
    pub fn host_store_put(&self, key: &str, value: Value) -> Result<(), String> {
        self.shared
            .with_store(ui::HOST_NS, |s| match s {
                shared::StoreBox::Disk(d) => d.put(key, Some(value)).map_err(|e| e.to_string()),
                shared::StoreBox::Memory(m) => {
                    m.insert(key.to_string(), value);
                    Ok(())
                }
            })
            .0
    }

    /// Diagnostics of every extension.
    pub fn status(&self) -> StatusReport {
        let extensions = self
            .slots
            .iter()
            .map(|s| {
                let d = s.diag();
                ExtStatus {
                    name: s.name.clone(),
                    version: s.manifest.version.clone(),
                    builtin: s.builtin,
                    state: d.state.clone(),
                    granted: s.granted.iter().map(|c| c.as_str().to_string()).collect(),
                    refused: s.refused.iter().map(|c| c.as_str().to_string()).collect(),
                    subscriptions: d.subscriptions.clone(),
                    registrations: d.registrations.clone(),
                    rejections: d.rejections.clone(),
                    failures: d.failures(),
                    refused_calls: d.refusals(),
                    timings: d.timings(),
                    queue_peak: s.peak.load(Ordering::Relaxed),
                    queue_bound: s.queue,
                    notes: d.notes.clone(),
                    extra: d.extra.clone(),
                }
            })
            .collect();
        StatusReport {
            api_version: trellis_core::ext::API_VERSION,
            extensions,
            notes: self.notes.clone(),
        }
    }
}
