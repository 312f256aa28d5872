//! Agents from the ACP Registry (`agentclientprotocol/registry`): its index read as
//! hostile input, entry by entry (`index`), and where the index comes from — the public
//! registry, any address, a file or a directory — fetched with a timeout and cached with
//! its validators (`source`); agents installed in Trellis's own directory, pinned
//! (`install`).

pub mod binary;
pub mod index;
pub mod install;
pub mod source;

pub use index::{Agent, Index};
pub use source::{Loaded, Source};
