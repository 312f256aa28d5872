//! Whole sessions in the UI: a replay reads the user's extension stores (the chosen card
//! designs among them) without writing anything back (issue 10, item 12), and the
//! README's tour runs twice in a row with correct cards and stats.

use std::path::Path;

use crate::tui::Tmux;

#[test]
fn a_replay_draws_the_card_designs_the_user_chose() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let data = tempfile::tempdir().unwrap();
    let stores = data.path().join("trellis/extensions");
    std::fs::create_dir_all(&stores).unwrap();
    let prefs = stores.join("trellis.json");
    let chosen = r#"{"schema":1,"data":{"ui":{"cards":{"kind:execute":"cards/terminal"}}}}"#;
    std::fs::write(&prefs, chosen).unwrap();
    let env = format!("XDG_DATA_HOME={}", data.path().display());
    let Some(t) = Tmux::start_env(&[&env], &["replay", fixture.to_str().unwrap()], 120, 30) else {
        return;
    };
    let s = t.wait_for("Done: listed the directory");
    let s = if s.contains("✓ $ ls") {
        s
    } else {
        t.wait_for("✓ $ ls")
    };
    assert!(
        !s.contains("» ls"),
        "the chosen design, not the native card: {s}"
    );
    // Nothing was written: the store is byte for byte what the user had.
    assert_eq!(std::fs::read_to_string(&prefs).unwrap(), chosen);
    let names: Vec<_> = std::fs::read_dir(&stores)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

/// The README's tour twice in a row on the demo agent: the second turn adds its own
/// cards (the first turn's stay as they were) and the stats are right after each turn,
/// with no key pressed after the prompt (issue 10, acceptance).
#[test]
fn the_tour_twice_in_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["demo"], 150, 90) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    let first = t.wait("the first turn's stats", |s| {
        s.contains("Done: the TODO is fixed") && s.contains("5 calls  ✓ 4  ✗ 1")
    });
    let cards = |s: &str| s.matches("Edit src/lib.rs").count();
    assert_eq!(cards(&first), 1, "{first}");
    t.send(&["fix the TODO", "Enter"]);
    let second = t.wait("the second turn's stats", |s| {
        s.matches("Done: the TODO is fixed").count() == 2 && s.contains("10 calls  ✓ 8  ✗ 2")
    });
    assert_eq!(cards(&second), 2, "two edit cards: {second}");
    // The first turn's cards were not rewritten by the second's (the second edit finds
    // the file already fixed: +0 −0 there, +1 −2 still on the first).
    let first_edit = second
        .lines()
        .find(|l| l.contains("Edit src/lib.rs"))
        .unwrap_or_default();
    assert!(first_edit.contains("+1 −2"), "{second}");
}

/// Prompts typed while the agent works are queued and sent as turns end; Enter on an
/// empty prompt sends the queue now, cancelling the running turn first (issue 12, item 7).
#[test]
fn prompts_typed_while_the_agent_works_are_queued_and_can_steer() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["demo"], 150, 90) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("working…");
    t.send(&["then fix it again", "Enter"]);
    let s = t.wait_for("queued 1/1 › then fix it again");
    assert!(s.contains("queued: sent when the turn ends"), "{s}");
    // The queued prompt becomes the second turn when the first ends.
    let s = t.wait("the second turn", |s| {
        s.contains("› then fix it again") && s.matches("Done: the TODO is fixed").count() == 2
    });
    assert!(!s.contains("queued 1/1"), "{s}");
    drop(t);
    // Steer, on a turn long enough to be cut: queue one, then Enter on the empty prompt:
    // the turn is cancelled and the queued prompt goes out at once.
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls 200000 --lines 1");
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", &agent], 150, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["load", "Enter"]);
    t.wait_for("working…");
    t.send(&["stop and steer", "Enter"]);
    t.wait_for("queued 1/1 › stop and steer");
    t.send(&["Enter"]);
    // The log says what went to the agent: the cancel, then the queued prompt (the
    // screen has long scrolled past it).
    let start = std::time::Instant::now();
    let log = loop {
        let log = t.log();
        if log.contains("stop and steer") {
            break log;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the steered prompt was never sent"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let cancel = log.find("session/cancel").expect("the turn was cancelled");
    let second = log.find("stop and steer").unwrap();
    assert!(cancel < second, "cancelled first, then sent");
}
