//! Plugins through the real binary: the examples' replay tests, a plugin that drives the
//! session and one that answers permission requests in headless runs, the scaffold, and
//! consent — a project's plugin never runs by itself, and runs again only after its
//! changed files are trusted again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_trellis")
}

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn examples() -> PathBuf {
    repo().join("examples/plugins")
}

pub(crate) fn node() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::missing_tool("node");
    }
    ok
}

pub(crate) fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::missing_tool("python3");
    }
    ok
}

/// `trellis ARGS` with its own config and data directories under `home`, in `cwd`.
pub(crate) fn trellis(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(exe())
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn every_example_passes_its_replay_test() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let mut names = vec!["shell-cards", "permission-helper", "fix-tests", "redact"];
    if node() {
        names.push("test-results");
    }
    for name in names {
        let dir = examples().join(name);
        let o = trellis(
            home.path(),
            &repo(),
            &[
                "plugin",
                "test",
                dir.to_str().unwrap(),
                "--replay",
                dir.join("tests/session.jsonl").to_str().unwrap(),
                "--snapshot",
                dir.join("tests/snapshot.txt").to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
        let o = trellis(
            home.path(),
            &repo(),
            &["plugin", "validate", dir.to_str().unwrap()],
        );
        assert!(o.status.success(), "{name}: {}", text(&o));
    }
    // The shell card in 30 lines or fewer, as promised.
    let lines = std::fs::read_to_string(examples().join("shell-cards/plugin.py"))
        .unwrap()
        .lines()
        .count();
    assert!(lines <= 30, "{lines} lines");
}

/// `trellis run` on the demo agent in `cwd` (requests rejected), with `extra` arguments.
pub(crate) fn demo_run(home: &Path, cwd: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--agent",
        "demo",
        "--prompt",
        "go",
        "--permission",
        "reject",
        "--cwd",
        cwd.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trellis(home, cwd, &args)
}

/// A headless run against the replay agent playing `log`, with `--plugin plugin`.
pub(crate) fn replay_run(home: &Path, log: &Path, prompt: &str, plugin: &Path) -> (Output, String) {
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agent = format!("{} agent replay '{}'", exe(), log.display());
    let session = home.join("session.jsonl");
    let o = trellis(
        home,
        &work,
        &[
            "run",
            "--agent",
            &agent,
            "--prompt",
            prompt,
            "--format",
            "jsonl",
            "--cwd",
            work.to_str().unwrap(),
            "--log",
            session.to_str().unwrap(),
            "--plugin",
            plugin.to_str().unwrap(),
            // The drive example acts on the session: granted only when asked.
            "--allow-drive",
        ],
    );
    let log = std::fs::read_to_string(&session).unwrap_or_default();
    (o, log)
}

#[test]
fn a_plugin_holding_drive_answers_failing_tests_with_a_prompt_headless() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = examples().join("fix-tests");
    let (o, log) = replay_run(
        home.path(),
        &dir.join("tests/session.jsonl"),
        "make the parser accept empty input",
        &dir,
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let turns = out
        .lines()
        .filter(|l| l.contains("\"type\":\"turn_ended\""))
        .count();
    assert_eq!(turns, 2, "{out}");
    assert!(
        log.contains(r#""type":"driven","extension":"fix-tests","action":"prompt","text":"the tests fail, fix them""#),
        "{log}"
    );
    // The prompt it sent is the second turn's.
    assert!(
        out.contains(r#""turn":2,"prompt":"the tests fail, fix them""#),
        "{out}"
    );
}

#[test]
fn a_permission_plugin_answers_what_it_claims_and_the_policy_the_rest() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = examples().join("permission-helper");
    let (o, log) = replay_run(
        home.path(),
        &dir.join("tests/session.jsonl"),
        "run the tests, then clean up",
        &dir,
    );
    assert!(o.status.success(), "{}", text(&o));
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("permission_decided"))
        .collect();
    assert_eq!(decided.len(), 3, "{log}");
    assert!(
        decided[0].contains(r#""by":"extension","name":"permission-helper""#),
        "{}",
        decided[0]
    );
    for d in &decided[1..] {
        assert!(d.contains(r#""by":"policy""#), "{d}");
    }
}

#[test]
fn the_scaffold_passes_its_replay_test_and_a_change_is_caught() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let o = trellis(home.path(), home.path(), &["plugin", "new", "my-plugin"]);
    assert!(o.status.success(), "{}", text(&o));
    let test = |h: &Path| {
        trellis(
            h,
            h,
            &[
                "plugin",
                "test",
                "my-plugin",
                "--replay",
                "my-plugin/tests/session.jsonl",
                "--snapshot",
                "my-plugin/tests/snapshot.txt",
            ],
        )
    };
    let o = test(home.path());
    assert!(o.status.success(), "{}", text(&o));
    let py = home.path().join("my-plugin/plugin.py");
    let src = std::fs::read_to_string(&py).unwrap();
    std::fs::write(&py, src.replace("\"$ \"", "\"% \"")).unwrap();
    let o = test(home.path());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("-  $ cargo test  exit 0  2.7s\n+  % cargo test  exit 0  2.7s"),
        "a unified diff: {t}"
    );
    assert!(t.contains("\n@@ -"), "with its hunk: {t}");
    assert!(
        t.contains("accept it: trellis plugin test my-plugin --replay my-plugin/tests/session.jsonl --snapshot my-plugin/tests/snapshot.txt --update"),
        "{t}"
    );
}

/// A package in `dir`: plugin `name` of `scope` (`session` or `hub`), `script` run by
/// python3, asking for `observe`.
pub(crate) fn python_package(dir: &Path, name: &str, scope: &str, script: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let manifest = serde_json::json!({
        "$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
        "name": name,
        "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": ["observe"], "scope": scope}},
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("plugin.py"), script).unwrap();
}

/// A plugin `recorder` of `scope` in `pkg` that writes, to `seen/PID.jsonl`, the type and
/// `hub_session` of each event of `subscriptions` it gets, and after each turn what
/// `host/session` answers.
pub(crate) fn recording_plugin(pkg: &Path, seen: &Path, scope: &str, subscriptions: &[&str]) {
    std::fs::create_dir_all(seen).unwrap();
    let seen = std::fs::canonicalize(seen).unwrap();
    let subscriptions = serde_json::to_string(subscriptions).unwrap();
    python_package(
        pkg,
        "recorder",
        scope,
        &format!(
            r#"import json, os, sys
out = open(os.path.join({seen:?}, "%d.jsonl" % os.getpid()), "a")
def send(m):
    m["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
asked = 0
for line in sys.stdin:
    m = json.loads(line)
    method, p = m.get("method"), m.get("params") or {{}}
    if method == "initialize":
        send({{"id": m["id"], "result": {{"version": 1, "registration": {{"subscriptions": {subscriptions}}}}}}})
    elif method == "event":
        out.write(json.dumps({{"event": p.get("type"), "hub_session": p.get("hub_session")}}) + "\n"); out.flush()
        if p.get("type") == "turn_ended":
            asked += 1
            send({{"id": asked, "method": "host/session", "params": {{}}}})
    elif "result" in m or "error" in m:
        out.write(json.dumps({{"host": m.get("result") or m.get("error")}}) + "\n"); out.flush()
    elif method == "shutdown":
        break
    elif "id" in m and method:
        send({{"id": m["id"], "error": {{"code": -32601, "message": "unknown"}}}})
"#,
            seen = seen.display().to_string()
        ),
    );
}

/// A plugin that marks its start in its data directory.
fn marker_plugin(dir: &Path) {
    python_package(
        dir,
        "marker",
        "session",
        "import os\nopen(os.path.join(os.environ['PLUGIN_DATA'], 'started'), 'w').close()\nfrom trellis_plugin import Plugin\nPlugin().run()\n",
    );
}

#[test]
fn a_projects_plugin_runs_only_once_trusted_and_again_only_when_its_change_is_trusted() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("cloned-repo");
    let plugin = project.join(".trellis/plugins/marker");
    marker_plugin(&plugin);
    let started = home.path().join("data/trellis/plugin-data/marker/started");
    let run = || demo_run(home.path(), &project, &[]);
    // Cloned: nothing runs, and the user is told why.
    let o = run();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!started.exists(), "a cloned repository ran code by itself");
    let st = trellis(home.path(), &project, &["status"]);
    assert!(
        text(&st).contains("this project has plugin marker"),
        "{}",
        text(&st)
    );
    // Consent needs a terminal or --yes.
    let o = trellis(home.path(), &project, &["plugin", "enable", "marker"]);
    assert!(!o.status.success(), "{}", text(&o));
    let o = trellis(
        home.path(),
        &project,
        &["plugin", "enable", "marker", "--yes"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("observe"),
        "it shows what it asks for: {}",
        text(&o)
    );
    assert!(run().status.success());
    assert!(started.exists(), "enabled: it runs");
    // Its files change: it stops running until trusted again.
    std::fs::remove_file(&started).unwrap();
    std::fs::write(plugin.join("plugin.py"), "import os\nopen(os.path.join(os.environ['PLUGIN_DATA'], 'started'), 'w').write('new')\nfrom trellis_plugin import Plugin\nPlugin().run()\n").unwrap();
    assert!(run().status.success());
    assert!(!started.exists(), "changed content ran without consent");
    let l = trellis(home.path(), &project, &["plugin", "list"]);
    assert!(text(&l).contains("its files changed since"), "{}", text(&l));
    let st = trellis(home.path(), &project, &["status"]);
    assert!(
        text(&st).contains("its files changed since it was enabled"),
        "{}",
        text(&st)
    );
    assert!(
        trellis(
            home.path(),
            &project,
            &["plugin", "enable", "marker", "--yes"]
        )
        .status
        .success()
    );
    assert!(run().status.success());
    assert_eq!(std::fs::read_to_string(&started).unwrap(), "new");
    // Another project does not inherit the trust.
    let other = home.path().join("other");
    marker_plugin(&other.join(".trellis/plugins/marker"));
    std::fs::remove_file(&started).unwrap();
    let o = demo_run(home.path(), &other, &[]);
    assert!(o.status.success());
    assert!(!started.exists());
}

#[test]
fn install_copies_pins_and_lists_and_remove_deletes() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let src = examples().join("shell-cards");
    let o = trellis(
        home.path(),
        home.path(),
        &["plugin", "install", src.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o));
    let copy = home
        .path()
        .join("data/trellis/plugins/shell-cards/plugin.py");
    assert!(copy.is_file());
    let lock = std::fs::read_to_string(home.path().join("data/trellis/plugins.lock")).unwrap();
    assert!(lock.contains("\"hash\": \"sha256:"), "{lock}");
    let l = trellis(home.path(), home.path(), &["plugin", "list"]);
    assert!(
        text(&l).contains("shell-cards 1.0.0 (user)") && text(&l).contains("disabled"),
        "{}",
        text(&l)
    );
    assert!(
        trellis(
            home.path(),
            home.path(),
            &["plugin", "enable", "shell-cards", "--yes"]
        )
        .status
        .success()
    );
    let l = trellis(home.path(), home.path(), &["plugin", "list"]);
    assert!(text(&l).contains("enabled, granted ui"), "{}", text(&l));
    let st = trellis(home.path(), home.path(), &["status"]);
    assert!(
        text(&st).contains("shell-cards 1.0.0 (plugin): ready"),
        "{}",
        text(&st)
    );
    assert!(
        trellis(
            home.path(),
            home.path(),
            &["plugin", "remove", "shell-cards"]
        )
        .status
        .success()
    );
    assert!(!copy.exists());
}

/// The UI in tmux with example plugin `name`, against the agent of its recorded session,
/// after `prompt` was sent.
fn ui_with_example(name: &str, prompt: &str, w: u16, h: u16) -> Option<crate::tui::Tmux> {
    let dir = examples().join(name);
    let agent = format!(
        "{} agent replay {}",
        exe(),
        dir.join("tests/session.jsonl").display()
    );
    let t = crate::tui::Tmux::start_sized(
        &["--agent", &agent, "--plugin", dir.to_str().unwrap()],
        w,
        h,
    )?;
    t.wait_for("›");
    t.send(&[prompt, "Enter"]);
    Some(t)
}

/// The TypeScript sidebar in the real UI, against a recorded agent.
#[test]
fn the_test_results_sidebar_updates_live_in_the_ui() {
    if !node() {
        return;
    }
    let Some(t) = ui_with_example("test-results", "run all the test suites", 130, 40) else {
        return;
    };
    let s = t.wait("the test results", |s| {
        s.contains("cargo ✗ 1 failed") && s.contains("jest ✓ 12 passed")
    });
    assert!(s.contains("✗ parser::empty"), "{s}");
    t.wait_for("tests 18✓ 2✗");
}

/// A Python card design chosen in Settings draws the shell commands of a recorded session.
#[test]
fn the_shell_card_design_draws_in_the_ui() {
    if !python() {
        return;
    }
    let Some(t) = ui_with_example("shell-cards", "run the tests", 120, 36) else {
        return;
    };
    t.wait_for("Lint");
    // Settings → Cards → Card execute: native, Terminal (built-in), Shell (the plugin).
    t.send(&["Escape", "F2", "Tab"]);
    t.wait_for("Card execute");
    t.send(&["Right", "Right", "Enter", "Escape"]);
    let s = t.wait("the designed cards", |s| {
        // The recorded agent replays at once: durations are close to zero.
        s.contains("$ cargo test  exit 0  0.") && s.contains("$ cargo clippy  exit 101  0.")
    });
    assert!(
        s.contains("error: unused variable"),
        "the failed command's output: {s}"
    );
}

/// No process a plugin starts outlives Trellis: the plugin and what it left running in
/// its group (or set loose) are stopped when the run ends.
#[test]
fn a_plugins_processes_do_not_outlive_trellis() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let marker = format!("trellis-plugin-child-{}", std::process::id());
    let pkg = home.path().join("spawner");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "spawner",
            "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": []}}}"#,
    )
    .unwrap();
    std::fs::write(
        pkg.join("plugin.py"),
        format!(
            "import subprocess, os\n\
             subprocess.Popen(['sleep', '300', '{marker}-group'])\n\
             subprocess.Popen(['setsid', 'sleep', '300', '{marker}-loose'])\n\
             from trellis_plugin import Plugin\nPlugin().run()\n"
        ),
    )
    .unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = demo_run(home.path(), &work, &["--plugin", pkg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let start = std::time::Instant::now();
    while !crate::hostile::processes_with(&marker).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "left behind: {:?}",
            crate::hostile::processes_with(&marker)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
