//! End-to-end tests of the `trellis` binary (one test binary, as house style asks).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_options;
mod agent_sessions;
mod cli;
mod completions;
mod drive;
mod faults;
mod hostile;
mod login;
mod mcp;
mod plugin_death;
mod plugins;
mod prompts;
mod replay_ui;
mod sessions;
mod strict;
mod tui;
mod tui_trust;

/// The events of a headless run's JSON Lines output (a line that is not JSON fails the
/// test, with the line).
pub fn jsonl(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A tool a test needs is missing: under CI (`CI=true`) that is a failure, never a pass;
/// elsewhere the test says so on stderr and returns.
pub fn missing_tool(what: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "missing under CI: {what}"
    );
    eprintln!("SKIPPED (not under CI): {what}");
}
