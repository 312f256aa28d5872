//! Reading a log into a sink: complete lines to the extractor, what it finds to the sink.
//! A long stretch is read and taken apart on a second thread while the caller's thread
//! writes (SQLite is most of the work, the JSON the rest: the two overlap).

use std::io::{BufRead, BufReader};
use std::sync::mpsc::{SyncSender, sync_channel};

use crate::extract::{CallRow, Doc, Extractor, Sink};

/// Bytes to read from which the reading gets a thread of its own (below, starting the
/// thread costs more than it saves: a refresh reads thousands of small logs).
const PIPELINE_AT: u64 = 1 << 20;

/// What the reading thread found, in order.
enum Found {
    Doc(Doc),
    Call(CallRow),
    Checkpoint(u64, u32),
}

/// Handed over this many at a time, at most [`DEPTH`] batches ahead of the writer: a
/// running session indexes in its own process, so what is in flight stays small (about
/// 64 × 5 tool outputs).
const BATCH: usize = 64;
const DEPTH: usize = 4;

struct Forward {
    tx: SyncSender<Vec<Found>>,
    batch: Vec<Found>,
}

impl Forward {
    fn push(&mut self, f: Found) {
        self.batch.push(f);
        if self.batch.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() {
            // The writer gone means it panicked; the join below reports that.
            let _ = self.tx.send(std::mem::replace(
                &mut self.batch,
                Vec::with_capacity(BATCH),
            ));
        }
    }
}

impl Sink for Forward {
    fn doc(&mut self, doc: Doc) {
        self.push(Found::Doc(doc));
    }
    fn call(&mut self, call: CallRow) {
        self.push(Found::Call(call));
    }
    fn checkpoint(&mut self, offset: u64, turn: u32) {
        self.push(Found::Checkpoint(offset, turn));
    }
}

/// Reads `file` (positioned at `from`, `len` bytes long) up to its last complete line
/// into `ex` and `sink`, then, with `finish`, hands over what is still open in `ex`.
/// Returns the offset after that line.
pub(crate) fn read_into(
    mut file: std::fs::File,
    from: u64,
    len: u64,
    ex: &mut Extractor,
    sink: &mut dyn Sink,
    finish: bool,
) -> std::io::Result<u64> {
    if len.saturating_sub(from) < PIPELINE_AT {
        let end = read_lines(&mut file, from, ex, sink)?;
        if finish {
            ex.finish(sink);
        }
        return Ok(end);
    }
    let (tx, rx) = sync_channel::<Vec<Found>>(DEPTH);
    std::thread::scope(|s| {
        let reader = std::thread::Builder::new()
            .name("index-reader".into())
            .spawn_scoped(s, move || {
                let mut fwd = Forward {
                    tx,
                    batch: Vec::with_capacity(BATCH),
                };
                let end = read_lines(&mut file, from, ex, &mut fwd);
                if end.is_ok() && finish {
                    ex.finish(&mut fwd);
                }
                fwd.flush();
                end
            })?;
        for batch in rx {
            for f in batch {
                match f {
                    Found::Doc(d) => sink.doc(d),
                    Found::Call(c) => sink.call(c),
                    Found::Checkpoint(at, turn) => sink.checkpoint(at, turn),
                }
            }
        }
        reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the log reader failed")))
    })
}

/// Feeds every complete line from `from` on; returns the offset after the last one.
fn read_lines(
    file: &mut std::fs::File,
    from: u64,
    ex: &mut Extractor,
    sink: &mut dyn Sink,
) -> std::io::Result<u64> {
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::with_capacity(64 << 10);
    let mut at = from;
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(at);
        }
        let next = at + n as u64;
        ex.feed(&line[..n - 1], at, next, sink);
        at = next;
    }
}
