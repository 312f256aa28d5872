//! The agent's questions (`elicitation/create`) in a headless run: declined without
//! `--answers`, answered from it when it fills the form in, declined naming the problems
//! when it does not; links are not offered headless. In the UI (tmux): the form is filled
//! in and sent, and a link is accepted and its completion noticed.

use std::process::{Command, Output};

use serde_json::json;

struct Run {
    out: Output,
    log: String,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn answers(&self) -> Vec<serde_json::Value> {
        answers(&self.log)
    }
}

/// The client's answers to the agent's `elicitation/create` in a session log, as sent.
fn answers(log: &str) -> Vec<serde_json::Value> {
    let records: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let asked: Vec<_> = records
        .iter()
        .filter(|r| r["dir"] == "agent_to_client" && r["msg"]["method"] == "elicitation/create")
        .map(|r| r["msg"]["id"].clone())
        .collect();
    records
        .iter()
        .filter(|r| {
            r["dir"] == "client_to_agent"
                && r["msg"].get("method").is_none()
                && asked.contains(&r["msg"]["id"])
        })
        .map(|r| r["msg"]["result"].clone())
        .collect()
}

fn run(prompt: &str, answers: Option<&str>) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trellis"));
    cmd.args(["run", "--prompt", prompt, "--log"])
        .arg(&log)
        .arg("--cwd")
        .arg(dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"));
    if let Some(text) = answers {
        let file = dir.path().join("answers.json");
        std::fs::write(&file, text).unwrap();
        cmd.arg("--answers").arg(file);
    }
    let out = cmd.output().unwrap();
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    Run { out, log }
}

#[test]
fn without_answers_a_form_is_declined_and_the_user_told_why() {
    let r = run("/elicit", None);
    assert!(r.out.status.success(), "{}", r.stderr());
    assert!(
        r.stderr().contains(
            "declined the agent's form \"Release\": a headless run has nobody to fill it in"
        ),
        "{}",
        r.stderr()
    );
    assert_eq!(r.answers(), [json!({"action": "decline"})]);
    assert!(
        r.stdout().contains("You declined the form"),
        "{}",
        r.stdout()
    );
    // Forms are offered, links are not (nobody to open them).
    let init = crate::sent(&r.log, "initialize");
    assert_eq!(
        init[0]["clientCapabilities"]["elicitation"],
        json!({"form": {}})
    );
    let link = run("/elicit-url", None);
    assert!(
        link.stdout().contains("does not open links"),
        "{}",
        link.stdout()
    );
}

#[test]
fn answers_fill_the_form_in_with_its_defaults() {
    let r = run(
        "/elicit",
        Some(r#"{"version": "2.0.1", "targets": ["linux", "windows"], "unrelated": 1}"#),
    );
    assert!(r.out.status.success(), "{}", r.stderr());
    let content = json!({"version": "2.0.1", "channel": "beta", "targets": ["linux", "windows"],
        "shards": 2, "dry_run": true});
    assert_eq!(
        r.answers(),
        [json!({"action": "accept", "content": content})]
    );
    assert!(
        r.stdout().contains(&format!("Thanks: I got {content}")),
        "{}",
        r.stdout()
    );
    // Who answered is on the record.
    assert!(
        r.log.contains(
            r#""type":"elicitation_decided","request_id":"0","decider":{"by":"policy","name":"--answers"}"#
        ),
        "{}",
        r.log
    );
}

#[test]
fn answers_that_do_not_fit_decline_naming_every_problem() {
    let r = run(
        "/elicit",
        Some(r#"{"version": "two", "targets": [], "shards": 99, "contact": "nobody"}"#),
    );
    assert!(r.out.status.success(), "{}", r.stderr());
    let err = r.stderr();
    for problem in [
        "Version: must match",
        "Targets: pick at least 1",
        "Shards: at most 8",
        "Contact: ",
    ] {
        assert!(err.contains(problem), "{problem}: {err}");
    }
    assert_eq!(r.answers(), [json!({"action": "decline"})]);
    // Not a JSON object: a usage error before the agent starts.
    let bad = run("/elicit", Some("[1, 2]"));
    assert_eq!(bad.out.status.code(), Some(2));
    assert!(
        bad.stderr().contains("expected a JSON object"),
        "{}",
        bad.stderr()
    );
}

#[test]
fn the_ui_fills_a_form_in_and_follows_a_link() {
    let dir = tempfile::tempdir().unwrap();
    // The "browser": notes the address it was given.
    let opened = dir.path().join("opened.txt");
    let browser = dir.path().join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> {}\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let Some(t) = demo_ui(&format!("BROWSER={}", browser.display()), dir.path()) else {
        return;
    };
    t.send(&["/elicit", "Enter"]);
    t.wait_for("Which release should I cut?");
    // Sent empty: the problem shows and nothing reaches the agent.
    t.send(&["Enter"]);
    t.wait_for("✗ required");
    t.send(&["1.4.0", "Enter"]);
    let s = t.wait_for("Thanks: I got");
    assert!(s.contains(r#""version":"1.4.0""#), "{s}");
    assert_eq!(
        answers(&t.log()),
        [
            json!({"action": "accept", "content": {"version": "1.4.0", "channel": "beta",
            "targets": ["linux"], "shards": 2, "dry_run": true}})
        ]
    );
    // A link: the site is named; Enter opens it in the browser and accepts, and the
    // agent's completion is noticed.
    t.send(&["/elicit-url", "Enter"]);
    let s = t.wait_for("visit a link");
    assert!(s.contains("site  example.com"), "{s}");
    t.send(&["Enter"]);
    t.wait_for("You signed in; I am going on.");
    t.wait_for("the linked step is done");
    // The opener runs beside the UI: wait for its note (the second turn's link).
    let start = std::time::Instant::now();
    // (the opener writes its note in one piece; it is read whole once it ends in a newline)
    while !std::fs::read_to_string(&opened).is_ok_and(|s| s.ends_with('\n'))
        && start.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap_or_default(),
        "https://example.com/trellis-demo/sign-in?step=2\n"
    );
    let all = answers(&t.log());
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1], json!({"action": "accept"}));
}

#[test]
fn a_browser_that_fails_leaves_the_link_on_the_clipboard() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = demo_ui("BROWSER=exit 3;", dir.path()) else {
        return;
    };
    t.send(&["/elicit-url", "Enter"]);
    t.wait_for("visit a link");
    t.send(&["Enter"]);
    t.wait_for("the browser did not open the link (exit status: 3): it is on the clipboard");
}

/// The UI on the demo agent in `cwd` with `env` (`NAME=value`), ready for a prompt.
fn demo_ui(env: &str, cwd: &std::path::Path) -> Option<crate::tui::Tmux> {
    let t =
        crate::tui::Tmux::start_env(&[env], &["demo", "--cwd", cwd.to_str().unwrap()], 100, 32)?;
    t.wait_for("Enter send");
    Some(t)
}
