//! What every step of the reducer works in: the session, the effects so far, the time and
//! the frame being applied.

use crate::action::Effect;
use crate::event::{Event, EventBody, SCHEMA_VERSION};
use crate::session::{Entry, Session};

pub(crate) struct Ctx<'a> {
    pub s: &'a mut Session,
    pub fx: Vec<Effect>,
    pub t: f64,
    /// The verbatim line of the frame being applied, attached to its events.
    pub acp: Option<std::sync::Arc<str>>,
}

impl Ctx<'_> {
    pub fn emit(&mut self, body: EventBody) {
        self.emit_at(None, body);
    }

    /// Emits an event about the call at ledger position `index`.
    pub fn emit_about(&mut self, index: usize, body: EventBody) {
        self.emit_at(Some(index), body);
    }

    fn emit_at(&mut self, position: Option<usize>, body: EventBody) {
        self.fx.push(Effect::Emit(Event {
            schema: SCHEMA_VERSION,
            t: self.t,
            session: self.s.id.clone(),
            hub_session: self.s.hub_session.clone(),
            body,
            acp: self.acp.clone(),
            wire: Default::default(),
            position,
        }));
    }

    /// A warning event, once per `key` per session.
    pub fn warn_once(&mut self, key: String, message: String) {
        if self.s.warned.insert(key) {
            self.emit(EventBody::Warning { message });
        }
    }

    /// Counts a message that could not be decoded (under `key`) and warns about it.
    pub fn malformed(&mut self, key: &str, message: String) {
        *self
            .s
            .counters
            .malformed
            .entry(key.to_string())
            .or_default() += 1;
        self.emit(EventBody::Warning { message });
    }

    pub fn notice(&mut self, text: String) {
        self.s.transcript.push(Entry::Notice {
            text: Box::new(text),
        });
    }
}
