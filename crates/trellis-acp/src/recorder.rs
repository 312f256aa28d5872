//! The single ordering point of a live session: every line on the agent's stdio and every
//! client record passes through here, is appended to the session log, and becomes one
//! reducer action — under one lock, so the log order *is* the action order.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use trellis_core::log::{encode_frame_into, encode_invalid, encode_local, encode_stderr};
use trellis_core::session::LocalRecord;
use trellis_core::update::Action;
use trellis_core::wire::{Dir, Message};

use crate::client::Input;

/// Where log lines go (the session log file in the app, memory in tests).
pub trait LogSink: Send {
    fn append(&mut self, line: &str) -> std::io::Result<()>;
    fn sync(&mut self) -> std::io::Result<()>;
}

/// A sink that keeps nothing.
pub struct NullSink;

impl LogSink for NullSink {
    fn append(&mut self, _: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Inner {
    sink: Box<dyn LogSink>,
    seq: u64,
    tx: UnboundedSender<Input>,
    log_error_reported: bool,
    /// Reused for every frame record.
    buf: String,
}

#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    start: Instant,
}

impl Recorder {
    pub fn new(sink: Box<dyn LogSink>, tx: UnboundedSender<Input>) -> Recorder {
        Recorder {
            inner: Arc::new(Mutex::new(Inner {
                sink,
                seq: 0,
                tx,
                log_error_reported: false,
                buf: String::new(),
            })),
            start: Instant::now(),
        }
    }

    /// Seconds since the session started.
    pub fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    fn append(inner: &mut Inner, line: &str) {
        if let Err(e) = inner.sink.append(line)
            && !inner.log_error_reported
        {
            inner.log_error_reported = true;
            let _ = inner
                .tx
                .send(Input::Warning(format!("session log write failed: {e}")));
        }
    }

    /// One line on the agent's stdin or stdout. Returns false for agent notifications,
    /// which the SDK does not need to see (state comes from here).
    pub fn line(&self, dir: Dir, line: &str) -> bool {
        let t = self.now();
        self.with(|inner| {
            inner.seq += 1;
            let seq = inner.seq;
            let (action, forward) = match Message::parse(line) {
                Ok(msg) => {
                    let mut buf = std::mem::take(&mut inner.buf);
                    encode_frame_into(&mut buf, t, dir, line);
                    Self::append(inner, &buf);
                    inner.buf = buf;
                    let forward = !(dir == Dir::AgentToClient && msg.is_notification());
                    (Action::Frame { seq, t, dir, msg }, forward)
                }
                Err(e) => {
                    Self::append(inner, &encode_invalid(t, dir, line));
                    let error = e.to_string();
                    let action = Action::InvalidLine {
                        t,
                        dir,
                        len: line.len(),
                        error,
                    };
                    (action, true)
                }
            };
            let _ = inner.tx.send(Input::Action(action));
            forward
        })
    }

    /// A client record.
    pub fn local(&self, record: LocalRecord) {
        let t = self.now();
        self.with(|inner| {
            Self::append(inner, &encode_local(t, &record));
            let _ = inner.tx.send(Input::Action(Action::Local { t, record }));
        });
    }

    /// A line the agent wrote on stderr (logged, and passed on for display).
    pub fn stderr(&self, line: &str) {
        let t = self.now();
        self.with(|inner| {
            Self::append(inner, &encode_stderr(t, line));
            let _ = inner.tx.send(Input::Stderr(line.to_string()));
        });
    }

    /// Makes the log durable.
    pub fn sync(&self) {
        self.with(|inner| {
            if let Err(e) = inner.sink.sync() {
                let _ = inner
                    .tx
                    .send(Input::Warning(format!("session log sync failed: {e}")));
            }
        });
    }
}
