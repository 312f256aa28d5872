//! Applying an action to the session: the reducer, then what its effects ask of
//! extensions, the connection, observers and the front end.

use trellis_core::{Action, Effect, EventBody, update_into};

use crate::{Driver, Note};

/// The largest effects vector kept between actions: one that an unusual action grew (a
/// turn's end closing many calls) is let go.
const SPARE_FX_MAX: usize = 64;

impl Driver {
    /// Applies one action: the reducer, then extensions see the events (and may start the
    /// permission chain), then the connection performs answers, cancel and syncs.
    pub fn apply(&mut self, action: Action, notes: &mut Vec<Note>) {
        // An extension's answer applied from within `effects` finds the spare taken and
        // uses a fresh vector: nothing is shared between the two.
        let mut fx = std::mem::take(&mut self.spare_fx);
        update_into(&mut self.session, action, &mut fx);
        self.perform(&mut fx, notes);
        if fx.capacity() <= SPARE_FX_MAX {
            self.spare_fx = fx;
        }
    }

    /// Performs effects of the reducer: extensions see the events first (and may start
    /// the permission chain), then the connection performs answers, cancel and syncs.
    pub fn effects(&mut self, mut fx: Vec<Effect>, notes: &mut Vec<Note>) {
        self.perform(&mut fx, notes);
    }

    /// [`Driver::effects`], leaving `fx` empty.
    fn perform(&mut self, fx: &mut Vec<Effect>, notes: &mut Vec<Note>) {
        let now = self.now();
        let mut turn_ended = false;
        let ledger = &self.session.ledger;
        let outs = match self.host.as_mut() {
            Some(h) => h.on_effects_synced(fx, now, Some(&|p| ledger.snapshot(p))),
            None => Vec::new(),
        };
        let mut told = Vec::new();
        for e in fx.drain(..) {
            let ev = match e {
                Effect::Emit(ev) => ev,
                // A reason for the agent waits its turn with the extensions' prompts.
                Effect::Prompt { text } => {
                    told.push(text);
                    continue;
                }
                // The rest is the connection's: answers, cancels, the log's sync.
                other => {
                    if let Some(c) = &self.conn {
                        c.handle.perform(other);
                    }
                    continue;
                }
            };
            for o in &mut self.observers {
                o.event(&ev, &self.session);
            }
            match &ev.body {
                EventBody::ToolCallUpdated {
                    previous_status,
                    status,
                    ..
                } if status.is_terminal() && previous_status.is_some() => {
                    if let Some(b) = self.bulk.as_mut()
                        && let Some(i) = ev.position
                    {
                        b.finished(&self.session, i);
                    }
                }
                EventBody::TurnStarted { .. } => self.prompt_in_flight = false,
                EventBody::TurnEnded { .. } => {
                    self.prompt_in_flight = false;
                    turn_ended = true;
                }
                _ => {}
            }
            let call = matches!(
                ev.body,
                EventBody::ToolCallCreated { .. } | EventBody::ToolCallUpdated { .. }
            );
            match self.touched.as_mut() {
                Some(t) => t.extend(ev.position),
                None if call && self.calls_unnoted => {}
                None => notes.push(Note::Event(ev)),
            }
        }
        self.outs(outs, notes);
        if self.conn.is_some() && !told.is_empty() {
            let origin = crate::REASON_ORIGIN;
            self.driven
                .extend(told.into_iter().map(|t| (origin.to_string(), t)));
            self.send_driven();
        }
        if turn_ended {
            // The log was synced at the turn's end (a performed effect): index it.
            if let Some(h) = &self.history {
                h.turn_synced();
            }
            self.send_driven();
        }
    }
}
