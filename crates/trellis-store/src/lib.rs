//! Trellis storage: XDG paths, TOML configuration and append-only session logs.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod config;
pub mod ext_store;
pub mod line_offsets;
pub mod paths;
pub mod session_log;

pub use config::{AgentPreset, Config, ConfigError};
pub use line_offsets::LineOffsets;
pub use paths::Paths;
pub use session_log::{LogWriter, open_log};
