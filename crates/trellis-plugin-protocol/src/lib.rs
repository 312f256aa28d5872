//! The contract between Trellis and its extensions, in one place: what an extension
//! contributes ([`contrib`]), what the user and an extension do ([`actions`]), the kinds
//! both sides name ([`kinds`]) and the `trellis-plugin` v1 wire messages ([`wire`]).
//!
//! Shared by the host (`trellis-core`'s extension API and `trellis-plugin`), the Rust
//! plugin SDK (which needs nothing else of Trellis) and the published JSON Schema
//! (feature `schema`), so none of them can drift from the others. Data and its parsing
//! only: no I/O, no session model.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod actions;
pub mod contrib;
pub mod kinds;
pub mod wire;

pub use actions::{ConfigValue, DriveAction, UiAction};
pub use contrib::{
    CardLines, CommandDecl, DesignDecl, KeyDecl, Registration, Rewrite, SectionBody, SectionDecl,
    SectionPatch, SectionRow, SettingsRow, StatusDecl, StyledLine, StyledSpan, Tone, ToolMatch,
    TransformDecl,
};
pub use kinds::{OptionKind, PermissionOption, ToolKind};
