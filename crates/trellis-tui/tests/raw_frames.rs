//! The inspector's Raw view reads the call's own frames from the session log by offset,
//! never the whole log (issue 10, item 21): it shows the same frames while the log keeps
//! growing with other calls' lines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trellis_core::{Policy, Session};
use trellis_tui::App;

mod common;
use common::frame_text;

fn press(app: &mut App, c: char) {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

#[test]
fn the_raw_view_reads_its_frames_while_the_log_grows() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::copy(&fixture, &log).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let mut s = Session::new(Policy::Ask);
    trellis_core::log::rebuild(&mut s, text.lines(), |_| {});
    let mut app = App::new(s, "claude".into(), true);
    app.theme = trellis_view::Theme::plain();
    app.log_path = Some(log.clone());
    // The first call, Raw view.
    frame_text(&mut app, 120, 40);
    app.cursor = Some(app.view.entry_of_call(0).unwrap());
    press(&mut app, 'g');
    press(&mut app, 'T');
    press(&mut app, 'R');
    let first = frame_text(&mut app, 120, 40);
    assert!(first.contains("Tool Frames: "), "{first}");
    assert!(first.contains("── frame "), "{first}");
    let frames = app.call_frames(0).unwrap();
    assert_eq!(frames.len(), app.driver.session.ledger.frames(0).len());
    for (seq, line) in &frames {
        assert_eq!(text.lines().nth(*seq as usize - 1).unwrap(), line);
    }
    // The log grows by other lines (a long session): the view is the same.
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for i in 0..20_000 {
        writeln!(f, "{{\"other\":{i}}}").unwrap();
    }
    drop(f);
    assert_eq!(frame_text(&mut app, 120, 40), first);
    assert_eq!(app.call_frames(0).unwrap(), frames);
}
