//! Counts over calls that need no decoding: what a chunk's calls are, by status, taken
//! when the chunk freezes, so counts and searches by status never read it back.

use crate::tool_call::{ToolCall, ToolContent, ToolStatus};

/// Counts over calls that need no decoding: per status, and the bytes of their output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    counts: [usize; 6],
    pub output_bytes: usize,
    pub calls: usize,
    /// Calls flagged with an anomaly.
    pub flagged: usize,
    /// The first and last turn of the calls counted (a chunk's are exact; a sum's, once
    /// a chunk's tally was taken out of it again, only cover them).
    pub turns: Option<(u32, u32)>,
}

fn status_slot(s: ToolStatus) -> usize {
    match s {
        ToolStatus::Pending => 0,
        ToolStatus::InProgress => 1,
        ToolStatus::Completed => 2,
        ToolStatus::Failed => 3,
        ToolStatus::Cancelled => 4,
        ToolStatus::Unfinished => 5,
    }
}

impl Tally {
    pub fn count(&self, s: ToolStatus) -> usize {
        self.counts[status_slot(s)]
    }

    pub fn add(&mut self, c: &ToolCall) {
        self.counts[status_slot(c.status)] += 1;
        self.output_bytes += c
            .content
            .iter()
            .map(ToolContent::text_size_bytes)
            .sum::<usize>();
        self.calls += 1;
        self.flagged += usize::from(!c.anomalies.is_empty());
        self.cover(Some((c.turn, c.turn)));
    }

    fn cover(&mut self, turns: Option<(u32, u32)>) {
        self.turns = match (self.turns, turns) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (a, b) => a.or(b),
        };
    }

    pub(super) fn merge(&mut self, o: &Tally) {
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a += b;
        }
        self.output_bytes += o.output_bytes;
        self.calls += o.calls;
        self.flagged += o.flagged;
        self.cover(o.turns);
    }

    pub(super) fn remove(&mut self, o: &Tally) {
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a -= b;
        }
        self.output_bytes -= o.output_bytes;
        self.calls -= o.calls;
        self.flagged -= o.flagged;
    }
}
