//! Closing a session of the deck: its closing sequence awaited, whoever follows it told,
//! its worktree's reminder said where the human looks.

use crate::{Front, Sessions};

/// Why a session the human closed in front of them closed (nothing more to tell them).
pub const USER_CLOSED: &str = "user closed the session";

impl<F: Front> Sessions<F> {
    /// Closes slot `i` (the closing sequence of its session, awaited) and takes it off
    /// the deck; what closing said goes to `said`. `remind`: the session's worktree
    /// stays, so how to end it is said too (not when the close is the start of an
    /// ending).
    pub async fn close(&mut self, i: usize, reason: &str, said: &mut Vec<String>, remind: bool) {
        let mut slot = self.slots.remove(i);
        let number = i + 1;
        let label = slot
            .app
            .driver()
            .session
            .worktree
            .as_ref()
            .map(|w| w.label.clone());
        // A member of the fan-out closed: its worktree stays one of the fan's, for a land
        // of another member to discard (and to say so).
        if self.fan.contains(&slot.key)
            && let Some(l) = &label
            && !self.fan_closed.contains(l)
        {
            self.fan_closed.push(l.clone());
        }
        if let Some(log) = slot.app.log_path() {
            said.push(format!("session log: {}", log.display()));
        }
        if slot.app.driver().connection().is_some() {
            let mut notes = Vec::new();
            slot.app.driver_mut().close(reason, &mut notes).await;
            said.extend(notes.into_iter().filter_map(|n| match n {
                trellis_driver::Note::Message(text)
                | trellis_driver::Note::Failure { text, .. } => Some(text),
                _ => None,
            }));
        }
        // Whoever follows it reads the log to its end and stops.
        slot.publish(true);
        // The lease on its worktree goes with its front end: an ending may act now.
        let agent = slot.agent_name();
        drop(slot);
        let mut reminder = None;
        if remind
            && let (Some(label), Some(ops)) = (label, self.worktrees.as_ref())
            && let Some(r) = ops.reminder(&label)
        {
            said.push(r.clone());
            reminder = Some(r);
        }
        if self.front >= self.slots.len() {
            self.front = self.slots.len().saturating_sub(1);
        } else if i < self.front {
            self.front -= 1;
        }
        let front = self.front;
        match self.slots.get_mut(front) {
            Some(s) => {
                s.app.redraw();
                if reason != USER_CLOSED {
                    s.app.tell(
                        trellis_text::one_line(&format!(
                            "session {number} ({agent}) closed: {reason}"
                        ))
                        .into_owned(),
                    );
                } else if let Some(r) = reminder {
                    // Its worktree stays: said where the user looks, not only after the UI.
                    s.app.tell(trellis_text::one_line(&r).into_owned());
                }
            }
            None if reason != USER_CLOSED => {
                said.push(format!("session {number} ({agent}) closed: {reason}"));
            }
            None => {}
        }
    }

    /// Closes every session, first to last (quitting, a hub that stops).
    pub async fn close_all(&mut self, reason: &str, said: &mut Vec<String>) {
        while !self.slots.is_empty() {
            self.close(0, reason, said, true).await;
        }
    }
}
