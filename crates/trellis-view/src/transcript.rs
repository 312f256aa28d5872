//! The transcript layout: each entry rendered "width in, lines out" and cached by a key
//! of what it shows, heights kept in prefix sums, so a frame renders only what is visible
//! and finds it by binary search — its cost does not grow with the transcript.
//!
//! Invariants: `prefix[b]` is the line offset of entry `b * BLOCK` for every such entry
//! `< valid`; an entry whose key changes (new text, a call's revision, the width) is
//! re-measured and the sums after it recomputed lazily. Callers report changes to
//! existing calls with [`TranscriptView::invalidate_call`]; new entries and message
//! growth are found by `sync`.
//!
//! A change that touches many entries (a resize, a design switched, thoughts unfolded)
//! marks them stale instead of laying them all out at once (at a million calls that
//! read every frozen call back: seconds): the bottom and what a frame draws are laid
//! out first, the rest a budget per `sync`, their old heights standing in meanwhile. A
//! resize leaves native cards alone: their lines are clipped, never wrapped, so their
//! height does not depend on the width.
//!
//! Per entry only its height is kept (4 bytes, the top bit marking a designed card), and
//! per call the entry that shows it (4 bytes): a session of a million calls has a million
//! entries. The keys entries were laid out with are kept only for the few `sync` looks at
//! again unasked (the last entry, those showing a subagent); rendered lines for the
//! [`LINES_KEPT`] entries laid out last that have any, laid out again when drawn otherwise.

use std::collections::VecDeque;
use std::sync::Arc;

use ratatui_core::text::Line;
use trellis_core::session::Entry;
use trellis_core::{Session, ToolStatus};

use crate::card::{CardCtx, OutputPolicies, card_line};
use crate::theme::Theme;

mod entry;
mod stale;
use entry::child_of;
use stale::{RELAYOUT_BUDGET, Scope, Stale};

/// A card drawn by a design: its call part (the first line is the card's line) and its
/// result part (shown under it like native output, subject to the output policy).
#[derive(Debug, Clone, Default)]
pub struct DesignedCard {
    pub call: Vec<Line<'static>>,
    pub result: Vec<Line<'static>>,
    /// The design draws the whole first line (no status mark, no duration added).
    pub bare: bool,
}

/// What extensions change in the transcript: card designs and display transforms.
/// Implementations must be cheap to call and must never fail (a failing design returns
/// `None`: the native card).
pub trait Decor: Send + Sync {
    /// The call drawn by the design its tool has, or `None` for the native card.
    fn card(
        &self,
        call: &trellis_core::ToolCall,
        width: usize,
        theme: &Theme,
    ) -> Option<DesignedCard>;
    /// Output text after display transforms; `None` when unchanged.
    fn transform(&self, call: &trellis_core::ToolCall, text: &str) -> Option<String>;
    /// Changes whenever designs or transforms would draw differently.
    fn epoch(&self) -> u64;
    /// Calls whose designed card or transformed text arrived since the last call (their
    /// entries are drawn again).
    fn changed(&self) -> Vec<String> {
        Vec::new()
    }
    /// Changes whenever an answer arrives (views caching transformed text compare it).
    fn generation(&self) -> u64 {
        0
    }
    /// Called at the end of every `sync`: what was asked for while measuring may be
    /// handed to whoever answers it, in one go.
    fn flush(&self) {}
}

/// An entry's height in lines; the top bit marks a card drawn by a design (its lines are
/// then the whole card).
#[derive(Debug, Clone, Copy, Default)]
struct Cached(u32);

const DESIGNED: u32 = 1 << 31;

impl Cached {
    fn new(height: usize, designed: bool) -> Cached {
        let h = u32::try_from(height)
            .unwrap_or(DESIGNED - 1)
            .min(DESIGNED - 1);
        Cached(if designed { h | DESIGNED } else { h })
    }
    fn height(self) -> u32 {
        self.0 & !DESIGNED
    }
    fn designed(self) -> bool {
        self.0 & DESIGNED != 0
    }
}

/// Entries per prefix sum (the offset of an entry inside its block is summed when asked).
const BLOCK: usize = 64;
/// Entries whose rendered lines are kept.
pub const LINES_KEPT: usize = 4096;
/// When more new entries come at once than a sync lays out (a session brought to the
/// front after it streamed in the background, a recording read in), only this many of
/// the newest are laid out by that sync: what the first frame draws is laid out when it is
/// drawn, and the rest follows [`RELAYOUT_BUDGET`] per sync.
const FIRST_SCREEN: usize = 128;

type Lines = Arc<Vec<Line<'static>>>;

#[derive(Debug, Default)]
pub struct TranscriptView {
    width: usize,
    entries: Vec<Cached>,
    /// The key (see `key`) each entry was laid out with, for the entries `sync` looks at
    /// again without being told (the last one, those showing a subagent); any other is
    /// laid out again only when invalidated.
    keys: std::collections::HashMap<usize, u64>,
    /// Rendered lines of the entries laid out last that have any (for a native card: only
    /// the lines under its first line), oldest first in `kept`.
    lines: std::collections::HashMap<usize, Lines>,
    kept: VecDeque<usize>,
    /// Line offset of each block's first entry (see [`BLOCK`]), and one past the end.
    prefix: Vec<usize>,
    valid: usize,
    stale: Stale,
    /// Entries never laid out yet (more arrived at once than a `sync` lays out: a replay
    /// opening, a burst): a height of one line stands in until `sync` gets to them.
    fresh: std::ops::Range<usize>,
    /// Transcript entry of each ledger index (`u32::MAX`: none).
    call_entry: Vec<u32>,
    /// Entries invalidated since the last `sync`.
    dirty: Vec<usize>,
    /// Entries that show a subagent (a call that started one, or the announcement): what
    /// the child does changes them without touching them, so `sync` re-checks their keys.
    trees: Vec<usize>,
    pub policies: OutputPolicies,
    pub thoughts_folded: bool,
    /// Card designs and display transforms (from extensions).
    pub decor: Option<Arc<dyn Decor>>,
    decor_epoch: u64,
}

impl std::fmt::Debug for dyn Decor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decor")
    }
}

impl TranscriptView {
    pub fn new() -> TranscriptView {
        TranscriptView {
            thoughts_folded: true,
            ..TranscriptView::default()
        }
    }

    /// Marks the entry of ledger call `index` for re-measuring.
    /// Whether call `index` is one of the cards laid out so far.
    pub fn knows_call(&self, index: usize) -> bool {
        self.call_entry
            .get(index)
            .is_some_and(|&e| (e as usize) < self.entries.len())
    }

    pub fn invalidate_call(&mut self, index: usize) {
        if let Some(&e) = self.call_entry.get(index)
            && (e as usize) < self.entries.len()
        {
            self.keys.remove(&(e as usize));
            self.lines.remove(&(e as usize));
            self.dirty.push(e as usize);
        }
    }

    /// Forgets every cached entry (theme or policy change): each is laid out again, the
    /// nearest the bottom and those drawn first.
    pub fn invalidate_all(&mut self) {
        self.go_stale(Scope::Everything);
    }

    /// Thoughts were folded or unfolded: only they are laid out again.
    pub fn invalidate_thoughts(&mut self) {
        self.go_stale(Scope::Thoughts);
    }

    /// Brings the layout up to date with `session` at `width`: new entries are measured,
    /// invalidated ones and the last entry (which may be streaming) re-checked.
    pub fn sync(&mut self, session: &Session, width: usize, theme: &Theme) {
        if width != self.width {
            self.width = width;
            self.go_stale(Scope::Wrapped);
        }
        let epoch = self.decor.as_ref().map(|d| d.epoch()).unwrap_or(0);
        if epoch != self.decor_epoch {
            // A design was switched (or an extension went away): redraw drawn cards.
            self.decor_epoch = epoch;
            self.invalidate_all();
        }
        if let Some(d) = &self.decor {
            for id in d.changed() {
                if let Some(i) = session.ledger.position(&id) {
                    self.invalidate_call(i);
                }
            }
        }
        let n = session.transcript.len();
        let first_new = self.entries.len();
        // One allocation for a flood of new entries, not one per doubling.
        self.entries.reserve(n.saturating_sub(first_new));
        self.call_entry
            .reserve(session.ledger.len().saturating_sub(self.call_entry.len()));
        for (i, e) in session.transcript.iter().enumerate().skip(first_new) {
            if let Entry::ToolCall { index } = e {
                if self.call_entry.len() <= *index {
                    self.call_entry.resize(*index + 1, u32::MAX);
                }
                self.call_entry[*index] = u32::try_from(i).unwrap_or(u32::MAX);
            }
            self.entries.push(Cached::new(1, false));
        }
        // Re-measure what may have changed: the new entries (the newest, when more came
        // than a sync lays out: the others follow), the last old one (it may be a
        // streaming message), and those invalidated since.
        let flood = n - first_new > RELAYOUT_BUDGET;
        let now_from = n
            .saturating_sub(if flood { FIRST_SCREEN } else { RELAYOUT_BUDGET })
            .max(first_new);
        if now_from > first_new {
            let start = if self.fresh.is_empty() {
                first_new
            } else {
                self.fresh.start.min(first_new)
            };
            self.fresh = start..now_from;
        }
        if let Some(last_old) = first_new.checked_sub(1) {
            self.measure(session, last_old, theme);
        }
        for i in now_from..n {
            self.measure(session, i, theme);
        }
        for i in std::mem::take(&mut self.dirty) {
            if i < n {
                self.measure(session, i, theme);
            }
        }
        for k in 0..self.trees.len() {
            let i = self.trees[k];
            if i < n {
                self.measure(session, i, theme);
            }
        }
        // A flood spends this sync's budget on its newest entries alone: the frame.
        let spent = if flood { RELAYOUT_BUDGET } else { n - now_from };
        self.relayout(session, theme, spent);
        // Keys are kept only where they are looked at again unasked.
        if self.keys.len() > self.trees.len() + 1 {
            let last = n.saturating_sub(1);
            let trees = &self.trees;
            self.keys.retain(|&i, _| i == last || trees.contains(&i));
        }
        if let Some(d) = &self.decor {
            d.flush();
        }
    }

    fn measure(&mut self, session: &Session, i: usize, theme: &Theme) {
        let entry = &session.transcript[i];
        let key = self.key(session, entry);
        if self.keys.get(&i) == Some(&key) && key != 0 {
            return;
        }
        let shows_child = match entry {
            Entry::ToolCall { index } => child_of(session, &session.ledger.at(*index)).is_some(),
            Entry::Subagent { .. } => true,
            _ => false,
        };
        if shows_child && !self.trees.contains(&i) {
            self.trees.push(i);
        }
        let (height, lines, designed) = self.layout(session, i, theme);
        let old = self.entries[i].height();
        self.entries[i] = Cached::new(height, designed);
        let height = self.entries[i].height();
        self.keys.insert(i, key);
        self.keep(i, lines);
        if old != height || i >= self.valid {
            self.valid = self.valid.min(i);
        }
    }

    /// Keeps entry `i`'s lines (if it has any), letting the oldest kept go.
    fn keep(&mut self, i: usize, lines: Vec<Line<'static>>) {
        if lines.is_empty() {
            self.lines.remove(&i);
            return;
        }
        if self.lines.insert(i, Arc::new(lines)).is_none() {
            self.kept.push_back(i);
        }
        while self.kept.len() > LINES_KEPT {
            if let Some(old) = self.kept.pop_front() {
                self.lines.remove(&old);
            }
        }
    }

    /// The lines of entry `i`: kept ones, or laid out again (and kept).
    fn lines_of(&mut self, session: &Session, i: usize, theme: &Theme) -> Option<Lines> {
        if let Some(l) = self.lines.get(&i) {
            return Some(l.clone());
        }
        let (_, lines, _) = self.layout(session, i, theme);
        if lines.is_empty() {
            return None;
        }
        self.keep(i, lines);
        self.lines.get(&i).cloned()
    }

    /// Brings the block sums up to date: `prefix[b]` for every block, and the total last.
    fn fix_prefix(&mut self) {
        let n = self.entries.len();
        let blocks = n.div_ceil(BLOCK);
        if self.valid >= n && self.prefix.len() == blocks + 1 {
            return;
        }
        // From the block holding the first stale entry on.
        let from = (self.valid / BLOCK).min(blocks);
        self.prefix.resize(blocks + 1, 0);
        if from == 0 {
            self.prefix[0] = 0;
        }
        for b in from..blocks {
            let end = ((b + 1) * BLOCK).min(n);
            let sum: usize = self.entries[b * BLOCK..end]
                .iter()
                .map(|c| c.height() as usize)
                .sum();
            self.prefix[b + 1] = self.prefix[b] + sum;
        }
        self.valid = n;
    }

    /// Total height in lines.
    pub fn total_height(&mut self) -> usize {
        self.fix_prefix();
        self.prefix.last().copied().unwrap_or(0)
    }

    /// First line of entry `i`.
    pub fn offset_of(&mut self, i: usize) -> usize {
        self.fix_prefix();
        let i = i.min(self.entries.len());
        let b = i / BLOCK;
        let base = self.prefix.get(b).copied().unwrap_or(0);
        base + self.entries[b * BLOCK..i]
            .iter()
            .map(|c| c.height() as usize)
            .sum::<usize>()
    }

    /// The entry drawn at line `y` of the whole transcript.
    pub fn entry_at(&mut self, y: usize) -> Option<usize> {
        self.fix_prefix();
        let total = self.prefix.last().copied().unwrap_or(0);
        if self.entries.is_empty() || y >= total {
            return None;
        }
        // The last block starting at or before `y`, then its entries in order.
        let b = self.prefix.partition_point(|&p| p <= y).saturating_sub(1);
        let mut at = self.prefix[b];
        for i in b * BLOCK..self.entries.len() {
            let h = self.entries[i].height() as usize;
            if y < at + h {
                return Some(i);
            }
            at += h;
        }
        None
    }

    /// Lines `top..top + height` of the transcript. `cursor` is the selected entry,
    /// `highlight` the entry of a call waiting for permission.
    #[allow(clippy::too_many_arguments)]
    pub fn render(
        &mut self,
        session: &Session,
        top: usize,
        height: usize,
        theme: &Theme,
        now: f64,
        frame: usize,
        cursor: Option<usize>,
        highlight: Option<usize>,
    ) -> Vec<Line<'static>> {
        if self.settling() {
            self.settle_view(session, top, height, theme);
        }
        self.fix_prefix();
        let mut out = Vec::with_capacity(height);
        let Some(mut i) = self.entry_at(top) else {
            return out;
        };
        let mut skip = top - self.offset_of(i);
        while out.len() < height && i < self.entries.len() {
            let want = height - out.len();
            if let Entry::ToolCall { index } = &session.transcript[i] {
                let call = session.ledger.at(*index);
                let cx = CardCtx {
                    theme,
                    width: self.width,
                    now,
                    frame,
                    selected: cursor == Some(i),
                    highlighted: highlight == Some(i),
                };
                if self.entries[i].designed() {
                    if let Some(all) = self.lines_of(session, i, theme) {
                        for (k, l) in all.iter().enumerate().skip(skip).take(want) {
                            let mut l = l.clone();
                            if k == 0 && (cx.selected || cx.highlighted) {
                                let st = if cx.highlighted {
                                    theme.highlight
                                } else {
                                    theme.selected
                                };
                                l = l.patch_style(st);
                            }
                            out.push(l);
                        }
                    }
                } else {
                    if skip == 0 {
                        out.push(card_line(&call, session, &cx));
                    }
                    if self.entries[i].height() > 1
                        && let Some(rest) = self.lines_of(session, i, theme)
                    {
                        let from = skip.saturating_sub(1);
                        out.extend(
                            rest.iter()
                                .skip(from)
                                .take(want.saturating_sub(usize::from(skip == 0)))
                                .cloned(),
                        );
                    }
                }
            } else if let Some(lines) = self.lines_of(session, i, theme) {
                let shown = lines.iter().skip(skip).take(want).cloned();
                if cursor == Some(i) {
                    // The cursor on a message, a thought or a plan: the whole entry is
                    // marked (a card marks its first line).
                    out.extend(shown.map(|l| l.patch_style(theme.selected)));
                } else {
                    out.extend(shown);
                }
            }
            skip = 0;
            i += 1;
        }
        out.truncate(height);
        out
    }

    /// The transcript entry of ledger call `index`, once synced.
    pub fn entry_of_call(&self, index: usize) -> Option<usize> {
        self.call_entry
            .get(index)
            .copied()
            .filter(|&e| e != u32::MAX)
            .map(|e| e as usize)
    }

    /// Entry indexes of tool calls, in order (for cursor moves).
    pub fn call_entries(&self) -> impl Iterator<Item = usize> + '_ {
        self.call_entry
            .iter()
            .copied()
            .filter(|&e| e != u32::MAX)
            .map(|e| e as usize)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether any call is running (the spinner needs frames).
    pub fn animating(session: &Session) -> bool {
        session.turn_open
            && session
                .ledger
                .calls()
                .rev()
                .take(64)
                .any(|c| matches!(c.status, ToolStatus::Pending | ToolStatus::InProgress))
    }
}
