//! Laying out again what a wide change touched (a resize, a design switched, thoughts
//! unfolded): the entries are marked stale, the bottom and what a frame draws are laid
//! out first, the rest a budget per `sync`, their old heights standing in meanwhile.

use trellis_core::Session;
use trellis_core::event::Role;
use trellis_core::session::Entry;

use super::TranscriptView;
use crate::theme::Theme;

/// Stale entries (see [`Stale`]) laid out again per `sync`, and looked at.
pub(super) const RELAYOUT_BUDGET: usize = 4096;
pub(super) const SCAN_BUDGET: usize = 1 << 16;

/// What a change may draw differently, from the narrowest to the widest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Scope {
    #[default]
    Nothing,
    /// Thoughts (folded or unfolded).
    Thoughts,
    /// Whatever wraps or is drawn by a design: everything but native cards, whose lines
    /// are clipped, never wrapped (their height does not depend on the width, so a
    /// resize need not read a frozen call back).
    Wrapped,
    Everything,
}

/// Entries laid out before a change, not laid out again yet: those of `scope` below
/// `upto`. `sync` lays them out from the bottom up, [`RELAYOUT_BUDGET`] at a time, and
/// `render` those it draws first; meanwhile their old heights stand in.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stale {
    upto: usize,
    scope: Scope,
}

impl TranscriptView {
    pub(super) fn go_stale(&mut self, scope: Scope) {
        // Kept lines are drawn as they are: all go (a native card's too, clipped to
        // the old width), and are laid out again when drawn.
        self.keys.clear();
        self.lines.clear();
        self.kept.clear();
        // Both changes' entries, over the whole transcript (one scope holds the other).
        self.stale = Stale {
            upto: self.entries.len(),
            scope: scope.max(if self.stale.upto > 0 {
                self.stale.scope
            } else {
                Scope::Nothing
            }),
        };
    }

    /// Whether entry `i` is still to be laid out again after a change.
    pub(super) fn is_stale(&self, session: &Session, i: usize) -> bool {
        if self.fresh.contains(&i) {
            return true;
        }
        if i >= self.stale.upto {
            return false;
        }
        match (self.stale.scope, &session.transcript[i]) {
            (Scope::Nothing, _) => false,
            (Scope::Everything, _) => true,
            (Scope::Wrapped, Entry::ToolCall { .. }) => self.entries[i].designed(),
            (Scope::Wrapped, _) => true,
            (Scope::Thoughts, Entry::Message(m)) => m.role == Role::Thought,
            (Scope::Thoughts, _) => false,
        }
    }

    /// Whether entries are still to be laid out again after a change (the UI keeps
    /// drawing until they are).
    pub fn settling(&self) -> bool {
        self.stale.upto > 0 || !self.fresh.is_empty()
    }

    /// Lays out stale entries from the bottom up, up to [`RELAYOUT_BUDGET`] with the
    /// `measured` this sync laid out already.
    pub(super) fn relayout(&mut self, session: &Session, theme: &Theme, mut measured: usize) {
        let mut looked = 0;
        // The newest first.
        while !self.fresh.is_empty() && measured < RELAYOUT_BUDGET {
            let i = self.fresh.end - 1;
            self.measure(session, i, theme);
            self.fresh.end = i;
            measured += 1;
        }
        while self.stale.upto > 0 && measured < RELAYOUT_BUDGET && looked < SCAN_BUDGET {
            let i = self.stale.upto - 1;
            if self.is_stale(session, i) {
                self.measure(session, i, theme);
                measured += 1;
            }
            self.stale.upto = i;
            looked += 1;
        }
    }

    /// Lays out the stale entries lines `top..top + height` show, so what is drawn is
    /// exact (their heights may move what is in view: a few rounds settle it).
    pub(super) fn settle_view(
        &mut self,
        session: &Session,
        top: usize,
        height: usize,
        theme: &Theme,
    ) {
        for _ in 0..4 {
            let Some(mut i) = self.entry_at(top) else {
                return;
            };
            let mut y = self.offset_of(i);
            let mut changed = false;
            while y < top + height && i < self.entries.len() {
                if self.is_stale(session, i) {
                    let old = self.entries[i].height();
                    self.measure(session, i, theme);
                    changed |= self.entries[i].height() != old;
                }
                y += self.entries[i].height() as usize;
                i += 1;
            }
            if !changed {
                return;
            }
        }
    }
}
