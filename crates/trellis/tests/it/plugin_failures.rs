//! A plugin author's failures where they look (issue 46, items 1–5): the terminal they
//! ran `trellis run` in says each failure once, in sentences, with the plugin's own
//! words — its exception and line, its stderr when it fails at start, a hook's reason —
//! and the closing status counts what was not said again.

use crate::plugins::{demo_run, python, python_package};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_plugin_that_raises_is_said_once_in_words() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("raiser");
    python_package(
        &pkg,
        "raiser",
        "session",
        "from trellis_plugin import Plugin\nplugin = Plugin()\n\n@plugin.on(\"tool_call_updated\")\ndef boom(event, host):\n    raise ValueError(\"my handler broke\")\n\nplugin.run()\n",
    );
    let o = demo_run(home.path(), &work, &["--plugin", pkg.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(
        err.matches("extension raiser: event tool_call_updated failed: ValueError: my handler broke (plugin.py:6 in boom)").count(),
        1,
        "the first failure, once, pointing at the author's line: {err}"
    );
    assert_eq!(
        err.matches("extension raiser disabled:").count(),
        1,
        "{err}"
    );
    assert!(!err.contains("Disabled("), "no debug text: {err}");
}

#[test]
fn a_plugin_that_fails_at_start_shows_its_own_stderr() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("broken");
    python_package(&pkg, "broken", "session", "def (:\n    pass\n");
    let o = demo_run(home.path(), &work, &["--plugin", pkg.to_str().unwrap()]);
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("extension broken disabled"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("SyntaxError"), "its own words: {line}");
}

#[test]
fn hook_failures_are_said_each_with_its_reason() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        home.path().join("config/trellis/config.toml"),
        "[[hooks]]\non = \"turn_ended\"\nrun = \"nosuch-command-xyz\"\n\n[[hooks]]\non = \"tool_call_updated\"\nrun = \"sleep 3\"\ntimeout = 0.3\n",
    )
    .unwrap();
    let o = demo_run(home.path(), &work, &[]);
    let err = stderr(&o);
    let hook1 = err
        .lines()
        .find(|l| l.contains("hooks[0] (nosuch-command-xyz) failed: exited 127"))
        .unwrap_or_else(|| panic!("the first hook, said even on the last event: {err}"));
    assert!(hook1.contains("not found"), "its reason: {hook1}");
    assert!(
        err.contains("hooks[1] (sleep 3) failed: timed out after 0.3 s"),
        "the timeout, in words: {err}"
    );
    let o = demo_run(home.path(), &work, &["--format", "jsonl"]);
    let status = crate::jsonl(&String::from_utf8_lossy(&o.stdout))
        .into_iter()
        .rfind(|e| e["type"] == "status")
        .unwrap();
    let hooks = status["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "hooks")
        .unwrap();
    assert!(
        !hooks["failures"].as_array().unwrap().is_empty(),
        "the status event counts them: {hooks}"
    );
}

#[test]
fn a_tried_plugin_not_granted_what_it_asks_is_said() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("driver");
    python_package(&pkg, "driver", "session", "import time\ntime.sleep(30)\n");
    let manifest = serde_json::json!({
        "$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
        "name": "driver",
        "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": ["observe", "drive"]}},
    });
    std::fs::write(pkg.join("plugin.json"), manifest.to_string()).unwrap();
    let o = demo_run(home.path(), &work, &["--plugin", pkg.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(
        err.contains("plugin driver asks for drive") && err.contains("--allow-drive"),
        "{err}"
    );
}

/// A hook's reason (its stderr when it exits 2) is on the record: the card, the
/// `permission_resolved` event and the session log say it.
#[test]
fn a_hooks_reason_is_on_the_record() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        home.path().join("config/trellis/config.toml"),
        "[[hooks]]\non = \"permission_requested\"\nkind = \"edit\"\nrun = \"echo 'no edits here' >&2; exit 2\"\n",
    )
    .unwrap();
    let o = demo_run(home.path(), &work, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("rejected once by extension hooks: no edits here"),
        "the card: {out}"
    );
    let log = stderr(&o)
        .lines()
        .find_map(|l| l.strip_prefix("trellis: session log: ").map(str::to_string))
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains(r#""decider":{"by":"extension","name":"hooks"},"reason":"no edits here""#),
        "the log: {log}"
    );
    let o = demo_run(home.path(), &work, &["--format", "jsonl"]);
    let resolved = crate::jsonl(&String::from_utf8_lossy(&o.stdout))
        .into_iter()
        .find(|e| e["type"] == "permission_resolved")
        .unwrap();
    assert_eq!(resolved["reason"], "no edits here", "{resolved}");
}

/// A mistake in a hook's entry names its line (the second `[[hooks]]` table's too), lists
/// what would be right, and stops the run before anything is made for it.
#[test]
fn a_wrong_hook_entry_names_its_line_before_anything_is_made() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let config = home.path().join("config/trellis/config.toml");
    std::fs::write(
        &config,
        "[[hooks]]\non = \"turn_ended\"\nrun = \"true\"\n\n[[hooks]]\non = \"turn_ended\"\nrun = \"true\"\nkind = \"edits\"\n",
    )
    .unwrap();
    let o = demo_run(home.path(), &work, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config.toml:8: hooks[1].kind"),
        "its line: {err}"
    );
    assert!(err.contains("one of: read, edit"), "the kinds: {err}");
    assert!(err.contains("did you mean \"edit\"?"), "{err}");
    assert!(!err.contains("demo workspace"), "nothing made first: {err}");

    // A misspelled event says the one meant.
    std::fs::write(
        &config,
        "[[hooks]]\non = \"turn_ended\"\nrun = \"true\"\n\n[[hooks]]\non = \"tool_call_udpated\"\nrun = \"true\"\n",
    )
    .unwrap();
    let o = demo_run(home.path(), &work, &[]);
    let err = stderr(&o);
    assert!(
        err.contains("config.toml:6: hooks[1].on")
            && err.contains("did you mean \"tool_call_updated\"?"),
        "{err}"
    );
}

/// `trellis plugin test --replay` gives a plugin the recorded session's facts
/// (`host.session()`: its directory, id, calls), whatever the plugin reads.
#[test]
fn a_replay_gives_the_recorded_sessions_facts() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let o = crate::plugins::trellis(
        home.path(),
        &work,
        &[
            "run",
            "--agent",
            "demo",
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
            "--cwd",
            work.to_str().unwrap(),
        ],
    );
    let log = stderr(&o)
        .lines()
        .find_map(|l| l.strip_prefix("trellis: session log: ").map(str::to_string))
        .unwrap();
    let pkg = home.path().join("sess");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("plugin.json"),
        serde_json::json!({
            "$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
            "name": "sess",
            "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": ["ui"]}},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        pkg.join("plugin.py"),
        "from trellis_plugin import Plugin\nplugin = Plugin()\n\n@plugin.design(\"sess\", label=\"Sess\", kind=\"read\")\ndef card(call, facts, width, host):\n    s = host.session()\n    return {\"call\": [[f\"cwd={s.get('cwd')} calls={s.get('calls')}\"]]}\n\nplugin.run()\n",
    )
    .unwrap();
    let o = crate::plugins::trellis(
        home.path(),
        &work,
        &["plugin", "test", pkg.to_str().unwrap(), "--replay", &log],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let work = std::fs::canonicalize(&work).unwrap();
    assert!(
        out.contains(&format!("cwd={}", work.display())),
        "the recorded directory: {out}"
    );
    assert!(!out.contains("cwd=None"), "{out}");
}

/// Item 15: a path policy tried offline — the demo agent asks to create a chosen path
/// (`--edit PATH`, or the prompt `/edit PATH`), relative to the session's directory as a
/// real agent's edit would be; it only ever creates, and goes through no link.
#[test]
fn the_demo_asks_to_edit_a_chosen_path() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    let outside = home.path().join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let hooks = home.path().join("hooks.toml");
    std::fs::write(
        &hooks,
        "[[hooks]]\non = \"permission_requested\"\nkind = \"edit\"\npath = \"secrets/**\"\nrun = \"echo 'no edits under secrets/' >&2; exit 2\"\n",
    )
    .unwrap();
    let run = |prompt: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--prompt",
            prompt,
            "--permission",
            "allow-once",
            "--cwd",
            work.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        if !extra.contains(&"--agent") {
            args.extend(["--agent", "demo"]);
        }
        let o = crate::plugins::trellis(home.path(), &work, &args);
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let cfg = hooks.to_str().unwrap();

    // The hook's policy holds, with its reason on the card.
    let out = run("/edit secrets/key.txt", &["--config", cfg]);
    assert!(
        out.contains("Create secrets/key.txt")
            && out.contains("rejected once by extension hooks: no edits under secrets/"),
        "{out}"
    );
    assert!(!work.join("secrets").exists());

    // The same from the story, asked with --edit.
    let agent = format!(
        "{} agent demo --delay-ms 0 --edit secrets/key.txt",
        crate::faults::exe()
    );
    let out = run("go", &["--config", cfg, "--agent", &agent]);
    assert!(
        out.contains("rejected once by extension hooks: no edits under secrets/")
            && out.contains("Edit src/lib.rs"),
        "the story goes on around it: {out}"
    );
    assert!(!work.join("secrets").exists());

    // Allowed elsewhere, it creates the file — once; never over one that is there.
    let out = run("/edit notes/a.txt", &[]);
    let made = work.join("notes/a.txt");
    assert_eq!(
        std::fs::read_to_string(&made).unwrap(),
        "written by the Trellis demo agent (--edit)\n",
        "{out}"
    );
    std::fs::write(&made, "mine\n").unwrap();
    let out = run("/edit notes/a.txt", &[]);
    assert!(out.contains("already there"), "{out}");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "mine\n");

    // Through a link, nothing is written.
    std::os::unix::fs::symlink(&outside, work.join("link")).unwrap();
    let out = run("/edit link/x.txt", &[]);
    assert!(out.contains("not a directory"), "{out}");
    assert!(!outside.join("x.txt").exists());

    // A path outside the session's directory is refused before anything starts.
    let o = crate::plugins::trellis(home.path(), &work, &["agent", "demo", "--edit", "../x"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a path below the session's directory"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Item 4: in the UI a degraded extension is said on screen — the first failure of each
/// kind, once, with where to see more — not only in `/status`.
#[test]
fn the_ui_says_a_failing_hook_on_screen_with_where_to_see_more() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let cfg = home.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[[hooks]]\non = \"tool_call_updated\"\nrun = \"nosuch-command-xyz\"\n",
    )
    .unwrap();
    let Some(t) = crate::tui::Tmux::start_allowing(
        &work,
        &["--agent", "demo", "--config", cfg.to_str().unwrap()],
        220,
        32,
    ) else {
        return;
    };
    t.wait_for("›");
    t.send(&["go", "Enter"]);
    let s = t.wait("the failure on screen", |s| {
        s.contains("/status shows more")
    });
    let line = s
        .lines()
        .find(|l| l.contains("/status shows more"))
        .unwrap_or_default();
    assert!(
        line.contains("extension hooks: hooks[0] (nosuch-command-xyz) failed: exited 127")
            && line.contains("not found"),
        "{line}"
    );
    // Said once: the story's later updates fail the same way and are only counted, and
    // the key it names opens the page that counts them.
    t.wait_for("Done: the TODO is fixed");
    t.send(&["/status", "Enter"]);
    t.wait_for("Status · extensions");
}

/// Item 9, for plugins: the reason a plugin gives with its answer (the SDK's
/// `respond_permission(..., reason)`) is on the call's card and in the session log.
#[test]
fn a_plugins_reason_for_its_answer_is_on_the_record() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("reviewer");
    python_package(
        &pkg,
        "reviewer",
        "session",
        "from trellis_plugin import Plugin\nplugin = Plugin(subscriptions=[])\n\n@plugin.on_permission\ndef decide(offer, host):\n    if offer[\"call\"].get(\"kind\") != \"edit\":\n        return False\n    no = next(o for o in offer[\"options\"] if o[\"kind\"] == \"reject_once\")\n    host.respond_permission(offer[\"request_id\"], no[\"optionId\"], \"edits wait for review\")\n    return True\n\nplugin.run()\n",
    );
    let manifest = std::fs::read_to_string(pkg.join("plugin.json"))
        .unwrap()
        .replace("[\"observe\"]", "[\"intercept-permissions\"]");
    std::fs::write(pkg.join("plugin.json"), manifest).unwrap();
    let log = home.path().join("session.jsonl");
    let o = crate::plugins::trellis(
        home.path(),
        &work,
        &[
            "run",
            "--agent",
            "demo",
            "--prompt",
            "go",
            "--permission",
            "allow-once",
            "--cwd",
            work.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--plugin",
            pkg.to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Edit src/lib.rs")
            && out.contains("rejected once by extension reviewer: edits wait for review"),
        "{out}{}",
        stderr(&o)
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("\"reason\":\"edits wait for review\""),
        "{log}"
    );
}

/// A plugin that fails at start is said at the author's line (not the SDK's, not a temp
/// path), its replay snapshot is the same from run to run, and `--update` never takes a
/// snapshot of a plugin that was disabled.
#[test]
fn a_plugin_failing_at_start_in_a_replay_test_is_not_accepted() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("typo");
    python_package(
        &pkg,
        "typo",
        "session",
        "from trellis_plugin import Plugin\nplugin = Plugin()\n\n@plugin.on(\"tool_call_udpated\")\ndef f(event, host):\n    pass\n\nplugin.run()\n",
    );
    let log = home.path().join("session.jsonl");
    let o = crate::plugins::trellis(
        home.path(),
        &work,
        &[
            "run",
            "--agent",
            "demo",
            "--prompt",
            "go",
            "--permission",
            "reject",
            "--cwd",
            work.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--plugin",
            pkg.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("extension typo disabled"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("disabled: PluginDefinitionError: plugin.py:4: @plugin.on: 'tool_call_udpated' is not an event type; did you mean 'tool_call_updated'?"),
        "the author's line first, nothing of the SDK: {line}"
    );
    assert!(!line.contains("trellis_plugin.py"), "{line}");
    let test = |extra: &[&str]| {
        let mut args = vec![
            "plugin",
            "test",
            pkg.to_str().unwrap(),
            "--replay",
            log.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        crate::plugins::trellis(home.path(), &work, &args)
    };
    let (a, b) = (test(&[]), test(&[]));
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
        "the same snapshot each time"
    );
    let snap = home.path().join("snap.txt");
    let o = test(&["--snapshot", snap.to_str().unwrap(), "--update"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("was disabled in the replay"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!snap.exists(), "no snapshot of a broken plugin");
}

/// A tried plugin that failed until it was disabled stops at once, and runs again when its
/// author saves a fix (helper's trial: a disabled plugin kept running and never reloaded).
/// One that failed at start is told to need a new session.
#[test]
fn a_disabled_tried_plugin_stops_and_runs_again_once_fixed() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("raiser");
    let marks = home.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let marks = std::fs::canonicalize(&marks).unwrap();
    python_package(
        &pkg,
        "raiser",
        "session",
        &format!(
            "import os\nfrom trellis_plugin import Plugin\nopen(os.path.join({marks:?}, 'old.pid'), 'w').write(str(os.getpid()))\nplugin = Plugin()\n\n@plugin.on(\"tool_call_updated\")\ndef boom(event, host):\n    raise ValueError(\"my handler broke\")\n\nplugin.run()\n"
        ),
    );
    let broken = home.path().join("broken");
    python_package(&broken, "broken", "session", "def (:\n    pass\n");
    let Some(t) = crate::tui::Tmux::start_allowing(
        &work,
        &[
            "--agent",
            "demo",
            "--plugin",
            pkg.to_str().unwrap(),
            "--plugin",
            broken.to_str().unwrap(),
        ],
        220,
        32,
    ) else {
        return;
    };
    t.wait_for("›");
    t.send(&["go", "Enter"]);
    t.wait_for("extension raiser disabled");
    t.wait_for("Done: the TODO is fixed");
    // Its process ended with it.
    let pid: u32 = std::fs::read_to_string(marks.join("old.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    crate::hubkit::until("the disabled plugin's process ends", || {
        !crate::procs::exists(pid)
    });
    // And /status says so (it showed the dead process's id).
    t.send(&["/status", "Enter"]);
    let s = t.wait_for("Status · extensions");
    assert!(
        s.contains("raiser")
            && s.contains("process not running")
            && !s.contains(&format!("process {pid} ")),
        "{s}"
    );
    t.send(&["Escape"]);
    // The author saves a fix: it runs again, and its new code gets the next turn's events.
    std::fs::write(
        pkg.join("plugin.py"),
        format!(
            "import os\nfrom trellis_plugin import Plugin\nplugin = Plugin()\n\n@plugin.on(\"tool_call_updated\")\ndef fine(event, host):\n    open(os.path.join({marks:?}, 'new'), 'a').write('x')\n\nplugin.run()\n"
        ),
    )
    .unwrap();
    t.wait_for("extension raiser runs again with its changed files");
    t.send(&["go", "Enter"]);
    crate::hubkit::until("the fixed code gets events", || marks.join("new").exists());
    // The one that failed at start says what it takes.
    std::fs::write(broken.join("plugin.py"), "print('fixed')\n").unwrap();
    t.wait_for("extension broken changed, but it failed at start");
}

/// A permission handler that raises is one failure, said once in the author's words — not
/// a second "failed while deciding" nor a hand-on notice (helper's trial) — and a print()
/// on stdout before the SDK is loaded is said as what it is.
#[test]
fn a_failing_permission_handler_and_a_stray_print_are_said_as_they_are() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let pkg = home.path().join("offer");
    python_package(
        &pkg,
        "offer",
        "session",
        "from trellis_plugin import Plugin\nplugin = Plugin(subscriptions=[])\n\n@plugin.on_permission\ndef decide(offer, host):\n    return [][0]\n\nplugin.run()\n",
    );
    let manifest = std::fs::read_to_string(pkg.join("plugin.json"))
        .unwrap()
        .replace("[\"observe\"]", "[\"intercept-permissions\"]");
    std::fs::write(pkg.join("plugin.json"), manifest).unwrap();
    let printer = home.path().join("printer");
    python_package(
        &printer,
        "printer",
        "session",
        "print('my plugin is starting')\nfrom trellis_plugin import Plugin\nplugin = Plugin()\nplugin.run()\n",
    );
    let o = demo_run(
        home.path(),
        &work,
        &[
            "--plugin",
            pkg.to_str().unwrap(),
            "--plugin",
            printer.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert_eq!(
        err.matches("extension offer: permission request failed: IndexError: list index out of range (plugin.py:6 in decide)").count(),
        1,
        "once, in the author's words: {err}"
    );
    assert!(
        !err.contains("failed while deciding")
            && !err.contains("handed on")
            && !err.contains("answered with error"),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("extension printer disabled"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("it wrote «my plugin is starting» on stdout, which carries the protocol: print to stderr instead")
            && !line.contains("BrokenPipe"),
        "{line}"
    );
}

/// Two plugins that fail at start are both said on screen (the second once hid the
/// first), and `/status` tells a disabled plugin's process is gone.
#[test]
fn two_plugins_failing_at_start_are_both_on_screen() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    let misspell = home.path().join("misspell");
    python_package(
        &misspell,
        "misspell",
        "session",
        "from trellis_plugin import Plugin\nplugin = Plugin()\n\n@plugin.on(\"tool_call_udpated\")\ndef f(event, host):\n    pass\n\nplugin.run()\n",
    );
    let syntax = home.path().join("syntax");
    python_package(&syntax, "syntax", "session", "def (:\n    pass\n");
    let Some(t) = crate::tui::Tmux::start_allowing(
        &work,
        &[
            "--agent",
            "demo",
            "--plugin",
            misspell.to_str().unwrap(),
            "--plugin",
            syntax.to_str().unwrap(),
        ],
        120,
        40,
    ) else {
        return;
    };
    let s = t.wait_for("2 failures:");
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("did you mean 'tool_call_updated'") && flat.contains("SyntaxError"),
        "{s}"
    );
    t.send(&["/status", "Enter"]);
    let s = t.wait_for("Status · extensions");
    assert!(s.contains("process not running"), "{s}");
}
