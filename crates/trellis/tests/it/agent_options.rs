//! `trellis run --set KEY=VALUE` (issue 12, item 1, headless part): the agent's options
//! set before the first prompt, checked against what it offers.

use std::process::Output;

use crate::prompts::{demo_run, events};

fn run(dir: &std::path::Path, sets: &[&str]) -> Output {
    let mut args = vec!["--permission", "allow-once", "--prompt", "fix the TODO"];
    for s in sets {
        args.extend(["--set", s]);
    }
    demo_run(dir, &args)
}

/// The client's requests of `method` in the session log, as sent.
fn sent(dir: &std::path::Path, method: &str) -> Vec<serde_json::Value> {
    crate::sent(
        &std::fs::read_to_string(dir.join("session.jsonl")).unwrap(),
        method,
    )
}

#[test]
fn settings_go_to_the_agent_before_the_first_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        dir.path(),
        &[
            "model=Demo Deep",
            "thought_level=HIGH",
            "web search=on",
            "mode=yolo",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("setting Model = demo-deep"), "{err}");
    let ev = events(&o);
    let pos = |ty: &str| ev.iter().rposition(|e| e["type"] == ty).unwrap();
    // The options as the agent last reported them, all before the turn.
    let last = &ev[pos("config_changed")]["options"];
    assert_eq!(last[0]["value"], "demo-deep");
    assert_eq!(last[1]["value"], "high");
    assert_eq!(last[2]["value"], true);
    assert_eq!(ev[pos("mode_changed")]["mode"], "yolo");
    let started = ev.iter().position(|e| e["type"] == "turn_started").unwrap();
    assert!(pos("config_changed") < started && pos("mode_changed") < started);
    // On the wire: boolean options are advertised, and each value has its type.
    let init = sent(dir.path(), "initialize");
    assert!(
        init[0]["clientCapabilities"]["session"]["configOptions"]["boolean"].is_object(),
        "{init:?}"
    );
    let sets = sent(dir.path(), "session/set_config_option");
    assert_eq!(sets.len(), 3);
    assert_eq!(sets[0]["configId"], "model");
    assert_eq!(sets[0]["value"], "demo-deep");
    assert_eq!(sets[2]["configId"], "web_search");
    assert_eq!(sets[2]["type"], "boolean");
    assert_eq!(sets[2]["value"], true);
    assert_eq!(sent(dir.path(), "session/set_mode")[0]["modeId"], "yolo");
}

#[test]
fn an_unknown_option_or_value_ends_the_run_before_anything_is_sent() {
    for (set, says) in [
        (
            "model=huge",
            "not one of its choices (demo-fast, demo-deep, demo-max)",
        ),
        (
            "colour=red",
            "not an option of the agent (model, thought_level, web_search, mode)",
        ),
        ("web_search=maybe", "is not on or off"),
        ("mode=chaos", "not one of the agent's modes (default, yolo)"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        // A valid setting beside it is not sent either.
        let o = run(dir.path(), &["thought_level=low", set]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(says), "{set}: {err}");
        assert!(!events(&o).iter().any(|e| e["type"] == "turn_started"));
        assert!(sent(dir.path(), "session/set_config_option").is_empty());
        assert!(sent(dir.path(), "session/prompt").is_empty());
    }
    // Not KEY=VALUE at all: a usage error from the command line.
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["model"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected KEY=VALUE"));
}
