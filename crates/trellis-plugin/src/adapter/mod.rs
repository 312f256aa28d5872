//! A plugin process behind the extension API: [`PluginExt`] implements
//! `trellis_core::ext::Extension` by speaking `trellis-plugin` v1 to one process, and
//! supervises it.
//!
//! Supervision: the process starts at registration (`initialize`, bounded by
//! `start_timeout`); a crash is followed by a restart after a backoff (0.5 s, doubling),
//! and after `crashes` crashes within `window` the plugin is disabled with the reason
//! (`ExtError::Fatal`). A line on stdout that is not protocol, a line longer than the
//! limit, a version the host does not speak, or more than `backlog` bytes waiting for its
//! stdin disconnects it for good. Requests the host makes (`permission/offer`,
//! `render/*`) are bounded in time; while the host waits, the plugin's own calls are
//! served. Events that arrive while the process is down are counted, never replayed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use trellis_core::ToolCall;
use trellis_core::event::Event;
use trellis_core::ext::{
    CardLines, Claim, ExtError, Extension, Host, Manifest, PermissionAsk, QuestionAsk,
    Registration, UiAction, Waker,
};

mod said;
mod supervise;
mod wire;

use crate::process::{Inbound, Launch, Piece, Proc, Stderr};
use crate::protocol::{
    self, CardParams, OfferParams, OfferResult, QuestionOfferParams, TransformParams,
    TransformResult,
};

/// Bounds of the supervisor.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Start to `initialize` answered.
    pub start_timeout: Duration,
    /// A `render/card` or `render/transform` answer.
    pub render_timeout: Duration,
    /// A `permission/offer` answer (claim or pass); never longer than the request's
    /// own deadline.
    pub offer_timeout: Duration,
    /// Longest line accepted from the plugin.
    pub max_line: usize,
    /// Bytes allowed to wait for the plugin's stdin.
    pub backlog: usize,
    /// Crashes within `window` before the plugin is disabled.
    pub crashes: u32,
    pub window: Duration,
    /// Restart the process when the package's files change (trying a plugin).
    pub watch: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            start_timeout: Duration::from_secs(10),
            render_timeout: Duration::from_secs(2),
            offer_timeout: Duration::from_secs(5),
            max_line: 16 << 20,
            backlog: 64 << 20,
            crashes: 3,
            window: Duration::from_secs(300),
            watch: false,
        }
    }
}

/// A plugin as the host loads it (from its package).
#[derive(Debug, Clone)]
pub struct PluginSpec {
    pub manifest: Manifest,
    pub launch: Launch,
    pub limits: Limits,
    /// One process for every session of a hub (`"scope": "hub"`), not one per session.
    pub hub: bool,
}

pub struct PluginExt {
    spec: PluginSpec,
    proc: Option<Proc>,
    generation: u64,
    tx: Sender<Inbound>,
    rx: Receiver<Inbound>,
    next_id: u64,
    crashes: VecDeque<Instant>,
    restart_at: Option<Instant>,
    fatal: Option<String>,
    registration: Option<Registration>,
    acp: bool,
    version: u32,
    restarts: u32,
    /// Events that could not be delivered while the process was down.
    lost: u64,
    last_exit: Option<String>,
    stderr: Arc<Mutex<Stderr>>,
    waker: Arc<Mutex<Option<Waker>>>,
    /// Set by the watcher when the package's files changed (trying a plugin).
    changed: Arc<std::sync::atomic::AtomicBool>,
    reloads: u32,
    /// The process (its pid, reloads, restarts) `/status` was last told of.
    said_process: Option<Option<(u32, u32, u32)>>,
    /// Event lines not handed to the writer yet: a burst of events costs one hand-over
    /// per block (or per batch), not one per event, and an event's JSON is shared by
    /// every plugin, never copied.
    outbuf: Vec<Piece>,
    outbuf_bytes: usize,
}

impl std::fmt::Debug for PluginExt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginExt")
            .field("name", &self.spec.manifest.name)
            .field("proc", &self.proc)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl PluginExt {
    pub fn new(spec: PluginSpec) -> PluginExt {
        let (tx, rx) = channel();
        PluginExt {
            spec,
            proc: None,
            generation: 0,
            tx,
            rx,
            next_id: 1,
            crashes: VecDeque::new(),
            restart_at: None,
            fatal: None,
            registration: None,
            acp: false,
            version: 0,
            restarts: 0,
            lost: 0,
            last_exit: None,
            stderr: Arc::new(Mutex::new(Stderr::default())),
            waker: Arc::new(Mutex::new(None)),
            changed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            reloads: 0,
            said_process: None,
            outbuf: Vec::new(),
            outbuf_bytes: 0,
        }
    }

    fn name(&self) -> &str {
        &self.spec.manifest.name
    }

    fn wake_fn(&self) -> Arc<dyn Fn() + Send + Sync> {
        let w = self.waker.clone();
        Arc::new(move || {
            if let Some(w) = lock(&w).as_ref() {
                w.wake();
            }
        })
    }

    /// Where the plugin's log file is, if any.
    pub fn log_file(&self) -> Option<PathBuf> {
        self.spec.launch.log_file.clone()
    }
}

impl Extension for PluginExt {
    fn manifest(&self) -> Manifest {
        self.spec.manifest.clone()
    }

    fn register(&mut self, host: &mut dyn Host) -> Result<Registration, ExtError> {
        *lock(&self.waker) = host.waker();
        if self.spec.limits.watch {
            self.watch();
        }
        let mut r = self.start(host);
        if r.is_err() {
            // What it said before it ended explains why: wait (briefly) for all of it.
            let until = Instant::now() + Duration::from_millis(500);
            while !lock(&self.stderr).closed && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            // And it is said with the failure, where the author looks (not only in
            // `/status`), first: the error its stderr ends with, at the author's line.
            // (Not when Trellis cut it off for what it wrote: its stderr then tells of the
            // cut, a broken pipe, not of the cause.)
            if let Err(ExtError::Fatal(why)) = &r
                && !why.starts_with("disconnected:")
            {
                let s = lock(&self.stderr);
                let lines: Vec<String> = s.lines.iter().cloned().collect();
                drop(s);
                if let Some(said) = said::start_error(&lines) {
                    r = Err(ExtError::Fatal(format!("{said}; {why}")));
                }
            }
        }
        self.diagnostics(host);
        r?;
        Ok(self.registration.clone().unwrap_or_default())
    }

    fn on_event(&mut self, event: &Event, host: &mut dyn Host) -> Result<(), ExtError> {
        self.on_shared_event(&Arc::new(event.clone()), host)
    }

    fn events_may_wait(&self) -> bool {
        // The process reads them after a storm anyway: the host holds them until it
        // pauses, and neither this worker nor the writer wakes meanwhile.
        true
    }

    fn on_shared_event(&mut self, event: &Arc<Event>, host: &mut dyn Host) -> Result<(), ExtError> {
        if !self.ensure(host)? {
            self.lost += 1;
            return Ok(());
        }
        // Serialized by the writer when it writes (never during a storm), once for
        // every plugin that receives it.
        let piece = Piece::event(Arc::clone(event), self.acp);
        self.send_buffered(piece)?;
        Ok(())
    }

    fn on_idle(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        let r = self.notify(host, "idle", &serde_json::json!({}));
        self.diagnostics(host);
        r
    }

    fn on_wake(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        self.reload(host)?;
        let r = match self.ensure(host) {
            Ok(true) => self.pump(host, None, Instant::now()).map(|_| ()),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        self.diagnostics(host);
        r
    }

    fn on_permission(
        &mut self,
        ask: &PermissionAsk,
        host: &mut dyn Host,
    ) -> Result<Claim, ExtError> {
        if !self.ensure(host)? {
            return Ok(Claim::Pass);
        }
        let deadline = Duration::from_secs_f64(ask.deadline.max(0.0));
        let params = OfferParams {
            request_id: &ask.request_id,
            session: ask.session.as_deref(),
            call: &ask.call,
            facts: protocol::facts_of(&ask.call),
            options: &ask.options,
            deadline_ms: deadline.as_millis() as u64,
            acp: if self.acp { ask.acp.as_deref() } else { None },
        };
        let limit = self.spec.limits.offer_timeout.min(deadline);
        let v = self.request(host, "permission/offer", &params, limit)?;
        let r: OfferResult = serde_json::from_value(v)
            .map_err(|e| ExtError::msg(format!("permission/offer answer: {e}")))?;
        Ok(if r.claim { Claim::Claim } else { Claim::Pass })
    }

    fn on_question(&mut self, ask: &QuestionAsk, host: &mut dyn Host) -> Result<Claim, ExtError> {
        if !self.ensure(host)? {
            return Ok(Claim::Pass);
        }
        let deadline = Duration::from_secs_f64(ask.deadline.max(0.0));
        let params = QuestionOfferParams {
            session: ask.session.as_deref(),
            question: &ask.question,
            deadline_ms: deadline.as_millis() as u64,
            acp: if self.acp { ask.acp.as_deref() } else { None },
        };
        let limit = self.spec.limits.offer_timeout.min(deadline);
        let v = self.request(host, "question/offer", &params, limit)?;
        let r: OfferResult = serde_json::from_value(v)
            .map_err(|e| ExtError::msg(format!("question/offer answer: {e}")))?;
        Ok(if r.claim { Claim::Claim } else { Claim::Pass })
    }

    fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
        self.notify(host, "action", action)
    }

    fn card(
        &mut self,
        design: &str,
        call: &ToolCall,
        width: u16,
        host: &mut dyn Host,
    ) -> Result<CardLines, ExtError> {
        if !self.ensure(host)? {
            return Ok(CardLines::default());
        }
        let limit = self.spec.limits.render_timeout;
        let v = self.request(
            host,
            "render/card",
            &CardParams {
                design,
                call,
                facts: protocol::facts_of(call),
                width,
            },
            limit,
        )?;
        serde_json::from_value(v).map_err(|e| ExtError::msg(format!("render/card answer: {e}")))
    }

    fn transform(
        &mut self,
        id: &str,
        call: &ToolCall,
        text: &str,
        host: &mut dyn Host,
    ) -> Result<Option<String>, ExtError> {
        if !self.ensure(host)? {
            return Ok(None);
        }
        let limit = self.spec.limits.render_timeout;
        let v = self.request(
            host,
            "render/transform",
            &TransformParams {
                id,
                call,
                facts: protocol::facts_of(call),
                text,
            },
            limit,
        )?;
        let r: TransformResult = serde_json::from_value(v)
            .map_err(|e| ExtError::msg(format!("render/transform answer: {e}")))?;
        Ok(r.text)
    }

    fn on_sync(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        if self.proc.is_none() {
            return Ok(());
        }
        // Answered once the plugin handled everything sent before; what it sent meanwhile
        // is served while waiting. A plugin that does not know `sync` answers with an
        // error: that is an answer too.
        let limit = self.spec.limits.render_timeout;
        self.exchange(host, "sync", &serde_json::json!({}), limit)?;
        self.diagnostics(host);
        Ok(())
    }

    fn on_disabled(&mut self, host: &mut dyn Host) {
        // Nothing more is asked of the process: it ends now, not with the session, and
        // `/status` says so.
        self.kill();
        self.diagnostics(host);
    }

    fn revive(&mut self, host: &mut dyn Host) -> Option<Result<(), String>> {
        self.revive_changed(host)
    }

    fn on_shutdown(&mut self) {
        if self.proc.is_some() {
            let _ = self.send(protocol::notification("shutdown", &serde_json::json!({})));
        }
        self.kill();
    }
}
