//! What a session's connections share: the log and the requests parked for the driver
//! ([`Link`]), and what one connection leaves to the next after a loss ([`Carried`]).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use trellis_core::LocalRecord;

use crate::lock;
use crate::recorder::Recorder;
use crate::responders::Responders;

/// What one connection leaves to the next.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// The agent's session, once set up.
    pub session: Option<String>,
    /// The agent offers `session/resume` or `session/load`.
    pub resumable: bool,
    /// Turns sent so far (checkpoints go on counting).
    pub turns: u32,
    /// When the connection before was lost (a reconnection says how long it took).
    pub lost_at: Option<Instant>,
    /// This connection was set up.
    pub up: bool,
}

/// A connection was set up with session `id`: what to keep for a reconnection. Says in
/// the log when it ends a gap. Returns the turns sent before it.
pub(crate) fn established(
    carried: &Mutex<Carried>,
    recorder: &Recorder,
    id: String,
    resumable: bool,
) -> u32 {
    let mut c = carried.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(at) = c.lost_at.take() {
        let same = c.session.as_deref() == Some(id.as_str());
        recorder.local(LocalRecord::Mark {
            text: format!(
                "connected again after {:.1} s: {}",
                at.elapsed().as_secs_f64(),
                if same {
                    format!("the agent took up its session {id} again")
                } else {
                    format!(
                        "the agent started a new session {id}; it does not remember the one before"
                    )
                }
            ),
        });
    }
    c.session = Some(id);
    c.resumable = resumable;
    c.up = true;
    c.turns
}

/// What a connection's task talks through: the log, the requests parked for the driver,
/// the driver's inputs.
#[derive(Clone)]
pub(crate) struct Link {
    pub recorder: Recorder,
    pub responders: Arc<Mutex<Responders>>,
    pub tx: crate::inputs::Sender,
}

impl Link {
    /// Nobody will answer what is still open: say `cancelled`, exactly once each, and
    /// record why first (the reducer closes whatever the agent never saw answered).
    pub(crate) fn close_open(&self, why: &str) {
        let open: Vec<_> = lock(&self.responders).waiting.drain().collect();
        for (request_id, (parked, responder)) in open {
            self.recorder
                .local(parked.decided(request_id, trellis_core::Decider::Client(why.into())));
            let _ = responder.respond(parked.closed());
        }
    }
}
