//! The real binary in a real terminal: tmux drives it (`send-keys`) and reads the screen
//! (`capture-pane`). A missing tmux fails the tests (`scripts/test` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static N: AtomicUsize = AtomicUsize::new(0);

pub(crate) struct Tmux {
    pub(crate) socket: String,
    _dir: tempfile::TempDir,
    data: PathBuf,
}

impl Tmux {
    pub(crate) fn start(args: &[&str]) -> Option<Tmux> {
        Tmux::start_sized(args, 100, 32)
    }

    pub(crate) fn start_sized(args: &[&str], w: u16, h: u16) -> Option<Tmux> {
        Tmux::start_env(&[], args, w, h)
    }

    /// The UI with `args`, `--permission allow-once` and `--cwd dir` (no dialog in the way).
    pub(crate) fn start_allowing(dir: &Path, args: &[&str], w: u16, h: u16) -> Option<Tmux> {
        let mut all = args.to_vec();
        all.extend(["--permission", "allow-once", "--cwd", dir.to_str().unwrap()]);
        Tmux::start_sized(&all, w, h)
    }

    /// [`Tmux::start_sized`] with more environment variables (`NAME=value`).
    pub(crate) fn start_env(env: &[&str], args: &[&str], w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            crate::missing_tool("tmux is not installed (.ci/run installs it)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let socket = format!(
            "trellis-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let data = dir.path().join("data");
        let mut cmd = vec![
            format!("XDG_DATA_HOME={}", data.display()),
            format!("XDG_CONFIG_HOME={}", dir.path().join("config").display()),
        ];
        cmd.extend(env.iter().map(|e| format!("'{e}'")));
        cmd.push(env!("CARGO_BIN_EXE_trellis").to_string());
        cmd.extend(args.iter().map(|a| format!("'{a}'")));
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                "-s",
                "t",
            ])
            .arg(format!("env {}; sleep 30", cmd.join(" ")))
            .status()
            .unwrap();
        assert!(status.success());
        Some(Tmux {
            socket,
            _dir: dir,
            data,
        })
    }

    pub(crate) fn send(&self, keys: &[&str]) {
        for k in keys {
            let ok = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "t", k])
                .status()
                .unwrap();
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    pub(crate) fn screen_with(&self, escapes: bool) -> String {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"]);
        if escapes {
            c.arg("-e");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    }

    pub(crate) fn screen(&self) -> String {
        self.screen_with(false)
    }

    /// A tmux format value of the pane (`#{alternate_on}`, `#{pane_title}`, …).
    pub(crate) fn format(&self, what: &str) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "display-message", "-p", "-t", "t", what])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The pid of the program under test (the pane's shell's child).
    pub(crate) fn program_pid(&self) -> Option<u32> {
        let shell: u32 = self.format("#{pane_pid}").parse().ok()?;
        crate::procs::children(shell).into_iter().next()
    }

    /// Waits until the screen satisfies `pred` (fails with the last screen after 20 s).
    pub(crate) fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait_for(&self, text: &str) -> String {
        self.wait(text, |s| s.contains(text))
    }

    /// The data directory the program under test writes to.
    pub(crate) fn data(&self) -> &Path {
        &self.data
    }

    pub(crate) fn log(&self) -> String {
        crate::hubkit::logs_in(&self.data)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[test]
fn demo_prompt_permission_inspector_and_jump() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start(&["demo", "--cwd", dir.path().to_str().unwrap()]) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    let s = t.wait_for("[y] Allow");
    assert!(
        s.contains("Permission") && s.contains("+     a.checked_add(b)"),
        "{s}"
    );
    t.send(&["y"]);
    t.wait_for("Done: the TODO is fixed");
    assert!(t.screen().contains("allowed once by user"));
    // Into the transcript: the cursor starts on the latest card; two cards up is the edit.
    t.send(&["Escape", "BTab", "BTab", "g", "T"]);
    let s = t.wait_for("Tool Result: Edit src/lib.rs [3/5]");
    assert!(s.contains("+     a.checked_add(b)"), "{s}");
    t.send(&["K"]);
    let s = t.wait_for("Tool Call: Edit src/lib.rs [3/5]");
    assert!(s.contains("\"old_string\": \"a + b\""), "{s}");
    t.send(&["Tab"]);
    let s = t.wait_for("Tool Call: Run the tests [4/5]");
    assert!(
        s.contains("for i in 1 2 3"),
        "the execute command in its own fence: {s}"
    );
    t.send(&["BTab"]);
    t.wait_for("Tool Call: Edit src/lib.rs [3/5]");
    t.send(&["]", "f"]);
    t.wait_for("Tool Call: Show the changelog [5/5]");
    t.send(&["q"]);
    t.wait("the inspector to close", |s| !s.contains("Tool Call:"));
    // Reopen, step to the test run, and jump back to its card.
    t.send(&["g", "T"]);
    t.wait_for("Tool Result: Edit src/lib.rs [3/5]");
    t.send(&["Tab", "g", "T"]);
    t.wait("the inspector to close", |s| !s.contains("Tool Result:"));
    let styled = t.screen_with(true);
    let line = styled
        .lines()
        .find(|l| l.contains("Run the tests"))
        .unwrap();
    assert!(
        line.contains("\x1b[7m") || line.contains(";7m"),
        "the jumped-to card is selected: {line:?}"
    );
    // Completion in the prompt: the agent's commands (beside Trellis's own: `/exp` is
    // `/explain` or `/export`) and the files under the cwd.
    t.send(&["i", "/expl", "Tab"]);
    t.wait_for("› /explain");
    t.send(&["@demo-workspace/READ", "Tab"]);
    t.wait_for("› /explain @demo-workspace/README.md");
    t.send(&["C-c", "C-c"]);
    t.wait("the UI to exit", |s| {
        !s.contains("Enter send") && !s.contains("j/k move")
    });
    let log = t.log();
    assert!(
        log.contains("\"decider\":{\"by\":\"user\"}"),
        "the user decided, on record"
    );
    assert!(
        std::fs::read_to_string(dir.path().join("demo-workspace/src/lib.rs"))
            .unwrap()
            .contains("checked_add")
    );
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp")
        .join(name)
}

/// Tool cards on a screen (a card's line starts with its status mark).
fn cards(screen: &str) -> usize {
    screen
        .lines()
        .filter(|l| l.starts_with('✓') || l.starts_with('✗'))
        .count()
}

#[test]
fn replay_of_each_fixture() {
    for name in [
        "claude-agent-acp-0.23.1.jsonl",
        "claude-agent-acp-0.23.1-rejected.jsonl",
        "claude-code-acp-0.16.2-fs-terminal.jsonl",
    ] {
        let path = fixture(name);
        let Some(t) = Tmux::start(&["replay", path.to_str().unwrap()]) else {
            return;
        };
        let s = t.wait_for("Done: listed the directory");
        let cards = cards(&s);
        assert_eq!(cards, 5, "{name}: {s}");
        if name.contains("rejected") {
            assert!(s.contains("✗ ✎ Edit hello.txt"), "{s}");
        }
        t.send(&["g", "T"]);
        t.wait_for("[5/5]");
        t.send(&["q", "q"]);
        t.wait("the UI to exit", |s| {
            !s.contains("Done: listed the directory")
        });
    }
}

#[test]
fn replay_of_codex_shows_the_output_it_reports_in_meta() {
    // Codex runs commands itself and reports their output in `_meta`, never through a
    // client terminal: the recorded session's output must still be one key away.
    let path = fixture("codex-acp-2.6.0.jsonl");
    let Some(t) = Tmux::start(&["replay", path.to_str().unwrap()]) else {
        return;
    };
    let s = t.wait_for("Listed the files, read the README");
    let cards = cards(&s);
    assert_eq!(cards, 3, "{s}");
    t.send(&["g", "T"]);
    t.wait_for("[3/3]");
    // Back to `cat README.md`: its output, as Codex reported it.
    t.send(&["BTab"]);
    let s = t.wait_for("Tool Result: Read file");
    assert!(s.lines().any(|l| l.contains("│Hello ")), "{s}");
    t.send(&["q", "q"]);
}

#[test]
fn keys_are_answered_while_the_agent_floods_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!(
        "{} agent demo --calls 30000 --lines 20",
        env!("CARGO_BIN_EXE_trellis")
    );
    let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()]) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["go", "Enter"]);
    t.wait_for("Generate chunk");
    // The stream is running: type, and watch the keys land before the turn ends.
    let sent = Instant::now();
    t.send(&["hello world"]);
    let s = t.wait_for("› hello world");
    let latency = sent.elapsed();
    assert!(
        s.contains("working…"),
        "the turn was still streaming when the keys landed:\n{s}"
    );
    eprintln!("typed text appeared {latency:?} after send-keys, mid-stream");
    // Scrolling and the inspector work mid-stream too.
    t.send(&["C-t"]);
    t.wait_for("Tool Result: Generate chunk");
    // The latest call may still be empty when it opens; its output arrives in place.
    t.wait_for("the quick brown fox");
    t.send(&["q", "C-c", "C-c"]);
}

#[test]
fn a_dead_agent_is_reported_and_restarted_with_ctrl_r() {
    use serde_json::json;
    let rec =
        |dir: &str, msg: serde_json::Value| json!({"t": 0.0, "dir": dir, "msg": msg}).to_string();
    // An agent that answers setup, streams a call, then dies inside the turn.
    let lines = [
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/r","mcpServers":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"S"}}),
        ),
        rec(
            "client_to_agent",
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}),
        ),
        rec(
            "agent_to_client",
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":
            {"sessionUpdate":"tool_call","toolCallId":"a","title":"Long job","kind":"execute","status":"in_progress"}}}),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dies.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let agent = format!(
        "{} agent replay {}",
        env!("CARGO_BIN_EXE_trellis"),
        file.display()
    );
    let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()]) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["go", "Enter"]);
    let s = t.wait_for("Ctrl-R restarts");
    assert!(
        s.contains("agent exited") && s.contains("◌ » Long job"),
        "{s}"
    );
    t.send(&["C-r"]);
    t.wait_for("agent restarted");
    t.send(&["again", "Enter"]);
    // The restarted agent plays the same recording: same call id, so the same card is
    // re-opened, then closed again when the agent dies a second time.
    let s = t.wait("the second death", |s| {
        s.matches("agent exited").count() == 2
    });
    assert!(s.contains("› again") && s.contains("◌ » Long job"), "{s}");
    t.send(&["C-c", "C-c"]);
    let log = t.log();
    assert_eq!(
        log.matches("\"method\":\"initialize\"").count(),
        2,
        "one log, both connections"
    );
}

/// An agent that dies between turns is said at once, not at the next prompt (the session
/// noticed only when a prompt failed).
#[test]
fn an_agent_that_dies_between_turns_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 30) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("the tests pass");
    let ui = t.program_pid().expect("the UI runs");
    let agent = crate::procs::children(ui);
    assert_eq!(agent.len(), 1, "{agent:?}");
    let _ = Command::new("kill")
        .args(["-9", &agent[0].to_string()])
        .status();
    let s = t.wait_for("Ctrl-R restarts");
    assert!(s.contains("agent exited"), "{s}");
}

#[test]
fn extensions_live_switch_a_card_design_collapse_a_section_and_watch_stats() {
    let Some(t) = Tmux::start_sized(&["demo"], 140, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.wait_for("▾ Session stats");
    t.send(&["Fix the TODO", "Enter"]);
    // The stats section follows the session live: three calls when the edit asks…
    t.wait_for("Always allow");
    t.wait_for("3 calls");
    t.send(&["y"]);
    // …five once the turn is done.
    let s = t.wait_for("Done:");
    let s = if s.contains("5 calls") {
        s
    } else {
        t.wait_for("5 calls")
    };
    assert!(
        s.contains("✗ » Show the changelog"),
        "native card first:\n{s}"
    );
    // Settings → Cards: the execute cards already drawn change design.
    t.send(&["F2"]);
    t.wait_for("Sections   Cards");
    t.send(&["Tab"]);
    t.wait_for("Card execute");
    t.send(&["Right", "Enter", "Escape"]);
    let s = t.wait_for("✗ $ cat missing-file.txt");
    assert!(!s.contains("» Show the changelog"), "{s}");
    // Settings → Sections: collapse the stats section; its body goes away.
    t.send(&["F2"]);
    t.wait_for("Sections   Cards");
    t.send(&["Down", "Down", "Right", "Enter", "Escape"]);
    let s = t.wait_for("▸ Session stats");
    assert!(!s.contains("5 calls  ✓"), "{s}");
    // /status answers for every extension.
    t.send(&["/status", "Enter"]);
    let s = t.wait_for("Extension API v1");
    assert!(s.contains("stats 0.1.0 (built-in): ready"), "{s}");
    t.send(&["Escape", "C-c", "C-c"]);
}

/// Back from the pager, the whole screen is drawn again (a static replay: nothing else
/// would redraw it).
#[test]
fn the_screen_is_whole_again_after_the_pager() {
    let path = fixture("claude-agent-acp-0.23.1.jsonl");
    let Some(t) = Tmux::start_env(&["PAGER=cat"], &["replay", path.to_str().unwrap()], 100, 32)
    else {
        return;
    };
    t.wait_for("Done: listed the directory");
    t.send(&["g", "T"]);
    t.wait_for("[5/5]");
    t.send(&["o"]);
    // Without a full redraw the screen stays blank (the pager left it so).
    let s = t.wait("the inspector drawn again", |s| s.contains("[5/5]"));
    // The frame's borders are whole: every line of the float has its two sides.
    let sides = s
        .lines()
        .filter(|l| l.trim_start().starts_with('│'))
        .count();
    assert!(sides > 10, "{s}");
}

/// The prompt's editing keys (readline's) and Ctrl-G, which edits the prompt in
/// `$EDITOR` and takes back what it saved.
#[test]
fn prompt_editing_keys_and_the_external_editor() {
    let dir = tempfile::tempdir().unwrap();
    // The "editor" rewrites the file in place, as a user would.
    let Some(t) = Tmux::start_env(
        &["EDITOR=sed -i s/draft/final/"],
        &["demo", "--cwd", dir.path().to_str().unwrap()],
        100,
        32,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the draft tests now"]);
    t.wait_for("fix the draft tests now");
    // Ctrl-W deletes "now", Alt-B steps back over "tests", Ctrl-K cuts it.
    t.send(&["C-w", "M-b", "C-k"]);
    t.wait("tests cut", |s| {
        s.contains("fix the draft") && !s.contains("tests")
    });
    // Ctrl-A, then a word at the start; End, then one at the end; Delete at the end
    // deletes nothing.
    t.send(&["C-a", "please ", "End", "docs", "DC"]);
    t.wait_for("please fix the draft docs");
    // Ctrl-Left twice and Ctrl-U: everything before "draft" goes.
    t.send(&["C-Left", "C-Left", "C-u"]);
    let s = t.wait("line start cut", |s| {
        s.contains("draft docs") && !s.contains("please")
    });
    assert!(!s.contains("fix the"), "{s}");
    t.send(&["C-g"]);
    t.wait_for("final docs");
    assert!(!t.screen().contains("draft"));
}

/// The demo's scratch workspace (no --cwd) is removed when the demo ends.
#[test]
fn the_demo_scratch_workspace_is_removed_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
        ])
        .env("TMPDIR", tmp.path())
        .env("XDG_DATA_HOME", tmp.path().join("data"))
        .env("XDG_CONFIG_HOME", tmp.path().join("config"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let ws = err
        .lines()
        .find_map(|l| l.strip_prefix("trellis: demo workspace: "))
        .expect("the workspace is named");
    assert!(ws.contains("trellis-demo-"), "{err}");
    assert!(!Path::new(ws).exists(), "{ws} is left behind");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("trellis-demo-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A closed terminal (SIGHUP) ends the UI like a quit: the demo's scratch workspace goes
/// with it. It stayed behind when the terminal was gone: a failed print on the way out
/// panicked, and the terminal-restoring panic hook aborted before the drops.
#[test]
fn a_hangup_removes_the_demos_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let env = format!("TMPDIR={}", tmp.path().display());
    let Some(t) = Tmux::start_env(&["LANG=C.UTF-8", &env], &["--agent", "demo"], 100, 30) else {
        return;
    };
    t.wait_for("Enter send");
    let pid = t.program_pid().unwrap();
    let demo = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("trellis-demo-"))
            .collect()
    };
    assert_eq!(demo().len(), 1, "the workspace is made");
    drop(t);
    let start = Instant::now();
    while crate::procs::exists(pid) {
        assert!(start.elapsed() < Duration::from_secs(20), "the UI ends");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(demo().is_empty(), "{:?} left behind", demo());
}

/// Until the agent has set up its session the status bar says so, whatever else it
/// shows, and the session's directory is on it.
#[test]
fn connecting_and_the_cwd_are_on_the_status_bar() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_sized(
        &["--agent", "sleep 20", "--cwd", dir.path().to_str().unwrap()],
        120,
        20,
    ) else {
        return;
    };
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // The directory comes with the session log's header, read a moment after the first
    // frame: the bar shows both while the agent does not answer.
    t.wait("the cwd beside `connecting`", |s| {
        let bar = s.lines().last().unwrap_or_default();
        bar.contains("connecting to sleep…") && bar.contains(&name)
    });
}

/// At the end of a burst the sidebar and status bar show the final counts without a key
/// press: the frame after the extensions' last results is drawn (issue 10, item 2).
#[test]
fn stats_are_final_at_the_end_of_a_turn_without_a_key() {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls 3000 --lines 3");
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", &agent], 140, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["load", "Enter"]);
    // No key after Enter: the screen must reach the final figures on its own.
    let s = t.wait("the final counts", |s| {
        s.contains("3000 calls  ✓ 3000") && !s.contains("working…")
    });
    assert!(s.lines().last().unwrap_or("").contains("3000 calls"), "{s}");
}

/// The agent's options in the real terminal (issue 12, item 1): `M` lists them, a model
/// chosen goes to the demo agent, and the status bar shows its answer; `/mode` switches
/// the legacy mode.
#[test]
fn the_agents_model_is_chosen_in_the_options_picker() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &[], 120, 30) else {
        return;
    };
    let s = t.wait_for("Demo Fast │ thinking Medium");
    assert!(s.contains("mode Default │"), "{s}");
    t.send(&["Escape", "M"]);
    t.wait_for("Agent options");
    // Model (first row) → its choices → Demo Max (the third) → set.
    t.send(&["Enter"]);
    t.wait_for("Careful");
    t.send(&["Down", "Down", "Enter"]);
    t.wait_for("asked the agent for Model = demo-max");
    t.send(&["Escape"]);
    t.wait("the agent's answer on the status bar", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.contains("Demo Max │ thinking Medium"))
    });
    t.send(&["i", "/mode", "Enter"]);
    t.wait_for("Allow everything");
    t.send(&["Down", "Enter"]);
    t.wait("the mode on the status bar", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.contains("mode Allow everything"))
    });
    let log = t.log();
    assert!(log.contains("\"session/set_config_option\""), "in the log");
    assert!(log.contains("\"session/set_mode\""));
}
