//! Several sessions in one terminal (issue 30) with the real binary in tmux: three
//! sessions (two demo agents in different directories, one in a worktree); one blocks on
//! a permission while another is in front.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::tui::Tmux;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map(|o| o.status.success());
    match ok {
        Ok(true) => {}
        Ok(false) => panic!("git {args:?} failed"),
        Err(_) => crate::missing_tool("git"),
    }
}

/// Makes `dir` a repository with one commit on `main`.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "T"]);
    std::fs::write(dir.join("README.md"), "first\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// Opens a session of a demo agent slow enough to be caught mid-turn, in `dir`, from the
/// new-session form.
fn open_slow_demo(t: &Tmux, dir: &Path) {
    t.send(&["M-n"]);
    t.wait_for("New session");
    t.send(&[
        "C-u",
        "trellis agent demo --delay-ms 300",
        "Tab",
        "C-u",
        dir.to_str().unwrap(),
        "Enter",
    ]);
}

#[test]
fn a_background_session_blocks_is_marked_announced_once_jumped_to_and_answered_from_the_inbox() {
    let home = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(home.path()).unwrap();
    let (a, b) = (root.join("a"), root.join("b"));
    repo(&a);
    std::fs::create_dir_all(&b).unwrap();
    let hooks = root.join("hooks.txt");
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[notify]\ncommand = \"echo \\\"$TRELLIS_STATE $TRELLIS_AGENT\\\" >> '{}'\"\n",
            hooks.display()
        ),
    )
    .unwrap();
    // The demo plays in a repository it did not make only when asked (`--here`).
    let here = format!("{} agent demo --here", env!("CARGO_BIN_EXE_trellis"));
    let Some(t) = Tmux::start_env(
        &["LANG=C.UTF-8"],
        &[
            "--config",
            config.to_str().unwrap(),
            "--agent",
            &here,
            "--cwd",
            a.to_str().unwrap(),
        ],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    // Session 2: a slower demo agent in the other directory.
    open_slow_demo(&t, &b);
    t.wait("a second session in front", |s| s.contains("▶2"));
    // Session 3: in a new worktree of the first directory's repository.
    t.send(&["M-N"]);
    t.wait_for("New session in a worktree");
    t.send(&["Tab", "C-u", a.to_str().unwrap(), "Enter"]);
    let s = t.wait("a third session in front", |s| s.contains("▶3"));
    assert!(s.contains("a"), "{s}");
    // Session 2 gets a prompt; session 1 comes to the front before the agent asks.
    t.send(&["M-2"]);
    t.wait_for("▶2");
    t.send(&["fix the TODO", "Enter", "M-1"]);
    let s = t.wait("the rail to mark session 2", |s| {
        s.contains("2 ◆ permission")
    });
    assert!(s.contains("▶1"), "session 1 stays in front: {s}");
    assert!(s.contains("b · 1 blocked"), "{s}");
    let title = t.format("#{pane_title}");
    assert!(
        title.contains("session 2") && title.contains("permission"),
        "the window title carries the mark: {title}"
    );
    // The jump key lands on it (its own dialog is there).
    t.send(&["M-a"]);
    t.wait("the jump to session 2", |s| {
        s.contains("▶2") && s.contains("[y] Allow")
    });
    // Back to session 1; the inbox answers it there.
    t.send(&["M-1"]);
    t.wait("session 1 in front", |s| {
        s.contains("▶1") && !s.contains("[y] Allow")
    });
    t.send(&["M-i"]);
    let s = t.wait_for("Inbox · 1 pending");
    assert!(s.contains("Edit src/lib.rs"), "{s}");
    t.send(&["1"]);
    t.wait("session 2 to finish", |s| s.contains("2 ✓ done"));
    t.send(&["Escape"]);
    // Done stays marked until seen.
    std::thread::sleep(Duration::from_millis(600));
    let s = t.screen();
    assert!(s.contains("2 ✓ done") && s.contains("▶1"), "{s}");
    t.send(&["M-2"]);
    t.wait_for("▶2");
    t.send(&["M-1"]);
    t.wait("session 2 seen", |s| s.contains("2 · idle"));
    // The log of session 2 has the answer once, by the user, in the inbox.
    let log = t.log();
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"permission_decided\""))
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert!(decided[0].contains("\"by\":\"inbox\""), "{decided:?}");
    // Announced once: the block (and then the end of its turn, nothing else waiting).
    let said = std::fs::read_to_string(&hooks).unwrap_or_default();
    assert_eq!(
        said.lines().filter(|l| l.starts_with("permission")).count(),
        1,
        "{said}"
    );
    // The third session's worktree is Trellis's.
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["worktree", "list", "--json"])
        .env("XDG_DATA_HOME", t.data())
        .output()
        .unwrap();
    let rows = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "owned");
    assert_eq!(rows[0]["source"], a.to_str().unwrap());
    // Ended from the UI: the session closes, then its tree is retired behind a ref.
    t.send(&["M-3"]);
    t.wait_for("▶3");
    t.send(&["/worktree discard", "Enter"]);
    t.wait("the worktree session to close", |s| {
        !s.contains("▶3") && s.contains("removed")
    });
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["worktree", "list", "--all", "--json"])
        .env("XDG_DATA_HOME", t.data())
        .output()
        .unwrap();
    let rows = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(rows[0]["stage"], "discarded", "{rows:?}");
    assert!(
        rows[0]["snapshot"]
            .as_str()
            .unwrap()
            .starts_with("refs/trellis/retired/"),
        "{rows:?}"
    );
    // Quitting ends every session and every agent.
    let pid = t.program_pid().expect("trellis runs in the pane");
    let children = crate::tui_trust::descendants(pid);
    assert!(children.len() >= 2, "two agents left: {children:?}");
    t.send(&["C-c", "C-c"]);
    let start = Instant::now();
    while crate::procs::exists(pid) || children.iter().any(|c| crate::procs::exists(*c)) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "left {children:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = t.log();
    assert_eq!(
        log.matches("\"session_ended\"").count(),
        3,
        "every session closed its log"
    );
}

#[test]
fn fan_three_compares_them_from_their_ledgers_and_keeps_one() {
    let home = tempfile::tempdir().unwrap();
    let repo = std::fs::canonicalize(home.path()).unwrap().join("repo");
    self::repo(&repo);
    let Some(t) = Tmux::start_env(
        &["LANG=C.UTF-8"],
        &[
            "fan",
            "3",
            "--cwd",
            repo.to_str().unwrap(),
            "--permission",
            "allow-once",
            "fix the TODO",
        ],
        140,
        40,
    ) else {
        return;
    };
    t.wait("three sessions done", |s| {
        s.matches("✓ done").count() + s.matches("· idle").count() == 3
    });
    // Each got the prompt once.
    let log = t.log();
    let prompts = log
        .lines()
        .filter(|l| l.contains("\"session/prompt\"") && l.contains("client_to_agent"))
        .count();
    assert_eq!(prompts, 3, "one prompt per session");
    t.send(&["M-c"]);
    let s = t.wait_for("Compare · 3 sessions");
    assert_eq!(
        s.matches("last test: Run the tests — passed, exit 0: 3 passed")
            .count(),
        3,
        "{s}"
    );
    // The figures are each worktree's own, as git counts them (the demo's workspace and
    // its edit), not the agent's word; what the agent reported is labelled as such.
    let s = t.wait("measured", |s| !s.contains("measuring…"));
    for label in worktree_labels(&t) {
        let (a, d, n) = numstat(&t, &label);
        let cell = format!("+{a} −{d} · {n} files");
        assert!(s.contains(&cell), "{label}: {cell} in {s}");
    }
    // The demo says its seeding of the worktree (+8 in 2 files) and its edit (+1 −2):
    // what it reports now accounts for every file git counts.
    assert_eq!(
        s.matches("agent reported +9 −2 in 2 files").count(),
        3,
        "{s}"
    );
    // Landing asks first; anything but y keeps everything.
    t.send(&["j", "L"]);
    let s = t.wait_for("y lands");
    assert!(s.contains("Discard "), "{s}");
    t.send(&["n"]);
    t.wait_for("nothing landed, nothing discarded");
    assert_eq!(worktree_labels(&t).len(), 3);
    // Land the second.
    t.send(&["M-c"]);
    t.wait_for("Compare · 3 sessions");
    t.send(&["j", "L"]);
    t.wait_for("y lands");
    t.send(&["y"]);
    let start = Instant::now();
    while t.program_pid().is_some() {
        assert!(start.elapsed() < Duration::from_secs(20), "{}", t.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["log", "--format=%B", "-1", "main"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.starts_with("fix the TODO\n"),
        "landed with the session's prompt: {log}"
    );
    let refs = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args([
            "for-each-ref",
            "--format=%(refname)",
            "refs/trellis/retired/",
        ])
        .output()
        .unwrap();
    let refs = String::from_utf8_lossy(&refs.stdout);
    assert_eq!(refs.lines().count(), 2, "two snapshot refs: {refs}");
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["worktree", "list", "--all", "--json"])
        .env("XDG_DATA_HOME", t.data())
        .output()
        .unwrap();
    let rows = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    let mut stages: Vec<String> = rows
        .iter()
        .map(|r| r["stage"].as_str().unwrap().to_string())
        .collect();
    stages.sort();
    assert_eq!(stages, ["discarded", "discarded", "landed"]);
}

/// Every permission request of each session log under `data` is answered exactly once
/// and none is left open; returns how many there were in all.
fn answered_once_in_every_log(data: &Path) -> usize {
    let mut total = 0;
    for day in std::fs::read_dir(data.join("trellis/sessions"))
        .unwrap()
        .flatten()
    {
        for log in std::fs::read_dir(day.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(log.path()).unwrap();
            let mut s = trellis_core::Session::new(trellis_core::Policy::Ask);
            let mut seen = std::collections::HashMap::<String, usize>::new();
            trellis_core::log::rebuild(&mut s, text.lines(), |fx| {
                if let trellis_core::Effect::Emit(e) = fx
                    && let trellis_core::EventBody::PermissionResolved { request_id, .. } = &e.body
                {
                    *seen.entry(request_id.clone()).or_default() += 1;
                }
            });
            assert!(
                s.open_permissions().is_empty(),
                "{:?}",
                s.open_permissions()
            );
            assert!(seen.values().all(|n| *n == 1), "{seen:?}");
            total += seen.len();
        }
    }
    total
}

/// The pid of the agent whose command line contains `needle`, below `root`.
fn agent_pid(root: u32, needle: &str) -> Option<u32> {
    crate::tui_trust::descendants(root)
        .into_iter()
        .find(|p| crate::procs::cmdline(*p).contains(needle))
}

#[test]
fn floods_from_two_sessions_and_an_agent_dying_with_its_request_in_the_inbox() {
    let home = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(home.path()).unwrap();
    let (a, b) = (root.join("a"), root.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let exe = env!("CARGO_BIN_EXE_trellis");
    let flood = format!("{exe} agent hostile die-with-permissions");
    let Some(t) = Tmux::start_env(
        &["LANG=C.UTF-8"],
        &["--agent", &flood, "--cwd", a.to_str().unwrap()],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["M-n"]);
    t.wait_for("New session");
    t.send(&["Tab", "C-u", b.to_str().unwrap(), "Enter"]);
    t.wait("a second session", |s| s.contains("▶2"));
    // Both flood 200 permission requests and die, one right after the other.
    t.send(&["go", "Enter", "M-1", "go", "Enter"]);
    let s = t.wait("both agents to have died", |s| {
        s.contains("1 ✗ error") && s.contains("2 ✗ error")
    });
    assert!(!s.contains("◆"), "{s}");
    t.send(&["M-i"]);
    t.wait_for("Nothing waits for you in any session.");
    t.send(&["Escape"]);
    // A third session asks, in the background, and its agent dies while the request
    // sits in the inbox.
    open_slow_demo(&t, &a);
    t.wait("a third session", |s| s.contains("▶3"));
    t.send(&["fix the TODO", "Enter", "M-1"]);
    t.wait("session 3 to block", |s| s.contains("3 ◆ permission"));
    t.send(&["M-i"]);
    t.wait_for("Inbox · 1 pending");
    let pid = t.program_pid().expect("trellis runs in the pane");
    let agent = agent_pid(pid, "--delay-ms 300").expect("the third agent runs");
    let _ = Command::new("kill")
        .args(["-9", &agent.to_string()])
        .status();
    t.wait("the request to leave the inbox", |s| {
        s.contains("Nothing waits for you in any session.") && s.contains("3 ✗ error")
    });
    t.send(&["Escape", "C-c", "C-c"]);
    let start = Instant::now();
    while crate::procs::exists(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "trellis did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // 200 + 200 + 1, each answered once (cancelled by the client for the dead agents).
    assert_eq!(answered_once_in_every_log(t.data()), 401);
}

/// The recording plugin of `scope` in `root/recorder-SCOPE`, writing to `root/seen`.
fn recording_plugin(root: &Path, scope: &str) -> std::path::PathBuf {
    let pkg = root.join(format!("recorder-{scope}"));
    crate::plugins::recording_plugin(
        &pkg,
        &root.join("seen"),
        scope,
        &["turn_started", "turn_ended"],
    );
    pkg
}

/// `trellis fan 2` on the demo in a repository under `root`, with the plugin at `pkg`;
/// the UI and its hub's name (`hub-PID`).
fn fan_two_with(root: &Path, pkg: &Path) -> Option<(Tmux, String)> {
    let repo = root.join("repo");
    self::repo(&repo);
    let t = Tmux::start_env(
        &["LANG=C.UTF-8"],
        &[
            "fan",
            "2",
            "--cwd",
            repo.to_str().unwrap(),
            "--permission",
            "allow-once",
            "--plugin",
            pkg.to_str().unwrap(),
            "fix the TODO",
        ],
        140,
        40,
    )?;
    let hub = format!("hub-{}", t.program_pid().unwrap());
    Some((t, hub))
}

/// What each recording plugin process wrote (one list per process), once `answers` of
/// its `host/session` calls came back in all.
fn seen_by_plugins(t: &Tmux, root: &Path, answers: usize) -> Vec<Vec<serde_json::Value>> {
    let read = || -> Vec<Vec<serde_json::Value>> {
        let mut files: Vec<_> = std::fs::read_dir(root.join("seen"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
            .collect();
        files.sort();
        files.iter().map(|f| crate::jsonl(f)).collect()
    };
    let start = Instant::now();
    loop {
        let files = read();
        let got: usize = files
            .iter()
            .map(|f| f.iter().filter(|r| r.get("host").is_some()).count())
            .sum();
        if got >= answers {
            return files;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{files:?}\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A plugin runs once per session, and each instance is told which session it serves:
/// every event names it as the hub does (`HUB:KEY`, what `trellis ls` prints), and so does
/// `host/session`.
#[test]
fn each_sessions_plugin_sees_its_own_events_named_after_the_hub() {
    if !crate::plugins::python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(home.path()).unwrap();
    let pkg = recording_plugin(&root, "session");
    let Some((t, hub)) = fan_two_with(&root, &pkg) else {
        return;
    };
    let files = seen_by_plugins(&t, &root, 2);
    assert_eq!(files.len(), 2, "one plugin process per session: {files:?}");
    let mut names: Vec<String> = Vec::new();
    for f in &files {
        let events: Vec<_> = f.iter().filter(|r| r.get("event").is_some()).collect();
        let name = events[0]["hub_session"].as_str().unwrap().to_string();
        assert!(
            events.iter().all(|e| e["hub_session"] == name.as_str()),
            "one session's events only: {f:?}"
        );
        let host = f.iter().find_map(|r| r.get("host")).unwrap();
        assert_eq!(host["hub_session"], name.as_str(), "{host}");
        names.push(name);
    }
    names.sort();
    assert_eq!(names, [format!("{hub}:1"), format!("{hub}:2")]);
}

/// A plugin of `"scope": "hub"` runs once for the whole hub and sees every session's
/// events, each named by its session; it reads no one session's state.
#[test]
fn a_hub_wide_plugin_sees_every_sessions_events_in_one_process() {
    if !crate::plugins::python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(home.path()).unwrap();
    let pkg = recording_plugin(&root, "hub");
    let Some((t, hub)) = fan_two_with(&root, &pkg) else {
        return;
    };
    let files = seen_by_plugins(&t, &root, 2);
    assert_eq!(files.len(), 1, "one plugin process for the hub: {files:?}");
    let mut names: Vec<String> = files[0]
        .iter()
        .filter(|r| r["event"] == "turn_ended")
        .map(|r| r["hub_session"].as_str().unwrap_or("none").to_string())
        .collect();
    names.sort();
    assert_eq!(names, [format!("{hub}:1"), format!("{hub}:2")], "{files:?}");
    // It reads no one session: `host/session` names none.
    let host = files[0].iter().find_map(|r| r.get("host")).unwrap();
    assert!(host.get("hub_session").is_none(), "{host}");
    // `/status` of a session lists it, after the session's own extensions.
    t.send(&["/status", "Enter"]);
    t.wait_for("Status · extensions");
    t.send(&["PgDn", "PgDn", "PgDn"]);
    let s = t.wait_for("Hub-wide plugins");
    assert!(s.contains("recorder"), "{s}");
}

/// The labels of the worktrees `trellis worktree list` shows as owned.
fn worktree_labels(t: &Tmux) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["worktree", "list", "--json"])
        .env("XDG_DATA_HOME", t.data())
        .output()
        .unwrap();
    crate::jsonl(&String::from_utf8_lossy(&out.stdout))
        .iter()
        .filter(|r| r["status"] == "owned")
        .map(|r| r["label"].as_str().unwrap().to_string())
        .collect()
}

/// `git diff --numstat` of a worktree's whole state against its base, summed.
fn numstat(t: &Tmux, label: &str) -> (u64, u64, usize) {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["worktree", "list", "--json"])
        .env("XDG_DATA_HOME", t.data())
        .output()
        .unwrap();
    let rows = crate::jsonl(&String::from_utf8_lossy(&out.stdout));
    let row = rows.iter().find(|r| r["label"] == label).unwrap();
    let path = row["path"].as_str().unwrap();
    let base = row["base"].as_str().unwrap();
    // Into a copy of the index: the worktree's own is left alone.
    let index = tempfile::NamedTempFile::new().unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(path)
            .args(args)
            .env("GIT_INDEX_FILE", index.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&["read-tree", "HEAD"]);
    git(&["add", "-A"]);
    let (mut a, mut d, mut n) = (0, 0, 0);
    for line in git(&["diff", "--cached", "--numstat", base]).lines() {
        let mut p = line.split('\t');
        a += p.next().unwrap().parse::<u64>().unwrap_or(0);
        d += p.next().unwrap().parse::<u64>().unwrap_or(0);
        n += 1;
    }
    (a, d, n)
}

/// A session whose agent is a command line with its settings (`env VAR=… PROGRAM …`) is
/// named as the agent names itself once it has (before that, by its program, never
/// `env`): on the status bar, and in `trellis ls`.
#[test]
fn a_command_line_agent_is_named_as_it_names_itself() {
    let home = tempfile::tempdir().unwrap();
    let runtime = std::fs::canonicalize(home.path()).unwrap().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let rt = format!("XDG_RUNTIME_DIR={}", runtime.display());
    let agent = format!(
        "env DEMO_SETTING=1 {} agent demo",
        env!("CARGO_BIN_EXE_trellis")
    );
    let work = runtime.with_file_name("work");
    std::fs::create_dir_all(&work).unwrap();
    let Some(t) = Tmux::start_env(
        &[&rt, "LANG=C.UTF-8"],
        &["--agent", &agent, "--cwd", work.to_str().unwrap()],
        120,
        30,
    ) else {
        return;
    };
    let s = t.wait_for("trellis-demo │");
    assert!(!s.contains(" env "), "{s}");
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["ls", "--json"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .unwrap();
    let rows = crate::jsonl(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["agent"], "trellis-demo");
}
