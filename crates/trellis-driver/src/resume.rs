//! A resumed session shown at once (issue 32, item 13): the earlier session's log is read
//! in like a recording (a [`Feed`] thread, slices between keys), and only then does the
//! session continue it (`Session::continuing`) and the new agent's input count. While the
//! history is read, the new agent's input waits in its queue, and the history reaches
//! neither the new connection (an answer it held is the earlier agent's), nor extensions
//! and observers (they see what this session does, as when the history was rebuilt before
//! the session started): only the front end, which draws it as it comes.

use std::path::PathBuf;

use trellis_core::{Policy, Session};

use crate::replay::Feed;

/// What a resumed session becomes once its history is read (see [`crate::Driver::resume`]).
pub struct Resumed {
    pub policy: Policy,
    /// The divider under the history.
    pub notice: String,
    /// The new session's log, where its calls' output is kept once it leaves memory.
    pub log: PathBuf,
}

/// What a history slice sets aside while it is folded in.
pub(crate) struct Aside {
    conn: Option<crate::Connection>,
    host: Option<trellis_ext_host::ExtHost>,
    observers: Vec<Box<dyn crate::Observer>>,
}

impl crate::Driver {
    /// Shows a resumed session while its history (`feed`, the earlier session's log) is
    /// read in; then it continues as `then` says. The agent may be connected already: what
    /// it sends is handled once the history is in.
    pub fn resume(&mut self, feed: Feed, then: Resumed) {
        self.feed = Some(feed);
        self.resumed = Some(then);
    }

    /// Whether a resumed session's history is still being read in.
    pub fn resuming(&self) -> bool {
        self.resumed.is_some()
    }

    /// Before a slice of a resumed session's history: the connection, the extensions and
    /// the observer step aside (none while nothing is being resumed).
    pub(crate) fn set_aside(&mut self) -> Option<Aside> {
        self.resumed.as_ref()?;
        Some(Aside {
            conn: self.conn.take(),
            host: self.host.take(),
            observers: std::mem::take(&mut self.observers),
        })
    }

    /// After the slice: they come back.
    pub(crate) fn bring_back(&mut self, aside: Option<Aside>) {
        if let Some(a) = aside {
            self.conn = a.conn;
            self.host = a.host;
            self.observers = a.observers;
        }
    }

    /// The history is all in: the session continues it (its calls archived, the divider
    /// under it), its new calls' output kept in its own log.
    pub(crate) fn history_read(&mut self) {
        if let Some(then) = self.resumed.take() {
            let prev = std::mem::take(&mut self.session);
            self.session = Session::continuing(prev, then.policy, then.notice);
            self.keep_output_in_log(&then.log);
        }
    }
}
