//! The UI against hostile agents, in a real terminal (tmux): requests closed when the
//! agent dies, signals that restore the terminal and stop every process, escape sequences
//! that never reach the terminal, and a setup that never finishes.

use std::time::{Duration, Instant};

use crate::tui::Tmux;

fn hostile(scenario: &str) -> String {
    format!("{} agent hostile {scenario}", env!("CARGO_BIN_EXE_trellis"))
}

/// The UI on the hostile agent in a fresh cwd (`None` when tmux is missing outside CI).
fn ui_on(scenario: &str, cwd: &std::path::Path) -> Option<Tmux> {
    Tmux::start(&[
        "--agent",
        &hostile(scenario),
        "--cwd",
        cwd.to_str().unwrap(),
    ])
}

#[test]
fn requests_open_in_the_dialog_are_closed_when_the_agent_dies() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = ui_on("die-with-permissions", dir.path()) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["go", "Enter"]);
    // The agent asks 200 questions and dies 0.3 s later.
    t.wait_for("agent exited");
    t.wait("the dialog to go", |s| !s.contains("[y] Allow"));
    // The permission queue (an extension's section) empties too, without a key.
    t.wait("the queue to empty", |s| !s.contains("Permissions (2"));
    let log = t.log();
    // Each open request's decider is on record once.
    assert_eq!(
        log.matches("\"decider\":{\"by\":\"client\",\"name\":\"agent exited\"}")
            .count(),
        200
    );
    let mut session = trellis_core::Session::new(trellis_core::Policy::Ask);
    trellis_core::log::rebuild(&mut session, log.lines(), |_| {});
    assert!(session.open_permissions().is_empty());
    let decided: Vec<_> = session
        .ledger
        .calls()
        .flat_map(|c| c.permissions.clone())
        .map(|p| p.decider.as_ref().map(|d| d.to_string()))
        .collect();
    assert_eq!(decided.len(), 200);
    assert!(
        decided.iter().all(|d| d.as_deref() == Some("agent exited")),
        "{decided:?}"
    );
}

#[test]
fn sigterm_restores_the_terminal_and_stops_every_process() {
    for (scenario, prefix, sig) in [
        ("linger", "trellis-linger-", "TERM"),
        ("linger", "trellis-linger-", "HUP"),
        ("escape-group", "trellis-escape-", "TERM"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let Some(t) = ui_on(scenario, dir.path()) else {
            return;
        };
        t.wait_for("Enter send");
        t.send(&["go", "Enter"]);
        let s = t.wait_for("report: marker: ");
        let marker: String = s[s.find(prefix).unwrap()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert_eq!(t.format("#{alternate_on}"), "1");
        let pid = t.program_pid().expect("trellis runs in the pane");
        let ok = std::process::Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(ok.success());
        let start = Instant::now();
        while crate::procs::exists(pid) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "trellis did not exit"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The terminal is back: main screen, no mouse reporting.
        assert_eq!(t.format("#{alternate_on}"), "0", "SIG{sig}");
        assert_eq!(t.format("#{mouse_any_flag}"), "0", "SIG{sig}");
        assert!(t.log().contains(&format!("stopped by SIG{sig}")));
        let start = Instant::now();
        while !crate::hostile::processes_with(&marker).is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "left behind: {:?}",
                crate::hostile::processes_with(&marker)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn escape_sequences_from_the_agent_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = ui_on("escapes", dir.path()) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["go", "Enter"]);
    t.wait_for("clip");
    // Open the call in the inspector too: its output is drawn there.
    t.send(&["C-t"]);
    t.wait_for("Tool Result");
    assert_ne!(t.format("#{pane_title}"), "PWNED-TITLE");
    let buffers = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "list-buffers"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&buffers.stdout).contains("PWNED"),
        "the agent set the clipboard"
    );
}

#[test]
fn a_setup_that_never_finishes_says_so_and_ctrl_c_quits() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = ui_on("hang-init", dir.path()) else {
        return;
    };
    t.wait_for("connecting to");
    t.send(&["hello", "Enter"]);
    t.wait_for("prompt queued");
    t.send(&["C-c", "C-c"]);
    t.wait("the UI to exit", |s| !s.contains("connecting to"));
    assert!(
        t.log()
            .contains("prompt queued: it is sent once the agent has set up its session")
    );
}

/// Every process descending from `pid`.
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    crate::procs::descendants(pid)
}

#[test]
fn the_ui_survives_every_hostile_scenario_and_leaves_nothing_behind() {
    for scenario in [
        "write-escape",
        "fifo",
        "blank-lines",
        "bad-utf8",
        "stderr-flood",
        "odd-ids",
        "foreign-session",
        "empty-options",
        "terminal-flood",
        "escapes",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let Some(t) = ui_on(scenario, &work) else {
            return;
        };
        t.wait_for("Enter send");
        t.send(&["go", "Enter"]);
        // Answer whatever the agent asks until its turn is over.
        let start = Instant::now();
        loop {
            let log = t.log();
            if log.contains("\"stopReason\"") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{scenario}: the turn never ended; screen:\n{}",
                t.screen()
            );
            if t.screen().contains("[y] Allow") {
                t.send(&["y"]);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // The UI still answers keys: the inspector opens and closes.
        t.send(&["C-t"]);
        t.wait(&format!("{scenario}: the inspector"), |s| {
            s.contains("Tool Result") || s.contains("no tool calls") || s.contains("No tool call")
        });
        t.send(&["q"]);
        let pid = t.program_pid().expect("trellis runs in the pane");
        let children = descendants(pid);
        t.send(&["C-c", "C-c"]);
        let start = Instant::now();
        while crate::procs::exists(pid) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{scenario}: trellis did not exit"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(t.format("#{alternate_on}"), "0", "{scenario}");
        let start = Instant::now();
        while children.iter().any(|c| crate::procs::exists(*c)) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{scenario}: left {children:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Nothing outside the cwd changed, every request was answered once.
        assert!(
            !dir.path().join("escaped.txt").exists()
                || std::fs::read_to_string(dir.path().join("escaped.txt")).unwrap()
                    == "untouched\n"
        );
        let mut session = trellis_core::Session::new(trellis_core::Policy::Ask);
        let problems = trellis_core::log::rebuild(&mut session, t.log().lines(), |_| {});
        assert!(problems.is_empty(), "{scenario}: {problems:?}");
        assert!(session.open_permissions().is_empty(), "{scenario}");
        assert_ne!(t.format("#{pane_title}"), "PWNED-TITLE");
    }
}

/// The agent withdraws its question (`$/cancel_request`, issue 12, item 6): the dialog
/// goes without a key, the agent hears `cancelled`, and the log names who decided.
#[test]
fn a_permission_the_agent_cancels_leaves_the_dialog() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = ui_on("cancel-permission", dir.path()) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["go", "Enter"]);
    t.wait_for("[y] Allow");
    t.wait("the dialog to go", |s| !s.contains("[y] Allow"));
    t.wait_for("report: cancelled permission: cancelled");
    let log = t.log();
    assert_eq!(
        log.matches("\"name\":\"the agent, which withdrew it\"")
            .count(),
        1,
        "decided once, by the agent's cancel"
    );
}
