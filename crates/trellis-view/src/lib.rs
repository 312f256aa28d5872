//! Rendering to lines: "width in, lines out" for tool cards, transcript entries and the
//! status bar, plus the transcript layout that keeps a frame's cost proportional to what
//! is visible. Pure: no terminal, no clock (times arrive as arguments).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod card;
pub mod dialog;
pub mod diff;
pub mod export;
pub mod handoff;
pub mod inspector;
pub mod status;
pub mod subagent;
pub mod theme;
pub mod transcript;

pub use card::{CardCtx, OutputPolicies, OutputPolicy};
pub use theme::Theme;
pub use transcript::TranscriptView;
