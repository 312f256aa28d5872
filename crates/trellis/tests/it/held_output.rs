//! Finished calls' output leaves memory for the session log and comes back when shown
//! (issue 11, part 5, first step): with a small budget (`TRELLIS_HELD_OUTPUT`), the first
//! call of a 300-call load is read back from the log — card, inspector and `/status` say
//! the same as before.

/// The UI (`width` × 40) after the demo agent's load of `calls` calls of `lines` lines.
fn loaded(
    dir: &tempfile::TempDir,
    env: &[&str],
    calls: usize,
    lines: usize,
    width: u16,
) -> Option<crate::tui::Tmux> {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls {calls} --lines {lines}");
    let cwd = dir.path().to_str().unwrap();
    let t = crate::tui::Tmux::start_env(
        env,
        &[
            "--agent",
            &agent,
            "--permission",
            "allow-once",
            "--cwd",
            cwd,
        ],
        width,
        40,
    )?;
    t.wait_for("Enter send");
    t.send(&["load", "Enter"]);
    t.wait_for(&format!("{calls} calls"));
    Some(t)
}

#[test]
fn the_first_calls_output_is_read_back_from_the_log_in_the_inspector() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = loaded(&dir, &["TRELLIS_HELD_OUTPUT=2000"], 300, 3, 120) else {
        return;
    };
    t.send(&["/status", "Enter"]);
    // The page ends with where output is held: scroll to it.
    t.wait_for("Status · extensions");
    t.send(&["PgDn", "PgDn"]);
    let s = t.wait_for("in the session log only:");
    let only: usize = s
        .split("in the session log only: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{s}"));
    assert!(only >= 250, "most calls' output left memory: {s}");
    t.send(&["Escape"]);
    // The latest call, then Tab wraps to the first: its output comes from the log.
    t.send(&["C-t"]);
    t.wait_for("Generate chunk 299 [300/300]");
    t.send(&["Tab"]);
    let s = t.wait_for("Generate chunk 0 [1/300]");
    assert!(
        s.contains("   0 0123456789 the quick brown fox jumps over the lazy dog"),
        "{s}"
    );
    assert!(s.contains("   2 0123456789 the quick brown fox"), "{s}");
    assert!(!s.contains("not available"), "{s}");
}

/// Past a few chunks of finished calls, whole calls leave memory for the spill file
/// (issue 11, part 5): `/status` counts them, and the first call still opens in the
/// inspector with its output (from the log) and its frames.
#[test]
fn finished_calls_leave_memory_and_still_open_in_the_inspector() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = loaded(&dir, &[], 2100, 2, 160) else {
        return;
    };
    t.send(&["/status", "Enter"]);
    t.wait_for("Status · extensions");
    t.send(&["PgDn", "PgDn"]);
    let s = t.wait_for("finished calls out of memory");
    let frozen: usize = s
        .lines()
        .find_map(|l| {
            let head = l.split(" finished calls out of memory").next()?;
            (head.len() < l.len()).then(|| head.split_whitespace().last()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("{s}"));
    assert!(frozen >= 1024, "whole chunks left memory: {s}");
    t.send(&["Escape"]);
    t.send(&["C-t"]);
    t.wait_for("Generate chunk 2099 [2100/2100]");
    t.send(&["Tab"]);
    let s = t.wait_for("Generate chunk 0 [1/2100]");
    assert!(
        s.contains("   1 0123456789 the quick brown fox jumps over the lazy dog"),
        "{s}"
    );
    assert!(
        !s.contains("not available") && !s.contains("could not be read"),
        "{s}"
    );
}
