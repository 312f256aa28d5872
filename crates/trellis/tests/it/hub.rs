//! Reaching a running UI from elsewhere (issue 27, first part): `trellis ls`, `approve`,
//! `send`, `stop` over the UI's socket; an answer given once, the second asker told who
//! won; a dead UI's socket cleared.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::tui::Tmux;

fn trellis(runtime: &Path, data: &Path, args: &[&str], stdin: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_session_is_listed_approved_once_sent_to_and_stopped_from_another_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(home.path()).unwrap();
    let runtime = root.join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let work = root.join("w");
    std::fs::create_dir_all(&work).unwrap();
    let env = format!("XDG_RUNTIME_DIR={}", runtime.display());
    let Some(t) = Tmux::start_env(
        &["LANG=C.UTF-8", &env],
        &["--agent", "demo", "--cwd", work.to_str().unwrap()],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    // The socket is this user's alone.
    let dir = runtime.join("trellis");
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&dir), 0o700);
    let sock = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .expect("a socket");
    assert_eq!(mode(&sock), 0o600);
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("[y] Allow");
    let data = t.data().to_path_buf();
    let o = trellis(&runtime, &data, &["ls", "--json"], "");
    let rows = crate::jsonl(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(rows.len(), 1, "{}", text(&o));
    assert_eq!(rows[0]["state"], "permission");
    assert_eq!(rows[0]["pending"][0]["subject"], "Edit src/lib.rs (+1 −2)");
    let hub = rows[0]["hub"].as_str().unwrap().to_string();
    let key = rows[0]["key"].as_u64().unwrap() as u32;
    let request_id = rows[0]["pending"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let options = rows[0]["pending"][0]["options"].to_string();
    assert!(
        !options.contains("always"),
        "one-time choices only: {options}"
    );
    // Answered from another terminal: the dialog goes, the turn goes on.
    let o = trellis(&runtime, &data, &["approve"], "1\n");
    assert!(text(&o).contains("answered"), "{}", text(&o));
    t.wait("the turn to end", |s| {
        s.contains("Done: the TODO is fixed") && !s.contains("[y] Allow")
    });
    // A second answer to the same request is refused, naming who answered.
    let files = trellis_hub::place::HubFiles::new(&dir, &hub);
    let mut c = trellis_hub::client::Client::connect(&files, "late").unwrap();
    let late = c
        .call(
            trellis_hub::wire::Op::Decide {
                session: key,
                request_id: request_id.clone(),
                option_id: "reject".into(),
                claim: None,
                always: None,
                reason: None,
            },
            None,
        )
        .unwrap();
    match late {
        trellis_hub::wire::Body::Error { code, message } => {
            assert_eq!(code, "answered");
            assert!(message.contains("trellis approve"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let log = t.log();
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"permission_decided\""))
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert!(
        decided[0].contains("\"by\":\"attached\"") && decided[0].contains("trellis approve (pid"),
        "{decided:?}"
    );
    // A prompt queued from elsewhere runs as the next turn; an operation id makes a retry
    // harmless.
    let mut send = |op: &str| {
        c.call(
            trellis_hub::wire::Op::Send {
                session: key,
                text: "and the README too".into(),
                files: Vec::new(),
            },
            Some(op.into()),
        )
        .unwrap()
    };
    let first = send("op-1");
    let again = send("op-1");
    assert_eq!(first, again, "the retry gets the first outcome");
    t.wait_for("and the README too");
    let prompts = t
        .log()
        .lines()
        .filter(|l| l.contains("client_to_agent") && l.contains("\"session/prompt\""))
        .count();
    assert_eq!(prompts, 2, "sent once");
    // Stopped from elsewhere: the UI closes its session and ends.
    let pid = t.program_pid().unwrap();
    let o = trellis(&runtime, &data, &["stop", &format!("{hub}:{key}")], "");
    assert!(text(&o).contains("stopped"), "{}", text(&o));
    let start = Instant::now();
    while crate::procs::exists(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the UI did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(t.log().contains("stopped by trellis stop (pid"));
    assert!(!sock.exists(), "its socket went with it");
}

#[test]
fn a_killed_uis_socket_is_cleared_by_the_next_listing() {
    let home = tempfile::tempdir().unwrap();
    let runtime = std::fs::canonicalize(home.path()).unwrap().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let env = format!("XDG_RUNTIME_DIR={}", runtime.display());
    // The UI is killed: its demo workspace cannot be removed by it, so it is made here.
    let tmp = home.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp = format!("TMPDIR={}", tmp.display());
    let Some(t) = Tmux::start_env(&["LANG=C.UTF-8", &env, &tmp], &["--agent", "demo"], 100, 30)
    else {
        return;
    };
    t.wait_for("Enter send");
    let data = t.data().to_path_buf();
    let o = trellis(&runtime, &data, &["ls", "--json"], "");
    assert_eq!(crate::jsonl(&String::from_utf8_lossy(&o.stdout)).len(), 1);
    let pid = t.program_pid().unwrap();
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let start = Instant::now();
    while crate::procs::exists(pid) {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let dir = runtime.join("trellis");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "sock and lock left"
    );
    let o = trellis(&runtime, &data, &["ls"], "");
    assert!(text(&o).contains("no running sessions"), "{}", text(&o));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "cleared");
}
