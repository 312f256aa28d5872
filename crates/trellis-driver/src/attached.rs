//! A session that runs in a hub elsewhere, shown here (`trellis attach`). Its state is
//! rebuilt the way every session's is — a fold of its log — from the log file itself,
//! followed as it grows ([`crate::replay::Feed::follow`]); what the human asks for
//! ([`Remote`]) goes to the hub, which carries it out on the live session, and comes back
//! as the log's new records. Nothing is changed here before the hub did it, so this copy
//! never disagrees with the log.

use std::path::PathBuf;

use crate::replay::Feed;

/// An intent for the hub that runs the session.
#[derive(Debug, Clone, PartialEq)]
pub enum Remote {
    Prompt {
        text: String,
        files: Vec<PathBuf>,
    },
    Cancel,
    CancelSubagent(String),
    Decide {
        request_id: String,
        choice: trellis_core::Choice,
        /// Why, with a reject (the agent is told).
        reason: Option<String>,
    },
    Elicit {
        request_id: String,
        answer: trellis_core::ElicitAnswer,
    },
}

impl crate::Driver {
    /// Shows a session that runs elsewhere: its log followed by `feed`, its intents sent
    /// to `hub`.
    pub fn attach(&mut self, feed: Feed, hub: std::sync::mpsc::Sender<Remote>) {
        self.feed = Some(feed);
        self.remote = Some(hub);
    }

    /// Whether this driver shows a session that runs elsewhere.
    pub fn attached(&self) -> bool {
        self.remote.is_some()
    }

    /// Attached as an observer now (`flag`, kept by the front end that follows the hub:
    /// control may come and go).
    pub fn observe_with(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.observing = Some(flag);
    }

    /// Whether this driver only observes the session it shows (its answers are not sent).
    pub fn observing(&self) -> bool {
        self.observing
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Sends an intent to the hub when the session runs in one (`true`: nothing more to
    /// do here).
    pub(crate) fn to_hub(&self, intent: impl FnOnce() -> Remote) -> bool {
        match &self.remote {
            Some(r) => {
                let _ = r.send(intent());
                true
            }
            None => false,
        }
    }
}
