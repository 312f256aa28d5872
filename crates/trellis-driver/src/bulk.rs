//! Finished calls' output leaves memory for the session log (issue 11, part 5): the texts
//! of the calls that finished longest ago are evicted once those held pass a budget, and
//! read back from the log (by line, through an index of its line starts) when a view, an
//! export or an extension asks (`trellis_core::bulk`).
//!
//! Invariants: only calls of this connection are evicted (a resumed session's history came
//! from another log, whose line numbers these are not); a call is evicted once, after it
//! finished; the most recently finished keep their text in memory up to the budget.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use trellis_core::bulk::BulkSource;
use trellis_core::cold::{Cold, Spill};
use trellis_core::tool_call::ToolContent;
use trellis_core::tool_call::text_in_record;
use trellis_core::{Session, ToolCall};

/// Bytes of finished calls' output kept in memory (the newest first).
pub const HELD_BUDGET: usize = 4 << 20;

/// Reads texts back from a session log.
struct LogSource {
    index: Mutex<trellis_store::LineOffsets>,
}

impl BulkSource for LogSource {
    fn text(&self, seq: u64, item: usize) -> Option<String> {
        let mut ix = self
            .index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ix.refresh().ok()?;
        let line = ix.line(seq).ok()??;
        text_in_record(&line, item)
    }
}

/// The spill file frozen chunks of calls go to (see `trellis_core::cold`): created
/// exclusively and already unlinked (`tempfile::tempfile`), so nothing can be put in its
/// place and nothing is left behind, however Trellis ends.
struct TempSpill {
    file: Mutex<(std::fs::File, u64)>,
}

impl Spill for TempSpill {
    fn put(&self, bytes: &[u8]) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mut g = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = g.1;
        g.0.write_all_at(bytes, at)?;
        g.1 += bytes.len() as u64;
        Ok(at)
    }

    fn get(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let g = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut buf = vec![0; len];
        g.0.read_exact_at(&mut buf, at)?;
        Ok(buf)
    }
}

pub(crate) struct Bulk {
    source: Arc<dyn BulkSource>,
    /// Where finished chunks of calls go (none: the spill file could not be made).
    pub(crate) cold: Option<Arc<Cold>>,
    spill_error: Option<String>,
    /// Ledger positions of finished calls whose text is held, oldest first, with its bytes.
    finished: VecDeque<(usize, usize)>,
    held: usize,
    /// Calls before this position are not this connection's.
    first: usize,
    budget: usize,
    /// Calls whose output was let go, and its bytes.
    evicted: (usize, usize),
}

fn held_bytes(call: &ToolCall) -> usize {
    call.content
        .iter()
        .map(|c| match c {
            ToolContent::Text { text } if text.is_held() => text.len(),
            _ => 0,
        })
        .sum()
}

/// What reads texts back from `log`.
fn log_source(log: &Path) -> Arc<dyn BulkSource> {
    Arc::new(LogSource {
        index: Mutex::new(trellis_store::LineOffsets::new(log)),
    })
}

/// What reads texts back from `log`, and the store of frozen chunks whose texts are
/// places in it (or why there is none: the spill file could not be made).
pub(crate) fn log_store(log: &Path) -> (Arc<dyn BulkSource>, Result<Arc<Cold>, String>) {
    let source = log_source(log);
    let cold = match tempfile::tempfile() {
        Ok(f) => Ok(Cold::new(
            Arc::new(TempSpill {
                file: Mutex::new((f, 0)),
            }),
            source.clone(),
        )),
        Err(e) => Err(e.to_string()),
    };
    (source, cold)
}

impl Bulk {
    pub(crate) fn new(log: &Path, session: &Session, budget: usize) -> Bulk {
        let (source, cold) = match session.ledger.cold() {
            // A resumed session's history, rebuilt into a store of its own (its texts
            // are places in the earlier log): the new calls' go on in the same store,
            // read back from this log.
            Some(history) => {
                let source = log_source(log);
                history.continue_in(session.ledger.len(), source.clone());
                (source, Ok(history.clone()))
            }
            None => log_store(log),
        };
        let (cold, spill_error) = match cold {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        Bulk {
            source,
            cold,
            spill_error,
            finished: VecDeque::new(),
            held: 0,
            first: session.ledger.len(),
            budget,
            evicted: (0, 0),
        }
    }

    /// Call `index` finished: its output is held until newer ones push it past the budget.
    pub(crate) fn finished(&mut self, session: &Session, index: usize) {
        if index < self.first || index >= session.ledger.len() {
            return;
        }
        let bytes = held_bytes(&session.ledger.at(index));
        if bytes == 0 {
            return;
        }
        self.finished.push_back((index, bytes));
        self.held += bytes;
        while self.held > self.budget {
            let Some((i, b)) = self.finished.pop_front() else {
                break;
            };
            self.held -= b;
            if session.ledger.is_frozen(i) {
                // Its chunk left memory whole, texts as places in the log.
                continue;
            }
            let mut let_go = 0;
            for c in &session.ledger.at(i).content {
                if let ToolContent::Text { text } = c {
                    let_go += text.evict(&self.source);
                }
            }
            if let_go > 0 {
                self.evicted.0 += 1;
                self.evicted.1 += let_go;
            }
        }
    }
}

impl Bulk {
    /// `/status`'s lines: what is held, what only the log keeps, and how many calls are
    /// out of memory whole.
    pub(crate) fn line(&self) -> String {
        let mb = |b: usize| b as f64 / (1 << 20) as f64;
        let frozen = match (&self.cold, &self.spill_error) {
            (Some(c), _) => match c.stats() {
                (n, None) => format!("\n{n} finished calls out of memory (read back when shown)"),
                (n, Some(e)) => format!("\n{n} finished calls out of memory, no more: {e}"),
            },
            (None, Some(e)) => format!("\nevery call stays in memory (no spill file: {e})"),
            (None, None) => String::new(),
        };
        format!(
            "finished calls' output in memory: {:.1} MB of {:.0} MB ({} calls)\nin the session log only: {} calls, {:.1} MB (read back when shown){frozen}",
            mb(self.held),
            mb(self.budget),
            self.finished.len(),
            self.evicted.0,
            mb(self.evicted.1)
        )
    }
}
