//! What extensions ask of a session, carried out by its driver: their prompts sent as
//! turns end (`drive`), the other drive actions, settling before a headless turn's end,
//! the outs of the host, and handing them events (the mirror brought up to date first).

use std::time::Duration;

use trellis_acp::Command;
use trellis_core::ext::DriveAction;
use trellis_core::session::LocalRecord;
use trellis_core::{Action, Choice, Decider};
use trellis_ext_host::Out;

use crate::{Driver, Incoming, Note};

impl Driver {
    /// Sends the next prompt an extension queued, when no turn runs.
    pub(crate) fn send_driven(&mut self) {
        if self.session.turn_open || self.prompt_in_flight || self.ending || self.closed {
            return;
        }
        if let Some((_, text)) = self.driven.pop_front() {
            self.prompt_in_flight = true;
            self.prompt(text, Vec::new());
        }
    }

    /// Whether a prompt from an extension is queued or on its way (a headless run does
    /// not end at a turn's end while one is).
    pub fn driven_pending(&self) -> bool {
        self.prompt_in_flight || !self.driven.is_empty()
    }

    /// What the next queued prompt that is not the user's is, in words: `the reason
    /// given with a reject`, `a prompt from extension NAME`.
    pub fn driven_said(&self) -> Option<String> {
        self.driven.front().map(|(origin, _)| {
            if origin == crate::REASON_ORIGIN {
                "the reason given with a reject".to_string()
            } else {
                format!("a prompt from extension {origin}")
            }
        })
    }

    /// Carries out what an extension holding `drive` asked for, recorded first with the
    /// extension as its origin.
    fn drive(&mut self, extension: String, action: DriveAction, notes: &mut Vec<Note>) {
        self.record(
            LocalRecord::Driven {
                extension: extension.clone(),
                action: action.clone(),
            },
            notes,
        );
        match action {
            DriveAction::Prompt { text } => {
                self.driven.push_back((extension, text));
                self.send_driven();
            }
            DriveAction::Cancel => {
                if self.session.turn_open {
                    self.cancel(notes);
                }
            }
            DriveAction::SetMode { mode } => {
                if let Some(c) = &self.conn {
                    c.handle.send(Command::SetMode { mode });
                }
            }
            DriveAction::SetConfigOption { id, value } => {
                if let Some(c) = &self.conn {
                    c.handle.send(Command::SetConfigOption { id, value });
                }
            }
        }
    }

    /// Writes a client record: through the connection's recorder (it comes back as an
    /// action), or applied at once when there is no connection.
    fn record(&mut self, record: LocalRecord, notes: &mut Vec<Note>) {
        match &self.conn {
            Some(c) => c.handle.recorder().local(record),
            None => {
                let t = self.now();
                self.apply(
                    Action::Local {
                        t,
                        record: Box::new(record),
                    },
                    notes,
                );
            }
        }
    }

    /// Waits (at most `limit`) until extensions have handled every event so far, then
    /// carries out what they asked meanwhile (a headless run calls this at a turn's end,
    /// so an extension that answers the end of a turn with a prompt is heard).
    pub fn settle(&mut self, limit: Duration, notes: &mut Vec<Note>) {
        let Some(h) = &self.host else { return };
        if !h
            .slots()
            .iter()
            .any(|s| s.has(trellis_core::ext::Capability::Drive))
        {
            return;
        }
        h.sync_calls(&|p| self.session.ledger.snapshot(p));
        h.flush(limit);
        while let Some(msg) = self.ext_rx.as_mut().and_then(|r| r.try_recv().ok()) {
            self.handle(Incoming::Ext(msg), notes);
        }
    }

    /// Carries out what the extension host asked for.
    pub fn outs(&mut self, outs: Vec<Out>, notes: &mut Vec<Note>) {
        for o in outs {
            match o {
                Out::Decide {
                    request_id,
                    option_id,
                    extension,
                    reason,
                } => self.decide_because(
                    request_id,
                    Choice::Option(option_id),
                    Decider::Extension(extension),
                    reason,
                    notes,
                ),
                Out::Dialog { request_id } => notes.push(Note::Dialog { request_id }),
                Out::Question { request_id } => notes.push(Note::Question { request_id }),
                Out::Elicit {
                    request_id,
                    answer,
                    extension,
                } => {
                    self.elicit(
                        request_id.clone(),
                        answer,
                        Decider::Extension(extension),
                        notes,
                    );
                    // An answer the form refused leaves the question open: the next
                    // step takes it.
                    if self
                        .session
                        .pending_elicitations()
                        .any(|e| e.request_id == request_id)
                    {
                        notes.push(Note::Question { request_id });
                    }
                }
                Out::CallState {
                    extension,
                    call_id,
                    value,
                } => self.record(
                    LocalRecord::CallState {
                        extension,
                        call_id,
                        value,
                    },
                    notes,
                ),
                Out::Drive { extension, action } => self.drive(extension, action, notes),
                Out::Notify(text) | Out::Notice(text) => notes.push(Note::Message(text)),
                Out::Failure { text, stopped } => notes.push(Note::Failure { text, stopped }),
                Out::OpenInspector(call_id) => notes.push(Note::OpenInspector(call_id)),
                Out::Repaint => notes.push(Note::Repaint),
            }
        }
    }

    /// Hands the events of the last batch to the extensions' workers (those of plugins
    /// wait for a storm to pause: [`ExtHost::deliver_paced`]).
    pub fn deliver(&self) {
        if let Some(h) = &self.host {
            self.sync_extensions();
            h.deliver_paced();
        }
    }

    /// Brings the calls extensions read up to date with the ledger (see
    /// [`ExtHost::defer_calls`]): before events are handed over, and before a front end
    /// lets extensions finish.
    pub fn sync_extensions(&self) {
        if let Some(h) = &self.host {
            h.sync_calls(&|p| self.session.ledger.snapshot(p));
        }
    }
}
