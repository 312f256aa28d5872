//! An extension's worker: the thread that runs its jobs, every call into its code under
//! `catch_unwind` with the host functions at hand ([`HostCtx`]), its failures recorded,
//! its offers always answered. Above the slot's state ([`crate::slot`]) and the host
//! functions ([`crate::host`]).

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use trellis_core::Event;
use trellis_core::ext::{CardLines, Claim, ExtError, Extension, UiAction};

use crate::board::{Requests, clean_line};
use crate::host::HostCtx;
use crate::shared::Shared;
use crate::slot::{Job, Slot};
use crate::{HostMsg, lock};

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
            self.enable_again();
        }
        shared.send(HostMsg::Revived {
            extension: self.name.clone(),
            result,
        });
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
                self.note_failure(&why);
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
                reason: self
                    .take_last_failure()
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
                self.woke();
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
            let mut cx = HostCtx::new(&slot, &shared);
            let was = IN_EXTENSION.with(|f| f.replace(true));
            let _ = catch_unwind(AssertUnwindSafe(|| guard.on_disabled(&mut cx)));
            IN_EXTENSION.with(|f| f.set(was));
            continue;
        }
        if slot.is_disabled() {
            if let Job::Wake = job {
                slot.woke();
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
