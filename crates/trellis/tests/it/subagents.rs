//! Subagents end to end (issue 12, item 4): the demo agent's `/subagents` delegates to a
//! child session that asks permission under its own id. Headless, the request is
//! attributed, decided by the policy and answered (the turn never hangs on it); the events
//! carry the tree; `log show` rebuilds it from the log; the client advertises the
//! capability.

use serde_json::Value;

use crate::prompts::{demo_run, events, trellis_in};

fn of<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

#[test]
fn a_childs_work_and_permission_request_are_on_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo_run(
        dir.path(),
        &["--permission", "allow-once", "--prompt", "/subagents"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let ev = events(&o);
    let sid = ev[0]["session"].as_str().unwrap().to_string();
    let kid = format!("{sid}-explorer-1");
    // Announced, linked to the call that started it, then idle.
    let subs = of(&ev, "subagent");
    assert!(subs.len() >= 4, "{subs:?}");
    assert_eq!(subs[0]["subagent"]["session_id"], kid.as_str());
    assert_eq!(subs[0]["subagent"]["title"], "Explorer");
    assert!(subs.iter().any(|s| s["subagent"]["call_id"] == "task-1"));
    assert!(
        subs.iter()
            .any(|s| s["subagent"]["state"] == "requires_action")
    );
    let last = subs.last().unwrap();
    assert_eq!(last["subagent"]["state"], "idle");
    assert_eq!(last["subagent"]["stop_reason"], "end_turn");
    assert_eq!(last["subagent"]["calls"], 3);
    // The message to it.
    let msg = of(&ev, "session_message");
    assert_eq!(msg[0]["message"]["recipient"], kid.as_str());
    // Its calls and its words name it; the parent's do not.
    let created = of(&ev, "tool_call_created");
    let by_kid: Vec<_> = created
        .iter()
        .filter(|c| c["call"]["subagent"] == kid.as_str())
        .map(|c| c["call"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(by_kid, ["c-read-1", "c-search-1", "c-edit-1"]);
    let task = created
        .iter()
        .find(|c| c["call"]["id"] == "task-1")
        .unwrap();
    assert!(task["call"].get("subagent").is_none());
    assert_eq!(task["call"]["content"][0]["type"], "session");
    assert!(of(&ev, "message_chunk").iter().any(|m| m["subagent"] == kid.as_str()
        && m["text"].as_str().unwrap().contains("Found")));
    // The child's permission request: attributed, allowed by the policy, answered once.
    let asked = of(&ev, "permission_requested");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["subagent"], kid.as_str());
    assert_eq!(asked[0]["call_id"], "c-edit-1");
    let resolved = of(&ev, "permission_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["subagent"], kid.as_str());
    assert_eq!(resolved[0]["outcome"]["outcome"], "selected");
    assert_eq!(resolved[0]["outcome"]["option_id"], "allow");
    // The edit went through: the child's call completed and the file changed.
    let updated = of(&ev, "tool_call_updated");
    assert!(updated.iter().any(|u| u["call"]["id"] == "c-edit-1"
        && u["call"]["subagent"] == kid.as_str()
        && u["status"] == "completed"));
    let lib = std::fs::read_to_string(dir.path().join("demo-workspace/src/lib.rs")).unwrap();
    assert!(!lib.contains("TODO"), "{lib}");
    let ended = of(&ev, "turn_ended");
    assert_eq!(ended[0]["stop_reason"], "end_turn");
    // The client said it follows subagents.
    let log = std::fs::read_to_string(dir.path().join("session.jsonl")).unwrap();
    let init = crate::sent(&log, "initialize");
    assert_eq!(
        init[0]["clientCapabilities"]["subagents"],
        serde_json::json!({})
    );
    // `log show` rebuilds the tree from the log: the child under the call that started it.
    let shown = trellis_in(
        dir.path(),
        &[
            "log",
            "show",
            dir.path().join("session.jsonl").to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&shown.stdout);
    let start = text.find("Delegate: find and fix the TODOs").unwrap();
    let head = text
        .find("  ⤷ subagent Explorer · idle (end_turn) · 3 calls")
        .unwrap();
    let edit = text.find("    ✓ edit    Edit src/lib.rs").unwrap();
    assert!(start < head && head < edit, "{text}");
    assert!(text.contains(&format!("{kid}/c-edit-1")), "{text}");
}

#[test]
fn a_refused_childs_edit_fails_only_that_call() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo_run(
        dir.path(),
        &["--permission", "reject", "--prompt", "/subagents"],
    );
    let ev = events(&o);
    let resolved = of(&ev, "permission_resolved");
    assert_eq!(resolved.len(), 1, "{ev:?}");
    assert_eq!(resolved[0]["outcome"]["option_id"], "reject");
    let updated = of(&ev, "tool_call_updated");
    assert!(
        updated
            .iter()
            .any(|u| u["call"]["id"] == "c-edit-1" && u["status"] == "failed")
    );
    // The delegating call still completes, with what the child reported.
    assert!(
        updated
            .iter()
            .any(|u| u["call"]["id"] == "task-1" && u["status"] == "completed")
    );
    let lib = std::fs::read_to_string(dir.path().join("demo-workspace/src/lib.rs")).unwrap();
    assert!(lib.contains("TODO"), "{lib}");
    assert_eq!(of(&ev, "turn_ended")[0]["stop_reason"], "end_turn");
}

/// In the UI (tmux, the real binary): the child's permission request opens the dialog
/// saying which subagent asks; once answered, the card of the delegating call shows the
/// child's tree; the inspector tells its story and steps into its calls and back.
#[test]
fn in_the_ui_the_childs_request_is_asked_and_its_tree_inspected() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let Some(t) = crate::tui::Tmux::start_sized(&["demo", "--cwd", cwd], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["/subagents", "Enter"]);
    let s = t.wait_for("asked by subagent Explorer");
    assert!(
        s.contains("Permission") && s.contains("Edit src/lib.rs"),
        "{s}"
    );
    t.send(&["y"]);
    let s = t.wait_for("The subagent is done.");
    assert!(
        s.contains("└ ⤷ subagent Explorer · idle (end_turn) · 3 calls"),
        "{s}"
    );
    assert!(s.contains("allowed once by user"), "{s}");
    // The inspector on the latest card: the delegating call, with the child's story.
    t.send(&["Escape", "g", "T"]);
    let s = t.wait_for("Tool Result: Delegate: find and fix the TODOs");
    assert!(
        s.contains("→ to it:") && s.contains("Find the TODOs in src/"),
        "{s}"
    );
    t.send(&["]", "s"]);
    t.wait_for("⤷ Explorer › Tool Result: Read src/lib.rs [1/3]");
    t.send(&["Tab"]);
    t.wait_for("⤷ Explorer › Tool Result: Search TODO in src/ [2/3]");
    t.send(&["[", "s"]);
    t.wait_for("Tool Result: Delegate: find and fix the TODOs [1/1]");
}
