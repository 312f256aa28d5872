//! Reading the ledger whole: every call in order (a frozen chunk decoded once, not call
//! by call), and the counts a search or a summary needs, taken from the chunks' tallies
//! without decoding frozen calls.

use std::sync::Arc;

use super::{Ledger, unreadable};
use crate::cold::{CHUNK, Tally, Thawed};
use crate::tool_call::{ToolCall, ToolStatus};

impl Ledger {
    /// The tally of the calls of chunk `no` (positions `no * CHUNK ..`), without reading
    /// frozen calls back: what lets a search by status skip whole chunks.
    pub fn chunk_tally(&self, no: usize) -> Tally {
        match self.chunks.get(no) {
            Some(Some(hot)) => {
                let mut t = Tally::default();
                for c in &hot.calls {
                    t.add(c);
                }
                t
            }
            Some(None) => self
                .cold
                .as_ref()
                .and_then(|c| c.chunk_tally(no))
                .unwrap_or_default(),
            None => Tally::default(),
        }
    }

    /// The ledger's last run of calls of turn `turn` — a turn's own calls, since a call
    /// belongs to the turn it was first seen in: how many, how many failed, how many are
    /// flagged with an anomaly. Chunks wholly of the turn are counted from their tallies,
    /// frozen or not; only the chunk where the run begins is read call by call.
    pub fn turn_tally(&self, turn: u32) -> (usize, usize, usize) {
        let (mut calls, mut failed, mut flagged) = (0, 0, 0);
        for no in (0..self.len.div_ceil(CHUNK)).rev() {
            let t = self.chunk_tally(no);
            let end = ((no + 1) * CHUNK).min(self.len);
            if t.calls == end - no * CHUNK && t.turns == Some((turn, turn)) {
                calls += t.calls;
                failed += t.count(ToolStatus::Failed);
                flagged += t.flagged;
                continue;
            }
            // A frozen chunk is read back whole, once (not call by call).
            let frozen = match self.chunks.get(no) {
                Some(None) => self.cold.as_ref().and_then(|c| c.chunk(no)),
                _ => None,
            };
            for i in (no * CHUNK..end).rev() {
                let c = match &frozen {
                    Some(t) => t
                        .calls
                        .get(i - no * CHUNK)
                        .filter(|c| c.position == i)
                        .cloned(),
                    None => None,
                }
                .unwrap_or_else(|| self.at(i));
                if c.turn != turn {
                    return (calls, failed, flagged);
                }
                calls += 1;
                failed += usize::from(c.status == ToolStatus::Failed);
                flagged += usize::from(!c.anomalies.is_empty());
            }
        }
        (calls, failed, flagged)
    }

    /// Every call, in order (frozen ones decoded a chunk at a time).
    pub fn calls(&self) -> Calls<'_> {
        Calls {
            ledger: self,
            front: 0,
            back: self.len,
            fcache: None,
            bcache: None,
        }
    }

    /// Calls per status and their output bytes, without decoding frozen calls (their
    /// chunks' tallies were taken when they froze).
    pub fn tally(&self) -> Tally {
        let mut t = self.cold.as_ref().map(|c| c.tally()).unwrap_or_default();
        for c in self.chunks.iter().flatten().flat_map(|h| h.calls.iter()) {
            t.add(c);
        }
        t
    }
}

/// Every call of a ledger in order; see [`Ledger::calls`].
#[derive(Clone)]
pub struct Calls<'a> {
    ledger: &'a Ledger,
    front: usize,
    back: usize,
    fcache: Option<(usize, Arc<Thawed>)>,
    bcache: Option<(usize, Arc<Thawed>)>,
}

impl Calls<'_> {
    fn get(&mut self, i: usize, back: bool) -> Arc<ToolCall> {
        let no = i / CHUNK;
        if let Some(Some(hot)) = self.ledger.chunks.get(no) {
            return hot.calls[i % CHUNK].clone();
        }
        let cache = if back {
            &mut self.bcache
        } else {
            &mut self.fcache
        };
        if cache.as_ref().is_none_or(|(n, _)| *n != no) {
            *cache = self
                .ledger
                .cold
                .as_ref()
                .and_then(|c| c.chunk(no))
                .map(|t| (no, t));
        }
        cache
            .as_ref()
            .and_then(|(_, t)| t.calls.get(i % CHUNK).cloned())
            .unwrap_or_else(|| unreadable(i))
    }
}

impl Iterator for Calls<'_> {
    type Item = Arc<ToolCall>;

    fn next(&mut self) -> Option<Arc<ToolCall>> {
        if self.front >= self.back {
            return None;
        }
        let c = self.get(self.front, false);
        self.front += 1;
        Some(c)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Calls<'_> {
    fn next_back(&mut self) -> Option<Arc<ToolCall>> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        Some(self.get(self.back, true))
    }
}

impl ExactSizeIterator for Calls<'_> {}
