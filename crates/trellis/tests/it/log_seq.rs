//! Numbered records (issue 27, item 5): every line of a session log carries `seq`, its
//! number from 1, whatever wrote it — the agent's frames, lines that were not JSON or not
//! UTF-8, the agent's stderr, Trellis's own records — so a follower knows it missed nothing.

use std::process::{Command, Stdio};

fn numbers_of(agent: &str) -> (usize, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    numbers_in(agent, dir.path(), &log, 0)
}

/// Runs `agent` with its log at `log` (appended to when it exists) and checks that every
/// line from `skip` on carries its line number; (lines, their directions).
fn numbers_in(
    agent: &str,
    dir: &std::path::Path,
    log: &std::path::Path,
    skip: usize,
) -> (usize, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--agent",
            agent,
            "--prompt",
            "go",
            "--permission",
            "allow-once",
        ])
        .arg("--cwd")
        .arg(dir)
        .arg("--log")
        .arg(log)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    for (n, line) in text.lines().enumerate().skip(skip) {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{agent}: line {}: {e}: {line}", n + 1));
        assert_eq!(
            v["seq"].as_u64(),
            Some(n as u64 + 1),
            "{agent}: line {}: {line}\n{}",
            n + 1,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let kinds: String = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| format!("{} ", v["dir"].as_str().unwrap_or("?")))
        .collect();
    (text.lines().count(), kinds)
}

#[test]
fn every_record_of_a_log_is_numbered_in_order_whatever_wrote_it() {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let (n, kinds) = numbers_of("demo");
    assert!(n > 20 && kinds.contains("client "), "{n} {kinds}");
    for scenario in ["bad-utf8", "stderr-flood", "blank-lines"] {
        let (n, kinds) = numbers_of(&format!("{exe} agent hostile {scenario}"));
        assert!(n > 3, "{scenario}: {n}");
        if scenario == "stderr-flood" {
            assert!(kinds.contains("agent_stderr"), "{kinds}");
        }
    }
}

/// A log appended to (`--log` of an existing file) goes on from its last record, after a
/// last line cut short too (it stays a line of its own).
#[test]
fn a_log_appended_to_goes_on_from_its_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let (first, _) = numbers_in("demo", dir.path(), &log, 0);
    let (both, _) = numbers_in("demo", dir.path(), &log, 0);
    assert!(both > first, "{first} then {both}");
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, "{\"seq\":1,\"t\":0.0,\"dir\":\"cli").unwrap();
    let (n, _) = numbers_in("demo", dir.path(), &cut, 1);
    assert!(n > 2, "{n}");
}
