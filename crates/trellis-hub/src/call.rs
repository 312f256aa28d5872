//! A request for a hub's loop — from its socket or its listener — and the channel its
//! answer goes back on. Below both: the socket (`serve`) and the listener (`listen`) make
//! calls; the loop that owns the sessions answers them.

use tokio::sync::oneshot;

use crate::watch::Follow;
use crate::wire::{Request, Response};

/// A request for the hub's loop, and where its answer goes.
#[derive(Debug)]
pub struct Call {
    pub request: Request,
    /// The peer's process id, for the record of who answered.
    pub pid: Option<i32>,
    /// The connection it came on (0: none that lasts, a call of the listener): claims
    /// made on a connection go when it ends (`Op::Hangup`).
    pub conn: u64,
    pub reply: oneshot::Sender<Reply>,
}

/// The hub's answer to a call.
#[derive(Debug)]
pub enum Reply {
    /// One answer line.
    Once(Response),
    /// An answer line, then the session's progress pushed on the connection until the
    /// session or the connection ends (`Op::Watch`).
    Follow(Response, Follow),
}

impl Call {
    /// The name the log gives whoever asks: the client's word for itself (made harmless,
    /// bounded) and its process.
    pub fn who(&self) -> String {
        let name =
            trellis_text::clip(&trellis_text::one_line(&self.request.client), 64).into_owned();
        match (name.trim(), self.pid) {
            ("", Some(p)) => format!("a client (pid {p})"),
            ("", None) => "a client".to_string(),
            (n, Some(p)) => format!("{n} (pid {p})"),
            (n, None) => n.to_string(),
        }
    }

    /// Answers the call with one line.
    pub fn answer(self, response: Response) {
        let _ = self.reply.send(Reply::Once(response));
    }
}
