//! What the reducer's integration tests share: frames, and a session with a turn open.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Value, json};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Policy, Session, update};

/// One frame of the connection, at time `seq`.
pub fn frame(seq: u64, dir: Dir, v: Value) -> Action {
    Action::Frame {
        seq,
        t: seq as f64,
        dir,
        msg: Message::parse(&v.to_string()).unwrap(),
    }
}

/// A session set up with id `s1` and a turn open.
pub fn session() -> Session {
    let mut s = Session::new(Policy::Ask);
    update(
        &mut s,
        frame(
            1,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w"}}),
        ),
    );
    update(
        &mut s,
        frame(
            2,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":"s1"}}),
        ),
    );
    update(
        &mut s,
        frame(
            3,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}),
        ),
    );
    s
}
