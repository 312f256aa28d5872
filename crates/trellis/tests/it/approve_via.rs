//! `trellis run --approve-via hub` (issue 31, item 2): a headless run's request that nothing
//! decided waits on the run's own hub; it is answered there exactly once (racers told who
//! won, an observer and a claim's rivals refused), and when nobody answers within
//! `--ask-timeout`, `--on-ask` answers it on the record.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};

use trellis_hub::client::Client;
use trellis_hub::wire::{Body, Op};

use crate::hubkit::{Dirs, text, until};

/// `trellis run` of the demo in the work directory, serving hub `hub`, with `args`.
fn start(d: &Dirs, hub: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--agent", "demo", "--cwd"])
        .arg(&d.work)
        .args([
            "--prompt",
            "fix the TODO",
            "--approve-via",
            "hub",
            "--hub",
            hub,
        ])
        .args(["--log"])
        .arg(d.work.join("../session.jsonl"))
        .args(args)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn client(d: &Dirs, hub: &str, name: &str) -> Client {
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), hub);
    Client::connect(&files, name).unwrap()
}

fn decide(c: &mut Client, claim: Option<String>) -> Body {
    c.call(
        Op::Decide {
            session: 1,
            request_id: "1".into(),
            option_id: "allow".into(),
            claim,
            always: None,
            reason: None,
        },
        None,
    )
    .unwrap()
}

fn session_log(d: &Dirs) -> String {
    std::fs::read_to_string(d.work.join("../session.jsonl")).unwrap()
}

/// The deciders of the log's permission records.
fn deciders(log: &str) -> Vec<serde_json::Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["msg"]["type"] == "permission_decided")
        .map(|r| r["msg"]["decider"].clone())
        .collect()
}

#[test]
fn a_headless_runs_request_waits_on_its_hub_and_is_answered_there_once() {
    let d = Dirs::new();
    let summary = d.work.join("../summary.json");
    let child = start(
        &d,
        "ci-7",
        &[
            "--ask-timeout",
            "120s",
            "--idle-timeout",
            "1s",
            "--format",
            "jsonl",
            "--summary",
            summary.to_str().unwrap(),
        ],
    );
    // Listed among the user's sessions, blocked, with what it asks.
    until("the run to ask through its hub", || {
        d.ls()
            .iter()
            .any(|r| r["hub"] == "ci-7" && r["state"] == "permission")
    });
    let row = d.ls().into_iter().find(|r| r["hub"] == "ci-7").unwrap();
    assert_eq!(row["pending"][0]["subject"], "Edit src/lib.rs (+1 −2)");
    // The agent waits for a human: its silence past --idle-timeout is not idleness.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // An observer's answer is refused by the hub.
    let mut watcher = client(&d, "ci-7", "observer");
    let Body::Watching { attachment, .. } = watcher
        .call(
            Op::Watch {
                session: 1,
                observe: true,
                take: false,
            },
            None,
        )
        .unwrap()
    else {
        panic!("not followed")
    };
    let mut spy = client(&d, "ci-7", "spy");
    spy.attachment = Some(attachment);
    let refused = decide(&mut spy, None);
    assert!(
        matches!(&refused, Body::Error { code, .. } if code == "refused"),
        "{refused:?}"
    );
    // A claim holds the others off; it goes with its connection.
    let mut holder = client(&d, "ci-7", "holder");
    let Body::Claimed { .. } = holder
        .call(
            Op::Claim {
                session: 1,
                request_id: "1".into(),
                lease_s: Some(60),
            },
            None,
        )
        .unwrap()
    else {
        panic!("not claimed")
    };
    let mut other = client(&d, "ci-7", "other");
    let held = decide(&mut other, None);
    assert!(
        matches!(&held, Body::Error { code, message } if code == "claimed" && message.contains("holder")),
        "{held:?}"
    );
    drop(holder);
    // Two racers at once: one answer reaches the agent, the other is told who won.
    let gate = Arc::new(Barrier::new(2));
    let racers: Vec<_> = ["racer-a", "racer-b"]
        .into_iter()
        .map(|name| {
            let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "ci-7");
            let gate = gate.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&files, name).unwrap();
                gate.wait();
                (name, decide(&mut c, None))
            })
        })
        .collect();
    let results: Vec<(&str, Body)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let won: Vec<&str> = results
        .iter()
        .filter(|(_, b)| matches!(b, Body::Done { .. }))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(won.len(), 1, "{results:?}");
    let lost = results
        .iter()
        .find(|(n, _)| *n != won[0])
        .map(|(_, b)| b.clone())
        .unwrap();
    assert!(
        matches!(&lost, Body::Error { code, message } if code == "answered" && message.contains(won[0])),
        "{lost:?}"
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = session_log(&d);
    let decided = deciders(&log);
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["by"], "attached");
    assert!(
        decided[0]["name"].as_str().unwrap().starts_with(won[0]),
        "{decided:?}"
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["exit_code"], 0, "{s}");
    // The edit went through: the agent was told yes.
    let events = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "permission_resolved" && e["outcome"]["option_id"] == "allow"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Every event of the session names it as the hub does (`trellis ls`, `send`,
    // `attach`); the closing `status` record is the run's, not the session's.
    assert!(
        events.len() > 5
            && events
                .iter()
                .all(|e| e["type"] == "status" || e["hub_session"] == "ci-7:1"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The hub went with the run.
    assert!(!d.runtime.join("trellis/ci-7.sock").exists());
    assert!(d.ls().iter().all(|r| r["hub"] != "ci-7"));
}

#[test]
fn nobody_answering_within_the_ask_timeout_leaves_it_to_on_ask() {
    let d = Dirs::new();
    // Deny (the default), named on the record; the run goes on and ends normally.
    let out = start(
        &d,
        "ci-8",
        &["--ask-timeout", "1s", "--idle-timeout", "30s"],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("nobody answered through hub ci-8 within 1 s"),
        "{}",
        text(&out)
    );
    let decided = deciders(&session_log(&d));
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["by"], "policy");
    assert!(
        decided[0]["name"]
            .as_str()
            .unwrap()
            .contains("nobody answered through hub ci-8"),
        "{decided:?}"
    );
    // Fail: denied, and the run stops with 13.
    let d = Dirs::new();
    let out = start(&d, "ci-9", &["--ask-timeout", "1s", "--on-ask", "fail"])
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert_eq!(deciders(&session_log(&d))[0]["name"], "--on-ask fail");
}

#[test]
fn the_flags_of_a_hub_are_refused_where_they_mean_nothing() {
    let d = Dirs::new();
    for (args, says) in [
        (
            &[
                "run",
                "--agent",
                "demo",
                "--prompt",
                "x",
                "--ask-timeout",
                "5s",
            ][..],
            "--ask-timeout",
        ),
        (
            &["run", "--agent", "demo", "--prompt", "x", "--hub", "h"][..],
            "--hub names",
        ),
        (
            &[
                "run",
                "--agent",
                "demo",
                "--prompt",
                "x",
                "--detach",
                "--approve-via",
                "hub",
            ][..],
            "--approve-via",
        ),
        (
            &[
                "run",
                "--agent",
                "demo",
                "--prompt",
                "x",
                "--approve-via",
                "hub",
                "--hub",
                "../x",
            ][..],
            "a hub's name",
        ),
    ] {
        let o = d.trellis(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}

/// Rejecting with a reason from another terminal (issue 48, item 8): `trellis approve`'s
/// `r` sends the agent's one-time reject with the words; the agent reads them as the
/// next message once its turn ends, the call's record keeps them, and a reason that
/// cannot go (with an allow) is refused before anything is answered.
#[test]
fn a_reject_with_a_reason_from_trellis_approve_is_the_agents_next_message() {
    let d = Dirs::new();
    let child = start(&d, "ci-9", &["--ask-timeout", "120s", "--format", "jsonl"]);
    until("the run to ask through its hub", || {
        d.ls()
            .iter()
            .any(|r| r["hub"] == "ci-9" && r["state"] == "permission")
    });
    let row = d.ls().into_iter().find(|r| r["hub"] == "ci-9").unwrap();
    assert_eq!(row["pending"][0]["reject_once"], "reject", "{row}");
    // Words with an allow are refused, and nothing is answered.
    let mut c = client(&d, "ci-9", "script");
    let refused = c
        .call(
            Op::Decide {
                session: 1,
                request_id: "1".into(),
                option_id: "allow".into(),
                claim: None,
                always: None,
                reason: Some("because".into()),
            },
            None,
        )
        .unwrap();
    assert!(
        matches!(&refused, Body::Error { code, message } if code == "bad_request" && message.contains("only with a reject")),
        "{refused:?}"
    );
    // The person at `trellis approve`: r, then the reason.
    let mut approve = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .arg("approve")
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        approve.stdin.as_mut().unwrap(),
        // A control character typed in is not passed on.
        b"r\nkeep the old API,\x07 it has users\n",
    )
    .unwrap();
    drop(approve.stdin.take());
    let said = approve.wait_with_output().unwrap();
    let shown = text(&said);
    assert!(said.status.success(), "{shown}");
    assert!(shown.contains("r reject with a reason"), "{shown}");
    assert!(
        shown.contains("answered reject; the reason goes to the agent as your next message"),
        "{shown}"
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = session_log(&d);
    // The one-time reject ACP defines, never `cancelled`; the words on the record.
    let decided: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["msg"]["type"] == "permission_decided")
        .collect();
    assert_eq!(decided.len(), 1, "{log}");
    assert_eq!(
        decided[0]["msg"]["reason"], "keep the old API, it has users",
        "{log}"
    );
    assert!(
        log.contains(r#""outcome":{"optionId":"reject","outcome":"selected"}"#)
            || log.contains(r#""outcome":{"outcome":"selected","optionId":"reject"}"#),
        "{log}"
    );
    // The next turn's prompt carries it; the agent answered it.
    assert!(
        log.contains(r#"I rejected the tool call \"Edit src/lib.rs\". Reason: keep the old API, it has users"#),
        "{log}"
    );
    // (Its answer arrives in chunks.)
    assert!(log.contains("Your reason: keep the old API, "), "{log}");
    let events = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "turn_started")
            .count(),
        2,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
