//! A recorded session rebuilt from its log the way a live one is kept (issue 11, part 5):
//! the log is read a line at a time, never whole, and finished chunks of calls leave
//! memory as they finish, their texts as places in that same log, so opening a session of
//! a million calls costs what running it did.
//!
//! A line that is not UTF-8 is read with its bad bytes replaced (and then parsed like any
//! other: a line that is not a record is a warning, the rest of the log still applies).

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use trellis_core::cold::Cold;
use trellis_core::{Effect, Policy, Session};

/// Warnings kept in full (the rest are counted).
const PROBLEMS_KEPT: usize = 100;
/// Log lines between two settles of the ledger (finished chunks leave memory).
const SETTLE_EVERY: u64 = 512;

/// What [`rebuild_log`] made of a log.
pub struct Rebuilt {
    pub session: Session,
    /// The first unreadable lines, each with its line number.
    pub problems: Vec<String>,
    /// Every unreadable line, counted.
    pub unreadable: usize,
    /// Why every call stays in memory, if it does (the spill file could not be made).
    pub spill_error: Option<String>,
}

/// A log opened to be rebuilt (see [`Replay::run`]).
pub struct Replay {
    reader: std::io::BufReader<std::fs::File>,
    session: Session,
    spill_error: Option<String>,
    /// Read no further than this byte (a fork's history: the turns before one).
    until: u64,
}

impl Replay {
    /// Opens the log at `path` (a regular file only).
    pub fn open(path: &Path) -> std::io::Result<Replay> {
        let file = trellis_store::open_log(path)?;
        let mut session = Session::new(Policy::Ask);
        let (_, cold) = crate::bulk::log_store(path);
        let spill_error = match cold {
            Ok(c) => {
                session.ledger.set_cold(c);
                None
            }
            Err(e) => Some(e),
        };
        Ok(Replay {
            reader: std::io::BufReader::with_capacity(1 << 16, file),
            session,
            spill_error,
            until: u64::MAX,
        })
    }

    /// Reads no further than byte `until` (the start of a line: see [`turn_starts`]).
    pub fn until(mut self, until: u64) -> Replay {
        self.until = until;
        self
    }

    /// Where finished chunks will go (an extension host's copy of the session should
    /// freeze into the same store before it sees the events).
    pub fn cold(&self) -> Option<&Arc<Cold>> {
        self.session.ledger.cold()
    }

    /// Folds the log into a new session; every effect the reducer produces goes to
    /// `on_effect` as it is produced (nothing is collected).
    pub fn run(mut self, mut on_effect: impl FnMut(Effect)) -> std::io::Result<Rebuilt> {
        let mut buf = Vec::new();
        let (mut number, mut problems, mut unreadable) = (0u64, Vec::new(), 0usize);
        let session = &mut self.session;
        let mut at = 0u64;
        loop {
            buf.clear();
            if at >= self.until {
                break;
            }
            let n = self.reader.read_until(b'\n', &mut buf)?;
            if n == 0 {
                break;
            }
            at += n as u64;
            number += 1;
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(p) = trellis_core::log::apply_line(session, number, line, &mut on_effect) {
                unreadable += 1;
                if problems.len() < PROBLEMS_KEPT {
                    problems.push(p);
                }
            }
            if number.is_multiple_of(SETTLE_EVERY) {
                session.ledger.settle();
            }
        }
        session.ledger.settle();
        Ok(Rebuilt {
            session: self.session,
            problems,
            unreadable,
            spill_error: self.spill_error,
        })
    }
}

/// Actions per batch a [`Feed`] hands over.
const FEED_BATCH: usize = 512;
/// Batches read ahead of the reducer (memory stays bounded whatever the log's length).
const FEED_AHEAD: usize = 2;

/// What the reader of a [`Feed`] hands the driver.
#[derive(Debug)]
pub enum Fed {
    /// Records in log order.
    Actions(Vec<trellis_core::Action>),
    /// The log is read to its end, or could be read no further.
    End(Ended),
    /// A followed log is read up to what was written when it was opened: from here on
    /// its records are news (alerts, events) rather than history.
    CaughtUp,
    /// Something for the user from whoever runs a followed session.
    Said(String),
}

/// What wakes the reader of a followed log ([`Feed::follow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// The log grew.
    Grown,
    /// To tell the user, in order with the records.
    Said(String),
    /// Nothing more will be written: read to the end and stop.
    Ended,
}

/// How reading a log ended.
#[derive(Debug, Default)]
pub struct Ended {
    /// The first unreadable lines, each with its line number.
    pub problems: Vec<String>,
    /// Every unreadable line, counted.
    pub unreadable: usize,
    /// Why the log could be read no further, if it could not.
    pub error: Option<String>,
}

/// A log read on a thread of its own for a session a front end shows while it is rebuilt:
/// the first frame waits for nothing, the lines are parsed beside the reducer, and at most
/// two batches wait in memory (a million calls cost what running them did).
pub struct Feed {
    pub(crate) rx: tokio::sync::mpsc::Receiver<Fed>,
    read: Arc<std::sync::atomic::AtomicU64>,
    size: u64,
    /// A followed log read up to where it was when opened (see [`Fed::CaughtUp`]).
    pub(crate) live: bool,
}

impl Feed {
    /// Opens the log at `path` (a regular file only): the empty session to rebuild it
    /// into (its finished calls leave memory into a store of its own), and the feed.
    pub fn start(path: &Path) -> std::io::Result<(Session, Option<String>, Feed)> {
        Feed::start_until(path, u64::MAX)
    }

    /// [`Feed::start`], reading no further than byte `until` (the start of a line: a
    /// fork's history is the turns before one, see [`turn_starts`]).
    pub fn start_until(
        path: &Path,
        until: u64,
    ) -> std::io::Result<(Session, Option<String>, Feed)> {
        let (session, spill_error, mut fed) =
            Feed::reading(path, "replay-reader", move |reader, tx, read| {
                feed(reader, tx, read, until)
            })?;
        // Progress is of what is read.
        fed.size = fed.size.min(until);
        Ok((session, spill_error, fed))
    }

    /// Opens a log that is still being written (a session running elsewhere), like
    /// [`Feed::start`], but the reader goes on when it reaches the end: it waits for
    /// `wake` to say the log grew (a line not yet whole is kept until it is), and stops
    /// when it says nothing more will come or goes away.
    pub fn follow(
        path: &Path,
        wake: std::sync::mpsc::Receiver<Wake>,
    ) -> std::io::Result<(Session, Option<String>, Feed)> {
        Feed::reading(path, "log-follower", move |reader, tx, read| {
            follow(reader, tx, read, &wake)
        })
    }

    /// The log opened, and `reader` started on a thread named `name` to hand it over.
    fn reading(
        path: &Path,
        name: &str,
        reader: impl FnOnce(
            std::io::BufReader<std::fs::File>,
            &tokio::sync::mpsc::Sender<Fed>,
            &std::sync::atomic::AtomicU64,
        ) + Send
        + 'static,
    ) -> std::io::Result<(Session, Option<String>, Feed)> {
        let Replay {
            reader: file,
            session,
            spill_error,
            ..
        } = Replay::open(path)?;
        let size = file.get_ref().metadata().map(|m| m.len()).unwrap_or(0);
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (tx, rx) = tokio::sync::mpsc::channel(FEED_AHEAD);
        let progress = read.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || reader(file, &tx, &progress))?;
        Ok((
            session,
            spill_error,
            Feed {
                rx,
                read,
                size,
                live: false,
            },
        ))
    }

    /// How much of the log was read, from 0 to 1.
    pub fn progress(&self) -> f64 {
        let read = self.read.load(std::sync::atomic::Ordering::Relaxed);
        if self.size == 0 {
            1.0
        } else {
            (read as f64 / self.size as f64).min(1.0)
        }
    }
}

/// The reader's thread: lines to actions, a batch at a time, until the log ends or the
/// driver stopped listening.
fn feed(
    mut reader: std::io::BufReader<std::fs::File>,
    tx: &tokio::sync::mpsc::Sender<Fed>,
    read: &std::sync::atomic::AtomicU64,
    until: u64,
) {
    let mut buf = Vec::new();
    let mut ended = Ended::default();
    let mut batch = Vec::with_capacity(FEED_BATCH);
    let mut number = 0u64;
    let mut at = 0u64;
    loop {
        buf.clear();
        if at >= until {
            break;
        }
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                at += n as u64;
                read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => {
                ended.error = Some(e.to_string());
                break;
            }
        }
        number += 1;
        take_line(&buf, number, &mut batch, &mut ended);
        if batch.len() >= FEED_BATCH
            && tx
                .blocking_send(Fed::Actions(std::mem::replace(
                    &mut batch,
                    Vec::with_capacity(FEED_BATCH),
                )))
                .is_err()
        {
            return;
        }
    }
    if !batch.is_empty() && tx.blocking_send(Fed::Actions(batch)).is_err() {
        return;
    }
    let _ = tx.blocking_send(Fed::End(ended));
}

/// One line of a log into `batch` (a line that is no record is counted in `ended`).
fn take_line(buf: &[u8], number: u64, batch: &mut Vec<trellis_core::Action>, ended: &mut Ended) {
    let line = String::from_utf8_lossy(buf);
    let line = line.trim_end_matches(['\n', '\r']);
    if line.trim().is_empty() {
        return;
    }
    match trellis_core::log::parse_record(line) {
        Ok(entry) => batch.extend(entry.into_action(number)),
        Err(e) => {
            ended.unreadable += 1;
            if ended.problems.len() < PROBLEMS_KEPT {
                ended.problems.push(format!("line {number}: {e}"));
            }
        }
    }
}

/// The reader of a followed log: whole lines to actions as they are written; at the end
/// of what is written, it hands over what it has and waits to be woken.
fn follow(
    mut reader: std::io::BufReader<std::fs::File>,
    tx: &tokio::sync::mpsc::Sender<Fed>,
    read: &std::sync::atomic::AtomicU64,
    wake: &std::sync::mpsc::Receiver<Wake>,
) {
    let send = |fed: Fed| tx.blocking_send(fed).is_ok();
    let mut buf = Vec::new();
    let mut ended = Ended::default();
    let mut batch = Vec::with_capacity(FEED_BATCH);
    let (mut number, mut caught_up, mut last) = (0u64, false, false);
    loop {
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => {}
            Ok(n) => {
                read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                // A line still being written stays in `buf` until its end comes.
                if buf.ends_with(b"\n") {
                    number += 1;
                    take_line(&buf, number, &mut batch, &mut ended);
                    buf.clear();
                    if batch.len() >= FEED_BATCH
                        && !send(Fed::Actions(std::mem::replace(
                            &mut batch,
                            Vec::with_capacity(FEED_BATCH),
                        )))
                    {
                        return;
                    }
                }
                continue;
            }
            Err(e) => {
                ended.error = Some(e.to_string());
                break;
            }
        }
        // At the end of what is written so far.
        if !batch.is_empty() && !send(Fed::Actions(std::mem::take(&mut batch))) {
            return;
        }
        if !caught_up {
            caught_up = true;
            if !send(Fed::CaughtUp) {
                return;
            }
        }
        if last {
            break;
        }
        let mut next = wake.recv().ok();
        while let Some(w) = next.take() {
            match w {
                Wake::Grown => {}
                Wake::Said(text) => {
                    if !send(Fed::Said(text)) {
                        return;
                    }
                }
                Wake::Ended => last = true,
            }
            next = wake.try_recv().ok();
        }
        // The waker went away: what is written is all there will be.
        if matches!(
            wake.try_recv(),
            Err(std::sync::mpsc::TryRecvError::Disconnected)
        ) {
            last = true;
        }
    }
    // What the writer left unfinished is read as a plain log's last line is.
    if !buf.is_empty() {
        number += 1;
        take_line(&buf, number, &mut batch, &mut ended);
    }
    if !batch.is_empty() && !send(Fed::Actions(batch)) {
        return;
    }
    let _ = send(Fed::End(ended));
}

/// A recording read into a shown session, a slice at a time (see [`Feed`]).
impl crate::Driver {
    /// Rebuilds the session from a log while front ends show it: the feed's records go
    /// through the reducer and to extensions like a live agent's, a slice of time at a
    /// time (see [`crate::REPLAY_SLICE`]), so frames and keys go on meanwhile.
    pub fn replay(&mut self, feed: Feed) {
        self.feed = Some(feed);
    }

    /// While a log is being read in: how much of it, from 0 to 1 (a followed log, until
    /// it is read up to where it was when opened).
    pub fn loading(&self) -> Option<f64> {
        self.feed.as_ref().filter(|f| !f.live).map(Feed::progress)
    }

    /// Records of a replayed log, and whatever else the feed has ready, for at most
    /// [`crate::REPLAY_SLICE`].
    pub(crate) fn replayed(&mut self, fed: Fed, notes: &mut Vec<crate::Note>) {
        let until = std::time::Instant::now() + crate::REPLAY_SLICE;
        // History is only marked; a followed log's new records are news like a live
        // agent's.
        let live = self.feed.as_ref().is_some_and(|f| f.live);
        self.touched = (!live).then(Vec::new);
        let aside = self.set_aside();
        let mut next = Some(fed);
        while let Some(fed) = next.take() {
            match fed {
                Fed::CaughtUp => {
                    if let Some(f) = self.feed.as_mut() {
                        f.live = true;
                    }
                    // What follows in this slice is news: it goes as events.
                    if let Some(mut touched) = self.touched.take() {
                        touched.sort_unstable();
                        touched.dedup();
                        notes.push(crate::Note::Touched(touched));
                    }
                }
                Fed::Said(text) => notes.push(crate::Note::Message(text)),
                Fed::Actions(actions) => {
                    let live = self.feed.as_ref().is_some_and(|f| f.live);
                    for action in actions {
                        if live {
                            self.recorded(action, notes);
                        } else {
                            self.apply(action, notes);
                        }
                    }
                    // Chunks of finished calls leave memory.
                    self.session.ledger.settle();
                }
                Fed::End(ended) => {
                    self.feed = None;
                    if self.remote.is_some() {
                        notes.push(crate::Note::Closed);
                    }
                    if let Some(p) = ended.problems.first() {
                        notes.push(crate::Note::Message(format!(
                            "{} unreadable log lines (first: {p})",
                            ended.unreadable
                        )));
                    }
                    if let Some(e) = ended.error {
                        notes.push(crate::Note::Message(format!(
                            "the log could be read no further: {e}"
                        )));
                    }
                }
            }
            if std::time::Instant::now() < until {
                next = self.feed.as_mut().and_then(|f| f.rx.try_recv().ok());
            }
        }
        if let Some(mut touched) = self.touched.take() {
            touched.sort_unstable();
            touched.dedup();
            notes.push(crate::Note::Touched(touched));
        }
        self.bring_back(aside);
        if self.feed.is_none() {
            self.history_read();
        }
    }
}

/// [`Replay::open`] and [`Replay::run`].
pub fn rebuild_log(path: &Path, on_effect: impl FnMut(Effect)) -> std::io::Result<Rebuilt> {
    Replay::open(path)?.run(on_effect)
}

/// Where each turn of the log at `path` begins: the byte offset of the line that sent
/// its prompt (`session/prompt`, from the client), turn 1 first. The log is read a line
/// at a time; a line that is no record is passed over.
pub fn turn_starts(path: &Path) -> std::io::Result<Vec<u64>> {
    let mut reader = std::io::BufReader::with_capacity(1 << 16, trellis_store::open_log(path)?);
    let (mut starts, mut buf, mut at) = (Vec::new(), Vec::new(), 0u64);
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        // Only a client's line can send a prompt; the agent's text is never looked into.
        if memchr::memmem::find(&buf, br#""dir":"client_to_agent""#).is_some()
            && memchr::memmem::find(&buf, br#""session/prompt""#).is_some()
            && let Ok(rec) = serde_json::from_slice::<serde_json::Value>(&buf)
            && rec["dir"] == "client_to_agent"
            && rec["msg"]["method"] == "session/prompt"
        {
            starts.push(at);
        }
        at += n as u64;
    }
    Ok(starts)
}

#[cfg(test)]
mod tests;
