//! Headless runs of the real binary: fixtures replayed through the real client,
//! the demo agent, bad input, and the TypeScript SDK's example agent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use trellis_core::{Policy, Session};

mod bad_input;
mod extensions;
mod setup;

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
    let text = text.replace(&cwd.display().to_string(), "<cwd>");
    // A terminal's id carries its connection's mark (`term-3f09c1-1`): left out.
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("term-") {
        out.push_str(&rest[..i + 5]);
        rest = &rest[i + 5..];
        let mark = rest.as_bytes().iter().take(6).all(u8::is_ascii_hexdigit)
            && rest.as_bytes().get(6) == Some(&b'-');
        if mark {
            rest = &rest[7..];
        }
    }
    out.push_str(rest);
    out
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

// ---------- recordings built on the fly ----------

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
