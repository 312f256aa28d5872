//! Plugin processes: any language, one process each, the same API as the built-ins.
//!
//! - [`protocol`]: the `trellis-plugin` v1 messages (JSON-RPC 2.0 over stdio);
//! - [`package`]: a plugin package — a directory with an Agent Plugins `plugin.json`
//!   whose `extensions["dev.trellis"]` part says how to run it — and its content hash;
//! - [`adapter`]: [`PluginExt`], an `Extension` that speaks the protocol to one process
//!   and supervises it (restarts with backoff, limits, disconnects);
//! - [`process`]: spawning, the reader/writer threads, stopping the process group;
//! - [`serve`]: the host functions as JSON-RPC methods.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod adapter;
pub mod feed;
pub mod hooks;
pub mod mcp;
pub mod package;
pub mod process;
pub mod protocol;
pub mod registry;
pub mod schema;
pub mod sdk;
pub mod serve;

pub use adapter::{Limits, PluginExt, PluginSpec};
pub use package::{Package, TrellisPart};
