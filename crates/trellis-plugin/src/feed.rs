//! Feeding a plugin's stdin: the writer thread, and when it writes.
//!
//! A plugin at rest gets every line at once. During an event storm (the agent streams
//! thousands of calls a second) the writer holds the event lines and writes them when the
//! storm pauses, or when the oldest has waited [`MAX_HOLD`]: a plugin process that parses
//! JSON while the session is saturated takes memory bandwidth and cache from the client
//! and the agent whatever its CPU priority, so it reads its backlog in the pauses instead.
//! Lines that need an answer (requests, responses, user actions) are never held: they go
//! at once, after everything queued before them (order is kept).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use trellis_core::tool_call::ToolContent;
use trellis_core::{Event, EventBody, ToolCall};

/// Lines arriving within this of each other are a storm; a pause this long ends it.
pub const QUIET: Duration = Duration::from_millis(15);
/// The longest an event line waits for a pause.
pub const MAX_HOLD: Duration = Duration::from_millis(400);

/// What the writer writes.
#[derive(Debug)]
pub enum Piece {
    /// A line made for this plugin that goes at once (a request, a response, an action).
    Raw(Vec<u8>),
    /// A notification made for this plugin that may wait for a pause (`idle`).
    Note(Vec<u8>),
    /// An event, written as an `event` notification (with its ACP payload when `acp`).
    /// Its JSON is made when it is written, once for every plugin that receives it (the
    /// host's shared copy of the event, and its `wire`). May wait for a pause.
    /// `bytes` is its size estimate, made once by [`Piece::event`].
    Event {
        event: Arc<Event>,
        acp: bool,
        bytes: usize,
    },
}

const EVENT_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"event","params":"#;

impl Piece {
    /// An event piece (with its ACP payload when `acp`), its size estimated once.
    pub fn event(event: Arc<Event>, acp: bool) -> Piece {
        let payload = match (acp, &event.acp) {
            (true, Some(a)) => a.len() + 16,
            _ => 0,
        };
        let bytes = EVENT_HEAD.len() + approx_json_len(&event) + payload + 2;
        Piece::Event { event, acp, bytes }
    }

    /// Bytes it takes on the plugin's stdin (for an event not yet serialized, an
    /// estimate from the sizes of its texts; the same figure is added and removed).
    pub fn bytes(&self) -> usize {
        match self {
            Piece::Raw(b) | Piece::Note(b) => b.len(),
            Piece::Event { bytes, .. } => *bytes,
        }
    }

    fn urgent(&self) -> bool {
        matches!(self, Piece::Raw(_))
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            Piece::Raw(b) | Piece::Note(b) => out.write_all(b),
            Piece::Event { event, acp, .. } => {
                let json = event.wire.get_or_init(|| {
                    serde_json::to_string(event)
                        .map(Arc::from)
                        .unwrap_or_else(|_| Arc::from("{}"))
                });
                out.write_all(EVENT_HEAD)?;
                match (&event.acp, acp) {
                    (Some(payload), true) if json.ends_with('}') => {
                        // The verbatim ACP line as a string field of the event.
                        out.write_all(&json.as_bytes()[..json.len() - 1])?;
                        out.write_all(br#","acp":"#)?;
                        serde_json::to_writer(&mut *out, payload.as_ref())?;
                        out.write_all(b"}}\n")
                    }
                    _ => {
                        out.write_all(json.as_bytes())?;
                        out.write_all(b"}\n")
                    }
                }
            }
        }
    }
}

/// About how long an event's JSON is: its texts plus a fixed part for the rest.
fn approx_json_len(ev: &Event) -> usize {
    const REST: usize = 160;
    let call = |c: &ToolCall| {
        let content: usize = c
            .content
            .iter()
            .map(|x| match x {
                ToolContent::Text { text } => text.len() + 24,
                ToolContent::Block { block } => block.get().len(),
                ToolContent::Diff {
                    path,
                    old_text,
                    new_text,
                } => path.len() + old_text.as_ref().map_or(0, String::len) + new_text.len() + 48,
                ToolContent::Terminal { terminal_id } => terminal_id.len() + 32,
            })
            .sum();
        let raw = c.raw_input.as_ref().map_or(0, |r| r.get().len())
            + c.raw_output.as_ref().map_or(0, |r| r.get().len());
        c.id.len() + c.title.len() + content + raw + c.locations.len() * 48 + REST
    };
    match &ev.body {
        EventBody::ToolCallCreated { call: c } | EventBody::ToolCallUpdated { call: c, .. } => {
            call(c) + REST
        }
        EventBody::MessageChunk { text, .. } => text.len() + REST,
        EventBody::TurnStarted { prompt, .. } => prompt.len() + REST,
        _ => REST * 2,
    }
}

/// When held lines go out: the policy, apart from the clock and the pipe.
#[derive(Debug, Default)]
pub struct Pacer {
    /// When the previous block arrived.
    last: Option<Instant>,
    /// When the oldest held block arrived (`None`: nothing held).
    held_since: Option<Instant>,
}

impl Pacer {
    /// A block arrives at `now`: true when everything held (it included) goes out now.
    pub fn arrive(&mut self, now: Instant, urgent: bool) -> bool {
        let storm = self
            .last
            .is_some_and(|l| now.saturating_duration_since(l) < QUIET);
        self.last = Some(now);
        let since = *self.held_since.get_or_insert(now);
        let go = urgent || !storm || now.saturating_duration_since(since) >= MAX_HOLD;
        if go {
            self.held_since = None;
        }
        go
    }

    /// How long the writer may wait for the next block before writing what it holds
    /// (`None`: nothing held, wait as long as it takes).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let since = self.held_since?;
        let quiet = self.last.map_or(Duration::ZERO, |l| {
            (l + QUIET).saturating_duration_since(now)
        });
        let hold = (since + MAX_HOLD).saturating_duration_since(now);
        Some(quiet.min(hold))
    }

    /// The wait ran out: what is held goes out.
    pub fn timed_out(&mut self) {
        self.held_since = None;
    }
}

/// The writer thread: blocks from `rx` to the plugin's stdin, paced by [`Pacer`].
/// `backlog` counts bytes queued and not yet written; `failed` is set when stdin breaks.
pub(crate) fn writer(
    stdin: std::process::ChildStdin,
    rx: Receiver<Vec<Piece>>,
    backlog: Arc<AtomicUsize>,
    failed: Arc<AtomicBool>,
) {
    crate::process::lower_thread_priority(19);
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdin);
    let mut pacer = Pacer::default();
    let mut held: Vec<Vec<Piece>> = Vec::new();
    let mut ok = true;
    while ok {
        let got = match pacer.wait(Instant::now()) {
            None => {
                // Whatever is buffered goes out before the writer waits for more.
                if out.flush().is_err() {
                    break;
                }
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            }
            Some(t) => rx.recv_timeout(t),
        };
        let go = match got {
            Ok(block) => {
                let urgent = block.iter().any(Piece::urgent);
                held.push(block);
                pacer.arrive(Instant::now(), urgent)
            }
            Err(RecvTimeoutError::Timeout) => {
                pacer.timed_out();
                true
            }
            Err(RecvTimeoutError::Disconnected) => {
                ok = write_all(&mut out, &mut held, &backlog);
                let _ = out.flush();
                if ok {
                    return;
                }
                break;
            }
        };
        if go {
            ok = write_all(&mut out, &mut held, &backlog);
        }
    }
    failed.store(true, Ordering::Release);
    // Drain what is queued so the backlog stays true.
    for block in held.drain(..) {
        backlog.fetch_sub(block.iter().map(Piece::bytes).sum(), Ordering::AcqRel);
    }
    while let Ok(more) = rx.recv() {
        backlog.fetch_sub(more.iter().map(Piece::bytes).sum(), Ordering::AcqRel);
    }
}

/// Writes the held blocks in order; false when stdin broke (the rest stays held).
fn write_all(out: &mut impl Write, held: &mut Vec<Vec<Piece>>, backlog: &AtomicUsize) -> bool {
    let mut blocks = std::mem::take(held).into_iter();
    for block in blocks.by_ref() {
        let n: usize = block.iter().map(Piece::bytes).sum();
        let ok = block.iter().all(|p| p.write(out).is_ok());
        drop(block);
        backlog.fetch_sub(n, Ordering::AcqRel);
        if !ok {
            held.extend(blocks);
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn a_line_after_a_pause_goes_at_once() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        assert_eq!(p.wait(t), None);
        assert!(p.arrive(at(t, 100), false), "a pause longer than QUIET");
    }

    #[test]
    fn a_storm_is_held_until_it_pauses() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false), "the first block of a storm");
        assert!(!p.arrive(at(t, 1), false));
        assert!(!p.arrive(at(t, 2), false));
        // Waits for a pause measured from the last arrival.
        assert_eq!(p.wait(at(t, 2)), Some(QUIET));
        assert_eq!(p.wait(at(t, 10)), Some(QUIET - Duration::from_millis(8)));
        p.timed_out();
        assert_eq!(p.wait(at(t, 20)), None);
    }

    #[test]
    fn a_long_storm_is_written_every_max_hold() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        let mut written = Vec::new();
        for ms in 1..=1000 {
            if p.arrive(at(t, ms), false) {
                written.push(ms);
            }
            assert!(p.wait(at(t, ms)).is_none_or(|w| w <= QUIET));
        }
        let hold = MAX_HOLD.as_millis() as u64;
        assert_eq!(written, vec![1 + hold, 2 + 2 * hold]);
    }

    #[test]
    fn requests_are_never_held() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        assert!(!p.arrive(at(t, 1), false));
        assert!(
            p.arrive(at(t, 2), true),
            "a request takes the held events with it"
        );
        assert_eq!(p.wait(at(t, 2)), None);
    }

    #[test]
    fn the_writer_keeps_order_and_writes_held_lines_when_the_queue_ends() {
        // A storm of events, a request in the middle, then the end of the queue: every
        // line reaches stdin, in order, and the backlog returns to zero.
        let mut child = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("cat");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, rx) = std::sync::mpsc::channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicBool::new(false));
        let mut expected = String::new();
        for i in 0..50 {
            let block = if i == 25 {
                vec![Piece::Raw(format!("request {i}\n").into_bytes())]
            } else if i % 2 == 0 {
                vec![Piece::event(
                    Arc::new(Event {
                        schema: 1,
                        t: 0.0,
                        session: None,
                        body: EventBody::TurnStarted {
                            turn: i,
                            prompt: "p".into(),
                        },
                        acp: Some(Arc::from(r#"{"x":1}"#)),
                        wire: Default::default(),
                    }),
                    i % 4 == 0,
                )]
            } else {
                vec![Piece::Note(format!("note {i}\n").into_bytes())]
            };
            for p in &block {
                let mut v = Vec::new();
                p.write(&mut v).expect("write");
                expected.push_str(&String::from_utf8(v).expect("utf-8"));
            }
            backlog.fetch_add(block.iter().map(Piece::bytes).sum(), Ordering::AcqRel);
            tx.send(block).expect("send");
        }
        drop(tx);
        let (b, f) = (backlog.clone(), failed.clone());
        let w = std::thread::spawn(move || writer(stdin, rx, b, f));
        w.join().expect("writer");
        let out = child.wait_with_output().expect("cat output");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
        assert_eq!(backlog.load(Ordering::Acquire), 0);
        assert!(!failed.load(Ordering::Acquire));
    }
}
