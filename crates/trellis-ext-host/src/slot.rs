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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use trellis_core::Event;
use trellis_core::ext::{
    Capability, Extension, Manifest, PermissionAsk, QuestionAsk, Registration, UiAction,
};

use crate::board::Requests;
use crate::diag::Diag;
use crate::shared::Shared;
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

    /// Records a failure of `what`; disables the extension at the limit. The first
    /// failure of each kind is said where the user looks ([`HostMsg::Failing`]).
    /// Enabled again after a revival: failures are said afresh.
    pub(crate) fn enable_again(&self) {
        lock(&self.said).clear();
        self.disabled.store(false, Ordering::Relaxed);
    }

    /// What its last failing callback said, kept for the offer it was answering.
    pub(crate) fn note_failure(&self, message: &str) {
        *lock(&self.last_failure) = Some(message.to_string());
    }

    /// [`Slot::note_failure`]'s last message, taken.
    pub(crate) fn take_last_failure(&self) -> Option<String> {
        lock(&self.last_failure).take()
    }

    /// Its queued wake has run (another may be queued).
    pub(crate) fn woke(&self) {
        self.woken.store(false, Ordering::Release);
    }

    pub(crate) fn failed(&self, what: &str, message: &str, shared: &Shared) {
        self.note_failure(message);
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
}
