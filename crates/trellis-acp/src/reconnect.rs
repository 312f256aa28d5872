//! A connection kept up: a local agent runs once, but a connection to an agent elsewhere
//! that drops is dialed again, with backoff, and its session taken up again
//! (`session/resume`, else `session/load`) when the agent offers it; otherwise the
//! session ends, saying why.
//!
//! What the log shows of a gap: the loss as the agent's exit (the turn ends
//! `agent_exited`, the calls in flight are marked unfinished, every open request is
//! answered once, `cancelled`), then, once dialed again, a mark saying after how long and
//! which session the agent took up. Prompts sent meanwhile wait for the connection; a
//! quit ends the wait at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;
use trellis_core::LocalRecord;

use tokio::sync::mpsc::unbounded_channel;

use crate::client::{Command, Handle, run};
use crate::inputs::Input;
use crate::link::{Carried, Link};
use crate::recorder::{LogSink, Recorder};
use crate::responders::Responders;
use crate::spec::AgentSpec;

/// The waits before each new dial: 1 + 2 + 4 + 8 + 16 s, then the session ends.
const BACKOFF: [Duration; 5] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
];

/// Starts the agent and the connection on the current tokio runtime.
pub fn start(spec: AgentSpec, sink: Box<dyn LogSink>) -> (Handle, crate::inputs::Inputs) {
    start_at(spec, sink, crate::recorder::Origin::default())
}

/// [`start`], continuing a session log from `origin` (an agent restarted after it died).
pub fn start_at(
    spec: AgentSpec,
    sink: Box<dyn LogSink>,
    origin: crate::recorder::Origin,
) -> (Handle, crate::inputs::Inputs) {
    let (tx, rx) = crate::inputs::channel();
    let (cmd_tx, cmd_rx) = unbounded_channel();
    let recorder = Recorder::with_origin(sink, tx.clone(), origin);
    recorder.keep_lines(spec.keep_lines);
    let responders = Arc::new(Mutex::new(Responders::default()));
    let handle = Handle {
        cmd: cmd_tx,
        responders: responders.clone(),
        recorder: recorder.clone(),
    };
    tokio::spawn(async move {
        let result = keep_connected(
            spec,
            Link {
                recorder: recorder.clone(),
                responders,
                tx: tx.clone(),
            },
            cmd_rx,
        )
        .await;
        let _ = tx.send(Input::Closed {
            error: result.err(),
        });
    });
    let inputs = handle.recorder.inputs(rx);
    (handle, inputs)
}

/// Runs the session's connections until it ends: one for a local agent; for an agent
/// elsewhere, again after a loss while its session can be taken up.
pub(crate) async fn keep_connected(
    mut spec: AgentSpec,
    link: Link,
    mut cmd_rx: UnboundedReceiver<Command>,
) -> Result<(), String> {
    let stopping = Arc::new(AtomicBool::new(false));
    let carried = Arc::new(Mutex::new(Carried::default()));
    let mut pending = VecDeque::new();
    let mut tries = 0usize;
    loop {
        carried.lock().unwrap_or_else(|e| e.into_inner()).up = false;
        let result = run(
            spec.clone(),
            &link,
            &mut cmd_rx,
            &mut pending,
            &carried,
            &stopping,
        )
        .await;
        let stopped = stopping.load(Ordering::Relaxed);
        link.close_open(if stopped {
            "connection closed"
        } else {
            "agent exited"
        });
        let Err(why) = result else {
            return Ok(());
        };
        let (up, session, resumable) = {
            let c = carried.lock().unwrap_or_else(|e| e.into_inner());
            (c.up, c.session.clone(), c.resumable)
        };
        if stopped || spec.remote.is_none() || session.is_none() {
            return Err(why);
        }
        if up {
            // The loss of a connection that was working: its turn and its calls end
            // here, on the record.
            if !resumable {
                return Err(format!(
                    "{why}; the agent offers neither session/resume nor session/load, so its session cannot be taken up again"
                ));
            }
            if spec.remote.as_ref().is_some_and(|r| !r.redial) {
                // A headless run: it ends with this turn, so nothing is dialed for it.
                return Err(why);
            }
            link.recorder.local(LocalRecord::AgentExited {
                code: None,
                message: format!("{why}; dialing again"),
            });
            carried.lock().unwrap_or_else(|e| e.into_inner()).lost_at = Some(Instant::now());
            tries = 0;
        }
        let Some(wait) = BACKOFF.get(tries) else {
            let end = format!(
                "{why}; gave up after {} tries over {} s{}",
                BACKOFF.len(),
                BACKOFF.iter().map(Duration::as_secs).sum::<u64>(),
                match pending.len() {
                    0 => String::new(),
                    n => format!(" ({n} prompt(s) not sent)"),
                }
            );
            // The driver puts it on the record (the session ended at the loss).
            return Err(end);
        };
        tries += 1;
        let _ = link.tx.send(crate::inputs::Input::Warning(format!(
            "{why}; dialing again in {} s (try {tries} of {})",
            wait.as_secs(),
            BACKOFF.len()
        )));
        // Commands meanwhile wait for the connection; a quit ends the wait.
        let until = tokio::time::Instant::now() + *wait;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(until) => break,
                cmd = cmd_rx.recv() => match cmd {
                    // Closed by the user meanwhile: an end of theirs, not a failure.
                    Some(Command::Shutdown) | None => return Ok(()),
                    Some(Command::Cancel | Command::CancelSubagent { .. }) => {}
                    Some(c) => pending.push_back(c),
                },
            }
        }
        spec.load_session = session;
        spec.fork_session = None;
    }
}
