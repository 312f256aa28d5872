//! Command hooks (issue 29, item 14) against the demo agent: a hook on an event gets it on
//! stdin; hooks on permission requests decide by exit code or JSON, in order, and one that
//! fails or times out never approves.

use std::process::Command;

fn run(config: &str, args: &[&str]) -> (Option<i32>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, config.replace("DIR", dir.path().to_str().unwrap())).unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .arg("--config")
        .arg(&cfg)
        .args([
            "run", "--agent", "demo", "--prompt", "fix", "--format", "jsonl", "--cwd",
        ])
        .arg(&work)
        .args(args)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        dir,
    )
}

/// The permission_resolved events: (outcome kind, decider).
fn resolved(out: &str) -> Vec<(String, String)> {
    crate::jsonl(out)
        .into_iter()
        .filter(|e| e["type"] == "permission_resolved")
        .map(|e| {
            (
                e["outcome"]["kind"].as_str().unwrap_or("").to_string(),
                format!("{}", e["decider"]),
            )
        })
        .collect()
}

#[test]
fn a_hook_gets_the_event_on_stdin() {
    let (code, _, dir) = run(
        "[[hooks]]\non = \"turn_ended\"\nrun = \"cat > 'DIR/turn.json'\"\n\n[[hooks]]\non = \"tool_call_updated\"\nkind = \"edit\"\nstatus = \"completed\"\nrun = \"cat >> 'DIR/edits.jsonl'; echo >> 'DIR/edits.jsonl'\"\n",
        &["--permission", "allow-once"],
    );
    assert_eq!(code, Some(0));
    let turn: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("turn.json")).unwrap())
            .unwrap();
    assert_eq!(turn["type"], "turn_ended");
    assert_eq!(turn["stop_reason"], "end_turn");
    let edits = std::fs::read_to_string(dir.path().join("edits.jsonl")).unwrap();
    assert_eq!(
        edits.lines().filter(|l| !l.is_empty()).count(),
        1,
        "{edits}"
    );
    assert!(edits.contains("\"kind\":\"edit\""));
}

#[test]
fn permission_hooks_decide_in_order_and_faults_never_approve() {
    // Exit 2 rejects, before the allow-once policy would allow.
    let (_, out, _) = run(
        "[[hooks]]\non = \"permission_requested\"\nkind = \"edit\"\npath = \"demo-workspace/**\"\nrun = \"echo 'no edits' >&2; exit 2\"\n",
        &["--permission", "allow-once"],
    );
    assert_eq!(
        resolved(&out),
        vec![(
            "reject_once".into(),
            r#"{"by":"extension","name":"hooks"}"#.into()
        )]
    );
    // Its words (stderr) are passed on: the agent's next message (issue 48, item 8).
    assert!(
        out.contains(r#"The client's check `hooks` rejected the tool call \"Edit src/lib.rs\". Reason: no edits"#),
        "{out}"
    );
    // No opinion, then a JSON allow: the second hook decides.
    let (_, out, _) = run(
        "[[hooks]]\non = \"permission_requested\"\nrun = \"exit 0\"\n\n[[hooks]]\non = \"permission_requested\"\ntitle = \"Edit *\"\nrun = \"echo '{\\\"decision\\\":\\\"allow\\\"}'\"\n",
        &[],
    );
    assert_eq!(resolved(&out)[0].0, "allow_once", "{out}");
    assert!(resolved(&out)[0].1.contains("hooks"));
    // A hook that fails, prints nonsense or times out answers nothing: the policy does.
    for run_ in ["exit 1", "echo yes", "sleep 5"] {
        let (_, out, _) = run(
            &format!("[[hooks]]\non = \"permission_requested\"\ntimeout = 0.5\nrun = \"{run_}\"\n"),
            &[],
        );
        assert_eq!(
            resolved(&out),
            vec![(
                "reject_once".into(),
                r#"{"by":"policy","name":"reject"}"#.into()
            )],
            "{run_}"
        );
    }
    // Matchers that do not hold: the hook is not asked.
    let (_, out, _) = run(
        "[[hooks]]\non = \"permission_requested\"\nkind = \"execute\"\nrun = \"exit 2\"\n",
        &["--permission", "allow-once"],
    );
    assert_eq!(resolved(&out)[0].0, "allow_once");
}

/// A `session_started` hook that leaves a process of another session holding its output
/// (and returns at once) does not stall the hooks after it: the agent's permission
/// request is still decided by the next hook, within the first one's timeout.
#[test]
fn a_hooks_escaped_child_never_stalls_the_permission_chain() {
    let (code, out, _) = run(
        "[[hooks]]\non = \"session_started\"\ntimeout = 1\nrun = \"setsid sleep 377.5151 & sleep 0.3\"\n\n[[hooks]]\non = \"permission_requested\"\nrun = \"echo '{\\\"decision\\\":\\\"allow\\\"}'\"\n",
        &["--timeout", "60s"],
    );
    let _ = Command::new("pkill")
        .args(["-f", "sleep 377.5151"])
        .status();
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        resolved(&out),
        vec![(
            "allow_once".into(),
            r#"{"by":"extension","name":"hooks"}"#.into()
        )],
        "{out}"
    );
}

#[test]
fn a_hook_entry_that_is_wrong_names_itself() {
    for (cfg, wants) in [
        (
            "[[hooks]]\non = \"turn_over\"\nrun = \"true\"\n",
            "hooks[0]",
        ),
        (
            "[[hooks]]\non = \"turn_ended\"\nrun = \"\"\n",
            "empty command",
        ),
        (
            "[[hooks]]\non = \"turn_ended\"\nrun = \"x\"\nkind = \"nope\"\n",
            "not a tool kind",
        ),
        (
            "[[hooks]]\non = \"turn_ended\"\nrun = \"x\"\ntimeout = -1\n",
            "positive",
        ),
        (
            "[[hooks]]\non = \"turn_ended\"\nrun = \"x\"\nwhen = 1\n",
            "unknown field",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, cfg).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .arg("--config")
            .arg(&f)
            .args(["run", "--agent", "demo", "--prompt", "x"])
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cfg}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(wants), "{cfg}: {err}");
    }
}

#[test]
fn the_documented_hooks_load_and_the_rm_rf_one_decides() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/hooks.md"))
        .unwrap();
    let blocks: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 2);
    assert!(blocks[0].lines().count() <= 3 && blocks[1].lines().count() <= 5);
    let dir = tempfile::tempdir().unwrap();
    for b in &blocks {
        let f = dir.path().join("c.toml");
        std::fs::write(&f, b).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .arg("--config")
            .arg(&f)
            .args(["status", "--json"])
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let run = blocks[1]
        .split("'''")
        .nth(1)
        .expect("the run line between ''' quotes");
    for (command, code) in [
        ("rm -rf /", 2),
        ("rm -rf ~/x", 2),
        ("rm -rf ../y", 2),
        ("rm -rf build", 0),
        ("cargo test", 0),
    ] {
        let event = serde_json::json!({"type": "permission_requested",
            "call": {"kind": "execute", "raw_input": {"command": command}}});
        let mut child = Command::new("sh")
            .args(["-c", run])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), event.to_string().as_bytes())
            .unwrap();
        drop(child.stdin.take());
        assert_eq!(child.wait().unwrap().code(), Some(code), "{command}");
    }
}

/// A project's own hooks (`.trellis/hooks.toml`) run only once trusted as they are: not
/// before (said on stderr), and not after the file changed, until trusted again.
#[test]
fn a_projects_hooks_run_only_once_trusted_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join(".trellis")).unwrap();
    let marker = dir.path().join("ran");
    let hooks = work.join(".trellis/hooks.toml");
    let write = |extra: &str| {
        std::fs::write(
            &hooks,
            format!(
                "[[hooks]]\non = \"turn_ended\"\nrun = \"echo ran >> '{}'{extra}\"\n",
                marker.display()
            ),
        )
        .unwrap();
    };
    write("");
    let trellis = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(&work)
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .output()
            .unwrap();
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let run = || {
        trellis(&[
            "run",
            "--agent",
            "demo",
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
            "--cwd",
            work.to_str().unwrap(),
        ])
    };
    let ran = || std::fs::read_to_string(&marker).map_or(0, |t| t.lines().count());
    let (code, said) = run();
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(ran(), 0, "not trusted: not run");
    assert!(said.contains("you have not trusted"), "{said}");
    let (code, said) = trellis(&["hooks", "trust"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("on turn_ended: echo ran"),
        "it shows what it runs: {said}"
    );
    let (code, said) = run();
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(ran(), 1, "trusted: run");
    // Changed: not run until trusted again.
    write("; true");
    let (_, said) = run();
    assert_eq!(ran(), 1, "changed: not run");
    assert!(said.contains("changed since you trusted"), "{said}");
    trellis(&["hooks", "trust"]);
    run();
    assert_eq!(ran(), 2);
    // A link in its place is never read.
    std::fs::remove_file(&hooks).unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere.toml"), &hooks).unwrap();
    let (code, said) = trellis(&["hooks", "trust"]);
    assert_ne!(code, Some(0));
    assert!(said.contains("not a regular file"), "{said}");
}
