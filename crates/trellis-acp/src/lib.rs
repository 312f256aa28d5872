//! Trellis ACP client: connects to an agent process through the `agent-client-protocol`
//! SDK, serves the client methods (fs, terminal) confined to the session's roots, and taps
//! every line in both directions into the [`recorder::Recorder`], which logs it and turns
//! it into reducer actions in one order.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod client;
pub mod fs;
pub mod inputs;
pub mod lines;
mod link;
pub mod login;
pub mod mcp;
mod reconnect;
pub mod recorder;
pub mod remote;
mod responders;
pub mod roots;
mod services;
mod setup;
pub mod spec;
mod sse;
mod streamable;
mod target;
pub mod terminal;
mod tls;
pub mod transport;

pub use client::{Command, Handle};
pub use inputs::Input;
pub use inputs::Inputs;
pub use login::Login;
pub use mcp::{McpOffer, McpServerSpec, McpTransport};
pub use reconnect::{start, start_at};
pub use recorder::{LogSink, Origin, Recorder};
pub use roots::Roots;
pub use spec::{AgentSpec, BEFORE_TURN_LIMIT, BeforeTurn, Caps, Embedded, TerminalTrace};

/// A mutex's guard, also after a panic elsewhere poisoned it (what it guards stays usable).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
