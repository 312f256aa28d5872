//! Groundwork of the extension host (issue 4): rules that every contribution obeys,
//! independent of how extensions are loaded.

pub mod labels;
