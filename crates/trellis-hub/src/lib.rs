//! Reaching a running Trellis from elsewhere. Every UI serves a Unix socket of its own in
//! a directory private to the user (`place`); `trellis ls`, `send`, `cancel`, `stop` and
//! `approve` are its clients (`client`); the messages are JSON lines (`wire`); the hub's
//! side hands each request to its loop (`serve`), which answers it from the sessions' own
//! state — a permission request is answered exactly once whoever answers, and the losers
//! are told who won.

#![deny(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "listen")]
pub mod agent_serve;
pub mod call;
pub mod client;
#[cfg(feature = "listen")]
pub mod listen;
pub mod notices;
pub mod place;
pub mod serve;
pub mod slots;
pub mod tokens;
pub mod watch;
pub mod wire;
