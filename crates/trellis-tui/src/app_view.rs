//! Where the transcript stands: scrolling, the card cursor, bringing an entry into view,
//! and what the mouse does (the wheel, the sidebar's rows, a click on a card).

use crossterm::event::{MouseEvent, MouseEventKind};
use trellis_core::session::Entry;

use crate::app::{App, Focus, Intent, SidebarHit};

impl App {
    pub(crate) fn scroll_by(&mut self, delta: isize) {
        let total = self.view.total_height();
        let max_top = total.saturating_sub(self.page);
        let cur = self.top.unwrap_or(max_top) as isize;
        let next = (cur + delta).clamp(0, max_top as isize) as usize;
        self.top = if next >= max_top { None } else { Some(next) };
    }

    /// Moves the card cursor by `delta` cards and scrolls it into view. Walks only the
    /// entries between (a session of a million calls has a million cards).
    pub(crate) fn move_cursor(&mut self, delta: isize) {
        let t = &self.driver.session.transcript;
        let is_card = |i: usize| matches!(t.get(i), Some(Entry::ToolCall { .. }));
        let first = || (0..t.len()).find(|&i| is_card(i));
        let last = || (0..t.len()).rev().find(|&i| is_card(i));
        let target = match self.cursor.filter(|&c| is_card(c)) {
            Some(c) => {
                let (mut at, mut left, mut i) = (c, delta.unsigned_abs(), c);
                while left > 0 {
                    i = match (delta > 0, i) {
                        (true, i) if i + 1 < t.len() => i + 1,
                        (false, i) if i > 0 => i - 1,
                        _ => break,
                    };
                    if is_card(i) {
                        at = i;
                        left -= 1;
                    }
                }
                Some(at)
            }
            // Entering the transcript (delta 0) or moving up starts from the latest card.
            None if delta <= 0 => last(),
            None => first(),
        };
        let Some(entry) = target else {
            self.message = Some("no tool calls yet".into());
            return;
        };
        self.cursor = Some(entry);
        self.reveal(entry);
    }

    pub(crate) fn reveal(&mut self, entry: usize) {
        let y = self.view.offset_of(entry);
        let total = self.view.total_height();
        let max_top = total.saturating_sub(self.page);
        let top = self.top.unwrap_or(max_top);
        if y < top || y >= top + self.page {
            let t = y.saturating_sub(self.page / 3).min(max_top);
            self.top = if t >= max_top { None } else { Some(t) };
        }
    }

    pub fn on_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp if self.inspector.is_some() => {
                if let Some(i) = self.inspector.as_mut() {
                    i.scroll = i.scroll.saturating_sub(3);
                }
            }
            MouseEventKind::ScrollDown if self.inspector.is_some() => {
                if let Some(i) = self.inspector.as_mut() {
                    i.scroll += 3;
                }
            }
            MouseEventKind::ScrollUp => self.scroll_by(-3),
            MouseEventKind::ScrollDown => self.scroll_by(3),
            MouseEventKind::Moved => {
                self.hover = self
                    .sidebar_hits
                    .iter()
                    .any(|(y, x, _)| *y == m.row && m.column >= *x)
                    .then_some(m.row);
            }
            MouseEventKind::Down(crossterm::event::MouseButton::Left)
                if self.overlay.is_none()
                    && self
                        .sidebar_hits
                        .iter()
                        .any(|(y, x, _)| *y == m.row && m.column >= *x) =>
            {
                let hit = self
                    .sidebar_hits
                    .iter()
                    .find(|(y, x, _)| *y == m.row && m.column >= *x)
                    .map(|(_, _, h)| h.clone());
                if let (Some(hit), Some(h)) = (hit, &self.driver.host) {
                    match hit {
                        SidebarHit::Header(key) => h.ui.toggle_collapsed(&key),
                        SidebarHit::Row { section, row } => h.ui.click(&section, &row),
                    }
                }
            }
            // A click on a card inspects it.
            MouseEventKind::Down(crossterm::event::MouseButton::Left)
                if self.inspector.is_none() =>
            {
                let (y0, h) = self.transcript_area;
                if m.row >= y0 && m.row < y0 + h {
                    let y = self.shown_top + (m.row - y0) as usize;
                    if let Some(e) = self.view.entry_at(y)
                        && self.ledger_index(e).is_some()
                    {
                        self.cursor = Some(e);
                        self.return_focus = Some(self.focus);
                        self.focus = Focus::Transcript;
                        self.open_inspector();
                    }
                }
            }
            _ => {}
        }
    }

    pub(crate) fn scrolled(&mut self, d: isize) -> Vec<Intent> {
        self.scroll_by(d);
        Vec::new()
    }
}
