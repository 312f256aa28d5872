//! The UI against hostile agents, in a real terminal (tmux): requests closed when the
//! agent dies, signals that restore the terminal and stop every process, escape sequences
//! that never reach the terminal, and a setup that never finishes.

use std::time::{Duration, Instant};

use crate::tui::Tmux;

fn hostile(scenario: &str) -> String {
    format!("{} agent hostile {scenario}", env!("CARGO_BIN_EXE_trellis"))
}

#[test]
fn requests_open_in_the_dialog_are_closed_when_the_agent_dies() {
    let dir = tempfile::tempdir().unwrap();
    let agent = hostile("die-with-permissions");
    let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()]) else {
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
        .flat_map(|c| c.permissions.iter())
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
    for sig in ["TERM", "HUP"] {
        let dir = tempfile::tempdir().unwrap();
        let agent = hostile("linger");
        let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()])
        else {
            return;
        };
        t.wait_for("Enter send");
        t.send(&["go", "Enter"]);
        let s = t.wait_for("report: marker: ");
        let marker: String = s[s.find("trellis-linger-").unwrap()..]
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
        while std::path::Path::new(&format!("/proc/{pid}")).exists() {
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
    let agent = hostile("escapes");
    let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()]) else {
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
    let agent = hostile("hang-init");
    let Some(t) = Tmux::start(&["--agent", &agent, "--cwd", dir.path().to_str().unwrap()]) else {
        return;
    };
    t.wait_for("connecting to");
    t.send(&["hello", "Enter"]);
    t.wait_for("prompt queued");
    t.send(&["C-c", "C-c"]);
    t.wait("the UI to exit", |s| !s.contains("connecting to"));
    assert!(
        t.log()
            .contains("prompt queued until the agent has set up its session")
    );
}
