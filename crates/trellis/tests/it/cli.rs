//! Headless runs of the real binary: fixtures replayed through the real client,
//! the demo agent, bad input, and the TypeScript SDK's example agent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use trellis_core::{Policy, Session};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_trellis")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    repo().join("fixtures/acp")
}

struct Run {
    out: Output,
    dir: tempfile::TempDir,
}

impl Run {
    fn events(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))
            })
            .collect()
    }
    fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("session.jsonl")).unwrap()
    }
    fn rebuilt(&self) -> Session {
        let mut s = Session::new(Policy::Ask);
        let problems = trellis_core::log::rebuild(&mut s, self.log().lines(), |_| {});
        assert!(problems.is_empty(), "{problems:?}");
        s
    }
    fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }
}

fn run(agent: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(exe())
        .args([
            "run", "--agent", agent, "--prompt", "go", "--format", "jsonl", "--cwd",
        ])
        .arg(&work)
        .arg("--log")
        .arg(dir.path().join("session.jsonl"))
        .args(extra)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    Run { out, dir }
}

fn replay(file: &Path, extra: &[&str]) -> Run {
    run(
        &format!("{} agent replay '{}'", exe(), file.display()),
        extra,
    )
}

/// A stable, readable summary of the final ledger.
fn ledger_snapshot(s: &Session) -> String {
    let mut out = String::new();
    for c in s.ledger.calls() {
        out.push_str(&format!(
            "{} | {} | {} | {}",
            c.id,
            c.kind.as_str(),
            c.status.as_str(),
            trellis_core::enrich::card_title(&c)
        ));
        if let Some((a, d)) = trellis_core::enrich::diff_stat(&c) {
            out.push_str(&format!(" | +{a} -{d}"));
        }
        for item in &c.content {
            if let trellis_core::tool_call::ToolContent::Diff {
                path,
                old_text,
                new_text,
            } = item
            {
                out.push_str(&format!(
                    "\n    diff {path}\n    --- {:?}\n    +++ {new_text:?}",
                    old_text.as_deref().unwrap_or("")
                ));
            }
            // A terminal's output, whether the client ran it or the agent reported it
            // (Codex's `_meta`).
            if let trellis_core::tool_call::ToolContent::Terminal { terminal_id } = item
                && let Some(t) = s.terminals.get(terminal_id)
            {
                let exit = t.exit.as_ref().and_then(|e| e.exit_code);
                out.push_str(&format!(
                    "\n    terminal {terminal_id} {:?} exit {exit:?}",
                    t.output
                ));
            }
        }
        for p in &c.permissions {
            let outcome = p
                .outcome
                .as_ref()
                .map(|o| o.label())
                .unwrap_or_else(|| "open".into());
            let decider = p
                .decider
                .as_ref()
                .map(|d| d.to_string())
                .unwrap_or_default();
            out.push_str(&format!(" | permission: {outcome} by {decider}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("stop: {:?}\n", s.last_stop));
    out
}

/// Replaces the temp dir in a snapshot so it is stable.
fn stable(text: &str, run: &Run) -> String {
    let cwd = std::fs::canonicalize(run.cwd()).unwrap();
    text.replace(&cwd.display().to_string(), "<cwd>")
}

#[test]
fn replayed_fixtures_give_the_recorded_ledger() {
    // (fixture, policy, exit code: 6 when the turn ended cancelled)
    for (name, policy, code) in [
        ("claude-agent-acp-0.23.1.jsonl", "allow-once", 0),
        ("claude-agent-acp-0.23.1-rejected.jsonl", "reject", 0),
        ("claude-code-acp-0.16.2-fs-terminal.jsonl", "allow-once", 0),
        // opencode against a scripted model on loopback (see docs/agent-conventions.md).
        ("opencode-1.18.33.jsonl", "allow-once", 0),
        ("opencode-1.18.33-rejected.jsonl", "reject", 0),
        // Codex (codex-acp and the codex binary) against a scripted Responses API on
        // loopback: a command outside its sandbox asks, and a refusal cancels the turn.
        ("codex-acp-2.6.0.jsonl", "allow-once", 0),
        ("codex-acp-2.6.0-rejected.jsonl", "reject", 6),
    ] {
        let r = replay(&fixtures().join(name), &["--permission", policy]);
        assert_eq!(r.code(), code, "{name}: {}", r.stderr());
        let s = r.rebuilt();
        // The log rebuilds what the live run printed.
        let last: Vec<_> = r
            .events()
            .into_iter()
            .filter(|e| e["type"] == "turn_ended")
            .collect();
        assert_eq!(last.len(), 1, "{name}");
        insta::assert_snapshot!(name, stable(&ledger_snapshot(&s), &r));
    }
}

#[test]
fn demo_end_to_end() {
    let r = run(
        &format!("{} agent demo --delay-ms 0", exe()),
        &["--permission", "allow-once"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let events = r.events();
    assert!(events.iter().all(|e| e["schema"] == 1));
    let s = r.rebuilt();
    assert_eq!(s.ledger.len(), 5);
    for c in s.ledger.calls() {
        assert!(c.status.is_terminal(), "{} is {:?}", c.id, c.status);
    }
    let failed: Vec<_> = s
        .ledger
        .calls()
        .filter(|c| c.status == trellis_core::ToolStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    // The edit landed on disk.
    let lib = std::fs::read_to_string(r.cwd().join("demo-workspace/src/lib.rs")).unwrap();
    assert!(lib.contains("checked_add"), "{lib}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "file_written" && e["call_id"] == "edit-1")
    );
    // The decider is recorded in the events, the log and the ledger.
    let resolved: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "permission_resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0]["decider"],
        json!({"by": "policy", "name": "allow-once"})
    );
    assert!(r.log().contains("\"type\":\"permission_decided\""));
    let edit = s.ledger.get("edit-1").unwrap();
    assert_eq!(
        edit.permissions[0].decider,
        Some(trellis_core::Decider::Policy("allow-once".into()))
    );
    // Terminal output was captured live and kept.
    let term = s
        .terminals
        .values()
        .find(|t| t.output.contains("3 passed"))
        .expect("terminal output");
    assert_eq!(term.exit.as_ref().unwrap().exit_code, Some(0));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "terminal_exited" && e["exit_code"] == 1)
    );
}

#[test]
fn headless_default_rejects_and_says_so() {
    let r = run(&format!("{} agent demo --delay-ms 0", exe()), &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(
        r.stderr().contains("permission policy: reject"),
        "{}",
        r.stderr()
    );
    let s = r.rebuilt();
    assert_eq!(
        s.ledger.get("edit-1").unwrap().status,
        trellis_core::ToolStatus::Failed
    );
    let lib = std::fs::read_to_string(r.cwd().join("demo-workspace/src/lib.rs")).unwrap();
    assert!(!lib.contains("checked_add"));
}

// ---------- bad input: recordings built on the fly ----------

fn rec(dir: &str, msg: Value) -> String {
    json!({"t": 0.0, "dir": dir, "msg": msg}).to_string()
}

fn base_recording(body: Vec<String>, finish: bool) -> String {
    let mut lines = vec![
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/rec/cwd","mcpServers":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
    ];
    lines.extend(body);
    if finish {
        lines.push(rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
        ));
    }
    lines.join("\n") + "\n"
}

fn update(u: Value) -> String {
    rec(
        "agent_to_client",
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}),
    )
}

fn replay_text(text: &str, extra: &[&str]) -> Run {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let r = replay(file.path(), extra);
    drop(file);
    r
}

#[test]
fn invalid_json_line_is_skipped_with_a_warning() {
    let text = base_recording(
        vec![
            update(
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"before "}}),
            ),
            json!({"t": 0.0, "dir": "agent_to_client", "raw": "{this is not json"}).to_string(),
            update(
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after"}}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let events = r.events();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "warning"
                && e["message"].as_str().unwrap().contains("invalid line"))
    );
    let s = r.rebuilt();
    assert_eq!(s.counters.invalid_lines, 1);
    assert!(trellis_core::summary::transcript_text(&s).contains("before after"));
    assert!(
        r.log().contains("{this is not json"),
        "the bad line is kept verbatim"
    );
}

#[test]
fn unknown_update_kind_is_counted_and_ignored() {
    let text = base_recording(
        vec![
            update(json!({"sessionUpdate":"hologram_update","stuff":1})),
            update(json!({"sessionUpdate":"hologram_update","stuff":2})),
            update(
                json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"A","status":"completed"}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let warnings = r
        .events()
        .into_iter()
        .filter(|e| e["type"] == "warning")
        .count();
    assert_eq!(warnings, 1, "warned once per kind");
    let s = r.rebuilt();
    assert_eq!(s.counters.unknown_updates.get("hologram_update"), Some(&2));
    assert_eq!(
        s.ledger.get("a").unwrap().status,
        trellis_core::ToolStatus::Completed
    );
}

#[test]
fn update_for_unknown_id_upserts_a_placeholder() {
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"ghost","status":"completed",
            "content":[{"type":"content","content":{"type":"text","text":"hi"}}]}),
        )],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(
        r.events()
            .iter()
            .any(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("ghost"))
    );
    let s = r.rebuilt();
    let c = s.ledger.get("ghost").unwrap();
    assert!(!c.announced);
    assert_eq!(c.status, trellis_core::ToolStatus::Completed);
    assert_eq!(c.display_title(), "(unannounced call ghost)");
}

#[test]
fn a_16_mib_line_goes_through() {
    let big = "x".repeat(16 << 20);
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":big}}),
        )],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.rebuilt();
    match &s.transcript[1] {
        trellis_core::session::Entry::Message(m) => assert_eq!(m.text.len(), 16 << 20),
        other => panic!("{other:?}"),
    }
}

#[test]
fn agent_exiting_mid_turn_is_reported_and_logged() {
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Slow","status":"in_progress"}),
        )],
        false,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 7, "{}", r.stderr());
    assert!(r.stderr().contains("agent exited"), "{}", r.stderr());
    let events = r.events();
    assert!(events.iter().any(|e| e["type"] == "agent_exited"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_ended" && e["stop_reason"] == "agent_exited")
    );
    let s = r.rebuilt();
    assert_eq!(
        s.ledger.get("a").unwrap().status,
        trellis_core::ToolStatus::Unfinished
    );
    assert!(r.log().contains("\"type\":\"agent_exited\""));
}

#[test]
fn fs_request_outside_the_roots_is_refused() {
    let text = base_recording(
        vec![
            rec(
                "agent_to_client",
                json!({"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"S","path":"/etc/passwd"}}),
            ),
            rec(
                "client_to_agent",
                json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
            ),
            rec(
                "agent_to_client",
                json!({"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"sessionId":"S","path":"/rec/cwd/../escape.txt","content":"x"}}),
            ),
            rec(
                "client_to_agent",
                json!({"jsonrpc":"2.0","id":1,"result":{}}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let log = r.log();
    assert!(log.contains("is outside the session roots"), "{log}");
    assert!(log.contains("contains `..`"), "{log}");
    assert!(!r.dir.path().join("escape.txt").exists());
}

// ---------- the TypeScript SDK's example agent ----------

fn ts_agent() -> Option<String> {
    let path = std::env::var("TRELLIS_TS_AGENT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            repo().join(".ci/node/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js")
        });
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node || !path.exists() {
        crate::missing_tool(&format!(
            "node or {} missing (run .ci/run to install it)",
            path.display()
        ));
        return None;
    }
    Some(format!("node '{}'", path.display()))
}

#[test]
fn ts_agent_allow() {
    let Some(agent) = ts_agent() else { return };
    let r = run(&agent, &["--permission", "allow-once"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.rebuilt();
    assert_eq!(
        s.ledger.get("call_1").unwrap().status,
        trellis_core::ToolStatus::Completed
    );
    let c2 = s.ledger.get("call_2").unwrap();
    assert_eq!(c2.status, trellis_core::ToolStatus::Completed);
    assert!(c2.permissions[0].outcome.as_ref().unwrap().is_allowed());
}

#[test]
fn ts_agent_reject() {
    let Some(agent) = ts_agent() else { return };
    let r = run(&agent, &["--permission", "reject"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.rebuilt();
    let c2 = s.ledger.get("call_2").unwrap();
    // The agent sends nothing more for a rejected call: it is closed at turn end.
    assert_eq!(c2.status, trellis_core::ToolStatus::Unfinished);
    assert_eq!(
        c2.permissions[0].outcome.as_ref().unwrap().label(),
        "rejected once"
    );
}

#[test]
fn ts_agent_cancel_with_ctrl_c() {
    let Some(agent) = ts_agent() else { return };
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(exe())
        .args([
            "run", "--agent", &agent, "--prompt", "go", "--format", "jsonl", "--log",
        ])
        .arg(dir.path().join("session.jsonl"))
        .arg("--cwd")
        .arg(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the turn has started (first event out), then interrupt.
    let log = dir.path().join("session.jsonl");
    for _ in 0..200 {
        if std::fs::read_to_string(&log).is_ok_and(|l| l.contains("agent_message_chunk")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("session/cancel"));
    let mut s = Session::new(Policy::Ask);
    trellis_core::log::rebuild(&mut s, text.lines(), |_| {});
    assert_eq!(s.last_stop.as_deref(), Some("cancelled"));
}

// ---------- session/load, stop reasons, policies, config ----------

#[test]
fn session_load_replays_history_before_the_prompt() {
    let lines = [
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"S","cwd":"/rec/cwd","mcpServers":[]}}),
        ),
        update(
            json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"earlier question"}}),
        ),
        update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"earlier answer"}}),
        ),
        update(
            json!({"sessionUpdate":"tool_call","toolCallId":"old","title":"Old read","kind":"read","status":"completed"}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":1,"result":{}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}),
        ),
        update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"new answer"}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
        ),
    ];
    let r = replay_text(&(lines.join("\n") + "\n"), &["--load", "S"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(r.log().contains("\"method\":\"session/load\""));
    let s = r.rebuilt();
    assert_eq!(s.id.as_deref(), Some("S"));
    let text = trellis_core::summary::transcript_text(&s);
    assert!(
        text.contains("> earlier question")
            && text.contains("earlier answer")
            && text.contains("new answer"),
        "{text}"
    );
    assert_eq!(
        s.ledger.get("old").unwrap().status,
        trellis_core::ToolStatus::Completed
    );
}

#[test]
fn stop_reasons_map_to_exit_codes() {
    for (stop, code) in [
        ("end_turn", 0),
        ("refusal", 3),
        ("max_tokens", 4),
        ("max_turn_requests", 5),
        ("cancelled", 6),
    ] {
        let mut text = base_recording(vec![], false);
        text.push_str(&rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":stop}}),
        ));
        text.push('\n');
        let r = replay_text(&text, &[]);
        assert_eq!(r.code(), code, "{stop}: {}", r.stderr());
    }
    // The agent answers the prompt with an error: a protocol error.
    let mut text = base_recording(vec![], false);
    text.push_str(&rec(
        "agent_to_client",
        json!({"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}),
    ));
    text.push('\n');
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 8, "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("agent refused session/prompt: Internal error"),
        "{}",
        r.stderr()
    );
}

#[test]
fn allow_reads_and_rules_file_policies() {
    let ask = |id: u64, call: &str, kind: &str, title: &str, input: Value| {
        vec![
            rec(
                "agent_to_client",
                json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"S",
                "toolCall":{"toolCallId":call,"title":title,"kind":kind,"rawInput":input},
                "options":[{"optionId":"y","name":"Yes","kind":"allow_once"},{"optionId":"n","name":"No","kind":"reject_once"}]}}),
            ),
            rec(
                "client_to_agent",
                json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"selected","optionId":"y"}}}),
            ),
        ]
    };
    let mut body = ask(0, "r", "read", "Read a", json!({"path":"/x/a"}));
    body.extend(ask(
        1,
        "g",
        "execute",
        "git",
        json!({"command":"git status"}),
    ));
    body.extend(ask(2, "e", "edit", "Edit b", json!({"path":"/x/secret/b"})));
    let text = base_recording(body, true);
    let outcomes = |r: &Run| -> Vec<(String, String)> {
        let s = r.rebuilt();
        s.ledger
            .calls()
            .map(|c| {
                let p = &c.permissions[0];
                (
                    p.outcome.as_ref().unwrap().label(),
                    p.decider.as_ref().unwrap().to_string(),
                )
            })
            .collect()
    };
    let r = replay_text(&text, &["--permission", "allow-reads"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(
        outcomes(&r),
        vec![
            ("allowed once".into(), "policy allow-reads".into()),
            ("rejected once".into(), "policy allow-reads".into()),
            ("rejected once".into(), "policy allow-reads".into()),
        ]
    );
    let rules = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rules.path(), "fallback = \"allow\"\n[[rule]]\naction = \"allow\"\ncommand = \"git *\"\n[[rule]]\naction = \"reject\"\npath = \"**/secret/**\"\n").unwrap();
    let r = replay_text(&text, &["--permission", rules.path().to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(
        outcomes(&r),
        vec![
            ("allowed once".into(), "policy rules".into()),
            ("allowed once".into(), "rule allow command=git *".into()),
            (
                "rejected once".into(),
                "rule reject path=**/secret/**".into()
            ),
        ]
    );
    // A broken rules file is a clear error naming file, line and key.
    std::fs::write(rules.path(), "[[rule]]\naction = \"maybe\"\n").unwrap();
    let r = replay_text(&text, &["--permission", rules.path().to_str().unwrap()]);
    assert_eq!(r.code(), 2);
    assert!(r.stderr().contains(":2: rule.action:"), "{}", r.stderr());
}

#[test]
fn config_error_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.toml");
    std::fs::write(
        &conf,
        "default_agent = \"demo\"\n\n[agents.x]\ncommand = [1]\n",
    )
    .unwrap();
    let out = Command::new(exe())
        .args([
            "--config",
            conf.to_str().unwrap(),
            "run",
            "--prompt",
            "hi",
            "--log",
        ])
        .arg(dir.path().join("s.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.toml:4: agents.x.command:"), "{err}");
}

#[test]
fn a_trellis_log_replays_like_a_fixture() {
    let first = run(
        &format!("{} agent demo --delay-ms 0", exe()),
        &["--permission", "allow-once"],
    );
    assert_eq!(first.code(), 0, "{}", first.stderr());
    let log = first.dir.path().join("session.jsonl");
    let again = replay(&log, &["--permission", "allow-once"]);
    assert_eq!(again.code(), 0, "{}", again.stderr());
    let summary = |s: &Session| -> Vec<(String, String, String)> {
        s.ledger
            .calls()
            .map(|c| {
                (
                    c.id.clone(),
                    c.kind.as_str().to_string(),
                    c.status.as_str().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(summary(&first.rebuilt()), summary(&again.rebuilt()));
}

#[test]
fn an_agent_that_cannot_start_is_a_clear_crash() {
    let r = run("/nonexistent/agent --acp", &[]);
    assert_eq!(r.code(), 7, "{}", r.stderr());
    assert!(
        r.stderr().contains("cannot start /nonexistent/agent"),
        "{}",
        r.stderr()
    );
    assert!(r.log().contains("\"type\":\"agent_exited\""));
}

#[test]
fn authenticates_when_the_agent_requires_it() {
    let lines = [
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},
            "authMethods":[{"id":"key","name":"API key"},{"id":"login","name":"Log in"}]}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/rec/cwd","mcpServers":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Authentication required"}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"key"}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":2,"result":{}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/rec/cwd","mcpServers":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":3,"result":{"sessionId":"S"}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}),
        ),
    ];
    let r = replay_text(&(lines.join("\n") + "\n"), &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let log = r.log();
    assert!(
        log.contains("\"method\":\"authenticate\",\"params\":{\"methodId\":\"key\"}"),
        "{log}"
    );
    assert_eq!(r.rebuilt().id.as_deref(), Some("S"));
}

#[test]
fn ui_config_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.toml");
    let fixture = fixtures().join("claude-agent-acp-0.23.1.jsonl");
    for (text, want) in [
        (
            "[ui]\ncursor = \"sideways\"\n",
            "config.toml:2: ui.cursor: \"sideways\" is not one of",
        ),
        (
            "[ui.output]\nexecute = \"preview lots\"\n",
            "config.toml:2: ui.output.execute: \"lots\" is not a number",
        ),
        (
            "[ui.keys]\ninspect = \"<Nope>\"\n",
            "config.toml:2: ui.keys.inspect: unknown key <Nope>",
        ),
        (
            "[ui.keys]\nteleport = \"x\"\n",
            "config.toml:2: ui.keys.teleport: unknown key action",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let out = Command::new(exe())
            .args(["--config", conf.to_str().unwrap(), "replay"])
            .arg(&fixture)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{text}: {err}");
    }
}

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
