//! One loaded extension: its grants, its worker thread and bounded queue, its store and
//! diagnostics, and the isolation every call into it goes through.
//!
//! Invariants:
//! - every call into the extension runs under `catch_unwind`; a panic or error costs only
//!   that call's result, is recorded, and after `failure_limit` failures the extension is
//!   disabled;
//! - events are queued per extension (bounded); an extension whose queue overflows is
//!   disabled with a report — events are never dropped silently;
//! - a permission offer always gets a reply (a pass when the extension cannot take it),
//!   so the chain always moves on.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use trellis_core::Event;
use trellis_core::ext::{
    Capability, CardLines, Claim, ExtError, Extension, Manifest, PermissionAsk, QuestionAsk,
    Registration, UiAction,
};

use crate::board::{Requests, clean_line};
use crate::diag::Diag;
use crate::host::{HostCtx, Shared};
use crate::{HostMsg, lock};

/// Work for an extension's worker.
pub(crate) enum Job {
    /// Events in order (delivered in batches: one wake-up per batch, not per event).
    Events(Vec<Arc<Event>>),
    Permission(Arc<PermissionAsk>),
    Question(Arc<QuestionAsk>),
    Action(UiAction),
    /// Push what changed (after registration, or a section became shown).
    Idle,
    /// The extension asked to be woken (see `Host::waker`).
    Wake,
    /// Cards and per-call transforms the host needs.
    Render(Requests),
    /// Finish what was sent (see `Extension::on_sync`).
    Sync,
    /// The session is over: `on_shutdown`, then the worker ends (and says so).
    Stop(std::sync::mpsc::Sender<()>),
    /// The extension was disabled: `on_disabled` (it stops what runs for it).
    Disabled,
}

pub struct Slot {
    /// Place in the host's list (keys the board).
    pub(crate) index: usize,
    /// A weak handle to this slot (for wakers).
    pub(crate) me: OnceLock<std::sync::Weak<Slot>>,
    /// A wake is queued and not yet run.
    woken: AtomicBool,
    pub name: String,
    pub manifest: Manifest,
    pub builtin: bool,
    pub granted: Vec<Capability>,
    pub refused: Vec<Capability>,
    pub(crate) ext: Mutex<Box<dyn Extension>>,
    /// When its last prompts were sent (`drive`), for the per-minute budget.
    pub(crate) prompts_sent: Mutex<std::collections::VecDeque<std::time::Instant>>,
    pub(crate) tx: OnceLock<Sender<Job>>,
    pub(crate) diag: Mutex<Diag>,
    disabled: AtomicBool,
    /// The kinds of failure already said where the user looks (see
    /// [`HostMsg::Failing`]): each once.
    said: Mutex<std::collections::BTreeSet<String>>,
    /// What its last failing callback said (for the offer it was answering).
    last_failure: Mutex<Option<String>>,
    pub(crate) pending: AtomicUsize,
    /// Most events ever waiting in the queue (for `/status`).
    pub(crate) peak: AtomicUsize,
    /// Batches the worker has handled, handed back so that the events are freed on the
    /// thread that allocated them (the allocator reuses that memory at once; freed on
    /// the worker it would linger) and the vectors are reused.
    pub(crate) spent: Mutex<Vec<Vec<Arc<Event>>>>,
    /// Bit i set: wants event kind `EVENT_KINDS[i]`.
    pub(crate) mask: OnceLock<u64>,
    pub(crate) reg: OnceLock<Registration>,
    /// Bit i set: wants tool-call events of `ToolKind::ALL[i]`.
    pub(crate) call_kinds: OnceLock<u16>,
    /// The extension's options from the config.
    pub(crate) options: OnceLock<serde_json::Value>,
    pub(crate) failure_limit: u32,
    pub(crate) queue: usize,
    /// Its events may wait for a storm to pause (`Extension::events_may_wait`).
    pub(crate) paced: bool,
}

thread_local! {
    /// Set while this thread runs extension code: its panics are recorded, not printed.
    static IN_EXTENSION: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the current panic hook so panics inside extension code are not printed (they
/// are recorded in diagnostics instead, and must not disturb the terminal). Call after
/// any other hook is installed (the UI's terminal-restoring hook).
pub fn install_panic_guard() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_EXTENSION.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

fn panic_message(p: Box<dyn Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

impl Slot {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        index: usize,
        ext: Box<dyn Extension>,
        manifest: Manifest,
        builtin: bool,
        granted: Vec<Capability>,
        refused: Vec<Capability>,
        failure_limit: u32,
        queue: usize,
    ) -> Slot {
        let paced = ext.events_may_wait();
        Slot {
            paced,
            index,
            me: OnceLock::new(),
            woken: AtomicBool::new(false),
            name: manifest.name.clone(),
            manifest,
            builtin,
            granted,
            refused,
            ext: Mutex::new(ext),
            prompts_sent: Mutex::new(std::collections::VecDeque::new()),
            tx: OnceLock::new(),
            diag: Mutex::new(Diag::default()),
            disabled: AtomicBool::new(false),
            said: Mutex::new(std::collections::BTreeSet::new()),
            last_failure: Mutex::new(None),
            pending: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            spent: Mutex::new(Vec::new()),
            mask: OnceLock::new(),
            reg: OnceLock::new(),
            call_kinds: OnceLock::new(),
            options: OnceLock::new(),
            failure_limit: failure_limit.max(1),
            queue,
        }
    }

    pub fn has(&self, c: Capability) -> bool {
        self.granted.contains(&c)
    }

    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }

    pub(crate) fn diag(&self) -> MutexGuard<'_, Diag> {
        lock(&self.diag)
    }

    pub(crate) fn registration(&self) -> Option<&Registration> {
        self.reg.get()
    }

    /// Disables the extension, saying why (once).
    pub(crate) fn disable(&self, reason: String, shared: &Shared) {
        if !self.disabled.swap(true, Ordering::Relaxed) {
            self.diag().disable(reason.clone());
            shared.send(HostMsg::Disabled {
                extension: self.name.clone(),
                reason,
            });
            // Its worker stops what runs for it (never this thread: the extension may be
            // busy on its worker).
            if let Some(tx) = self.tx.get() {
                let _ = tx.send(Job::Disabled);
            }
        }
    }

    /// On the worker, for a disabled extension that woke the host: asks it whether it can
    /// run again, and if so enables it, its failures counted afresh.
    fn try_revive(&self, shared: &Shared) {
        let mut guard = lock(&self.ext);
        let mut cx = HostCtx::new(self, shared);
        let was = IN_EXTENSION.with(|f| f.replace(true));
        let r = catch_unwind(AssertUnwindSafe(|| guard.revive(&mut cx)));
        IN_EXTENSION.with(|f| f.set(was));
        drop(guard);
        let result = match r {
            Ok(Some(result)) => result,
            Ok(None) => return,
            Err(p) => Err(panic_message(p)),
        };
        if result.is_ok() {
            self.diag().revive();
            lock(&self.said).clear();
            self.disabled.store(false, Ordering::Relaxed);
        }
        shared.send(HostMsg::Revived {
            extension: self.name.clone(),
            result,
        });
    }

    /// Records a failure of `what`; disables the extension at the limit. The first
    /// failure of each kind is said where the user looks ([`HostMsg::Failing`]).
    pub(crate) fn failed(&self, what: &str, message: &str, shared: &Shared) {
        *lock(&self.last_failure) = Some(message.to_string());
        let n = self.diag().fail(what, message);
        if n >= self.failure_limit {
            self.disable(
                format!(
                    "failed {n} times (limit {}); last: {what}: {message}",
                    self.failure_limit
                ),
                shared,
            );
        } else {
            self.say_failing(what, message, shared);
        }
    }

    /// Says `what` failed with `message`, the first time `what` does (later ones are
    /// counted in `/status`).
    pub(crate) fn say_failing(&self, what: &str, message: &str, shared: &Shared) {
        if self.is_disabled() {
            return;
        }
        let first = lock(&self.said).insert(what.to_string());
        if first {
            shared.send(HostMsg::Failing {
                extension: self.name.clone(),
                what: what.to_string(),
                message: message.to_string(),
            });
        }
    }

    /// Runs `f` on the extension with panics caught (on its worker, or once at
    /// registration before the worker starts).
    pub(crate) fn call<R>(
        &self,
        shared: &Shared,
        what: &str,
        f: impl FnOnce(&mut dyn Extension, &mut HostCtx<'_>) -> Result<R, ExtError>,
    ) -> Option<R> {
        if self.is_disabled() {
            return None;
        }
        let mut guard = lock(&self.ext);
        let mut cx = HostCtx::new(self, shared);
        let was = IN_EXTENSION.with(|f| f.replace(true));
        let r = catch_unwind(AssertUnwindSafe(|| f(guard.as_mut(), &mut cx)));
        IN_EXTENSION.with(|f| f.set(was));
        drop(guard);
        match r {
            Ok(Ok(v)) => Some(v),
            Ok(Err(ExtError::Fatal(why))) => {
                self.diag().fail(what, &why);
                *lock(&self.last_failure) = Some(why.clone());
                self.disable(why, shared);
                None
            }
            Ok(Err(e)) => {
                self.failed(what, &e.to_string(), shared);
                None
            }
            Err(p) => {
                self.failed(what, &panic_message(p), shared);
                None
            }
        }
    }

    /// Asks the worker to stop (after the job it is on); `done` hears when it has.
    pub(crate) fn stop(&self, done: std::sync::mpsc::Sender<()>) -> bool {
        match self.tx.get() {
            Some(tx) => tx.send(Job::Stop(done)).is_ok(),
            None => false,
        }
    }

    /// Queues a wake-up (at most one waiting at a time).
    pub(crate) fn wake(&self, shared: &Shared) {
        if !self.woken.swap(true, Ordering::AcqRel) && !self.send(Job::Wake, shared) {
            self.woken.store(false, Ordering::Release);
        }
    }

    /// Queues a job (`weight`: the events it carries, 1 for anything else). The queue is
    /// bounded in events: an extension that would go past the bound is disabled (except
    /// by events held for it, see [`crate::outbox`]).
    pub(crate) fn send(&self, job: Job, shared: &Shared) -> bool {
        let Some(tx) = self.tx.get() else {
            return false;
        };
        // A disabled extension's wake still reaches its worker: it may ask to be revived.
        if self.is_disabled() && !matches!(job, Job::Wake) {
            return false;
        }
        let (weight, events) = match &job {
            Job::Events(v) => (v.len(), true),
            _ => (1, false),
        };
        let before = self.pending.fetch_add(weight, Ordering::AcqRel);
        // Events the host held for an extension whose events may wait come in one batch
        // after a storm: they are not a sign that it is behind (its own bound applies,
        // e.g. a plugin's stdin backlog in bytes).
        if before + weight > self.queue && !(events && self.paced) {
            self.pending.fetch_sub(weight, Ordering::AcqRel);
            self.disable(
                format!(
                    "its queue of {} events overflowed: it was too slow for the session; \
                     later events were not delivered",
                    self.queue
                ),
                shared,
            );
            return false;
        }
        if tx.send(job).is_err() {
            self.pending.fetch_sub(weight, Ordering::AcqRel);
            return false;
        }
        if events {
            // `/status` reports the events waiting (other jobs are a handful at most).
            self.peak.fetch_max(before + weight, Ordering::Relaxed);
        }
        true
    }

    /// Runs a batch of events: the extension is locked once for the batch, each event
    /// still runs under its own `catch_unwind`.
    fn run_events(&self, events: &[Arc<Event>], shared: &Shared) {
        thread_local! {
            /// Reused per worker: no allocation per batch.
            static TIMES: std::cell::RefCell<Vec<(&'static str, u64)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        TIMES.with(|t| self.run_events_into(events, shared, &mut t.borrow_mut()));
    }

    fn run_events_into(
        &self,
        events: &[Arc<Event>],
        shared: &Shared,
        times: &mut Vec<(&'static str, u64)>,
    ) {
        times.clear();
        {
            let mut guard = lock(&self.ext);
            let was = IN_EXTENSION.with(|f| f.replace(true));
            for ev in events {
                if self.is_disabled() {
                    break;
                }
                let kind = ev.body.kind();
                let start = Instant::now();
                let r = {
                    let mut cx = HostCtx::new(self, shared);
                    catch_unwind(AssertUnwindSafe(|| guard.on_shared_event(ev, &mut cx)))
                };
                times.push((kind, start.elapsed().as_nanos() as u64));
                let failure = match r {
                    Ok(Ok(())) => None,
                    Ok(Err(ExtError::Fatal(why))) => {
                        self.diag().fail(kind, &why);
                        self.disable(why, shared);
                        None
                    }
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(p) => Some(panic_message(p)),
                };
                if let Some(msg) = failure {
                    self.failed(kind, &msg, shared);
                }
            }
            IN_EXTENSION.with(|f| f.set(was));
        }
        let mut d = self.diag();
        for &(k, t) in times.iter() {
            d.time(k, t);
        }
    }

    /// The reply to an offer (a permission request or a question): claimed, passed, or
    /// failed (`None`: the callback failed, or the extension is disabled).
    fn send_claim(&self, shared: &Shared, request_id: &str, r: Option<Claim>) {
        let result = match r {
            Some(Claim::Claim) => Ok(true),
            Some(Claim::Pass) => Ok(false),
            // Its callback failed (counted, and said, when it did).
            None => Err(crate::ClaimFailed {
                reason: lock(&self.last_failure)
                    .take()
                    .unwrap_or_else(|| "the extension is disabled".to_string()),
                counted: true,
            }),
        };
        shared.send(HostMsg::Claim {
            extension: self.name.clone(),
            request_id: request_id.to_string(),
            result,
        });
    }

    pub(crate) fn run_job(&self, job: Job, shared: &Shared) {
        match job {
            Job::Events(evs) => {
                self.run_events(&evs, shared);
                lock(&self.spent).push(evs);
            }
            Job::Permission(ask) => {
                let r = self.call(shared, "permission request", |e, cx| {
                    e.on_permission(&ask, cx)
                });
                self.send_claim(shared, &ask.request_id, r);
            }
            Job::Question(ask) => {
                let r = self.call(shared, "question", |e, cx| e.on_question(&ask, cx));
                self.send_claim(shared, &ask.question.request_id, r);
            }
            Job::Action(action) => {
                let what = match &action {
                    UiAction::Setting { .. } => "settings action",
                    UiAction::Command { .. } => "command",
                    UiAction::Key { .. } => "key",
                    UiAction::RowClick { .. } => "row click",
                    UiAction::Visibility { .. } => "visibility",
                    _ => "action",
                };
                self.call(shared, what, |e, cx| {
                    e.on_action(&action, cx)?;
                    e.on_idle(cx)
                });
                shared.ask_repaint();
            }
            Job::Idle => {
                self.call(shared, "idle", |e, cx| e.on_idle(cx));
            }
            Job::Wake => {
                self.woken.store(false, Ordering::Release);
                self.call(shared, "wake", |e, cx| e.on_wake(cx));
            }
            Job::Render(reqs) => self.render(reqs, shared),
            Job::Sync => {
                self.call(shared, "sync", |e, cx| e.on_sync(cx));
            }
            // Handled by the worker loop.
            Job::Stop(_) | Job::Disabled => {}
        }
    }

    /// Answers the cards and per-call transforms the host asked for, into the board.
    fn render(&self, reqs: Requests, shared: &Shared) {
        let mut arrived = Vec::new();
        for r in reqs.cards {
            let lines = self
                .call(shared, "card design", |e, cx| {
                    e.card(&r.design, &r.call, r.width, cx)
                })
                .filter(|l| !l.call.is_empty())
                .map(|l| CardLines {
                    call: l
                        .call
                        .into_iter()
                        .map(|l| clean_line(l, usize::from(r.width)))
                        .collect(),
                    result: l
                        .result
                        .into_iter()
                        .map(|l| clean_line(l, usize::from(r.width)))
                        .collect(),
                    bare: l.bare,
                });
            let mut b = shared.board();
            let a = b.cards.entry(r.cache).or_default();
            if a.want == r.key {
                a.have = r.key;
                a.value = lines;
                arrived.push(r.call_id);
            }
        }
        for r in reqs.transforms {
            let out = self
                .call(shared, "transform", |e, cx| {
                    e.transform(&r.id, &r.call, &r.text, cx)
                })
                .flatten();
            let mut b = shared.board();
            let a = b.transforms.entry(r.cache).or_default();
            if a.want == r.key {
                a.have = r.key;
                a.value = out;
                arrived.push(r.call_id);
            }
        }
        if !arrived.is_empty() {
            shared.board().changed.extend(arrived);
            shared.generation.fetch_add(1, Ordering::Relaxed);
            shared.ask_repaint();
        }
    }
}

/// The worker loop of one extension. Jobs for a disabled extension are drained; a
/// permission offer still gets its (negative) reply.
pub(crate) fn worker(slot: Arc<Slot>, shared: Arc<Shared>, rx: Receiver<Job>) {
    let mut needs_idle = false;
    while let Ok(job) = rx.recv() {
        if let Job::Stop(done) = job {
            let mut guard = lock(&slot.ext);
            let was = IN_EXTENSION.with(|f| f.replace(true));
            let _ = catch_unwind(AssertUnwindSafe(|| guard.on_shutdown()));
            IN_EXTENSION.with(|f| f.set(was));
            let _ = done.send(());
            return;
        }
        let weight = match &job {
            Job::Events(v) => v.len(),
            _ => 1,
        };
        if let Job::Disabled = job {
            let mut guard = lock(&slot.ext);
            let was = IN_EXTENSION.with(|f| f.replace(true));
            let _ = catch_unwind(AssertUnwindSafe(|| guard.on_disabled()));
            IN_EXTENSION.with(|f| f.set(was));
            continue;
        }
        if slot.is_disabled() {
            if let Job::Wake = job {
                slot.woken.store(false, Ordering::Release);
                slot.try_revive(&shared);
            }
            let asked = match &job {
                Job::Permission(ask) => Some(ask.request_id.clone()),
                Job::Question(ask) => Some(ask.question.request_id.clone()),
                _ => None,
            };
            if let Some(request_id) = asked {
                shared.send(HostMsg::Claim {
                    extension: slot.name.clone(),
                    request_id,
                    result: Err(crate::ClaimFailed {
                        reason: "the extension is disabled".into(),
                        counted: true,
                    }),
                });
            }
        } else {
            needs_idle |= matches!(
                job,
                Job::Events(_) | Job::Permission(_) | Job::Question(_) | Job::Wake | Job::Sync
            );
            slot.run_job(job, &shared);
            // Caught up with the session: the extension pushes what it shows (once per
            // drained queue, not per batch), and whatever it pushed is drawn.
            let caught_up = slot.pending.load(Ordering::Acquire) == weight;
            if needs_idle && caught_up {
                needs_idle = false;
                slot.call(&shared, "idle", |e, cx| e.on_idle(cx));
            }
        }
        slot.pending.fetch_sub(weight, Ordering::AcqRel);
    }
}
