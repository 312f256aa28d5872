//! The loop of `trellis run` once the session is set up: the driver's notes become
//! output, the user's settings are sent and answered before the first prompt, the prompts
//! follow one turn at a time, the headless policy answers what reaches the end of the
//! permission chain, and signals end the run the way Ctrl-C twice does.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use trellis_core::EventBody;
use trellis_core::permission::Policy;
use trellis_driver::{Driver, Note};

use crate::budgets::{Breach, Budgets};
use crate::output::{Output, Shared, Writer, lock, safe};

mod asks;
mod finish;

pub(crate) use finish::Finished;

/// How long a turn's end waits for extensions holding `drive` to catch up.
const SETTLE: Duration = Duration::from_secs(2);

/// What the run answers with and sends, as the user gave it.
pub(crate) struct Rules<'a> {
    /// The policy in place of the dialog (the user's rules are in the reducer).
    pub fallback: Policy,
    pub budgets: Budgets,
    /// `--summary`/`--summary-md` asked for: the summary is made when the run ends.
    pub summary: bool,
    /// `--patch` asked for: the session's directory and the commit it was at, if any.
    pub patch: Option<(PathBuf, Option<String>)>,
    pub answers: &'a crate::answers::Answers,
    /// `--set`: sent when the agent is ready, answered before the first prompt.
    pub sets: &'a [(String, String)],
    /// Files attached to the first prompt.
    pub files: &'a [PathBuf],
    /// How long the agent has to answer the settings.
    pub settings_timeout: Duration,
}

/// Where the settings stand.
#[derive(Default)]
struct Settings {
    /// Set up, settings sent.
    ready: bool,
    failed: bool,
    /// Answers to wait for (`settings_answered` reaching it), refusals seen before.
    due: u64,
    refused_before: u64,
    deadline: Option<tokio::time::Instant>,
}

pub(crate) struct Headless<'a, W: std::io::Write> {
    driver: Driver,
    /// Written as the driver emits events (its observer), flushed every round.
    out: Shared<W>,
    rules: Rules<'a>,
    queue: VecDeque<String>,
    settings: Settings,
    prompted: bool,
    /// Permission requests answered with anything but an allow.
    refused: usize,
    ctrl_c: u32,
    started: tokio::time::Instant,
    /// The last time the agent sent anything.
    heard: tokio::time::Instant,
    breach: Option<Breach>,
    /// After a breach cancelled the turn: when the agent is stopped regardless.
    grace_until: Option<tokio::time::Instant>,
    turns: u32,
    cost_seen: bool,
    /// The signal that stopped the run, if one did.
    signal: Option<&'static str>,
    seen: crate::artifacts::Seen,
    /// `--approve-via hub`: the run's hub, where requests nothing decided wait.
    hub: Option<crate::run_hub::RunHub>,
    /// The output failed (its reader went away, the disk is full): the session was ended.
    output_failed: Option<std::io::Error>,
}

impl<'a, W: std::io::Write + Send + 'static> Headless<'a, W> {
    pub(crate) fn new(
        mut driver: Driver,
        out: Output<W>,
        rules: Rules<'a>,
        prompts: &[String],
    ) -> Headless<'a, W> {
        let out: Shared<W> = std::sync::Arc::new(std::sync::Mutex::new(out));
        driver.observe(Box::new(Writer(out.clone())));
        driver.calls_to_observers_only();
        // Enforced by the reducer on every update (see `trellis_core::update::limit`).
        driver.session.call_limit = rules.budgets.max_tool_calls;
        Headless {
            driver,
            out,
            rules,
            queue: prompts.iter().cloned().collect(),
            settings: Settings::default(),
            prompted: false,
            refused: 0,
            ctrl_c: 0,
            started: tokio::time::Instant::now(),
            heard: tokio::time::Instant::now(),
            breach: None,
            grace_until: None,
            turns: 0,
            cost_seen: false,
            signal: None,
            seen: crate::artifacts::Seen::default(),
            hub: None,
            output_failed: None,
        }
    }

    /// Requests nothing decided wait for an answer through `hub` first.
    pub(crate) fn with_hub(mut self, hub: Option<crate::run_hub::RunHub>) -> Self {
        if let Some(h) = &hub {
            // Named after its hub, as `trellis ls` shows it: its events carry the name.
            self.driver.session.hub_session =
                Some(format!("{}:{}", h.name(), crate::run_hub::KEY).into());
        }
        self.hub = hub;
        self
    }

    /// Trellis stops the run itself: the turn is cancelled and given the grace period to
    /// end, then the agent and its terminals are stopped; every open request is answered;
    /// the log closes with the reason. Only the first breach counts.
    fn breach(&mut self, b: Breach, notes: &mut Vec<Note>) {
        if self.breach.is_some() {
            return;
        }
        let reason = b.reason();
        if self.driver.session.turn_open {
            self.say(&format!(
                "{reason}: cancelling the turn, then stopping the agent (within {} s)",
                self.rules.budgets.grace.as_secs_f64()
            ));
            // Passing `--max-tool-calls` cancelled the turn in the reducer already.
            if self.driver.session.limit_hit.is_none() {
                self.driver.cancel(notes);
            }
            self.grace_until = Some(tokio::time::Instant::now() + self.rules.budgets.grace);
        } else {
            self.say(&format!("{reason}: stopping the agent"));
            self.driver.end(&reason, notes);
        }
        self.breach = Some(b);
    }

    /// A note of Trellis's on stderr, on a line of its own (a text run's partial line of
    /// the agent's message is ended first, so the two never share a line).
    fn say(&self, text: &str) {
        lock(&self.out).break_line();
        say!("trellis: {text}");
    }

    /// Runs until the session is closed and drained, then closes it and says how it ended.
    pub(crate) async fn run(
        mut self,
        mut signals: trellis_os::signals::Signals,
    ) -> anyhow::Result<Finished> {
        let mut notes = Vec::new();
        let mut shown = Vec::new();
        loop {
            self.wait(&mut signals, &mut notes).await;
            // The notes of this round; `notes` collects what handling them produces (kept
            // apart and reused, so a round allocates nothing).
            std::mem::swap(&mut notes, &mut shown);
            for note in shown.drain(..) {
                self.note(note, &mut notes);
            }
            self.count_calls(&mut notes);
            // Notes produced while handling notes (the answers above) are shown next round.
            if !notes.is_empty() {
                continue;
            }
            self.first_prompt(&mut notes);
            if !notes.is_empty() {
                continue;
            }
            self.driver.deliver();
            if let Some(hub) = &mut self.hub {
                hub.publish(&self.driver, false);
            }
            let flushed = lock(&self.out).flush();
            if let Err(e) = flushed {
                self.output_failed(e, &mut notes);
                if !notes.is_empty() {
                    continue;
                }
            }
            if self.driver.closed() && self.driver.drained() {
                break;
            }
        }
        self.finish(notes).await
    }

    /// The output could not be written: the session ends as after a signal (the turn
    /// cancelled, open requests answered, the log closed with the reason, the agent
    /// stopped); nothing more is written to it.
    fn output_failed(&mut self, e: std::io::Error, notes: &mut Vec<Note>) {
        let why = if e.kind() == std::io::ErrorKind::BrokenPipe {
            // As a shell reports a process that SIGPIPE ended (Rust ignores the signal).
            self.signal.get_or_insert("SIGPIPE");
            "the output was closed".to_string()
        } else {
            format!("the output could not be written ({e})")
        };
        self.say(&format!("{why}: stopping the agent"));
        self.driver.end(&format!("stopped: {why}"), notes);
        self.output_failed = Some(e);
    }

    /// One round: the driver's input, the settings' deadline, a signal.
    async fn wait(&mut self, signals: &mut trellis_os::signals::Signals, notes: &mut Vec<Note>) {
        let deadline = self.settings.deadline;
        let b = &self.rules.budgets;
        // The earliest budget deadline still to watch, and what passing it means.
        let mut limit: Option<(tokio::time::Instant, Breach)> = None;
        if self.breach.is_none() {
            if let Some(t) = b.timeout {
                limit = Some((self.started + t, Breach::Timeout(t)));
            }
            // While a request waits for a human through the hub, the agent waits for us:
            // its silence is not idleness.
            let asking = self.hub.as_mut().is_some_and(|h| h.waiting(&self.driver));
            if let Some(t) = b.idle.filter(|_| !asking) {
                let at = self.heard + t;
                if limit.as_ref().is_none_or(|(l, _)| at < *l) {
                    let remote = self.driver.session.remote.clone();
                    limit = Some((at, Breach::Idle(t, remote)));
                }
            }
        }
        let grace = self.grace_until;
        let ask_until = self.hub.as_ref().and_then(|h| h.next_deadline());
        let sleep_until = |at: Option<tokio::time::Instant>| async move {
            match at {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            incoming = self.driver.recv() => {
                if matches!(incoming, trellis_driver::Incoming::Agent(_)) {
                    self.heard = tokio::time::Instant::now();
                }
                self.driver.handle(incoming, notes)
            }
            _ = sleep_until(limit.as_ref().map(|(at, _)| *at)) => {
                if let Some((_, b)) = limit {
                    self.breach(b, notes);
                }
            }
            _ = sleep_until(grace) => {
                self.grace_until = None;
                let reason = self.breach.as_ref().map(Breach::reason).unwrap_or_default();
                self.say("the turn did not end within the grace period: stopping the agent");
                self.driver.end(&reason, notes);
            }
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => {
                say!(
                    "trellis: the agent did not answer the settings (--set) within {} s: no prompt sent",
                    self.rules.settings_timeout.as_secs_f64()
                );
                self.settings.deadline = None;
                self.settings.failed = true;
                self.driver.end("the agent did not answer --set", notes);
            }
            call = async {
                match self.hub.as_mut() {
                    Some(h) => h.next_call().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(hub) = self.hub.as_mut() {
                    hub.remote(call, &mut self.driver, notes);
                }
                // An answer ends the agent's wait on us: its silence counts from now.
                self.heard = tokio::time::Instant::now();
            }
            _ = sleep_until(ask_until) => self.asks_expired(notes),
            sig = signals.recv() => {
                // SIGTERM / SIGHUP: like Ctrl-C twice — cancel (open requests are answered
                // `cancelled`), close the log, stop the agent and its terminals.
                self.say(&format!("{sig}: cancelling the turn and stopping the agent"));
                self.signal.get_or_insert(sig);
                self.driver.end(&format!("stopped by {sig}"), notes);
            }
            _ = trellis_os::signals::interrupt() => {
                self.ctrl_c += 1;
                if self.ctrl_c == 1 && self.driver.session.turn_open {
                    self.say("cancelling the turn (Ctrl-C again to stop the agent)");
                    self.driver.cancel(notes);
                } else {
                    self.say("stopping the agent");
                    self.signal.get_or_insert("SIGINT");
                    self.driver.end("stopped by Ctrl-C", notes);
                }
            }
        }
    }

    /// A note of the round (its events are written already, as they were emitted).
    fn note(&mut self, note: Note, notes: &mut Vec<Note>) {
        match note {
            Note::Event(ev) => self.event(&ev.body, notes),
            // Not advertised headless (no terminal to lend): an agent that asks all the
            // same is told the login cannot run, and setup fails saying so.
            Note::Login(_) => self.driver.login_done(false),
            Note::Question { request_id } => self.question(&request_id, notes),
            Note::Dialog { request_id } => self.dialog(request_id, notes),
            Note::Ready if !self.settings.ready => self.send_settings(notes),
            n @ (Note::Message(_) | Note::Failure { .. }) => {
                if let Some(text) = finish::said(n) {
                    self.say(&safe(&text));
                }
            }
            Note::Ready
            | Note::Stderr(_)
            | Note::TerminalOutput { .. }
            | Note::OpenInspector(_)
            | Note::Repaint
            // (a headless run replays nothing)
            | Note::Touched(_)
            | Note::Closed => {}
        }
    }

    /// `--max-tool-calls`: the reducer checks it on every update (the call past it
    /// cancels the turn there, and nothing past it completes); the run says so and ends.
    fn count_calls(&mut self, notes: &mut Vec<Note>) {
        if let (Some(max), Some(started), None) = (
            self.rules.budgets.max_tool_calls,
            self.driver.session.limit_hit,
            &self.breach,
        ) {
            self.breach(
                Breach::Budget(format!(
                    "{started} tool calls started, --max-tool-calls {max}"
                )),
                notes,
            );
        }
    }

    fn event(&mut self, body: &EventBody, notes: &mut Vec<Note>) {
        match body {
            EventBody::PermissionResolved {
                outcome,
                call_id,
                decider,
                reason,
                ..
            } => {
                self.refused += usize::from(!outcome.is_allowed());
                if !outcome.is_allowed() {
                    let s = &self.driver.session;
                    let title = s
                        .ledger
                        .position(call_id)
                        .map(|p| trellis_core::enrich::card_title(&s.ledger.at(p)))
                        .unwrap_or_else(|| call_id.clone());
                    self.seen
                        .denials
                        .push((title, decider.to_string(), reason.clone()));
                }
            }
            EventBody::FileWritten { path, .. } => self.seen.written.push(path.clone()),
            EventBody::Usage { .. } => {
                let cost = self
                    .driver
                    .session
                    .usage
                    .as_ref()
                    .and_then(|u| u.cost.as_ref())
                    .map(|c| (c.amount, c.currency.clone()));
                if let Some((amount, currency)) = cost {
                    self.cost_seen = true;
                    if let Some(max) = self.rules.budgets.max_cost
                        && amount > max
                    {
                        self.breach(
                            Breach::Budget(format!("cost {amount} {currency}, --max-cost {max}")),
                            notes,
                        );
                    }
                }
            }
            EventBody::TurnStarted { .. } => self.turns += 1,
            // The agent's question, if still open and no extension may take it: answered
            // from --answers or declined (else when extensions let go of it:
            // `Note::Question`).
            EventBody::ElicitationRequested { elicitation }
                if !self
                    .driver
                    .host
                    .as_ref()
                    .is_some_and(|h| h.has_question_claimants()) =>
            {
                self.question(&elicitation.request_id, notes);
            }
            EventBody::TurnEnded { stop_reason, .. } => self.turn_ended(stop_reason, notes),
            _ => {}
        }
    }

    /// A turn ended: an extension holding `drive` may answer it with a prompt of its own
    /// (that goes first); else the next of the user's prompts if this one ended normally;
    /// else the run ends.
    fn turn_ended(&mut self, stop_reason: &str, notes: &mut Vec<Note>) {
        if let Some(b) = &self.breach {
            // The turn a budget cancelled ended in time: the run ends here.
            let reason = b.reason();
            self.grace_until = None;
            self.driver.end(&reason, notes);
            return;
        }
        self.driver.settle(SETTLE, notes);
        let more =
            self.driver.driven_pending() || (stop_reason == "end_turn" && !self.queue.is_empty());
        if let Some(max) = self.rules.budgets.max_turns
            && more
            && self.turns >= max
        {
            let left = self.queue.len();
            let more = match self.driver.driven_said() {
                Some(what) => format!(" and {what} not sent"),
                None if self.driver.driven_pending() => " and one from an extension".to_string(),
                None => String::new(),
            };
            self.breach(
                Breach::Budget(format!(
                    "--max-turns {max} reached with {left} prompt(s) of yours left{more}"
                )),
                notes,
            );
            return;
        }
        if self.driver.driven_pending() {
            // Its turn comes first; the user's next prompt after it.
        } else if stop_reason == "end_turn"
            && let Some(next) = self.queue.pop_front()
        {
            self.driver.prompt(next, Vec::new());
        } else {
            if !self.queue.is_empty() {
                self.say(&format!(
                    "the turn ended with {}: {} prompt(s) not sent",
                    safe(stop_reason),
                    self.queue.len()
                ));
            }
            self.driver.end("headless run finished", notes);
        }
    }

    /// The agent is set up: the user's settings are checked and sent; the first prompt
    /// waits for their answers.
    fn send_settings(&mut self, notes: &mut Vec<Note>) {
        let st = &mut self.settings;
        st.ready = true;
        let before = self.driver.session.settings_answered;
        let mut checked = Vec::new();
        for (k, v) in self.rules.sets {
            match self.driver.resolve_setting(k, v) {
                Ok(s) => checked.push(s),
                Err(e) => {
                    say!("trellis: --set {}={}: {}", safe(k), safe(v), safe(&e));
                    st.failed = true;
                }
            }
        }
        let mut sent = 0;
        if !st.failed {
            for s in checked {
                say!("trellis: setting {}", safe(&s.to_string()));
                self.driver.send_setting(s);
                sent += 1;
            }
        }
        st.due = before + sent;
        if sent > 0 {
            st.deadline = Some(tokio::time::Instant::now() + self.rules.settings_timeout);
        }
        st.refused_before = self.driver.session.settings_refused;
        if st.failed {
            self.driver.end("a --set was not accepted", notes);
        }
    }

    /// Once every setting is answered (and none refused), the first prompt.
    fn first_prompt(&mut self, notes: &mut Vec<Note>) {
        let st = &mut self.settings;
        let session = &self.driver.session;
        if !st.ready || self.prompted || st.failed || session.settings_answered < st.due {
            return;
        }
        if session.settings_refused > st.refused_before {
            // The agent's reason is on stderr already (a warning).
            say!("trellis: the agent refused a --set: no prompt sent");
            st.failed = true;
            self.driver.end("a --set was refused", notes);
            return;
        }
        self.prompted = true;
        st.deadline = None;
        if let Some(first) = self.queue.pop_front() {
            self.driver.prompt(first, self.rules.files.to_vec());
        }
    }
}
