//! `trellis run --prompt A --prompt B`: consecutive turns in one session (issue 12,
//! item 7, headless part).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `trellis ARGS` with its data and config under `dir`.
pub(crate) fn trellis_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .unwrap()
}

/// `trellis run --format jsonl ARGS` on the demo agent in `dir`, logged to
/// `dir/session.jsonl`.
pub(crate) fn demo_run(dir: &Path, args: &[&str]) -> Output {
    let (cwd, log) = (dir.to_str().unwrap(), dir.join("session.jsonl"));
    let mut all = vec![
        "run",
        "--format",
        "jsonl",
        "--cwd",
        cwd,
        "--log",
        log.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    trellis_in(dir, &all)
}

/// The events of a JSONL run.
pub(crate) fn events(o: &Output) -> Vec<Value> {
    crate::jsonl(&String::from_utf8_lossy(&o.stdout))
}

/// [`demo_run`] that must end cleanly; its events.
fn demo_events(dir: &Path, args: &[&str]) -> Vec<Value> {
    let o = demo_run(dir, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    events(&o)
}

#[test]
fn repeated_prompts_run_as_consecutive_turns() {
    let dir = tempfile::tempdir().unwrap();
    let events = demo_events(
        dir.path(),
        &[
            "--permission",
            "allow-once",
            "--prompt",
            "fix the TODO",
            "--prompt",
            "fix it again",
        ],
    );
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

/// The readable transcript closes each turn with that turn's calls alone (counted from the
/// ledger's end, where a turn's calls are).
#[test]
fn each_turns_summary_counts_its_own_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (cwd, log) = (dir.path().to_str().unwrap(), dir.path().join("s.jsonl"));
    let o = trellis_in(
        dir.path(),
        &[
            "run",
            "--format",
            "text",
            "--cwd",
            cwd,
            "--log",
            log.to_str().unwrap(),
            "--permission",
            "allow-once",
            "--prompt",
            "fix the TODO",
            "--prompt",
            "fix it again",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let summaries: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" tool calls, "))
        .collect();
    assert_eq!(
        summaries, ["— end_turn · 5 tool calls, 1 failed"; 2],
        "{out}"
    );
}

/// A compaction and a notice from the agent (issue 12, item 6): events, the log, `log
/// show`, the Markdown export; the client advertises that it shows them.
#[test]
fn a_compaction_and_a_notice_reach_events_the_log_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let trellis = |args: &[&str]| trellis_in(dir.path(), args);
    let events = demo_events(dir.path(), &["--prompt", "/compact"]);
    let compactions: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 2, "started and completed: {events:?}");
    assert_eq!(compactions[1]["compaction"]["status"], "completed");
    assert!(
        compactions[1]["compaction"]["summary"]
            .as_str()
            .unwrap()
            .contains("found the TODO in src/lib.rs")
    );
    let notice = events.iter().find(|e| e["type"] == "notice").unwrap();
    assert_eq!(notice["title"], "Context compacted");
    let text = std::fs::read_to_string(&log).unwrap();
    let init = text.lines().find(|l| l.contains("\"initialize\"")).unwrap();
    assert!(
        init.contains("\"notices\":{}") && init.contains("\"compaction\":{}"),
        "{init}"
    );
    // Rebuilt from the log.
    let shown = trellis(&["log", "show", log.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("context compacted"), "{shown}");
    assert!(
        shown.contains("[info] Context compacted — Earlier turns"),
        "{shown}"
    );
    // Exported: the summary whole, under its line.
    let md = trellis(&[
        "sessions",
        "export",
        log.to_str().unwrap(),
        "--format",
        "md",
        "-o",
        "-",
    ]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("<summary>context compacted</summary>"), "{md}");
    assert!(md.contains("Next: nothing pending."), "{md}");
    assert!(!dir.path().join("-").exists() && !std::path::Path::new("-").exists());
}

/// Plans by id (issue 12, item 5): the demo's `/plans` keeps three, works one through and
/// removes another; the client advertises that it shows them.
#[test]
fn plans_by_id_are_events_and_advertised() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let events = demo_events(dir.path(), &["--prompt", "/plans"]);
    let updated: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "plan_updated")
        .map(|e| &e["plan"])
        .collect();
    let kinds: Vec<(&str, &str)> = updated[..3]
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("design", "markdown"), ("notes", "file"), ("fix", "items")]
    );
    let last = updated.last().unwrap();
    assert!(
        last["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["status"] == "completed")
    );
    let removed: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "plan_removed")
        .collect();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0]["plan_id"], "design");
    let init = std::fs::read_to_string(&log).unwrap();
    let init = init
        .lines()
        .find(|l| l.contains("\"initialize\""))
        .unwrap()
        .to_string();
    assert!(init.contains("\"plan\":{}"), "{init}");
}

/// The demo's `/anomalies` (issue 12, item 8, and `$/cancel_request` from the agent): a
/// command that runs while its request is open, a deletion that goes ahead after a
/// refusal — each an `anomaly` event, marked on the call and counted in the closing
/// line — and a request the agent withdraws, answered `cancelled` once.
#[test]
fn the_demos_misbehaviour_is_detected_and_its_withdrawn_request_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let events = demo_events(
        dir.path(),
        &["--permission", "reject", "--prompt", "/anomalies"],
    );
    let anomalies: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "anomaly")
        .map(|e| (e["call_id"].as_str().unwrap(), e["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(
        anomalies,
        [
            ("eager-1", "ran_while_asking"),
            ("stubborn-1", "ran_after_refusal")
        ]
    );
    let resolved: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permission_resolved")
        .collect();
    assert_eq!(resolved.len(), 3, "each request answered once: {events:?}");
    let withdrawn = resolved
        .iter()
        .find(|e| e["call_id"] == "withdrawn-1")
        .unwrap();
    assert_eq!(withdrawn["outcome"]["outcome"], "cancelled");
    assert_eq!(withdrawn["decider"]["name"], "the agent, which withdrew it");
    // On the calls, and in the text the user reads.
    let last = |id: &str| {
        events
            .iter()
            .rev()
            .find(|e| e["type"] == "tool_call_updated" && e["call"]["id"] == id)
            .unwrap()["call"]
            .clone()
    };
    assert_eq!(last("eager-1")["anomalies"][0], "ran_while_asking");
    assert_eq!(last("stubborn-1")["anomalies"][0], "ran_after_refusal");
    let o = trellis_in(
        dir.path(),
        &[
            "log",
            "show",
            dir.path().join("session.jsonl").to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("⚑ ran while asking"), "{text}");
    assert!(
        text.contains("call stubborn-1 ran after its permission request was refused"),
        "{text}"
    );
}

/// `--output-file` (issue 31, item 4): the agent's last message of the last turn, written
/// in place of whatever was at that path (a link there is replaced, never followed).
#[test]
fn the_output_file_holds_the_agents_last_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("last.txt");
    let elsewhere = dir.path().join("not-yours.txt");
    std::fs::write(&elsewhere, "keep me").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
    let events = demo_events(
        dir.path(),
        &[
            "--permission",
            "allow-once",
            "--prompt",
            "fix the TODO",
            "--output-file",
            out.to_str().unwrap(),
        ],
    );
    let last_turn_text: String = {
        let started = events
            .iter()
            .rposition(|e| e["type"] == "tool_call_created" || e["type"] == "turn_started")
            .unwrap();
        events[started..]
            .iter()
            .filter(|e| e["type"] == "message_chunk" && e["role"] == "agent")
            .filter_map(|e| e["text"].as_str())
            .collect()
    };
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(!written.is_empty());
    assert_eq!(written, last_turn_text);
    assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep me");
}
