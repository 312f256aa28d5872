//! The agent's own sessions (`session/list`, issue 11, part 3) in the sessions picker:
//! listed beside the local history, marked as the agent's, resumed with `session/load`.

use crate::tui::Tmux;

#[test]
fn the_agents_sessions_join_the_picker_and_resume_by_load() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!(
        "{} agent demo --delay-ms 0 --load-session",
        env!("CARGO_BIN_EXE_trellis")
    );
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", &agent], 120, 32) else {
        return;
    };
    t.wait_for("Demo Fast");
    t.send(&["Escape", "H"]);
    let s = t.wait_for("Earlier: make add check for overflow");
    assert!(
        s.contains("2026-11-30 16:40 UTC") && s.contains("Earlier: add a changelog"),
        "{s}"
    );
    assert!(s.contains("(the agent's: resume only)"), "{s}");
    // Down to the agent's newest session.
    for _ in 0..6 {
        let s = t.screen();
        if s.lines()
            .any(|l| l.contains('▸') && l.contains("Earlier: add a changelog"))
        {
            break;
        }
        t.send(&["Down"]);
    }
    t.send(&["Enter"]);
    t.wait_for("only the agent has this session");
    t.send(&["C-r"]);
    // Trellis starts again on the agent's session: it replays its history.
    t.wait_for("(replayed) what I answered then");
    let log = t.log();
    let loads = crate::sent(&log, "session/load");
    assert_eq!(loads.len(), 1, "{log}");
    assert_eq!(loads[0]["sessionId"], "demo-earlier-2");
    // The demo lists one session a page: the second came with the cursor it offered.
    let lists = crate::sent(&log, "session/list");
    assert_eq!(lists.len(), 2, "{log}");
    assert!(lists[0].get("cursor").is_none());
    assert_eq!(lists[1]["cursor"], "page-2");
}
