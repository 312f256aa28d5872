//! End-to-end tests of the `trellis` binary (one test binary, as house style asks).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod tui;
