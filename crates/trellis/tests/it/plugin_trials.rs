//! Trying and writing a plugin through the real binary: what a tried plugin is said to
//! hold, a handler that raises and the plugin's stderr in `plugin test`, a manifest with
//! an unknown key or a missing command, and `drive` granted only when asked, within a
//! budget; the first plugins of the docs, short and working.

use std::path::{Path, PathBuf};

use crate::plugins::{examples, exe, python, repo, text, trellis};

#[test]
fn a_tried_plugin_is_said_to_hold_what_the_config_grants_it() {
    // `--plugin` with `[extensions.NAME] grant` narrowing it: the notes claim no grant,
    // and the plugin's own lines say what it holds and what it was refused.
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| trellis(home.path(), home.path(), args);
    assert!(
        run(&["plugin", "new", "narrow", "--lang", "python"])
            .status
            .success()
    );
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::write(
        home.path().join("config/trellis/config.toml"),
        "[extensions.narrow]\ngrant = [\"observe\"]\n",
    )
    .unwrap();
    let out = run(&[
        "run", "--agent", "demo", "--prompt", "hi", "--format", "jsonl", "--plugin", "narrow",
    ]);
    let status = crate::jsonl(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .find(|e| e["type"] == "status")
        .expect("a status event");
    let notes = status["notes"].to_string();
    assert!(notes.contains("runs for this session only"), "{notes}");
    assert!(!notes.contains("granted"), "{notes}");
    let ext = status["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "narrow")
        .unwrap();
    assert_eq!(ext["granted"], serde_json::json!(["observe"]));
    assert_eq!(ext["refused"], serde_json::json!(["ui"]));
}

#[test]
fn plugin_test_shows_a_handler_that_raises_and_the_plugins_stderr() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| trellis(home.path(), home.path(), args);
    assert!(
        run(&["plugin", "new", "boom", "--lang", "python"])
            .status
            .success()
    );
    let py = home.path().join("boom/plugin.py");
    let text = std::fs::read_to_string(&py).unwrap();
    std::fs::write(
        &py,
        text.replace(
            "    call = event[\"call\"]\n",
            "    call = event[\"no such key\"]\n",
        ),
    )
    .unwrap();
    let out = run(&[
        "plugin",
        "test",
        "boom",
        "--replay",
        "boom/tests/session.jsonl",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("failed event tool_call_updated ×")
            && stdout.contains("KeyError: 'no such key' (plugin.py:"),
        "{stdout}"
    );
    assert!(stdout.contains("state: degraded"), "{stdout}");
    assert!(
        stderr.contains("plugin stderr:") && stderr.contains("Traceback"),
        "{stderr}"
    );
}

#[test]
fn a_manifest_with_an_unknown_key_or_a_missing_command_is_said_or_refused() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = trellis(home.path(), home.path(), args);
        (o.status.code(), text(&o))
    };
    assert_eq!(
        run(&["plugin", "new", "typo", "--lang", "python"]).0,
        Some(0)
    );
    let manifest = home.path().join("typo/plugin.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"api\": [1],", "\"api\": [1],\n      \"ui_onyl\": true,"),
    )
    .unwrap();
    // Tried: the warning is in the run's status notes.
    let (_, out) = run(&[
        "run", "--agent", "demo", "--prompt", "hi", "--format", "jsonl", "--plugin", "typo",
    ]);
    assert!(out.contains("ui_onyl"), "{out}");
    // Installed: said on the way in.
    let (code, out) = run(&["plugin", "install", "typo"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ui_onyl"), "{out}");
    // A command that does not exist: not installed, not enabled.
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(
            "\"command\": [\"python3\"",
            "\"command\": [\"no-such-program-xyz\"",
        ),
    )
    .unwrap();
    std::fs::rename(home.path().join("typo"), home.path().join("broken")).unwrap();
    let m2 = home.path().join("broken/plugin.json");
    let t2 = std::fs::read_to_string(&m2).unwrap();
    std::fs::write(
        &m2,
        t2.replace("\"name\": \"typo\"", "\"name\": \"broken\""),
    )
    .unwrap();
    let (code, out) = run(&["plugin", "install", "broken"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out.contains("not installed") && out.contains("no-such-program-xyz"),
        "{out}"
    );
    // validate lists every problem it finds without starting it, not the first only —
    // what install would refuse too: a link out of the package.
    std::os::unix::fs::symlink("/etc", home.path().join("broken/etc")).unwrap();
    let (code, out) = run(&["plugin", "validate", "broken"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("✗ plugin.json: unknown key \"ui_onyl\"")
            && out.contains("✗ command:")
            && out.contains("no-such-program-xyz")
            && out.contains("✗ files: etc links outside the package")
            && out.contains("not started"),
        "{out}"
    );
    // The installed one, its command removed from under it: not enabled.
    let installed = home.path().join("data/trellis/plugins/typo/plugin.json");
    let t3 = std::fs::read_to_string(&installed).unwrap();
    std::fs::write(
        &installed,
        t3.replace(
            "\"command\": [\"python3\"",
            "\"command\": [\"no-such-program-xyz\"",
        ),
    )
    .unwrap();
    let (code, out) = run(&["plugin", "enable", "typo", "--yes"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("not enabled"), "{out}");
}

#[test]
fn drive_is_granted_to_a_tried_plugin_only_when_asked_and_within_a_budget() {
    if !python() {
        return;
    }
    // Without --allow-drive: the plugin runs, says it was not granted drive, sends nothing.
    let home = tempfile::tempdir().unwrap();
    let dir = examples().join("fix-tests");
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agent = format!(
        "{} agent replay '{}'",
        exe(),
        dir.join("tests/session.jsonl").display()
    );
    let o = trellis(
        home.path(),
        &work,
        &[
            "run",
            "--agent",
            &agent,
            "--prompt",
            "go",
            "--format",
            "jsonl",
            "--cwd",
            work.to_str().unwrap(),
            "--plugin",
            dir.to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("not granted without --allow-drive"), "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("\"type\":\"turn_ended\""))
            .count(),
        1,
        "no prompt of its own"
    );
}

/// The Python blocks of `docs/plugins.md`, in order.
fn doc_python_blocks() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/plugins.md")).unwrap();
    doc.split("```python\n")
        .skip(1)
        .map(|b| b[..b.find("```").unwrap()].to_string())
        .collect()
}

/// Lines that are neither blank nor comments.
fn code_lines(src: &str) -> usize {
    src.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count()
}

fn package(dir: &Path, name: &str, code: &str, caps: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("plugin.py"), code).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        format!(
            r#"{{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
  "name": "{name}", "version": "1.0.0", "description": "doc example",
  "extensions": {{"dev.trellis": {{"command": ["python3", "./plugin.py"], "api": [1], "capabilities": [{caps}]}}}}}}"#
        ),
    )
    .unwrap();
}

#[test]
fn the_first_plugins_of_the_docs_are_short_and_work() {
    if !python() {
        return;
    }
    let blocks = doc_python_blocks();
    let (logger, card) = (&blocks[0], &blocks[1]);
    assert!(
        code_lines(logger) <= 8,
        "the event logger: {} lines",
        code_lines(logger)
    );
    assert!(
        code_lines(card) <= 15,
        "the card design: {} lines",
        code_lines(card)
    );
    let home = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| trellis(home.path(), home.path(), args);
    // The logger, in a real run: one line per tool-call update, in its data directory.
    package(
        &home.path().join("logger"),
        "logger",
        logger,
        r#""observe""#,
    );
    let o = cmd(&[
        "run",
        "--agent",
        "demo",
        "--prompt",
        "fix",
        "--permission",
        "allow-once",
        "--log",
        "session.jsonl",
        "--plugin",
        "logger",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let logged = walk(&home.path().join("data"))
        .into_iter()
        .find(|p| p.ends_with("calls.jsonl"))
        .expect("calls.jsonl in the plugin's data directory");
    let lines = std::fs::read_to_string(logged).unwrap();
    assert!(lines.lines().count() >= 5, "{lines}");
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["id"].is_string(), "{l}");
    }
    // The card design, replayed on that session: the edit's file and its line counts.
    package(&home.path().join("cards"), "cards", card, r#""ui""#);
    let o = cmd(&["plugin", "test", "cards", "--replay", "session.jsonl"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("lib.rs  +1 −2"), "{out}");
    assert!(out.contains("state: ready"), "{out}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
