//! `trellis run --prompt A --prompt B`: consecutive turns in one session (issue 12,
//! item 7, headless part).

use std::process::Command;

#[test]
fn repeated_prompts_run_as_consecutive_turns() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--format", "jsonl", "--permission", "allow-once"])
        .args(["--prompt", "fix the TODO", "--prompt", "fix it again"])
        .arg("--cwd")
        .arg(dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |ty: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["type"] == ty).collect()
    };
    let started = of("turn_started");
    assert_eq!(started.len(), 2, "{events:?}");
    assert_eq!(started[0]["prompt"], "fix the TODO");
    assert_eq!(started[1]["prompt"], "fix it again");
    assert_eq!(started[1]["turn"], 2);
    let ended = of("turn_ended");
    assert_eq!(ended.len(), 2);
    // The second turn starts after the first ended, and adds its own calls.
    let pos = |e: &serde_json::Value| events.iter().position(|x| std::ptr::eq(x, e)).unwrap();
    assert!(pos(ended[0]) < pos(started[1]));
    assert_eq!(of("tool_call_created").len(), 10);
    assert_eq!(of("session_ended").len(), 1);
}
