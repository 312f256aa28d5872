//! How a headless run ends: the session closed, what closing reported and the
//! extensions' diagnostics printed, and what the run's exit code and artifacts are made
//! from.

use std::time::Duration;

use trellis_driver::Note;

use super::Headless;

/// How long the end of a run waits for extensions to handle the events they were given
/// (each hook and plugin call has its own, shorter bound).
const FLUSH_LIMIT: Duration = Duration::from_secs(10);
use crate::budgets::Breach;
use crate::output::{lock, safe};

impl<W: std::io::Write + Send + 'static> Headless<'_, W> {
    /// Closes the session, prints what closing reported and the extensions' diagnostics,
    /// and says how the run ended.
    pub(super) async fn finish(mut self, mut notes: Vec<Note>) -> anyhow::Result<Finished> {
        let driver = &mut self.driver;
        driver.close("headless run finished", &mut notes).await;
        // What follows on stderr starts a line of its own.
        lock(&self.out).break_line();
        for note in notes.drain(..) {
            // (Its events are written: the output is the driver's observer.)
            if let Some(text) = said(note) {
                say!("trellis: {}", safe(&text));
            }
        }
        if let Some(hub) = &mut self.hub {
            hub.publish(driver, true);
        }
        // Extensions finish what they were given; their diagnostics close the stream.
        let now = driver.now();
        if driver.host.is_some() {
            driver.sync_extensions();
            if let Some(host) = &driver.host
                && !host.flush(FLUSH_LIMIT)
            {
                // Whatever it still had (a hook on the last event) never ran: said, not
                // left to look like a run that handled everything.
                for (name, n) in host.busy() {
                    say!(
                        "trellis: extension {} was still busy {} s after the session ended; {n} of its jobs were not handled",
                        safe(&name),
                        FLUSH_LIMIT.as_secs()
                    );
                }
            }
            // What they said meanwhile (a hook on the last events that failed) is said
            // too, before the diagnostics.
            for text in driver.last_news().into_iter().filter_map(said) {
                say!("trellis: {}", safe(&text));
            }
            if let Some(host) = &driver.host {
                lock(&self.out).status(&host.status(), now)?;
            }
        }
        let flushed = lock(&self.out).flush();
        if let Err(e) = flushed {
            // Closed after the session was: nothing is left to stop.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                self.signal.get_or_insert("SIGPIPE");
            }
            self.output_failed = Some(e);
        }
        if let Some(e) = self.output_failed.take()
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            return Err(anyhow::Error::from(e).context("the output could not be written"));
        }
        let session = &driver.session;
        // Counted without reading back the calls that left memory.
        let tally = session.ledger.tally();
        let reason = session
            .last_stop
            .clone()
            .or_else(|| session.agent_exited.as_ref().map(|_| "agent_exited".into()));
        if let Some(max) = self.rules.budgets.max_cost
            && !self.cost_seen
        {
            say!(
                "trellis: --max-cost {max}: the agent reported no cost, so the budget could not be enforced"
            );
        }
        self.seen.turns = self.turns;
        let wall = self.started.elapsed().as_secs_f64();
        let summary = self
            .rules
            .summary
            .then(|| crate::artifacts::summary(session, &self.seen, wall));
        let patch = self
            .rules
            .patch
            .as_ref()
            .map(|(cwd, base)| crate::artifacts::patch(session, cwd, base.as_deref()));
        Ok(Finished {
            reason,
            trace_id: [0; 16],
            summary,
            patch,
            breach: self.breach.clone(),
            signal: self.signal,
            failed: tally.count(trellis_core::ToolStatus::Failed),
            refused: self.refused,
            updates: session.counters.updates,
            output_bytes: tally.output_bytes,
            settings_failed: self.settings.failed,
            last_message: last_message(session),
            dial_refused: None,
        })
    }
}

pub(crate) struct Finished {
    pub(crate) reason: Option<String>,
    /// The session's trace (its spans' id, exported or not).
    pub(crate) trace_id: trellis_trace::TraceId,
    /// Trellis stopped the run itself (a budget, `--on-ask fail`).
    pub(crate) breach: Option<Breach>,
    /// The signal that stopped the run.
    pub(crate) signal: Option<&'static str>,
    /// `--summary`'s body (the run adds its exit code).
    pub(crate) summary: Option<serde_json::Value>,
    /// `--patch`'s text.
    pub(crate) patch: Option<String>,
    /// Calls that ended `failed`.
    pub(crate) failed: usize,
    /// Permission requests answered with anything but an allow.
    pub(crate) refused: usize,
    pub(crate) updates: u64,
    pub(crate) output_bytes: usize,
    /// A `--set` was unknown, invalid or refused: no prompt was sent.
    pub(crate) settings_failed: bool,
    /// The agent's last message (`--output-file`).
    pub(crate) last_message: Option<String>,
    /// The status an agent elsewhere refused the dial with (the run sets it).
    pub(crate) dial_refused: Option<u16>,
}

/// The text of the agent's last message in the session.
fn last_message(session: &trellis_core::Session) -> Option<String> {
    use trellis_core::transcript::{Entry, Role};
    session.transcript.iter().rev().find_map(|e| match e {
        Entry::Message(m) if m.role == Role::Agent => Some(m.text.clone()),
        _ => None,
    })
}

/// What a run says of `note` on stderr: a message as it is, a failure with where the rest
/// is counted.
pub(super) fn said(note: Note) -> Option<String> {
    match note {
        Note::Message(text) => Some(text),
        // Its later failures of the same kind are only counted, and the count is said
        // when the run ends (`Output::status`); one that was disabled fails no more.
        Note::Failure {
            text,
            stopped: false,
        } => Some(format!(
            "{text} (said once; later ones are counted, not said)"
        )),
        Note::Failure {
            text,
            stopped: true,
        } => Some(text),
        _ => None,
    }
}
