//! Agents from the ACP Registry (`agentclientprotocol/registry`): its index read as
//! hostile input, entry by entry (`index`), and where the index comes from — the public
//! registry, any address, a file or a directory — fetched within bounds of time, silence
//! and progress (`fetch`), from addresses checked as parsed hosts (`address`), and cached
//! with its validators (`source`); agents installed in Trellis's own directory, pinned
//! (`install`).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod address;
pub mod binary;
pub mod fetch;
pub mod index;
pub mod install;
pub mod source;

pub use index::{Agent, Index};
pub use source::{Loaded, Source};
