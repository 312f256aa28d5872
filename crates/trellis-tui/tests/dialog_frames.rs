//! The permission dialog when its question is taller than the screen: the answer keys
//! stay on screen and the question scrolls (issue 10, items 7 and 13).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trellis_core::Session;
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, session_of};

/// A session asking to edit a 40-line file, every line changed.
fn tall_question() -> Session {
    let old: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let new: String = (1..=40).map(|i| format!("LINE {i}\n")).collect();
    session_of(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"shout"}]}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"tool_call","toolCallId":"e","title":"Edit notes.txt","kind":"edit","status":"pending",
            "rawInput":{"path":"/w/notes.txt","old_string":"line","new_string":"LINE ```"},
            "content":[{"type":"diff","path":"/w/notes.txt","oldText":old,"newText":new}]}}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"S",
            "toolCall":{"toolCallId":"e"},
            "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},{"optionId":"n","name":"Reject","kind":"reject_once"}]}}),
        ),
    ])
}

fn press(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn a_tall_question_scrolls_and_the_keys_stay() {
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 50)] {
        let mut app = App::new(tall_question(), "demo".into(), false);
        app.theme = trellis_view::Theme::plain();
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("tall_dialog_{w}x{h}"), f);
        assert!(
            f.contains("[y] Allow") && f.contains("[Esc] cancel the turn"),
            "{f}"
        );
        assert!(f.contains("more lines"), "says there is more: {f}");
        // The arguments without fence lines (the Call view keeps them for copying).
        assert!(!f.contains("```json"), "{f}");
        assert!(f.contains(r#""new_string": "LINE ```""#), "{f}");
        // Down scrolls the question; the keys stay; the end is reachable.
        for _ in 0..200 {
            press(&mut app, KeyCode::Down);
        }
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("tall_dialog_{w}x{h}_end"), f);
        assert!(f.contains("+ LINE 40") && f.contains("[y] Allow"), "{f}");
        // On a wide screen the dialog's diff is side by side too.
        let beside = f
            .lines()
            .any(|l| l.contains("- line 40") && l.contains("+ LINE 40"));
        assert_eq!(beside, w >= 120, "{f}");
        assert!(!f.contains("kind: edit"), "scrolled past the top: {f}");
        // PageUp goes back; the top again after enough of them.
        for _ in 0..20 {
            press(&mut app, KeyCode::PageUp);
        }
        assert!(frame_text(&mut app, w, h).contains("kind: edit"));
        // The keys still answer.
        let intents = app.on_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
        assert_eq!(intents.len(), 1);
    }
}

/// The inspector's Diff view: numbered lines, unified on narrow screens and side by
/// side (old left, new right) on wide ones (issue 10, item 17).
#[test]
fn the_diff_view_is_side_by_side_when_wide() {
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 50)] {
        let mut app = App::new(tall_question(), "demo".into(), false);
        app.theme = trellis_view::Theme::plain();
        app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        app.on_key(KeyEvent::new(KeyCode::Char('D'), KeyModifiers::NONE));
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("diff_view_{w}x{h}"), f);
        assert!(f.contains("Tool Diff: Edit notes.txt"), "{f}");
        let beside = f
            .lines()
            .any(|l| l.contains("- line 1") && l.contains("+ LINE 1"));
        assert_eq!(beside, w >= 120, "side by side from 120 columns: {f}");
    }
}

/// The inspector's view is built once per call revision, view and width, not every
/// frame (issue 10, item 22: a large diff was diffed again for each frame).
#[test]
fn the_inspector_view_is_built_once_per_revision_view_and_width() {
    let mut app = App::new(tall_question(), "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    app.on_key(KeyEvent::new(KeyCode::Char('D'), KeyModifiers::NONE));
    let before = app.float_builds();
    for _ in 0..5 {
        frame_text(&mut app, 120, 40);
    }
    assert_eq!(app.float_builds(), before + 1, "five frames, one build");
    frame_text(&mut app, 100, 40);
    assert_eq!(app.float_builds(), before + 2, "a new width builds again");
    app.on_key(KeyEvent::new(KeyCode::Char('K'), KeyModifiers::NONE));
    frame_text(&mut app, 100, 40);
    frame_text(&mut app, 100, 40);
    assert_eq!(app.float_builds(), before + 3, "a new view builds once");
}

#[test]
fn the_call_view_keeps_fences_dim_and_highlights_the_json() {
    let s = tall_question();
    let call = s.ledger.calls().next().unwrap();
    let theme = trellis_view::Theme::default();
    let lines = trellis_view::inspector::call_lines(&call, 80, &theme);
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    // The fence is longer than the backticks in the arguments, as in the copied text.
    assert_eq!(text.first().map(String::as_str), Some("````json"));
    assert_eq!(text.last().map(String::as_str), Some("````"));
    for fence in [lines.first().unwrap(), lines.last().unwrap()] {
        assert!(
            fence.spans.iter().all(|s| s.style == theme.dim) || fence.style == theme.dim,
            "fences are dim: {fence:?}"
        );
    }
    // The JSON between is highlighted: more than one colour on a key-value line.
    let kv = lines
        .iter()
        .find(|l| l.to_string().contains("\"path\""))
        .unwrap();
    let styles: std::collections::HashSet<_> = kv.spans.iter().map(|s| s.style).collect();
    assert!(styles.len() > 1, "{kv:?}");
    assert_eq!(
        trellis_view::inspector::call_view_text(&call)
            .lines()
            .next(),
        Some("````json")
    );
}
