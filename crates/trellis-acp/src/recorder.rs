//! The single ordering point of a live session: every line on the agent's stdio and every
//! client record passes through here, is written to the session log, and becomes one
//! reducer action — under one lock, so the log order *is* the action order.
//!
//! Invariants:
//! - A record reaches the log (one `write`, no user-space buffering across input) before
//!   its action is handed to the reducer: nothing is acted on that is not on record.
//! - Group commit: when the agent has sent several lines that arrived together (they are
//!   already buffered in memory), their records are written with one `write` once the last
//!   of them is read. No line ever waits for input that has not arrived yet; at an
//!   interactive pace every line is its own write.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use trellis_core::log::{
    encode_frame_bytes, encode_frame_into, encode_invalid, encode_local, encode_stderr,
};
use trellis_core::session::LocalRecord;
use trellis_core::update::Action;
use trellis_core::wire::{Dir, Message};

use crate::inputs::Input;

/// Where log lines go (the session log file in the app, memory in tests).
pub trait LogSink: Send {
    fn append(&mut self, line: &str) -> std::io::Result<()>;
    fn sync(&mut self) -> std::io::Result<()>;
    /// A handle that makes the log durable from another thread (none: [`LogSink::sync`]
    /// is called in place).
    fn syncer(&self) -> Option<std::fs::File> {
        None
    }
    /// Records the log held before this sink was opened (a file appended to): the next
    /// record's number follows them.
    fn records(&self) -> u64 {
        0
    }
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
    /// Number of records so far: a frame's `seq` is its line number in the log.
    seq: u64,
    tx: crate::inputs::Sender,
    log_error_reported: bool,
    /// Records the log could not keep: (first record number, how many, the error), and
    /// how many of them were already reported.
    lost: Option<(u64, u64, String)>,
    lost_reported: u64,
    /// Records not yet written (only while a batch of buffered lines is being read).
    pending: String,
    /// Their actions, released after the write.
    actions: Vec<Input>,
    /// Actions queued for the driver (the agent's reader waits on it).
    backlog: Arc<crate::inputs::Backlog>,
    /// The time of the last record (its number, its time) when more lines were already
    /// buffered behind it: those lines arrived with it, in the same read, and take its
    /// time rather than a clock reading each.
    batch_t: Option<(u64, f64)>,
}

#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    /// Attach each frame's verbatim line to its message.
    keep: Arc<std::sync::atomic::AtomicBool>,
    start: Instant,
    /// Session time at `start`.
    offset: f64,
}

/// Where a recorder starts numbering and timing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Origin {
    pub seq: u64,
    pub t: f64,
}

/// Whether more input is already buffered behind the line being recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum More {
    /// Write now.
    No,
    /// Another complete line is already in memory: write with it.
    Buffered,
}

impl Recorder {
    pub fn new(sink: Box<dyn LogSink>, tx: crate::inputs::Sender) -> Recorder {
        Recorder::with_origin(sink, tx, Origin::default())
    }

    /// A recorder that continues a log: numbering after `origin.seq` records, times after
    /// `origin.t` seconds (an agent restarted in the same session).
    pub fn with_origin(
        sink: Box<dyn LogSink>,
        tx: crate::inputs::Sender,
        origin: Origin,
    ) -> Recorder {
        Recorder {
            keep: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            offset: origin.t,
            inner: Arc::new(Mutex::new(Inner {
                // A log appended to goes on from its last record.
                seq: origin.seq.max(sink.records()),
                sink,
                tx,
                log_error_reported: false,
                lost: None,
                lost_reported: 0,
                pending: String::new(),
                actions: Vec::new(),
                backlog: Arc::default(),
                batch_t: None,
            })),
            start: Instant::now(),
        }
    }

    /// The queue to the driver, as the driver reads it (see [`crate::inputs`]).
    pub fn inputs(&self, rx: crate::inputs::Receiver) -> crate::inputs::Inputs {
        crate::inputs::Inputs::new(rx, self.with(|i| i.backlog.clone()))
    }

    /// Waits while the driver has too much queued (the agent's reader calls it).
    pub async fn room(&self) {
        let backlog = self.with(|i| i.backlog.clone());
        backlog.room().await;
    }

    /// Whether frames carry their verbatim line (for extensions that asked for it).
    pub fn keep_lines(&self, on: bool) {
        self.keep.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Seconds since the session started.
    pub fn now(&self) -> f64 {
        self.offset + self.start.elapsed().as_secs_f64()
    }

    /// Where a continuing recorder would start: records so far and the time now.
    pub fn origin(&self) -> Origin {
        Origin {
            seq: self.with(|i| i.seq),
            t: self.now(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Writes pending records, then releases their actions.
    fn commit(inner: &mut Inner) {
        if !inner.pending.is_empty() {
            if let Err(e) = inner.sink.append(&inner.pending) {
                // What is lost is counted (and said at the next sync); the session goes on.
                let records = inner.pending.matches('\n').count() as u64;
                let first = inner.seq + 1 - records;
                inner.lost.get_or_insert((first, 0, e.to_string())).1 += records;
                if !inner.log_error_reported {
                    inner.log_error_reported = true;
                    let _ = inner.tx.send(Input::Warning(format!(
                        "session log write failed: {e}; the session goes on, the log misses what follows"
                    )));
                }
            }
            inner.pending.clear();
        }
        let actions = inner
            .actions
            .iter()
            .filter(|i| matches!(i, Input::Action(_)))
            .count();
        // Counted first: the driver may take them the moment they are sent.
        inner.backlog.sent(actions);
        // The next read is sized like this one (a streaming agent's reads are alike), so
        // its vector is not grown a doubling at a time; capped, as one read of tiny lines
        // would otherwise keep reserving for thousands.
        let next = inner.actions.len().clamp(32, 1024);
        let read = std::mem::replace(&mut inner.actions, Vec::with_capacity(next));
        inner.tx.send_all(read);
    }

    /// One line on the agent's stdin or stdout. Returns false for agent notifications,
    /// which the SDK does not need to see (state comes from here).
    pub fn line(&self, dir: Dir, line: &str, more: More) -> bool {
        self.line_bytes(dir, line, None, more)
    }

    /// [`Recorder::line`] for a line that was not valid UTF-8: `line` is its text with
    /// U+FFFD in place of invalid bytes, `bytes` the line as received (logged losslessly).
    pub fn line_bytes(&self, dir: Dir, line: &str, bytes: Option<&[u8]>, more: More) -> bool {
        let keep = self.keep.load(std::sync::atomic::Ordering::Relaxed);
        self.with(|inner| {
            let t = match inner.batch_t.take() {
                Some((seq, t)) if seq == inner.seq => t,
                _ => self.now(),
            };
            if more == More::Buffered {
                inner.batch_t = Some((inner.seq + 1, t));
            }
            inner.seq += 1;
            let seq = inner.seq;
            let (action, forward) = match Message::parse(line) {
                Ok(mut msg) => {
                    if keep {
                        msg.raw = Some(std::sync::Arc::from(line));
                    }
                    match bytes {
                        None => {
                            let mut record = std::mem::take(&mut inner.pending);
                            let start = record.len();
                            encode_frame_into(&mut record, start, (seq, t), dir, line);
                            inner.pending = record;
                        }
                        Some(b) => inner
                            .pending
                            .push_str(&encode_frame_bytes(seq, t, dir, line, b)),
                    }
                    // The agent's notifications are the reducer's alone (the SDK has
                    // nothing to do with them), but for `$/cancel_request`: the SDK marks
                    // the request it names as cancelled, which a request served over time
                    // (`terminal/wait_for_exit`) watches; and for a subagent's announcement:
                    // the services accept the child's requests from then on.
                    let forward = !(dir == Dir::AgentToClient
                        && msg.is_notification()
                        && msg.method.as_deref() != Some("$/cancel_request")
                        // (A hot kind, decoded already, is never a subagent's.)
                        && (msg.decoded.is_some() || !line.contains("\"subagent_update\"")));
                    (Action::Frame { seq, t, dir, msg }, forward)
                }
                Err(e) => {
                    inner
                        .pending
                        .push_str(&encode_invalid(seq, t, dir, line, bytes));
                    let error = e.to_string();
                    (
                        Action::InvalidLine {
                            t,
                            dir,
                            len: line.len(),
                            error,
                        },
                        true,
                    )
                }
            };
            inner.actions.push(Input::Action(action));
            if more == More::No {
                Self::commit(inner);
            }
            forward
        })
    }

    /// A line longer than the transport accepts: logged as an invalid line with its head
    /// (up to 1 KiB) and length, and dropped.
    pub fn oversized(&self, dir: Dir, head: &[u8], len: usize, more: More) {
        let t = self.now();
        let mut cut = head.len().min(1024);
        let text = loop {
            match std::str::from_utf8(&head[..cut]) {
                Ok(s) => break s,
                Err(e) if e.valid_up_to() > 0 => cut = e.valid_up_to(),
                Err(_) => break "",
            }
        };
        self.with(|inner| {
            inner.seq += 1;
            let seq = inner.seq;
            inner
                .pending
                .push_str(&encode_invalid(seq, t, dir, text, None));
            inner.actions.push(Input::Action(Action::InvalidLine {
                t,
                dir,
                len,
                error: format!(
                    "a line of {len} bytes is longer than the {} MiB limit; it was dropped",
                    crate::lines::MAX_LINE >> 20
                ),
            }));
            if more == More::No {
                Self::commit(inner);
            }
        });
    }

    /// Writes what is pending and releases its actions (the input ended, or a skipped
    /// line turned out to be the last one buffered).
    pub fn flush(&self) {
        self.with(Self::commit);
    }

    /// A warning for the user, in order with the actions.
    pub fn warn(&self, message: String) {
        self.with(|inner| {
            Self::commit(inner);
            let _ = inner.tx.send(Input::Warning(message));
        });
    }

    /// A client record (written at once, with anything pending before it).
    pub fn local(&self, record: LocalRecord) {
        let t = self.now();
        self.with(|inner| {
            inner.seq += 1;
            let seq = inner.seq;
            inner.pending.push_str(&encode_local(seq, t, &record));
            inner.actions.push(Input::Action(Action::Local {
                t,
                record: Box::new(record),
            }));
            Self::commit(inner);
        });
    }

    /// A line the agent wrote on stderr (logged, and passed on for display).
    pub fn stderr(&self, line: &str) {
        let t = self.now();
        self.with(|inner| {
            inner.seq += 1;
            let seq = inner.seq;
            inner.pending.push_str(&encode_stderr(seq, t, line));
            inner.actions.push(Input::Stderr(line.to_string()));
            Self::commit(inner);
        });
    }

    /// Makes the log durable, and says what it could not keep since the last sync.
    pub fn sync(&self) {
        self.with(|inner| {
            Self::commit_and_report(inner);
            if let Err(e) = inner.sink.sync() {
                let _ = inner
                    .tx
                    .send(Input::Warning(format!("session log sync failed: {e}")));
            }
        });
    }

    /// [`Recorder::sync`] without waiting for the disk: what is pending is written now,
    /// the flush to the disk runs on a thread of its own. A turn's end must not hold the
    /// UI for the hundreds of milliseconds a large log's flush can take.
    pub fn sync_soon(&self) {
        let handle = self.with(|inner| {
            Self::commit_and_report(inner);
            inner.sink.syncer().map(|f| (f, inner.tx.clone()))
        });
        let Some((file, tx)) = handle else {
            return self.sync();
        };
        let flush = move || {
            if let Err(e) = file.sync_data() {
                let _ = tx.send(Input::Warning(format!("session log sync failed: {e}")));
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("log-sync".into())
            .spawn(flush)
        {
            self.warn(format!("session log sync failed: no thread for it ({e})"));
        }
    }

    /// Writes what is pending and says what the log could not keep since the last time.
    fn commit_and_report(inner: &mut Inner) {
        Self::commit(inner);
        if let Some((first, n, e)) = &inner.lost
            && *n > inner.lost_reported
        {
            let _ = inner.tx.send(Input::Warning(format!(
                "the session log is incomplete: {n} records from record {first} on could not be written ({e})"
            )));
            inner.lost_reported = *n;
        }
    }
}

/// A log that keeps what is written, for a test to read.
#[cfg(test)]
pub(crate) struct Kept(pub(crate) Arc<Mutex<String>>);

#[cfg(test)]
impl LogSink for Kept {
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_str(line);
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_together_share_their_time_and_times_never_go_back() {
        let kept = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = crate::inputs::channel();
        let r = Recorder::new(Box::new(Kept(kept.clone())), tx);
        let mut rx = r.inputs(rx);
        let line = |n: u32| format!(r#"{{"jsonrpc":"2.0","method":"x/{n}","params":{{}}}}"#);
        r.line(Dir::AgentToClient, &line(1), More::No);
        // Three lines of one read.
        r.line(Dir::AgentToClient, &line(2), More::Buffered);
        r.line(Dir::AgentToClient, &line(3), More::Buffered);
        r.line(Dir::AgentToClient, &line(4), More::No);
        // A read of two lines with a record of the client's between them.
        r.line(Dir::AgentToClient, &line(5), More::Buffered);
        r.line(Dir::ClientToAgent, &line(6), More::No);
        r.line(Dir::AgentToClient, &line(7), More::No);
        r.flush();
        // The times the reducer gets (the log keeps whole milliseconds).
        let mut times = Vec::new();
        while let Ok(input) = rx.try_recv() {
            if let Input::Action(Action::Frame { t, .. }) = input {
                times.push(t);
            }
        }
        assert_eq!(kept.lock().unwrap().lines().count(), 7);
        assert_eq!(times.len(), 7);
        assert_eq!((times[1], times[2]), (times[3], times[3]));
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }
}
