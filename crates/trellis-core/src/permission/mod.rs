//! Permission requests, their outcomes and who decided them, plus headless policies.
//!
//! Invariant: every request is answered exactly once. The reducer tracks open requests;
//! an answer for a request that is not open is refused (see `update`).

pub mod record;
mod rules;

pub use record::*;
pub use rules::*;
