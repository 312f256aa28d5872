//! The session driver: one per session, the same for every front end. It owns the agent
//! connection, the reduced session state and the extension host, and runs the loop that
//! ties them together — agent input through the reducer, effects performed at the edges,
//! events to extensions, the permission chain, the closing sequence. Front ends (the UI,
//! headless `trellis run`) only take what it reports ([`Note`]s) and give it intents.
//!
//! Invariants:
//! - State changes only through [`trellis_core::update`], here; front ends read
//!   [`Driver::session`] and never change it.
//! - [`Driver::recv`] is cancel-safe (it only receives), so a front end can `select!` it
//!   beside its own inputs; [`Driver::handle`] then applies what was received.
//! - Every permission request is answered exactly once: by a rule, an extension, the
//!   front end's decision ([`Note::Dialog`]), `cancelled` on cancel or close, or closed as
//!   `agent exited` when the agent is gone.
//! - [`Driver::close`] leaves nothing running: the turn is cancelled, a closing record is
//!   written, the agent and its terminals are stopped, and it waits (bounded) for the
//!   connection to say so.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod attached;
mod bulk;
pub mod claims;
mod effects;
mod extensions;
mod intents;
pub mod replay;
mod resume;
pub mod rules;
mod settings;

pub use resume::Resumed;
pub use settings::Setting;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;
use trellis_acp::{Command, Handle, Input};
use trellis_core::session::LocalRecord;
use trellis_core::{Action, Effect, Event, Session};
use trellis_ext_host::{ExtHost, HostMsg};

/// Most agent inputs applied in one [`Driver::handle`] (a front end looks at its own
/// inputs between batches).
pub const BATCH: usize = 512;
/// Longest a replay reads in before front ends draw and read keys again.
pub const REPLAY_SLICE: Duration = Duration::from_millis(25);

/// How long [`Driver::close`] waits for the agent and its terminals to stop.
const CLOSE_WAIT: Duration = Duration::from_secs(6);

/// A live agent: the connection handle and what it reports.
pub struct Connection {
    pub handle: Handle,
    pub rx: trellis_acp::Inputs,
}

/// What [`Driver::recv`] received, for [`Driver::handle`].
#[derive(Debug)]
pub enum Incoming {
    Agent(Input),
    Ext(HostMsg),
    /// An extension's claim on a permission request reached its deadline.
    Deadline,
    /// Records of a log being replayed (see [`Driver::replay`]).
    Replay(replay::Fed),
}

/// What a front end shows or acts on.
#[derive(Debug, Clone)]
pub enum Note {
    /// An event of the session (after the connection performed its effects).
    Event(Event),
    /// A permission request went through rules and extensions undecided: the person
    /// (UI dialog) or the headless policy decides, through [`Driver::decide`].
    Dialog { request_id: String },
    /// An agent's question no extension answered: the person (UI dialog) or, headless,
    /// `--answers` and the default decline answer it, through [`Driver::elicit`].
    Question { request_id: String },
    /// A client terminal's output grew.
    TerminalOutput { terminal_id: String },
    /// Something to tell the user (a warning from the connection, an extension's notice).
    Message(String),
    /// An extension or hook failed (each kind once, or it was disabled): the front end
    /// says it where the user looks, with where to see more.
    Failure { text: String, stopped: bool },
    /// An extension asks to show a call in the inspector.
    OpenInspector(String),
    /// An extension's contributions changed.
    Repaint,
    /// The agent asks the user to log in by running it in the terminal: the front end
    /// runs `Login` (the UI, outside its full screen) and answers [`Driver::login_done`].
    Login(trellis_acp::Login),
    /// The agent is set up; prompts are sent now.
    Ready,
    /// A line of the agent's stderr (logged already).
    Stderr(String),
    /// The connection is over (its last records follow as events).
    Closed,
    /// A slice of a recording being read in: the calls its events were about (ledger
    /// places), in place of the events themselves (nobody is alerted by a replay; a view
    /// only needs to know which cards it drew changed).
    Touched(Vec<usize>),
}

/// The origin of a queued prompt that carries a reject's reason to the agent.
pub(crate) const REASON_ORIGIN: &str = "\0reason";

/// How long closing waits for the session index to take the log's last records (the
/// log is registered: what is left is read by the next `trellis sessions` command).
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

pub struct Driver {
    /// The session as reduced from the log's records (read-only for front ends).
    pub session: Session,
    /// The extension host (none in bare tests).
    pub host: Option<ExtHost>,
    ext_rx: Option<UnboundedReceiver<HostMsg>>,
    conn: Option<Connection>,
    /// The clock when there is no connection (a replay).
    start: Instant,
    ready: bool,
    closed: bool,
    /// The closing record is written (its action may not have come back yet).
    ending: bool,
    /// Prompts extensions sent while a turn ran, and reasons given with rejects (the
    /// reducer's `Effect::Prompt`): (origin, text), sent in order as turns end.
    driven: VecDeque<(String, String)>,
    /// A prompt was handed to the connection and its turn has not started yet.
    prompt_in_flight: bool,
    /// Prompts handed to the connection (each starts one turn).
    prompted: u32,
    /// What became of the MCP servers offered at setup (for `/status`).
    pub mcp: Vec<trellis_acp::McpOffer>,
    /// Keeps the session history up to date with this session's log.
    history: Option<Box<dyn History>>,
    /// A document sent with the next prompt (an earlier session carried into this one).
    carry: Option<trellis_acp::Embedded>,
    /// Where finished calls' output goes once it leaves memory (see `bulk`).
    bulk: Option<bulk::Bulk>,
    /// A log being read into the session while it is shown (see [`Driver::replay`]).
    feed: Option<replay::Feed>,
    /// While a slice of it is folded in: the places its events were about.
    touched: Option<Vec<usize>>,
    /// A resumed session whose history is being read in (see [`Driver::resume`]).
    resumed: Option<resume::Resumed>,
    /// A session that runs in a hub elsewhere: intents go there (see `attached`).
    remote: Option<std::sync::mpsc::Sender<attached::Remote>>,
    /// Attached as an observer (see [`Driver::observing`]).
    observing: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Sees every event of the session as it is emitted (traces): it must be quick.
    observers: Vec<Box<dyn Observer>>,
    /// Tool call events go to observers only, not to the notes (see
    /// [`Driver::calls_to_observers_only`]).
    calls_unnoted: bool,
    /// While a batch of the agent's input is applied: the time it began, which
    /// [`Driver::now`] gives (a clock reading per frame cost more than the batch lasts).
    batch_now: Option<f64>,
    /// The reducer's effects vector, kept empty between actions so that applying one
    /// does not allocate it afresh.
    spare_fx: Vec<Effect>,
    /// The rules saved from "always" answers, newest first (see [`rules`]).
    pub saved_rules: Vec<rules::SavedRule>,
}

/// What keeps the session history up to date as a session runs (the binary gives the
/// search index's background reader): told when a turn's log is synced, asked to catch
/// up when the session closes. The driver knows no database.
pub trait History: Send {
    /// A turn ended and its log is synced: worth reading now.
    fn turn_synced(&self);
    /// The session is over: one last read, waited for at most `wait`. What to tell the
    /// user when the session may be missing from the history.
    fn finish(&mut self, wait: std::time::Duration) -> Option<String>;
}

/// Starts the agent again, continuing the session log from an origin (Ctrl-R after the
/// agent ended).
pub type Restart =
    Box<dyn FnMut(trellis_acp::Origin, Option<String>) -> Result<Connection, String> + Send>;

/// Something that sees a session's events as they are emitted, and its end (the trace
/// exporter). It runs on the session's path: it must be quick.
pub trait Observer: Send {
    /// `ev` was just emitted; `session` is as the action that emitted it left it.
    fn event(&mut self, ev: &Event, session: &Session);
    /// The session is closed: nothing more comes.
    fn closed(&mut self);
}

impl Driver {
    /// A driver without an agent (a replay, tests): intents change nothing but what
    /// extensions do.
    pub fn offline(session: Session) -> Driver {
        Driver {
            session,
            host: None,
            ext_rx: None,
            conn: None,
            start: Instant::now(),
            ready: false,
            closed: true,
            ending: false,
            driven: VecDeque::new(),
            prompt_in_flight: false,
            prompted: 0,
            mcp: Vec::new(),
            history: None,
            carry: None,
            bulk: None,
            feed: None,
            touched: None,
            resumed: None,
            remote: None,
            observing: None,
            observers: Vec::new(),
            calls_unnoted: false,
            batch_now: None,
            spare_fx: Vec::new(),
            saved_rules: Vec::new(),
        }
    }

    /// Lets `o` see every event of the session as it is emitted, live or read again from
    /// a log (the trace exporter, a hub's hub-wide plugins): it runs on the session's path,
    /// so it must be quick.
    pub fn observe(&mut self, o: Box<dyn Observer>) {
        self.observers.push(o);
    }

    /// Tool call events (created, updated) reach observers only, not the notes: a front
    /// end that takes every event from an observer (headless output) does not hold each
    /// call's snapshot until the end of the batch, and the ledger then changes its calls
    /// in place instead of copying them at their next update.
    pub fn calls_to_observers_only(&mut self) {
        self.calls_unnoted = true;
    }

    /// A driver for a live agent.
    pub fn new(session: Session, conn: Connection) -> Driver {
        let mut d = Driver::offline(session);
        d.conn = Some(conn);
        d.closed = false;
        d
    }

    /// Installs the extension host and its message channel.
    pub fn set_host(&mut self, mut host: ExtHost, rx: UnboundedReceiver<HostMsg>) {
        if let Some(cold) = self.session.ledger.cold() {
            host.set_cold(cold.clone());
        }
        // The mirror reads calls from the ledger when synced (see `Driver::deliver`).
        host.defer_calls();
        self.host = Some(host);
        self.ext_rx = Some(rx);
    }

    /// Sends `doc` with the next prompt (once).
    pub fn carry(&mut self, doc: trellis_acp::Embedded) {
        self.carry = Some(doc);
    }

    /// Indexes the session's log at every turn end and when it closes.
    /// Finished calls' output may leave memory for `log` (this session's log, which the
    /// connection writes every frame to before the reducer sees it): beyond
    /// [`bulk::HELD_BUDGET`] bytes held, the output of the calls that finished longest ago
    /// is read back from the log when asked for.
    pub fn keep_output_in_log(&mut self, log: &std::path::Path) {
        // `TRELLIS_HELD_OUTPUT` (bytes) sets the budget, for tests of what the log keeps.
        let budget = std::env::var("TRELLIS_HELD_OUTPUT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(bulk::HELD_BUDGET);
        self.keep_output_in_log_within(log, budget);
    }

    /// Where finished calls' output is kept, for `/status` (`None`: all in memory).
    pub fn output_held(&self) -> Option<String> {
        self.bulk.as_ref().map(bulk::Bulk::line)
    }

    /// [`Driver::keep_output_in_log`] with another budget (tests).
    pub fn keep_output_in_log_within(&mut self, log: &std::path::Path, budget: usize) {
        let bulk = bulk::Bulk::new(log, &self.session, budget);
        if let Some(cold) = &bulk.cold {
            self.session.ledger.set_cold(cold.clone());
            if let Some(h) = self.host.as_mut() {
                h.set_cold(cold.clone());
            }
        }
        self.bulk = Some(bulk);
    }

    /// Keeps the session history up to date with this session's log (see [`History`]).
    pub fn set_history(&mut self, history: Box<dyn History>) {
        self.history = Some(history);
    }

    /// What the extensions said after the session stopped being pumped (a failure of a
    /// hook on the last events, one disabled): their notices, for a front end that is
    /// ending to say them still.
    pub fn last_news(&mut self) -> Vec<Note> {
        let mut out = Vec::new();
        let (Some(rx), Some(host)) = (self.ext_rx.as_mut(), self.host.as_mut()) else {
            return out;
        };
        let now = self.start.elapsed().as_secs_f64();
        while let Ok(msg) = rx.try_recv() {
            for o in host.on_msg(msg, now) {
                match o {
                    trellis_ext_host::Out::Notice(text) => out.push(Note::Message(text)),
                    trellis_ext_host::Out::Failure { text, stopped } => {
                        out.push(Note::Failure { text, stopped })
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Takes the host's message channel (tests that pump it by hand).
    pub fn take_host_rx(&mut self) -> Option<UnboundedReceiver<HostMsg>> {
        self.ext_rx.take()
    }

    /// Attaches a connection: the first, or a new one for the same session (the agent
    /// restarted after it ended).
    pub fn connect(&mut self, conn: Connection) {
        self.conn = Some(conn);
        self.closed = false;
        self.ending = false;
        self.ready = false;
    }

    pub fn connection(&self) -> Option<&Handle> {
        self.conn.as_ref().map(|c| &c.handle)
    }

    /// Session time: the recorder's clock, or time since the driver started.
    pub fn now(&self) -> f64 {
        if let Some(t) = self.batch_now {
            return t;
        }
        match &self.conn {
            Some(c) => c.handle.recorder().now(),
            None => self.start.elapsed().as_secs_f64(),
        }
    }

    /// True once the agent is set up (and until the connection closes).
    pub fn ready(&self) -> bool {
        // An attached session's prompts go to its hub, which holds them until it is.
        if self.remote.is_some() {
            return true;
        }
        self.ready && !self.closed
    }

    /// True when the connection has closed (or there never was one).
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Whether anything from the connection is still waiting to be handled.
    pub fn drained(&self) -> bool {
        self.conn.as_ref().is_none_or(|c| c.rx.is_empty())
    }

    /// Waits for the next thing to handle. Cancel-safe. Pends forever when nothing can
    /// come any more (no connection input, no extension, no deadline).
    pub async fn recv(&mut self) -> Incoming {
        let deadline = self
            .host
            .as_ref()
            .and_then(ExtHost::next_deadline)
            .map(|d| Duration::from_secs_f64((d - self.now()).max(0.0)));
        // Events held for plugins during a storm go when it pauses.
        let held = self.host.as_ref().and_then(ExtHost::held_for);
        let deadline = match (deadline, held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A resumed session's agent waits until its history is read in.
        let conn = self.conn.as_mut().filter(|_| self.resumed.is_none());
        let ext = self.ext_rx.as_mut();
        let feed = self.feed.as_mut();
        tokio::select! {
            Some(fed) = async {
                match feed {
                    Some(f) => f.rx.recv().await,
                    None => std::future::pending().await,
                }
            } => Incoming::Replay(fed),
            Some(input) = async {
                match conn {
                    Some(c) => c.rx.recv().await,
                    None => std::future::pending().await,
                }
            } => Incoming::Agent(input),
            // A closed channel (the host is gone) disables its branch: nothing more comes.
            Some(msg) = async {
                match ext {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            } => Incoming::Ext(msg),
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => Incoming::Deadline,
        }
    }

    /// Applies what [`Driver::recv`] returned (and, for agent input, what else is already
    /// waiting, up to [`BATCH`]); what front ends must see goes to `notes`.
    pub fn handle(&mut self, incoming: Incoming, notes: &mut Vec<Note>) {
        match incoming {
            Incoming::Replay(fed) => self.replayed(fed, notes),
            Incoming::Agent(input) => {
                let mut next = Some(input);
                let mut n = 0;
                self.batch_now = Some(self.now());
                while let Some(input) = next.take() {
                    self.input(input, notes);
                    n += 1;
                    if n < BATCH {
                        next = self.conn.as_mut().and_then(|c| c.rx.try_recv().ok());
                    }
                }
                self.batch_now = None;
                // Chunks of finished calls leave memory (when a spill file is set).
                self.session.ledger.settle();
            }
            Incoming::Ext(msg) => {
                let mut next = Some(msg);
                while let Some(msg) = next.take() {
                    let now = self.now();
                    let outs = match self.host.as_mut() {
                        Some(h) => h.on_msg(msg, now),
                        None => Vec::new(),
                    };
                    self.outs(outs, notes);
                    next = self.ext_rx.as_mut().and_then(|r| r.try_recv().ok());
                }
            }
            Incoming::Deadline => {
                let now = self.now() + 0.001;
                let outs = match self.host.as_mut() {
                    Some(h) => h.tick(now),
                    None => Vec::new(),
                };
                self.outs(outs, notes);
            }
        }
        self.deliver();
    }

    fn input(&mut self, input: Input, notes: &mut Vec<Note>) {
        match input {
            Input::Action(action) => self.recorded(action, notes),
            Input::Forked => {
                // The agent remembers the conversation itself: no transcript is sent.
                self.carry = None;
                let text = "the agent forked its own session (session/fork): it remembers the conversation, so no transcript is sent";
                if let Some(c) = &self.conn {
                    c.handle
                        .recorder()
                        .local(LocalRecord::Mark { text: text.into() });
                }
                notes.push(Note::Message(text.into()));
            }
            Input::Ready => {
                self.ready = true;
                notes.push(Note::Ready);
            }
            Input::Login(login) => {
                if let Some(c) = &self.conn {
                    c.handle.recorder().local(LocalRecord::Mark {
                        text: format!(
                            "the agent asks for a login in the terminal ({}): {}",
                            login.name,
                            login.command_line()
                        ),
                    });
                }
                notes.push(Note::Login(login));
            }
            Input::Stderr(line) => notes.push(Note::Stderr(line)),
            Input::Mcp(offers) => {
                for o in offers.iter().filter(|o| o.refused.is_some()) {
                    notes.push(Note::Message(format!("MCP server {}", o.line())));
                }
                self.mcp = offers;
            }
            Input::Warning(w) => notes.push(Note::Message(w)),
            Input::Closed { error } => {
                self.closed = true;
                self.ready = false;
                // An agent that ended on its own: say so in the log (and close what it
                // left open). A session we ended ourselves has its closing record.
                if self.session.agent_exited.is_none()
                    && self.session.ended.is_none()
                    && let Some(c) = &self.conn
                {
                    let message = error.unwrap_or_else(|| "the agent closed the connection".into());
                    c.handle.recorder().local(LocalRecord::AgentExited {
                        code: None,
                        message,
                    });
                } else if !self.session.open_permissions().is_empty()
                    && let Some(c) = &self.conn
                {
                    // A session we ended, with requests that came in meanwhile: closed too.
                    c.handle.recorder().local(LocalRecord::ConnectionClosed);
                } else if self.session.agent_exited.is_some()
                    && self.session.ended.is_none()
                    && let (Some(c), Some(e)) = (&self.conn, &error)
                {
                    // A restart (or a dial again) that failed: on the record and on the
                    // screen, not only in a message the next key clears.
                    let again = if self.session.remote.is_some() {
                        "dialed"
                    } else {
                        "started"
                    };
                    c.handle.recorder().local(LocalRecord::Mark {
                        text: format!("the agent could not be {again} again: {e}"),
                    });
                }
                notes.push(Note::Closed);
            }
        }
    }

    /// Applies an action as it was recorded (the agent's, or a client record).
    pub(crate) fn recorded(&mut self, action: Action, notes: &mut Vec<Note>) {
        if let Action::Local { record, .. } = &action
            && let LocalRecord::TerminalOutput { terminal_id, .. } = &**record
        {
            notes.push(Note::TerminalOutput {
                terminal_id: terminal_id.clone(),
            });
        }
        self.apply(action, notes);
    }

    /// Ends the session now: the turn cancelled, the closing record `reason` written, the
    /// agent told to stop. The connection reports [`Note::Closed`] once it has.
    pub fn end(&mut self, reason: &str, notes: &mut Vec<Note>) {
        if !self.ending && self.session.ended.is_none() && self.session.agent_exited.is_none() {
            self.ending = true;
            self.cancel(notes);
            if let Some(c) = &self.conn {
                c.handle.recorder().local(LocalRecord::SessionEnded {
                    reason: reason.to_string(),
                });
            }
        }
        if let Some(c) = &self.conn {
            c.handle.send(Command::Shutdown);
        }
    }

    /// [`Driver::end`], then waits (at most a few seconds) until the agent and its
    /// terminals are stopped, handling what the connection still reports; the log is
    /// synced last.
    pub async fn close(&mut self, reason: &str, notes: &mut Vec<Note>) {
        self.end(reason, notes);
        let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
        while !self.closed {
            let Some(c) = self.conn.as_mut() else { break };
            match tokio::time::timeout_at(deadline, c.rx.recv()).await {
                Ok(Some(input)) => self.input(input, notes),
                Ok(None) | Err(_) => break,
            }
        }
        // The records the agent's exit wrote after `Closed`.
        while let Some(input) = self.conn.as_mut().and_then(|c| c.rx.try_recv().ok()) {
            self.input(input, notes);
        }
        if let Some(h) = &self.host {
            self.sync_extensions();
            h.deliver();
        }
        for o in &mut self.observers {
            o.closed();
        }
        if let Some(c) = &self.conn {
            c.handle.recorder().sync();
        }
        if let Some(h) = self.history.as_mut()
            && let Some(why) = h.finish(INDEX_WAIT)
        {
            notes.push(Note::Message(why));
        }
    }
}
