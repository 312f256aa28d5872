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

use serde_json::Value;
use trellis_core::ToolCall;
use trellis_core::event::Event;
use trellis_core::ext::{
    Capability, CardLines, Claim, ExtError, Extension, Host, Manifest, PermissionAsk, Registration,
    UiAction, Waker,
};

use crate::process::{Inbound, Launch, Piece, Proc, Stderr};
use crate::protocol::{
    self, ActionParams, CallFacts, CardParams, HostInfo, Incoming, InitializeParams,
    InitializeResult, OfferParams, OfferResult, TransformParams, TransformResult, VERSIONS,
};

/// Event lines are handed to the writer in blocks of this size (or at the end of a batch).
const OUT_BLOCK: usize = 64 << 10;

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
    /// The worker's priority was lowered.
    niced: bool,
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
            niced: false,
            outbuf: Vec::new(),
            outbuf_bytes: 0,
        }
    }

    /// Watches the package (twice a second) while the host lives; a change wakes the
    /// worker, which restarts the process.
    fn watch(&self) {
        let root = self.spec.launch.root.clone();
        let changed = self.changed.clone();
        let wake = self.wake_fn();
        let alive = Arc::downgrade(&self.waker);
        let _ = std::thread::Builder::new()
            .name("plugin-watch".into())
            .spawn(move || {
                let mut last = fingerprint(&root);
                while alive.upgrade().is_some() {
                    std::thread::sleep(Duration::from_millis(500));
                    let now = fingerprint(&root);
                    if now != last {
                        last = now;
                        changed.store(true, std::sync::atomic::Ordering::Release);
                        wake();
                    }
                }
            });
    }

    /// The files changed (trying a plugin): a new process with the new code. The first
    /// registration stands (new contributions need a new session).
    fn reload(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        if !self
            .changed
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        self.kill();
        self.reloads += 1;
        self.crashes.clear();
        self.restart_at = None;
        self.start(host)?;
        host.notify(&format!("plugin {} reloaded", self.name()))
            .map_err(ExtError::from)
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

    /// Starts the process and runs `initialize`.
    fn start(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        self.generation += 1;
        let proc = Proc::spawn(
            &self.spec.launch,
            self.generation,
            self.tx.clone(),
            self.stderr.clone(),
            self.wake_fn(),
        )
        .map_err(ExtError::Fatal)?;
        self.proc = Some(proc);
        let params = InitializeParams {
            protocol: protocol::PROTOCOL.into(),
            versions: VERSIONS.to_vec(),
            host: HostInfo {
                name: "trellis".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            name: self.name().to_string(),
            granted: host
                .granted()
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            options: host.options(),
            restarts: self.restarts,
        };
        let limit = self.spec.limits.start_timeout;
        let v = match self.request(host, "initialize", &params, limit) {
            Ok(v) => v,
            Err(e) => {
                self.kill();
                return Err(match e {
                    ExtError::Fatal(m) => ExtError::Fatal(m),
                    other if self.registration.is_none() => {
                        ExtError::Fatal(format!("did not start: {other}"))
                    }
                    other => other,
                });
            }
        };
        let r: InitializeResult = serde_json::from_value(v).map_err(|e| {
            self.kill();
            ExtError::Fatal(format!("its answer to initialize is not valid: {e}"))
        })?;
        if !VERSIONS.contains(&r.version) {
            self.kill();
            return Err(ExtError::Fatal(format!(
                "version mismatch: the plugin chose protocol version {}, this Trellis speaks {}",
                r.version,
                VERSIONS
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        self.version = r.version;
        match &self.registration {
            None => {
                self.acp = r.registration.acp_payloads;
                self.registration = Some(r.registration);
            }
            Some(old) if *old != r.registration => host.report(
                "restart",
                "the restarted process registered different contributions; the first registration stands",
            ),
            Some(_) => {}
        }
        Ok(())
    }

    /// Stops the process (its whole group).
    fn kill(&mut self) -> Option<String> {
        self.outbuf.clear();
        self.outbuf_bytes = 0;
        let mut p = self.proc.take()?;
        Some(p.stop(Duration::from_millis(300)))
    }

    /// The process ended or broke: restart later, or give up.
    fn crashed(&mut self, why: String) -> ExtError {
        let exit = self.kill();
        let why = match exit {
            Some(e) if !why.contains("exit") => format!("{why} ({e})"),
            _ => why,
        };
        self.last_exit = Some(why.clone());
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.spec.limits.window)
        {
            self.crashes.pop_front();
        }
        let n = self.crashes.len() as u32;
        if n >= self.spec.limits.crashes {
            let f = format!(
                "crashed {n} times within {} s; last: {why}",
                self.spec.limits.window.as_secs()
            );
            self.fatal = Some(f.clone());
            return ExtError::Fatal(f);
        }
        let backoff = Duration::from_millis(500) * 2u32.saturating_pow(n.saturating_sub(1));
        let at = now + backoff;
        self.restart_at = Some(at);
        // Wake the worker when the restart is due (it may have nothing else to do).
        let wake = self.wake_fn();
        let _ = std::thread::Builder::new()
            .name("plugin-restart".into())
            .spawn(move || {
                std::thread::sleep(backoff);
                wake();
            });
        ExtError::Failed(format!("the plugin process ended: {why}; restarting"))
    }

    /// Makes sure a process runs: `Ok(false)` while it is down (waiting to restart).
    fn ensure(&mut self, host: &mut dyn Host) -> Result<bool, ExtError> {
        if let Some(f) = &self.fatal {
            return Err(ExtError::Fatal(f.clone()));
        }
        if self.proc.is_some() {
            return Ok(true);
        }
        match self.restart_at {
            Some(at) if Instant::now() < at => Ok(false),
            _ => {
                self.restart_at = None;
                self.restarts += 1;
                match self.start(host) {
                    Ok(()) => Ok(true),
                    Err(e) => {
                        if let Some(f) = &self.fatal {
                            return Err(ExtError::Fatal(f.clone()));
                        }
                        if self.restart_at.is_some() {
                            // Its end was handled (and counted) already.
                            return Err(e);
                        }
                        Err(self.crashed(e.to_string()))
                    }
                }
            }
        }
    }

    /// Queues an event line, handed over in blocks.
    fn send_buffered(&mut self, piece: Piece) -> Result<(), ExtError> {
        self.outbuf_bytes += piece.bytes();
        self.outbuf.push(piece);
        if self.outbuf_bytes >= OUT_BLOCK || self.outbuf.len() >= 256 {
            self.flush_out()?;
        }
        Ok(())
    }

    /// Hands the buffered lines to the writer.
    fn flush_out(&mut self) -> Result<(), ExtError> {
        if self.outbuf.is_empty() {
            return Ok(());
        }
        let block = std::mem::take(&mut self.outbuf);
        self.outbuf_bytes = 0;
        self.send_pieces(block)
    }

    /// Queues a line for the plugin, after whatever is buffered (order is kept).
    fn send(&mut self, line: Vec<u8>) -> Result<(), ExtError> {
        self.flush_out()?;
        self.send_pieces(vec![Piece::Raw(line)])
    }

    fn send_pieces(&mut self, pieces: Vec<Piece>) -> Result<(), ExtError> {
        let len: usize = pieces.iter().map(Piece::bytes).sum();
        let Some(p) = &self.proc else {
            return Err(ExtError::msg("the plugin process is not running"));
        };
        if p.backlog.load(std::sync::atomic::Ordering::Acquire) + len > self.spec.limits.backlog {
            let f = format!(
                "disconnected: more than {} MiB waiting for its stdin — it does not keep up with the session",
                self.spec.limits.backlog >> 20
            );
            self.kill();
            self.fatal = Some(f.clone());
            return Err(ExtError::Fatal(f));
        }
        if !p.send_pieces(pieces) {
            return Err(self.crashed("its stdin closed".into()));
        }
        Ok(())
    }

    /// Handles what the plugin sent. With `want`, waits (until `deadline`) for the
    /// answer to that request and returns it; without, handles what is there and returns.
    fn pump(
        &mut self,
        host: &mut dyn Host,
        want: Option<u64>,
        deadline: Instant,
    ) -> Result<Option<Result<Value, protocol::RpcError>>, ExtError> {
        loop {
            let next = match want {
                Some(_) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(m) => m,
                        Err(_) => return Ok(None),
                    }
                }
                None => match self.rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(None),
                },
            };
            match next {
                Inbound::Msg { generation, .. }
                | Inbound::Broken { generation, .. }
                | Inbound::Eof { generation }
                    if generation != self.generation =>
                {
                    continue;
                }
                Inbound::Msg {
                    msg: Incoming::Response { id, result },
                    ..
                } => {
                    if Some(id) == want {
                        return Ok(Some(result));
                    }
                    // A late answer to a request that timed out: dropped.
                }
                Inbound::Msg {
                    msg: Incoming::Call { id, method, params },
                    ..
                } => {
                    let r = crate::serve::serve(host, &method, params);
                    match id {
                        Some(id) => {
                            self.send(protocol::response(&id, r))?;
                        }
                        None => {
                            if let Err(e) = r {
                                // A notification has nobody to answer: /status says it.
                                host.report(&method, &e.message);
                            }
                        }
                    }
                }
                Inbound::Broken { why, line, .. } => {
                    let f = format!("disconnected: it wrote {why}: «{line}»");
                    self.kill();
                    self.fatal = Some(f.clone());
                    return Err(ExtError::Fatal(f));
                }
                Inbound::Eof { .. } => {
                    if self.registration.is_none() {
                        let exit = self.kill().unwrap_or_default();
                        return Err(ExtError::Fatal(format!(
                            "the process ended before it answered initialize ({exit})"
                        )));
                    }
                    return Err(self.crashed("the process ended".into()));
                }
            }
        }
    }

    /// Sends a request and waits for its answer (serving the plugin meanwhile).
    fn request(
        &mut self,
        host: &mut dyn Host,
        method: &str,
        params: &impl serde::Serialize,
        limit: Duration,
    ) -> Result<Value, ExtError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(protocol::request(id, method, params))?;
        match self.pump(host, Some(id), Instant::now() + limit)? {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(ExtError::msg(format!(
                "{method} answered with error {}: {}",
                e.code, e.message
            ))),
            None => Err(ExtError::msg(format!(
                "no answer to {method} within {} ms",
                limit.as_millis()
            ))),
        }
    }

    fn notify(
        &mut self,
        host: &mut dyn Host,
        method: &str,
        params: &impl serde::Serialize,
    ) -> Result<(), ExtError> {
        if !self.ensure(host)? {
            self.lost += 1;
            return Ok(());
        }
        self.send(protocol::notification(method, params))?;
        self.pump(host, None, Instant::now())?;
        Ok(())
    }

    /// Keeps `/status` current: the process, restarts, lost events, stderr's tail.
    fn diagnostics(&mut self, host: &mut dyn Host) {
        let mut s = lock(&self.stderr);
        if !s.dirty && self.proc.is_some() && self.last_exit.is_none() {
            return;
        }
        s.dirty = false;
        let mut lines = Vec::new();
        match &self.proc {
            Some(p) => lines.push(format!(
                "process {} (protocol v{}), restarts {}{}",
                p.pid(),
                self.version,
                self.restarts,
                if self.spec.limits.watch {
                    format!(", reloaded {} times (watching its files)", self.reloads)
                } else {
                    String::new()
                }
            )),
            None => lines.push(format!("process not running, restarts {}", self.restarts)),
        }
        if let Some(e) = &self.last_exit {
            lines.push(format!("last exit: {e}"));
        }
        if self.lost > 0 {
            lines.push(format!(
                "{} events not delivered while the process was down",
                self.lost
            ));
        }
        if s.total > 0 {
            lines.push(format!(
                "stderr: {} lines ({} bytes){}; last {}:",
                s.total,
                s.bytes,
                match &self.spec.launch.log_file {
                    Some(p) => format!(", logged to {}", p.display()),
                    None => String::new(),
                },
                s.lines.len().min(8)
            ));
            let skip = s.lines.len().saturating_sub(8);
            for l in s.lines.iter().skip(skip) {
                lines.push(format!("  │ {l}"));
            }
        }
        drop(s);
        host.set_diagnostics(lines);
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
        let r = self.start(host);
        if r.is_err() {
            // What it said before it ended explains why: wait (briefly) for all of it.
            let until = Instant::now() + Duration::from_millis(500);
            while !lock(&self.stderr).closed && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.diagnostics(host);
        r?;
        Ok(self.registration.clone().unwrap_or_default())
    }

    fn on_event(&mut self, event: &Event, host: &mut dyn Host) -> Result<(), ExtError> {
        if !self.niced {
            // The session comes first: this worker (serializing for the plugin) yields
            // to the client's own threads when the CPU is short.
            crate::process::lower_thread_priority(19);
            self.niced = true;
        }
        if !self.ensure(host)? {
            self.lost += 1;
            return Ok(());
        }
        // Made once per event for every plugin that receives it.
        let json = event.wire.get_or_init(|| {
            serde_json::to_string(event)
                .map(Arc::from)
                .unwrap_or_else(|_| Arc::from("{}"))
        });
        let piece = match (&event.acp, self.acp) {
            (Some(acp), true) if json.ends_with('}') => {
                // The verbatim ACP line too: a line of its own for this plugin.
                let mut line = Vec::with_capacity(json.len() + acp.len() + 64);
                line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"event","params":"#);
                line.extend_from_slice(&json.as_bytes()[..json.len() - 1]);
                line.extend_from_slice(br#","acp":"#);
                line.extend_from_slice(
                    serde_json::to_string(acp.as_ref())
                        .unwrap_or_default()
                        .as_bytes(),
                );
                line.extend_from_slice(b"}}\n");
                Piece::Raw(line)
            }
            _ => Piece::Event(json.clone()),
        };
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
            facts: CallFacts::of(&ask.call),
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

    fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
        match ActionParams::of(action) {
            Some(a) => self.notify(host, "action", &a),
            None => Ok(()),
        }
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
                facts: CallFacts::of(call),
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
                facts: CallFacts::of(call),
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
        let id = self.next_id;
        self.next_id += 1;
        self.send(protocol::request(id, "sync", &serde_json::json!({})))?;
        self.pump(host, Some(id), Instant::now() + limit)?;
        self.diagnostics(host);
        Ok(())
    }

    fn on_shutdown(&mut self) {
        if self.proc.is_some() {
            let _ = self.send(protocol::notification("shutdown", &serde_json::json!({})));
        }
        self.kill();
    }
}

/// A cheap summary of a package's files (names, sizes, modification times).
fn fingerprint(root: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![root.to_path_buf()];
    let mut n = 0;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            n += 1;
            if n > crate::package::MAX_FILES {
                return h.finish();
            }
            let p = e.path();
            if p.file_name()
                .is_some_and(|f| f == ".git" || f == "__pycache__")
            {
                continue;
            }
            p.hash(&mut h);
            if let Ok(m) = e.metadata() {
                m.len().hash(&mut h);
                m.modified().ok().hash(&mut h);
                if m.is_dir() {
                    stack.push(p);
                }
            }
        }
    }
    h.finish()
}

/// The capabilities a plugin asks for, as names (for consent screens).
pub fn capability_names(caps: &[Capability]) -> Vec<&'static str> {
    caps.iter().map(|c| c.as_str()).collect()
}
