//! End-to-end tests of the `trellis` binary (one test binary, as house style asks).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp_ws;
mod agent_options;
mod agent_sessions;
mod approve_via;
mod attach;
mod budgets;
mod checkpoints;
mod cli;
mod completions;
mod deck;
mod drive;
mod elicit;
mod faults;
mod fork;
mod headless_docs;
mod held_output;
mod hooks;
mod hostile;
mod hub;
mod hub_plugins;
mod hub_settings;
mod hubkit;
mod listen;
mod listen_hostile;
mod log_seq;
mod login;
mod mcp;
mod plugin_death;
mod plugin_failures;
mod plugin_trials;
mod plugins;
mod plugins_sdks;
mod procs;
mod prompts;
mod questions;
mod registry;
mod registry_binary;
mod registry_install;
mod registry_kit;
mod registry_uvx;
mod remote;
mod remote_files;
mod remote_http;
mod remote_lost;
mod remote_refusals;
mod replay_ui;
mod rules_remote;
mod sessions;
mod strict;
mod subagents;
mod traces;
mod tui;
mod tui_trust;
mod user_command;
mod worktrees;

/// Two turns of the demo agent that each edit a file, allowed (`trellis run`
/// arguments).
pub const TWO_EDITING_TURNS: &[&str] = &[
    "--prompt",
    "fix the TODO",
    "--prompt",
    "/edit notes.txt",
    "--permission",
    "allow-once",
];

/// The events of a headless run's JSON Lines output (a line that is not JSON fails the
/// test, with the line).
pub fn jsonl(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The parameters of the client's requests of `method` in a session log's text, as sent.
pub fn sent(log: &str, method: &str) -> Vec<serde_json::Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["dir"] == "client_to_agent" && r["msg"]["method"] == method)
        .map(|r| r["msg"]["params"].clone())
        .collect()
}

/// Runs `tests/browser/SCRIPT` in node, given headless Chromium's path and `args`
/// (`scripts/test` installs Chromium and puppeteer-core); what it printed, as JSON. A
/// script that fails fails the test with what it said.
pub fn in_chromium(script: &str, args: &[&std::ffi::OsStr]) -> serde_json::Value {
    use std::path::Path;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let puppeteer = repo.join(".ci/node/node_modules/puppeteer-core");
    let chromium = ["chromium", "chromium-browser"].iter().find_map(|c| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(c))
                .find(|f| f.is_file())
        })
    });
    let (Some(chromium), true) = (chromium, puppeteer.is_dir()) else {
        missing_tool(&format!(
            "chromium and puppeteer-core (scripts/test installs both) for {script}"
        ));
        unreachable!()
    };
    let o = std::process::Command::new("node")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/browser")
                .join(script),
        )
        .arg(&chromium)
        .args(args)
        .env("NODE_PATH", repo.join(".ci/node/node_modules"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{script}: {report}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(report.trim()).unwrap_or_else(|e| panic!("{script}: {e}: {report}"))
}

/// A tool a test needs is missing: a failure that says how to get it, never a quiet pass
/// (`scripts/test`, the README's test command, installs every tool the suite uses).
pub fn missing_tool(what: &str) {
    panic!("{what}: run the suite with scripts/test, which installs what the tests need");
}
