//! Headless output: normalized events as JSON Lines, or a readable transcript.

use std::io::Write;

use trellis_core::Session;
use trellis_core::event::{Event, EventBody, Role};
use trellis_core::summary::tool_line;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Text,
}

/// Text from the agent (or an extension) as it may be printed: control sequences made
/// visible (see `trellis_text::sanitize`).
pub fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    trellis_text::sanitize(text)
}

/// JSON lines gathered before they are written.
const BLOCK: usize = 1 << 16;

pub struct Output<W: Write> {
    out: W,
    format: Format,
    /// Role of the message being streamed on the current text line, if any.
    open_role: Option<(Role, Option<std::sync::Arc<str>>)>,
    /// JSON lines not yet handed to `out`: written in blocks at least as large as a
    /// `BufWriter`'s buffer, so they go straight through instead of being copied into it.
    pending: Vec<u8>,
    /// The output failed (its reader went away, the disk is full): nothing more is
    /// written. The first error waits here for [`Output::flush`] to report it, once.
    failed: Option<Failure>,
}

enum Failure {
    Unreported(std::io::Error),
    Reported,
}

/// The output as the run and the driver's observer share it.
pub type Shared<W> = std::sync::Arc<std::sync::Mutex<Output<W>>>;

/// Locks the shared output (a panic while it was held leaves it usable: it is only bytes).
pub fn lock<W: Write>(out: &Shared<W>) -> std::sync::MutexGuard<'_, Output<W>> {
    out.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes each event as the driver emits it: no event waits in the notes for the end of
/// its batch, holding its call's snapshot (see `Driver::calls_to_observers_only`).
pub struct Writer<W: Write>(pub Shared<W>);

impl<W: Write + Send> trellis_driver::Observer for Writer<W> {
    fn event(&mut self, ev: &Event, session: &Session) {
        // A failure is kept in the output for the loop's next flush.
        let _ = lock(&self.0).event(ev, session);
    }

    fn closed(&mut self) {}
}

impl<W: Write> Output<W> {
    pub fn new(out: W, format: Format) -> Self {
        Output {
            out,
            format,
            open_role: None,
            pending: Vec::new(),
            failed: None,
        }
    }

    /// Writes what is gathered. The first failure of the output (here or in any write
    /// before) is returned once; after it nothing is written and every call succeeds.
    pub fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.write_pending().and_then(|()| {
            if self.failed.is_some() {
                return Ok(());
            }
            let r = self.out.flush();
            self.check(r)
        });
        match self.failed.as_mut() {
            Some(f @ Failure::Unreported(_)) => match std::mem::replace(f, Failure::Reported) {
                Failure::Unreported(e) => Err(e),
                Failure::Reported => Ok(()),
            },
            _ => flushed,
        }
    }

    /// Notes a failed write (the first is kept); what follows is not written.
    fn check(&mut self, r: std::io::Result<()>) -> std::io::Result<()> {
        if let Err(e) = r
            && self.failed.is_none()
        {
            self.failed = Some(Failure::Unreported(e));
        }
        Ok(())
    }

    fn write_pending(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = if self.failed.is_some() {
            Ok(())
        } else {
            self.out.write_all(&self.pending)
        };
        self.pending.clear();
        if self.pending.capacity() > 4 * BLOCK {
            // One huge event does not keep its memory for the rest of the run.
            self.pending = Vec::new();
        }
        self.check(written)
    }

    /// In text, ends the agent's partial line (a message still streaming), so that a note
    /// on stderr starts a line of its own on a terminal that shows both.
    pub fn break_line(&mut self) {
        if self.format == Format::Text && self.failed.is_none() {
            let r = self.end_line().and_then(|()| self.out.flush());
            let _ = self.check(r);
        }
    }

    pub fn event(&mut self, ev: &Event, session: &Session) -> std::io::Result<()> {
        // Problems go to stderr in every format, so stdout stays machine-readable.
        match &ev.body {
            EventBody::Warning { message } => {
                self.break_line();
                say!("trellis: warning: {}", safe(message))
            }
            EventBody::AgentExited { message, .. } => {
                self.break_line();
                if session.remote.is_some() {
                    say!(
                        "trellis: {}",
                        safe(&trellis_core::session::connection_ended(message))
                    )
                } else {
                    say!("trellis: agent exited: {}", safe(message))
                }
            }
            _ => {}
        }
        if self.failed.is_some() {
            return Ok(());
        }
        match self.format {
            Format::Jsonl => {
                let mark = self.pending.len();
                if let Err(e) = trellis_core::event_json::write_event(&mut self.pending, ev) {
                    self.pending.truncate(mark);
                    return self.check(Err(std::io::Error::other(e)));
                }
                self.pending.push(b'\n');
                if self.pending.len() >= BLOCK {
                    self.write_pending()?;
                }
                Ok(())
            }
            Format::Text => {
                let r = self.text(ev, session);
                self.check(r)
            }
        }
    }

    /// The closing `status` event: extension diagnostics (JSON Lines), or a note on
    /// stderr when an extension is not healthy (text).
    pub fn status(
        &mut self,
        report: &trellis_ext_host::StatusReport,
        t: f64,
    ) -> std::io::Result<()> {
        // On stderr in sentences, in both formats, and only what was not said when it
        // happened: a disabled extension and each kind of failure were said then, once.
        // What is left is how many times each kind failed.
        for e in &report.extensions {
            let failed: u64 = e.failures.iter().map(|f| f.count).sum();
            if matches!(e.state, trellis_ext_host::ExtState::Degraded(_)) && failed > 1 {
                say!(
                    "trellis: extension {} failed {failed} times in this run",
                    safe(&e.name)
                );
            }
        }
        match self.format {
            Format::Jsonl => {
                self.write_pending()?;
                if self.failed.is_some() {
                    return Ok(());
                }
                let v = serde_json::json!({
                    "schema": trellis_core::SCHEMA_VERSION,
                    "type": "status",
                    "t": t,
                    "api_version": report.api_version,
                    "extensions": report.extensions,
                    "notes": report.notes,
                });
                let r = serde_json::to_writer(&mut self.out, &v)
                    .map_err(std::io::Error::from)
                    .and_then(|()| self.out.write_all(b"\n"));
                self.check(r)
            }
            Format::Text => Ok(()),
        }
    }

    fn end_line(&mut self) -> std::io::Result<()> {
        if self.open_role.take().is_some() {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn text(&mut self, ev: &Event, session: &Session) -> std::io::Result<()> {
        match &ev.body {
            EventBody::TurnStarted { prompt, .. } => {
                self.end_line()?;
                writeln!(self.out, "> {}", safe(prompt))
            }
            EventBody::MessageChunk {
                role: Role::User, ..
            } => Ok(()),
            EventBody::MessageChunk {
                role,
                text,
                subagent,
                ..
            } => {
                let who = (*role, subagent.clone());
                if self.open_role.as_ref() != Some(&who) {
                    self.end_line()?;
                    if subagent.is_some() {
                        write!(self.out, "  ⤷ ")?;
                    }
                    if *role == Role::Thought {
                        write!(self.out, "(thinking) ")?;
                    }
                    self.open_role = Some(who);
                }
                // A subagent's text stays indented under its parent.
                let text = safe(text);
                if subagent.is_some() {
                    self.out.write_all(text.replace('\n', "\n    ").as_bytes())
                } else {
                    self.out.write_all(text.as_bytes())
                }
            }
            EventBody::Subagent { subagent } if subagent.state.as_deref() == Some("idle") => {
                self.end_line()?;
                writeln!(
                    self.out,
                    "  {}",
                    safe(&trellis_core::summary::subagent_line(subagent))
                )
            }
            EventBody::ToolCallUpdated {
                previous_status,
                status,
                call,
            } => {
                let newly_done =
                    status.is_terminal() && previous_status.is_none_or(|p| !p.is_terminal());
                if newly_done {
                    self.end_line()?;
                    // Ended before (cancelled, say), then taken up again by the agent:
                    // the second end is said as what it is, not as another call.
                    let before = call.status_history[..call.status_history.len().saturating_sub(1)]
                        .iter()
                        .rev()
                        .find(|c| c.status.is_terminal())
                        .map(|c| c.status);
                    let again = before
                        .map(|b| format!(" — the agent ran it after it was {}", b.as_str()))
                        .unwrap_or_default();
                    writeln!(
                        self.out,
                        "{}{}{again}",
                        indent(call),
                        trellis_text::one_line(&tool_line(call, session))
                    )?;
                }
                Ok(())
            }
            EventBody::ToolCallCreated { call } if call.status.is_terminal() => {
                self.end_line()?;
                writeln!(
                    self.out,
                    "{}{}",
                    indent(call),
                    trellis_text::one_line(&tool_line(call, session))
                )
            }
            EventBody::TurnEnded { stop_reason, .. } => {
                self.end_line()?;
                // A turn's calls are the ledger's last ones (a call belongs to the turn
                // it was first seen in), counted from the tallies of its chunks: a turn's
                // end reads back none of its frozen calls, nor the earlier turns'.
                let (calls, failed, flagged) = session.ledger.turn_tally(session.turn);
                let flagged = if flagged > 0 {
                    format!(", {flagged} anomalous (⚑)")
                } else {
                    String::new()
                };
                // The stop in words where the reason is Trellis's own: an agent elsewhere
                // did not exit, its connection ended.
                let stop = match stop_reason.as_str() {
                    "agent_exited" if session.remote.is_some() => "connection ended",
                    "agent_exited" => "agent exited",
                    other => other,
                };
                writeln!(
                    self.out,
                    "— {} · {calls} tool calls, {failed} failed{flagged}",
                    safe(stop)
                )
            }
            EventBody::AgentExited { .. } => self.end_line(),
            _ => Ok(()),
        }
    }
}

impl<W: Write> Drop for Output<W> {
    /// What was gathered still reaches `out` (a `BufWriter` flushes itself when dropped).
    fn drop(&mut self) {
        let _ = self.write_pending();
    }
}

/// A subagent's call is indented under its parent's.
fn indent(call: &trellis_core::ToolCall) -> &'static str {
    if call.subagent.is_some() {
        "  ⤷ "
    } else {
        ""
    }
}
