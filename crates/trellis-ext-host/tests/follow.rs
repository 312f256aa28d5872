//! The built-in Follow pane with an agent that writes files itself (claude-agent-acp):
//! no `fs/write_text_file` reaches Trellis, so the pane reads the file again when the
//! call ends instead of saying "not on disk yet" forever.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Effect, Policy, Session, update};
use trellis_ext_host::{Candidate, ExtHost, HostOptions};

fn follow_host() -> ExtHost {
    let follow = trellis_builtins::all()
        .into_iter()
        .find(|e| e.manifest().name == "follow")
        .unwrap();
    ExtHost::new(
        vec![Candidate {
            ext: follow,
            builtin: true,
        }],
        HostOptions::default(),
    )
    .0
}

fn frame(s: &mut Session, host: &ExtHost, seq: u64, dir: Dir, v: serde_json::Value) {
    for fx in update(
        s,
        Action::Frame {
            seq,
            t: seq as f64,
            dir,
            msg: Message::parse(&v.to_string()).unwrap(),
        },
    ) {
        if let Effect::Emit(ev) = fx {
            host.dispatch(&ev);
        }
    }
}

fn pane(host: &ExtHost) -> String {
    assert!(host.flush(Duration::from_secs(10)));
    let sections = host.ui.sections();
    let s = sections.iter().find(|s| s.title == "Follow").unwrap();
    s.rows
        .iter()
        .map(|r| r.line.text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_file_the_agent_wrote_itself_is_read_when_its_call_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let p = path.to_str().unwrap();
    let host = follow_host();
    let mut s = Session::new(Policy::Ask);
    frame(
        &mut s,
        &host,
        1,
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"write notes"}]}}),
    );
    frame(
        &mut s,
        &host,
        2,
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
        "sessionUpdate":"tool_call","toolCallId":"w","title":"Write notes.txt","kind":"edit","status":"pending",
        "locations":[{"path":p}],"rawInput":{"file_path":p,"content":"one\ntwo\n"}}}}),
    );
    assert!(pane(&host).contains("not on disk yet"), "{}", pane(&host));
    // The agent writes the file with its own tools, then reports the call done.
    std::fs::write(&path, "one\ntwo\n").unwrap();
    frame(
        &mut s,
        &host,
        3,
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
        "sessionUpdate":"tool_call_update","toolCallId":"w","status":"completed",
        "content":[{"type":"diff","path":p,"oldText":null,"newText":"one\ntwo\n"}]}}}),
    );
    let shown = pane(&host);
    assert!(!shown.contains("not on disk yet"), "{shown}");
    assert!(
        shown.contains("   1 + one") && shown.contains("   2 + two"),
        "{shown}"
    );
}

/// A path the agent gives relative to the session (a file a shell command created, read
/// by its relative name) is the session's: the pane finds it, whatever directory Trellis
/// itself was started in.
#[test]
fn a_relative_path_is_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("made-by-shell.txt"), "made\nby a shell\n").unwrap();
    let cwd = dir.path().to_str().unwrap();
    let host = follow_host();
    let mut s = Session::new(Policy::Ask);
    frame(
        &mut s,
        &host,
        1,
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":cwd,"mcpServers":[]}}),
    );
    frame(
        &mut s,
        &host,
        2,
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":"S"}}),
    );
    frame(
        &mut s,
        &host,
        3,
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
        "sessionUpdate":"tool_call","toolCallId":"r","title":"Read made-by-shell.txt","kind":"read",
        "status":"in_progress","locations":[{"path":"made-by-shell.txt","line":1}]}}}),
    );
    let p = pane(&host);
    assert!(p.contains("by a shell"), "{p}");
    assert!(!p.contains("not on disk yet"), "{p}");
}
