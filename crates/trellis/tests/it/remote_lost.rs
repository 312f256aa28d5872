//! An agent elsewhere whose connection is lost: mid-turn (the run ends clearly, the UI
//! says so, the connection is restored and the session taken up again), half-open
//! connections, and dials that fail, all on the record.

use std::process::Command;
use std::time::Duration;

use crate::hubkit::{Dirs, text, until};
use crate::remote::{Served, bounded, box_config, run, running, token, ui_dialing};

/// The server killed in the middle of a turn, with an agent that cannot take its session up
/// again: the run ends saying the connection was
/// lost, every open request answered once, nothing left running.
#[test]
fn a_connection_lost_mid_turn_ends_the_run_clearly() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo", "--delay-ms", "400"],
    );
    box_config(&d, &served.addr);
    let mut child = running(&d, &secret, &["--format", "jsonl"]);
    until("the turn to begin", || d.log().contains("\"tool_call\""));
    let server = served.child.id();
    let _ = Command::new("kill")
        .args(["-9", &server.to_string()])
        .status();
    let o = bounded(&mut child, Duration::from_secs(30));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("connection") && text(&o).contains(&served.addr),
        "{}",
        text(&o)
    );
    // This demo offers neither session/resume nor session/load: nothing to dial again for.
    assert!(
        text(&o).contains("cannot be taken up again"),
        "{}",
        text(&o)
    );
}

/// A headless run whose agent could take its session up again still ends with the lost
/// turn (as it does with any turn that did not end well): it says the connection was
/// lost, and never that it dials again.
#[test]
fn a_headless_run_ends_with_its_lost_turn_without_dialing_again() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &[
            "trellis",
            "agent",
            "demo",
            "--delay-ms",
            "400",
            "--resume-session",
        ],
    );
    box_config(&d, &served.addr);
    let mut child = running(&d, &secret, &[]);
    until("the turn to begin", || d.log().contains("\"tool_call\""));
    let _ = Command::new("kill")
        .args(["-9", &served.child.id().to_string()])
        .status();
    let o = bounded(&mut child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("the connection to {} was lost", served.addr)),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("dialing again"), "{}", text(&o));
    assert!(!d.log().contains("dialing again"), "{}", d.log());
}

/// In the UI: where the agent runs is on the status bar, a turn runs over the network,
/// and a lost connection is said on the screen.
#[test]
fn the_ui_dials_an_agent_and_says_where_it_runs_and_when_it_is_lost() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let mut served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    let Some(t) = ui_dialing(&d, &served.addr, &secret, 30) else {
        return;
    };
    let at = format!("box@{}", served.addr);
    t.wait(&format!("{at} on the status bar"), |s| {
        s.lines().last().is_some_and(|l| l.contains(&at))
    });
    t.send(&["fix the TODO", "Enter"]);
    t.wait("the turn to end", |s| s.contains("the tests pass"));
    // The server goes away: said where the user looks.
    let _ = served.child.kill();
    let _ = served.child.wait();
    let s = t.wait("the lost connection on the screen", |s| {
        s.contains("connection") && s.contains(&served.addr)
    });
    assert!(!s.contains(&secret), "{s}");
}

/// The server killed in the middle of a turn and started again on the same address: the
/// session dials again, the agent takes its session up again (`session/resume`), the
/// gap is on the record and on the screen, and the next prompt runs on the new
/// connection. (A headless run holds its remaining prompts after a turn that did not end
/// well, as for any agent.)
#[test]
fn a_connection_lost_mid_turn_is_restored_and_the_session_taken_up_again() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let demo = [
        "trellis",
        "agent",
        "demo",
        "--delay-ms",
        "300",
        "--resume-session",
    ];
    let first = Served::start(&d, &["--listen", "127.0.0.1:0"], &demo);
    let addr = first.addr.clone();
    let Some(t) = ui_dialing(&d, &addr, &secret, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait("a call of the turn", |s| s.contains("Read README.md"));
    drop(first);
    // A prompt typed while nobody answers waits for the connection, through a dial
    // that fails.
    t.wait("the loss on the screen", |s| s.contains("dialing again"));
    t.send(&["hello again", "Enter"]);
    std::thread::sleep(Duration::from_millis(1500));
    let _second = Served::start(&d, &["--listen", &addr], &demo);
    let s = t.wait("the connection restored", |s| {
        s.contains("connected again after")
    });
    assert!(s.contains("took up its session"), "{s}");
    // What was said while dialing leaves the message line once connected.
    t.wait("the dialing message gone", |s| !s.contains(" of 5)"));
    t.wait("the waiting prompt's turn on the new connection", |s| {
        s.contains("› hello again") && s.contains("the tests pass")
    });
    let log = t.log();
    assert!(log.contains("dialing again"), "{log}");
    assert_eq!(crate::sent(&log, "session/resume").len(), 1, "{log}");
    assert_eq!(crate::sent(&log, "session/prompt").len(), 2, "{log}");
    // The lost turn ended on the record, its calls closed.
    let mut s = trellis_core::Session::new(trellis_core::Policy::Ask);
    let problems = trellis_core::log::rebuild(&mut s, log.lines(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
    assert!(s.open_permissions().is_empty());
    assert!(!s.turn_open);
    // The new agent process counts its call ids from the start again: its calls are
    // new cards, and the lost turn's stay as they were left.
    let reads: Vec<_> = s
        .ledger
        .calls()
        .filter(|c| c.title == "Read README.md")
        .collect();
    assert_eq!(reads.len(), 2, "{log}");
    assert_eq!(reads[0].id, reads[1].id, "{log}");
    assert_ne!(reads[0].turn, reads[1].turn);
    assert_eq!(
        reads[1].status,
        trellis_core::ToolStatus::Completed,
        "{log}"
    );
}

/// Connections that never finish their handshake hold no agent's place: a client with a
/// token still gets its agent.
#[test]
fn half_open_connections_hold_no_agents_place() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0", "--max-agents", "1"],
        &["trellis", "agent", "demo"],
    );
    let held: Vec<_> = (0..3)
        .map(|_| std::net::TcpStream::connect(&served.addr).unwrap())
        .collect();
    box_config(&d, &served.addr);
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &["--permission", "allow-once"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
    drop(held);
}

/// Five dials that fail end the session on the record, where the user looks.
#[test]
fn dials_that_fail_end_the_session_on_the_record() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let first = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo", "--resume-session"],
    );
    let addr = first.addr.clone();
    let Some(t) = ui_dialing(&d, &addr, &secret, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait("the turn to end", |s| s.contains("the tests pass"));
    drop(first);
    // 1 + 2 + 4 + 8 + 16 s of waits, then the end (the helper waits 20 s at a time).
    t.wait("the first dials", |s| s.contains("try 3 of 5"));
    t.wait("the last dial", |s| s.contains("try 5 of 5"));
    let s = t.wait("the end on the screen", |s| {
        s.contains("gave up after 5 tries")
    });
    assert!(s.contains("could not be dialed again"), "{s}");
    assert!(t.log().contains("gave up after 5 tries over 31 s"));
    // Ctrl-R once the server is back: dialed again by hand, the same conversation
    // taken up (not a new session), and said so.
    let _second = Served::start(
        &d,
        &["--listen", &addr],
        &["trellis", "agent", "demo", "--resume-session"],
    );
    t.send(&["C-r"]);
    t.wait("the session taken up by hand", |s| {
        s.contains("to take up its session")
    });
    t.send(&["hello again", "Enter"]);
    t.wait("the next turn", |s| {
        s.contains("› hello again") && s.matches("the tests pass").count() >= 2
    });
    let log = t.log();
    assert_eq!(crate::sent(&log, "session/new").len(), 1, "{log}");
    assert_eq!(crate::sent(&log, "session/resume").len(), 1, "{log}");
}
