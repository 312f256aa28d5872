//! Loading a session, stop reasons, policies, configuration and authentication in
//! headless runs.

use super::*;

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
    // A program that is not there is a usage error, said before anything is written.
    let r = run("/nonexistent/agent --acp", &[]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(
        r.stderr().contains("/nonexistent/agent does not exist"),
        "{}",
        r.stderr()
    );
    assert!(
        !r.dir.path().join("session.jsonl").exists(),
        "no session log for it"
    );
    // One that is there and dies before it answers is a crash.
    let r = run("sh -c 'exit 3'", &[]);
    assert_eq!(r.code(), 7, "{}", r.stderr());
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

/// A run that fails before its agent starts still leaves the artifacts it was asked for,
/// saying why; a config named on the command line must be there.
#[test]
fn a_setup_that_fails_still_writes_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let out = dir.path().join("out.txt");
    let o = Command::new(exe())
        .args(["run", "--agent", "nosuch", "--prompt", "x", "--summary"])
        .arg(&summary)
        .arg("--output-file")
        .arg(&out)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["exit_code"], 2);
    assert!(
        s["exit_reason"]
            .as_str()
            .unwrap()
            .contains("not a preset or an installed agent"),
        "{s}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    let o = Command::new(exe())
        .args(["--config", "/nonexistent/config.toml", "ls"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--config"));
}

/// A command that only prints ends quietly when its reader goes (`| head`): no panic,
/// the status a Unix tool has then.
#[test]
fn printing_commands_end_quietly_when_their_reader_goes() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(exe())
        .args(["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        o.status.success() || o.status.signal() == Some(13),
        "{:?}",
        o.status
    );
}

/// What a session said is the user's alone, whatever the umask: its log 0600 in a
/// directory 0700, the session index 0600.
#[test]
fn session_logs_and_the_index_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec {} run --agent demo --prompt hi --permission allow-once",
            exe()
        ))
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = String::from_utf8_lossy(&o.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("trellis: session log: ").map(PathBuf::from))
        .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600, "{}", log.display());
    assert_eq!(mode(log.parent().unwrap()), 0o700);
    assert_eq!(mode(&data.join("trellis/index.sqlite")), 0o600);
}
