//! Built-in ACP agents and test helpers.
//!
//! - [`demo`]: `trellis agent demo`, a scripted agent that exercises every part of the
//!   client (messages, thoughts, plan, fs, terminals, permission, a failure) and a load
//!   generator (`--calls N --lines K`).
//! - [`replay`]: `trellis agent replay FILE`, the agent side of a recorded session.
//!
//! Both speak ACP over their own stdin/stdout through [`peer::Peer`], with no async runtime.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod demo;
pub mod demo_anomaly;
pub mod demo_edit;
pub mod demo_elicit;
pub mod demo_history;
pub mod demo_login;
pub mod demo_subagent;
pub mod hostile;
pub mod logs;
pub mod peer;
pub mod replay;
