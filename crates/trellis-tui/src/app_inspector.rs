//! The App's inspector: which card it opens on, stepping through calls (a session's own,
//! or a subagent's, and into and out of a subagent), what it copies, and the raw frames it
//! reads back from the session log.

use trellis_core::ToolStatus;
use trellis_view::inspector::InspectorView;

use crate::app::{App, CursorMode, Focus, Inspector};
use crate::siblings::Siblings;

impl App {
    /// The card the inspector opens on, by cursor mode; `Err` says why there is none.
    pub fn card_at_cursor(&self) -> Result<usize, String> {
        let Some(cursor) = self.cursor else {
            // No cursor yet: the latest card (a subagent's call is on the card of the
            // call that started the subagent).
            let s = &self.driver.session;
            return s
                .ledger
                .len()
                .checked_sub(1)
                .map(|i| s.shown_call(i).unwrap_or(i))
                .ok_or_else(|| "no tool calls yet".to_string());
        };
        if let Some(i) = self.ledger_index(cursor) {
            return Ok(i);
        }
        let above = (0..cursor).rev().find_map(|e| self.ledger_index(e));
        let below =
            (cursor + 1..self.driver.session.transcript.len()).find_map(|e| self.ledger_index(e));
        let found = match self.cursor_mode {
            CursorMode::Exact => None,
            CursorMode::Above => above,
            CursorMode::Below => below,
            CursorMode::Nearest => {
                let dist = |i: Option<usize>| {
                    i.and_then(|i| self.view.entry_of_call(i))
                        .map(|e| e.abs_diff(cursor))
                };
                match (dist(above), dist(below)) {
                    (Some(a), Some(b)) if b < a => below,
                    (Some(_), _) => above,
                    (None, _) => below,
                }
            }
        };
        found.ok_or_else(|| match self.cursor_mode {
            CursorMode::Exact => "no tool call at the cursor (cursor mode exact)".to_string(),
            CursorMode::Above => "no tool call at or above the cursor".to_string(),
            CursorMode::Below => "no tool call at or below the cursor".to_string(),
            CursorMode::Nearest => "no tool call in the transcript".to_string(),
        })
    }

    /// Ctrl-T: the inspector on the latest call (a subagent's is on the card of the call
    /// that started it), wherever the cursor is; closing it goes back where it was opened.
    pub fn inspect_latest(&mut self) {
        let s = &self.driver.session;
        let Some(call) = s
            .ledger
            .len()
            .checked_sub(1)
            .map(|i| s.shown_call(i).unwrap_or(i))
        else {
            self.message = Some("no tool calls yet".into());
            return;
        };
        if self.inspector.is_none() {
            self.return_focus = Some(self.focus);
        }
        self.focus = Focus::Transcript;
        self.inspect_at(call);
    }

    /// Opens (or re-targets) the inspector on the card at the cursor.
    pub fn open_inspector(&mut self) {
        match self.card_at_cursor() {
            Ok(call) => self.inspect_at(call),
            Err(why) => self.message = Some(why),
        }
    }

    /// The inspector on ledger call `call`, in the view it shows now (the result when it
    /// was closed).
    fn inspect_at(&mut self, call: usize) {
        let view = self
            .inspector
            .map(|i| i.view)
            .unwrap_or(InspectorView::Result);
        self.inspector = Some(Inspector {
            call,
            view,
            scroll: 0,
            original: false,
        });
    }

    /// Where call `index` is among the calls of its session (this session's own, or a
    /// subagent's): (1-based place, how many). Asked on every frame the inspector draws.
    pub fn sibling_place(&self, index: usize) -> (usize, usize) {
        let s = &self.driver.session;
        if s.subagents.is_empty() {
            return (index + 1, s.ledger.len());
        }
        let sib = Siblings::of(s, index);
        (sib.place(index).unwrap_or(0) + 1, sib.len())
    }

    /// `]s`: into the subagent the inspected call started (its first call); `[s`: back
    /// to the call that started the inspected call's subagent.
    pub(crate) fn step_subagent(&mut self, into: bool) {
        let Some(ins) = self.inspector else { return };
        let s = &self.driver.session;
        let target = if into {
            let child = s.subagents.for_call(&s.ledger.at(ins.call));
            match child {
                None => Err("this call started no subagent"),
                Some(c) => c
                    .call_indices()
                    .next()
                    .ok_or("its subagent made no calls yet"),
            }
        } else {
            match s.ledger.at(ins.call).subagent.as_deref() {
                None => Err("this call is not a subagent's"),
                Some(child) => s
                    .subagents
                    .position(child)
                    .and_then(|c| s.call_of_subagent(c))
                    .ok_or("no call of its parent names this subagent"),
            }
        };
        match target {
            Ok(call) => {
                self.inspector = Some(Inspector {
                    call,
                    scroll: 0,
                    ..ins
                })
            }
            Err(why) => self.message = Some(why.into()),
        }
    }

    /// The subagent the inspected call started, else the one it belongs to: what `X`
    /// cancels.
    pub(crate) fn subagent_to_cancel(&mut self) -> Option<String> {
        let ins = self.inspector?;
        let s = &self.driver.session;
        let call = s.ledger.at(ins.call);
        let child = s
            .subagents
            .for_call(&call)
            .map(|c| c.session_id.to_string())
            .or_else(|| call.subagent.as_deref().map(str::to_string));
        if child.is_none() {
            self.message = Some("this call is not a subagent's and started none".into());
        }
        child
    }

    /// The inspector on the next (previous) call of its session; `only_failed`: the next
    /// failed one, skipping whole chunks whose tally has none (a frozen call is read back
    /// only where a failed one can be).
    pub(crate) fn step_inspector(&mut self, forward: bool, only_failed: bool) {
        let Some(ins) = self.inspector else { return };
        let ledger = &self.driver.session.ledger;
        let sib = Siblings::of(&self.driver.session, ins.call);
        let next = sib.step(
            ins.call,
            forward,
            |chunk| !only_failed || ledger.chunk_tally(chunk).count(ToolStatus::Failed) > 0,
            |i| !only_failed || ledger.at(i).status == ToolStatus::Failed,
        );
        match next {
            Some(call) => {
                self.inspector = Some(Inspector {
                    call,
                    view: ins.view,
                    scroll: 0,
                    original: ins.original,
                })
            }
            None if only_failed => self.message = Some("no failed call".into()),
            None => {}
        }
    }

    /// Plain text of what the inspector shows (for copying and the pager).
    pub fn inspector_text(&self) -> Option<String> {
        let ins = self.inspector?;
        let call = self.driver.session.ledger.at(ins.call);
        let frames = self.call_frames(ins.call);
        let body = trellis_view::inspector::view_lines(
            &call,
            &self.driver.session,
            ins.view,
            100_000,
            &self.theme,
            frames.as_ref(),
        );
        Some(trellis_text::plain_text(&body))
    }

    /// The session log's line index, brought up to date (it reads only what was
    /// appended since); `None` without a log.
    fn line_offsets(&self) -> Option<std::cell::RefMut<'_, trellis_store::LineOffsets>> {
        let path = self.log_path.as_ref()?;
        let mut cell = self.line_offsets.borrow_mut();
        cell.get_or_insert_with(|| trellis_store::LineOffsets::new(path))
            .refresh()
            .ok()?;
        std::cell::RefMut::filter_map(cell, Option::as_mut).ok()
    }

    /// The lines of call `index`'s frames from the session log, read one by one at the
    /// offsets an index keeps (the log is never read whole); `None` without a log.
    pub fn call_frames(&self, index: usize) -> Option<trellis_view::inspector::FrameLines> {
        let ix = self.line_offsets()?;
        let mut out = trellis_view::inspector::FrameLines::new();
        for &seq in self.driver.session.ledger.frames(index).iter() {
            if let Ok(Some(line)) = ix.line(seq) {
                out.insert(seq, line);
            }
        }
        Some(out)
    }

    /// How many of call `index`'s frames the log holds now (the Raw view is built again
    /// when this changes, not whenever the log grows).
    pub fn frames_in_log(&self, index: usize) -> Option<usize> {
        let lines = self.line_offsets()?.lines() as u64;
        Some(
            self.driver
                .session
                .ledger
                .frames(index)
                .iter()
                .filter(|&&s| s <= lines)
                .count(),
        )
    }
}
