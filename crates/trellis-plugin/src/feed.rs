//! Feeding a plugin's stdin: the writer thread.
//!
//! Events reach the adapter when the host hands them over: at once at rest, after a
//! storm pauses during one (`trellis_ext_host`'s outbox holds them: a plugin process that
//! parses JSON while the session is saturated takes CPU, memory bandwidth and cache from
//! the client and the agent whatever its priority). The writer writes what it gets, in
//! order; requests, responses and user actions come after everything queued before them.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};

use trellis_core::tool_call::ToolContent;
use trellis_core::{Event, EventBody, ToolCall};

/// What the writer writes.
#[derive(Debug)]
pub enum Piece {
    /// A line made for this plugin that goes at once (a request, a response, an action).
    Raw(Vec<u8>),
    /// An event, written as an `event` notification (with its ACP payload when `acp`).
    /// Its JSON is made when it is written, once for every plugin that receives it (the
    /// host's shared copy of the event, and its `wire`).
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
            Piece::Raw(b) => b.len(),
            Piece::Event { bytes, .. } => *bytes,
        }
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            Piece::Raw(b) => out.write_all(b),
            Piece::Event { event, acp, .. } => {
                let json = event.wire.get_or_init(|| {
                    trellis_core::event_json::event_string(event)
                        .map(Arc::from)
                        .unwrap_or_else(|_| Arc::from("{}"))
                });
                out.write_all(EVENT_HEAD)?;
                match (&event.acp, acp) {
                    (Some(payload), true) if json.ends_with('}') => {
                        // The verbatim ACP line as a string field of the event.
                        out.write_all(&json.as_bytes()[..json.len() - 1])?;
                        out.write_all(br#","acp":"#)?;
                        let mut quoted = Vec::with_capacity(payload.len() + 16);
                        trellis_core::compact_json::write_str(&mut quoted, payload);
                        out.write_all(&quoted)?;
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
                ToolContent::Session { session_id } => session_id.len() + 32,
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

/// The writer thread: blocks from `rx` to the plugin's stdin, in order, flushed whenever
/// the queue is empty. `backlog` counts bytes queued and not yet written; `failed` is set
/// when stdin breaks.
pub(crate) fn writer(
    stdin: std::process::ChildStdin,
    rx: Receiver<Vec<Piece>>,
    backlog: Arc<AtomicUsize>,
    failed: Arc<AtomicBool>,
) {
    trellis_os::priority::lower_this_thread(trellis_os::priority::LOWEST);
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdin);
    let mut held: Vec<Vec<Piece>> = Vec::new();
    loop {
        let block = match rx.try_recv() {
            Ok(b) => b,
            Err(TryRecvError::Empty) => {
                // Whatever is buffered goes out before the writer waits for more.
                if out.flush().is_err() {
                    break;
                }
                match rx.recv() {
                    Ok(b) => b,
                    Err(_) => return,
                }
            }
            Err(TryRecvError::Disconnected) => {
                let _ = out.flush();
                return;
            }
        };
        held.push(block);
        if !write_all(&mut out, &mut held, &backlog) {
            break;
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

    #[test]
    fn the_writer_keeps_order_and_writes_everything_before_the_queue_ends() {
        // Events (with and without their ACP payload) and other lines, then the end of
        // the queue: every line reaches stdin, in order, and the backlog returns to zero.
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
            let block = if i % 2 == 0 {
                vec![Piece::event(
                    Arc::new(Event {
                        schema: 1,
                        t: 0.0,
                        session: None,
                        hub_session: None,
                        body: EventBody::TurnStarted {
                            turn: i,
                            prompt: "p".into(),
                        },
                        acp: Some(Arc::from(r#"{"x":1}"#)),
                        wire: Default::default(),
                        position: None,
                    }),
                    i % 4 == 0,
                )]
            } else {
                vec![Piece::Raw(format!("request {i}\n").into_bytes())]
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
