//! The agent's questions (`elicitation/create`) in a headless run: declined without
//! `--answers`, answered from it when it fills the form in, declined naming the problems
//! when it does not; links are not offered headless.

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
    /// The client's answers to the agent's `elicitation/create`, as sent.
    fn answers(&self) -> Vec<serde_json::Value> {
        let records: Vec<serde_json::Value> = self
            .log
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
