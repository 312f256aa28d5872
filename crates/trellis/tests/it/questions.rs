//! Plugins answer the agent's questions (issue 12, item 2, last clause): a plugin holding
//! `answer-questions` is offered the demo's `/elicit` form before the headless default;
//! what it claims it answers (the decider on record is the plugin); an answer the form
//! refuses, or a pass, goes on to the headless default (decline).

use std::path::Path;

use serde_json::Value;

use crate::plugins::{python, text, trellis};

/// A Python plugin that claims the agent's forms and answers them with `answer` (a JSON
/// object), or passes when `answer` is `None`.
fn filler(dir: &Path, answer: Option<&str>) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "form-filler",
            "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": ["observe", "answer-questions"]}}}"#,
    )
    .unwrap();
    let body = match answer {
        Some(a) => format!(
            "    if offer['question'].get('mode') != 'form':\n        return False\n    host.respond_question(offer['question']['request_id'], 'accept', json.loads({a:?}))\n    return True\n"
        ),
        None => "    return False\n".to_string(),
    };
    std::fs::write(
        dir.join("plugin.py"),
        format!(
            "import json\nfrom trellis_plugin import Plugin\nplugin = Plugin()\n@plugin.on_question\ndef fill(offer, host):\n{body}plugin.run()\n"
        ),
    )
    .unwrap();
}

fn run(home: &Path, plugin: &Path, prompt: &str) -> (std::process::Output, Vec<Value>) {
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = trellis(
        home,
        &work,
        &[
            "run",
            "--agent",
            "demo",
            "--prompt",
            prompt,
            "--format",
            "jsonl",
            "--permission",
            "allow-once",
            "--cwd",
            work.to_str().unwrap(),
            "--plugin",
            plugin.to_str().unwrap(),
        ],
    );
    let events = crate::jsonl(&String::from_utf8_lossy(&o.stdout));
    (o, events)
}

fn resolved(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "elicitation_resolved")
        .collect()
}

fn said(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message_chunk" && e["role"] == "agent")
        .filter_map(|e| e["text"].as_str())
        .collect()
}

#[test]
fn a_plugin_answers_the_form_it_claims_on_record() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let plugin = home.path().join("filler");
    filler(
        &plugin,
        Some(r#"{"version": "2.0.0", "channel": "stable", "targets": ["linux", "macos"]}"#),
    );
    let (o, ev) = run(home.path(), &plugin, "/elicit");
    assert!(o.status.success(), "{}", text(&o));
    let r = resolved(&ev);
    assert_eq!(r.len(), 1, "{ev:?}");
    assert_eq!(r[0]["action"], "accept");
    assert_eq!(r[0]["decider"]["by"], "extension");
    assert_eq!(r[0]["decider"]["name"], "form-filler");
    assert_eq!(r[0]["content"]["version"], "2.0.0");
    // The agent got it: it says what it received.
    assert!(said(&ev).contains("2.0.0"), "{}", said(&ev));
}

#[test]
fn an_answer_the_form_refuses_or_a_pass_goes_on_to_the_headless_default() {
    if !python() {
        return;
    }
    for answer in [Some(r#"{"version": "not a version"}"#), None] {
        let home = tempfile::tempdir().unwrap();
        let plugin = home.path().join("filler");
        filler(&plugin, answer);
        let (o, ev) = run(home.path(), &plugin, "/elicit");
        assert!(o.status.success(), "{}", text(&o));
        let r = resolved(&ev);
        assert_eq!(r.len(), 1, "answered exactly once: {ev:?}");
        assert_eq!(r[0]["action"], "decline", "{answer:?}");
        assert_ne!(r[0]["decider"]["by"], "extension", "{answer:?}");
        if answer.is_some() {
            assert!(
                ev.iter().any(|e| e["type"] == "warning"
                    && e["message"].as_str().is_some_and(
                        |m| m.contains("refused") && m.contains("Version: must match")
                    )),
                "the refusal says why: {ev:?}"
            );
        }
    }
}
