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
        })
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
        loop {
            buf.clear();
            if self.reader.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
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
        Feed::reading(path, "replay-reader", |reader, tx, read| {
            feed(reader, tx, read)
        })
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
) {
    let mut buf = Vec::new();
    let mut ended = Ended::default();
    let mut batch = Vec::with_capacity(FEED_BATCH);
    let mut number = 0u64;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(n) => {
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
    }
}

/// [`Replay::open`] and [`Replay::run`].
pub fn rebuild_log(path: &Path, on_effect: impl FnMut(Effect)) -> std::io::Result<Rebuilt> {
    Replay::open(path)?.run(on_effect)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::io::Write;
    use trellis_core::tool_call::ToolContent;

    fn up(t: f64, u: serde_json::Value) -> String {
        serde_json::json!({"t": t, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0",
            "method": "session/update", "params": {"sessionId": "S", "update": u}}})
        .to_string()
    }

    /// A log of `calls` finished calls, with a line that is not UTF-8 and blank lines.
    fn long_log(calls: usize) -> tempfile::NamedTempFile {
        log_of(calls, "out")
    }

    /// [`long_log`], each call's output starting with `said`.
    fn log_of(calls: usize, said: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut w = std::io::BufWriter::new(f.as_file_mut());
        writeln!(w, "{}", serde_json::json!({"t": 0.0, "dir": "client_to_agent", "msg": {"jsonrpc": "2.0", "id": 1,
            "method": "session/prompt", "params": {"sessionId": "S", "prompt": [{"type": "text", "text": "go"}]}}})).unwrap();
        for i in 0..calls {
            let id = format!("c{i}");
            writeln!(
                w,
                "{}",
                up(
                    1.0,
                    serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": id,
                "title": format!("Call {i}"), "kind": "execute", "status": "in_progress"})
                )
            )
            .unwrap();
            writeln!(w, "{}", up(1.0, serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": format!("{said} {i}\nline 2\n")}}]}))).unwrap();
            if i == calls / 2 {
                w.write_all(b"\xff\xfe{\"t\": \n\n\r\n").unwrap();
            }
        }
        drop(w);
        f
    }

    #[test]
    fn a_long_log_is_rebuilt_with_finished_chunks_out_of_memory() {
        let log = long_log(3000);
        let mut events = 0;
        let r = rebuild_log(log.path(), |fx| {
            if matches!(fx, Effect::Emit(_)) {
                events += 1;
            }
        })
        .unwrap();
        let s = &r.session;
        assert_eq!(s.ledger.len(), 3000);
        assert!(events >= 6000, "{events}");
        assert_eq!(r.unreadable, 1, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("line 3004:"), "{:?}", r.problems);
        assert!(r.spill_error.is_none());
        let frozen = s.ledger.cold().unwrap().stats().0;
        assert!(frozen >= 2048, "{frozen} calls frozen");
        // A frozen call's output reads back from the log, the newest's is in memory.
        for i in [0, 5, 1499, 1500, 2999] {
            assert!(s.ledger.is_frozen(i) || i == 2999);
            let c = s.ledger.at(i);
            let ToolContent::Text { text } = &c.content[0] else {
                panic!("{:?}", c.content)
            };
            assert_eq!(*text.load(), format!("out {i}\nline 2\n"));
        }
    }

    /// A resumed session: its history rebuilt out of memory from the earlier log, its new
    /// calls in its own log going on in the same store; both read back from their own log
    /// once frozen.
    #[test]
    fn a_resumed_session_keeps_its_history_and_its_new_calls_out_of_memory() {
        let earlier = long_log(3000);
        let prev = rebuild_log(earlier.path(), |_| {}).unwrap().session;
        assert!(prev.ledger.cold().unwrap().stats().0 >= 2048);
        let s = Session::continuing(prev, Policy::Ask, "resumed".into());
        let now = log_of(3000, "new");
        let mut d = crate::Driver::offline(s);
        d.keep_output_in_log_within(now.path(), 1 << 20);
        let text = std::fs::read(now.path()).unwrap();
        for (n, line) in text.split(|b| *b == b'\n').enumerate() {
            let line = String::from_utf8_lossy(line);
            trellis_core::log::apply_line(&mut d.session, n as u64 + 1, &line, |_| {});
            if n % 512 == 0 {
                d.session.ledger.settle();
            }
        }
        d.session.ledger.settle();
        let l = &d.session.ledger;
        assert_eq!(l.len(), 6000);
        assert!(
            l.cold().unwrap().stats().0 >= 4096,
            "{:?}",
            l.cold().unwrap().stats()
        );
        for (i, said) in [
            (0, "out 0"),
            (1499, "out 1499"),
            (2999, "out 2999"),
            (3000, "new 0"),
            (4500, "new 1500"),
            (5999, "new 2999"),
        ] {
            assert!(l.is_frozen(i) || i >= 4096, "{i}");
            let c = l.at(i);
            let ToolContent::Text { text } = &c.content[0] else {
                panic!("{:?}", c.content)
            };
            assert_eq!(*text.load(), format!("{said}\nline 2\n"), "call {i}");
        }
    }

    /// A recording shown while it is read: the driver folds the feed in slices, says how
    /// far it got, and ends with the session the one-pass rebuild makes (unreadable lines
    /// said once).
    #[test]
    fn a_fed_replay_ends_with_the_session_a_whole_rebuild_makes() {
        let log = long_log(3000);
        let whole = rebuild_log(log.path(), |_| {}).unwrap();
        let (session, spill, feed) = Feed::start(log.path()).unwrap();
        assert!(spill.is_none());
        assert_eq!(
            session.ledger.len(),
            0,
            "nothing is read before it is shown"
        );
        let mut d = crate::Driver::offline(session);
        d.replay(feed);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let (mut notes, mut seen) = (Vec::new(), Vec::new());
        while let Some(done) = d.loading() {
            seen.push(done);
            let incoming = rt.block_on(d.recv());
            d.handle(incoming, &mut notes);
        }
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        let (a, b) = (&d.session.ledger, &whole.session.ledger);
        assert_eq!(a.len(), b.len());
        for i in [0, 1499, 2999] {
            let (x, y) = (a.at(i), b.at(i));
            assert_eq!((&x.id, x.status, &x.title), (&y.id, y.status, &y.title));
        }
        assert!(
            a.cold().unwrap().stats().0 >= 2048,
            "finished chunks left memory"
        );
        let said: Vec<_> = notes
            .iter()
            .filter_map(|n| match n {
                crate::Note::Message(m) => Some(m.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("1 unreadable log lines (first: line 3004:"),
            "{said:?}"
        );
        // Events are not handed on one by one: the places they were about are, per slice.
        assert!(!notes.iter().any(|n| matches!(n, crate::Note::Event(_))));
        let mut touched: Vec<usize> = notes
            .iter()
            .filter_map(|n| match n {
                crate::Note::Touched(p) => Some(p.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        touched.sort_unstable();
        touched.dedup();
        assert_eq!(touched, (0..3000).collect::<Vec<_>>());
    }

    /// A log still being written, followed: history first (only marked), then each
    /// record as news once it is whole, a line written in two pieces read once, what
    /// the hub says in order, and the end when the hub says so.
    #[test]
    fn a_followed_log_is_history_then_news_and_a_half_line_waits_for_its_end() {
        let mut log = long_log(600);
        let (tx, rx) = std::sync::mpsc::channel();
        let (session, _, feed) = Feed::follow(log.path(), rx).unwrap();
        let (hub_tx, _hub_rx) = std::sync::mpsc::channel();
        let mut d = crate::Driver::offline(session);
        d.attach(feed, hub_tx);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let mut notes = Vec::new();
        let step = |d: &mut crate::Driver, notes: &mut Vec<crate::Note>| {
            let incoming = rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(10), d.recv())
                    .await
                    .expect("the follower hands something over")
            });
            d.handle(incoming, notes);
        };
        while d.loading().is_some() {
            step(&mut d, &mut notes);
        }
        assert_eq!(d.session.ledger.len(), 600);
        assert!(!notes.iter().any(|n| matches!(n, crate::Note::Event(_))));
        notes.clear();
        // A new call, its line written in two pieces.
        let line = up(
            2.0,
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "late",
                "title": "Late", "kind": "execute", "status": "in_progress"}),
        );
        let (head, tail) = line.split_at(20);
        write!(log.as_file_mut(), "{head}").unwrap();
        tx.send(Wake::Grown).unwrap();
        tx.send(Wake::Said("hello from the hub".into())).unwrap();
        while !notes.iter().any(|n| matches!(n, crate::Note::Message(_))) {
            step(&mut d, &mut notes);
        }
        assert_eq!(d.session.ledger.len(), 600, "half a line is not a record");
        writeln!(log.as_file_mut(), "{tail}").unwrap();
        tx.send(Wake::Grown).unwrap();
        while d.session.ledger.len() == 600 {
            step(&mut d, &mut notes);
        }
        assert_eq!(d.session.ledger.at(600).title, "Late");
        assert!(
            notes.iter().any(|n| matches!(n, crate::Note::Event(e)
                if matches!(e.body, trellis_core::EventBody::ToolCallCreated { .. }))),
            "news comes as events"
        );
        tx.send(Wake::Ended).unwrap();
        while !notes.iter().any(|n| matches!(n, crate::Note::Closed)) {
            step(&mut d, &mut notes);
        }
        assert!(d.loading().is_none());
        assert_eq!(d.session.ledger.len(), 601);
    }

    /// Intents of an attached session go to its hub; nothing changes here first.
    #[test]
    fn an_attached_session_sends_its_intents_to_the_hub() {
        let log = long_log(1);
        let (_tx, rx) = std::sync::mpsc::channel();
        let (_, _, feed) = Feed::follow(log.path(), rx).unwrap();
        let (hub_tx, hub_rx) = std::sync::mpsc::channel();
        let mut d = crate::Driver::offline(Session::new(Policy::Ask));
        d.attach(feed, hub_tx);
        let mut notes = Vec::new();
        d.prompt("go on".into(), Vec::new());
        d.cancel(&mut notes);
        d.decide(
            "7".into(),
            trellis_core::Choice::Option("allow".into()),
            trellis_core::Decider::User,
            &mut notes,
        );
        let got: Vec<_> = hub_rx.try_iter().collect();
        assert_eq!(
            got,
            vec![
                crate::attached::Remote::Prompt {
                    text: "go on".into(),
                    files: Vec::new()
                },
                crate::attached::Remote::Cancel,
                crate::attached::Remote::Decide {
                    request_id: "7".into(),
                    choice: trellis_core::Choice::Option("allow".into())
                },
            ]
        );
        assert!(notes.is_empty() && d.attached() && d.ready());
    }

    #[test]
    fn only_a_regular_file_is_read_as_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A FIFO would block the open (no writer) or never end: refused at once.
        let e = rebuild_log(&fifo, |_| {}).err().unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let e = rebuild_log(dir.path(), |_| {}).err().unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
