//! Extensions in headless runs: what they see and write, their configuration errors,
//! and the built-in cards.

use super::*;

#[test]
fn extensions_in_a_headless_run_file_written_call_state_and_the_closing_status() {
    let r = run(
        &format!("{} agent demo --delay-ms 0", exe()),
        &["--permission", "allow-once"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let events = r.events();
    // `file_written` is recorded after the write and before the response to the agent.
    let log = r.log();
    let lines: Vec<&str> = log.lines().collect();
    let written = lines
        .iter()
        .position(|l| l.contains("\"type\":\"file_written\""))
        .expect("file_written record");
    let request = lines
        .iter()
        .position(|l| l.contains("fs/write_text_file"))
        .unwrap();
    let id = serde_json::from_str::<Value>(lines[request]).unwrap()["msg"]["id"].clone();
    let response = lines
        .iter()
        .position(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_default();
            v["dir"] == "client_to_agent"
                && v["msg"]["id"] == id
                && v["msg"].get("result").is_some()
        })
        .unwrap();
    assert!(
        request < written && written < response,
        "{request} {written} {response}"
    );
    assert!(
        lines[written].contains("// TODO: check for overflow"),
        "old content kept"
    );
    // The follow extension kept per-call state; it is in the log and comes back on replay.
    let state = json!({"changed": [3, 3], "path": r.cwd().join("demo-workspace/src/lib.rs")});
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "call_state" && e["call_id"] == "edit-1" && e["value"] == state),
        "{events:?}"
    );
    let s = r.rebuilt();
    assert_eq!(
        s.call_state
            .get(&("follow".to_string(), "edit-1".to_string())),
        Some(&state)
    );
    // The stream closes with the extensions' diagnostics.
    let last = events.last().unwrap();
    assert_eq!(last["type"], "status");
    let names: Vec<&str> = last["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // Headless runs start only extensions that do more than UI.
    assert_eq!(names, ["follow"]);
    let notes = last["notes"].to_string();
    for ui_only in ["permissions", "stats", "cards", "redact"] {
        assert!(
            notes.contains(&format!("{ui_only} is not started in headless runs")),
            "{notes}"
        );
    }
    assert!(
        last["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["state"] == "ready"),
        "{last}"
    );
    // Follow asked for edit and read calls only: it saw those two and nothing else.
    let follow = &last["extensions"][0];
    assert!(
        follow["timings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["event"] == "tool_call_created" && t["count"] == 2),
        "{follow}"
    );
}

#[test]
fn extension_config_errors_name_the_line_and_disabling_works() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[extensions]\nfailure_limit = 3\n\n[extensions.stats]\ngrant = [\"observe\", \"telepathy\"]\n",
    )
    .unwrap();
    let out = Command::new(exe())
        .args(["--config"])
        .arg(&cfg)
        .args([
            "run", "--agent", "demo", "--prompt", "x", "--format", "jsonl",
        ])
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml:5: extensions.stats.grant:") && err.contains("\"telepathy\""),
        "{err}"
    );
    std::fs::write(
        &cfg,
        "[extensions.stats]\nenabled = false\n\n[extensions.nonesuch]\nenabled = true\n",
    )
    .unwrap();
    let out = Command::new(exe())
        .args(["--config"])
        .arg(&cfg)
        .args(["run", "--agent"])
        .arg(format!("{} agent demo --delay-ms 0", exe()))
        .args([
            "--prompt",
            "x",
            "--format",
            "jsonl",
            "--permission",
            "reject",
            "--cwd",
        ])
        .arg(dir.path())
        .args(["--log"])
        .arg(dir.path().join("s.jsonl"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let status: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(status["type"], "status");
    assert!(
        !status["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "stats")
    );
    // `trellis status` reports the same consent.
    let out = Command::new(exe())
        .args(["--config"])
        .arg(&cfg)
        .arg("status")
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stats is disabled by the config"), "{text}");
    assert!(text.contains("follow 0.1.0 (built-in): ready"), "{text}");
    let notes = status["notes"].to_string();
    assert!(notes.contains("stats is disabled by the config"), "{notes}");
    assert!(
        notes.contains("\\\"nonesuch\\\", which is not installed"),
        "{notes}"
    );
}

/// Line counts are lines of output: not the Markdown fence an agent wraps them in, not its
/// notes to the model, not the numbering of a file it read (claude-agent-acp does all three).
#[test]
fn cards_count_lines_of_output_not_fences_notes_or_numbering() {
    let out = Command::new(exe())
        .args(["log", "show"])
        .arg(fixtures().join("claude-agent-acp-0.23.1.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✓ execute ls · 0.7s · 1 line\n"), "{text}");
    assert!(
        text.contains("✓ read    Read hello.txt · 0.1s · 2 lines\n"),
        "{text}"
    );
    assert!(!text.contains("skipped input"), "{text}");
}
