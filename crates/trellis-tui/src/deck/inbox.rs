//! The inbox's keys: move through every session's pending requests, answer a permission
//! request once with a one-time choice (or open it to reject with a reason), answer a
//! question in place with the session's own form, open the session, skip.

use crossterm::event::{KeyCode, KeyEvent};
use trellis_core::attention::Blocked;

use super::{Command, Deck};
use crate::{Intent, perform_intent, show_notes};

impl Deck {
    /// A key while the inbox is open.
    pub fn inbox_key(&mut self, k: &KeyEvent) {
        if self.inbox.as_ref().is_some_and(|i| i.answering.is_some()) {
            self.answer_key(k);
            return;
        }
        let pending = self.sessions.pending();
        let Some(inbox) = self.inbox.as_mut() else {
            return;
        };
        if pending.is_empty() {
            self.inbox = None;
            return;
        }
        inbox.selected = inbox.selected.min(pending.len() - 1);
        let p = &pending[inbox.selected];
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => self.inbox = None,
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Char('s') => {
                inbox.selected = (inbox.selected + 1) % pending.len();
            }
            KeyCode::Up | KeyCode::Char('k') => {
                inbox.selected = (inbox.selected + pending.len() - 1) % pending.len();
            }
            // A question is answered here, in its session's own form.
            KeyCode::Enter if p.kind == Blocked::Question => {
                inbox.answering = Some((p.key, p.request_id.clone()));
            }
            // A reason is written in the session's own dialog, over its question.
            KeyCode::Char('r') if p.kind != Blocked::Question => {
                let (i, request_id) = (p.index, p.request_id.clone());
                self.inbox = None;
                self.show(i);
                let app = &mut self.sessions.slots[i].app;
                if let Some((_, call, options)) = app
                    .driver
                    .session
                    .pending_permissions()
                    .into_iter()
                    .find(|(id, _, _)| *id == request_id)
                {
                    app.reason_for(request_id, call, &options);
                }
            }
            KeyCode::Enter | KeyCode::Char('o') => {
                let i = p.index;
                self.inbox = None;
                self.show(i);
            }
            KeyCode::Char(c @ '1'..='9') => {
                let n = (c as u8 - b'1') as usize;
                if let Some((option_id, _)) = p.options.get(n) {
                    let (key, request_id, option_id) =
                        (p.key, p.request_id.clone(), option_id.clone());
                    let notes = self.sessions.command(
                        key,
                        Command::Decide {
                            request_id,
                            option_id,
                        },
                    );
                    if let Some(i) = self.sessions.index_of(key) {
                        let app = &mut self.sessions.slots[i].app;
                        show_notes(app, notes.into_iter().map(|n| n.note).collect());
                        self.sessions.refresh(i);
                    }
                }
            }
            _ => {}
        }
    }

    /// The question being answered in the inbox: its session's place and the question,
    /// while it is still open (an agent that died, or an answer from elsewhere, closes it).
    pub fn answering(&self) -> Option<(usize, std::sync::Arc<trellis_core::Elicitation>)> {
        let (key, request_id) = self.inbox.as_ref()?.answering.as_ref()?;
        let i = self.sessions.index_of(*key)?;
        let e = self.sessions.slots[i]
            .app
            .driver
            .session
            .pending_elicitations()
            .find(|e| e.request_id == *request_id)
            .cloned()?;
        Some((i, e))
    }

    /// A key for the question answered in the inbox: the session's own form takes it
    /// (Enter answers, Esc cancels the question, Ctrl-D declines, as in its dialog); the
    /// answer is the user's, recorded once in that session.
    fn answer_key(&mut self, k: &KeyEvent) {
        let Some((i, e)) = self.answering() else {
            // Answered meanwhile, or gone with its agent: back to the list.
            if let Some(inbox) = self.inbox.as_mut() {
                inbox.answering = None;
            }
            return;
        };
        let app = &mut self.sessions.slots[i].app;
        let asking = crate::ask::state_for(&mut app.asking, &e);
        let Some(intent) = asking.key(&e, *k) else {
            return;
        };
        let answered = matches!(intent, Intent::Elicit { .. } | Intent::Visit { .. });
        perform_intent(app, intent);
        self.sessions.refresh(i);
        if answered && let Some(inbox) = self.inbox.as_mut() {
            inbox.answering = None;
        }
    }
}
