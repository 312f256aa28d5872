//! The status bar and the prompt's completion popup (issue 10, items 6 and 16): a short
//! message is never pushed out by decorations, the session's cwd is shown, and Tab's
//! candidates appear above the prompt instead of one being picked silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trellis_core::Session;
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, session_of};

/// A busy session: usage with cost, a plan, a long title, a turn running, a cwd.
fn busy() -> Session {
    let mut s = session_of(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"usage_update","used":123456,"size":200000,"cost":{"amount":1.25,"currency":"USD"}}}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"plan","entries":[{"content":"A","priority":"high","status":"completed"},{"content":"B","priority":"high","status":"pending"}]}}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"session_info_update","title":"Refactor the payment module and its tests"}}}),
        ),
    ]);
    s.cwd = Some("/srv/projects/shop/backend".into());
    s
}

fn last_line(frame: &str) -> &str {
    frame.lines().last().unwrap_or("")
}

#[test]
fn a_message_is_never_pushed_out_of_a_full_status_bar() {
    for w in [40u16, 80, 120] {
        let mut app = App::new(busy(), "claude".into(), false);
        app.theme = trellis_view::Theme::plain();
        let f = frame_text(&mut app, w, 12);
        let bar = last_line(&f);
        assert!(bar.starts_with(" claude │"), "{bar}");
        if w >= 120 {
            assert!(bar.contains("shop/backend"), "the cwd shows: {bar}");
        }
        app.message = Some("press Ctrl-C again to quit".into());
        let f = frame_text(&mut app, w, 12);
        let bar = last_line(&f).to_string();
        insta::assert_snapshot!(format!("status_message_{w}"), bar);
        assert!(bar.contains("press Ctrl-C again to quit"), "{bar}");
        assert!(bar.starts_with(" claude"), "{bar}");
    }
}

#[test]
fn tab_shows_the_candidates_above_the_prompt() {
    let mut app = App::new(busy(), "claude".into(), false);
    app.theme = trellis_view::Theme::plain();
    for c in "/s".chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    for (w, h) in [(120u16, 40u16), (200, 50)] {
        insta::assert_snapshot!(
            format!("completion_popup_{w}x{h}"),
            frame_text(&mut app, w, h)
        );
    }
    let f = frame_text(&mut app, 80, 24);
    insta::assert_snapshot!("completion_popup_80x24", f);
    assert!(f.contains("matches · Tab cycles"), "{f}");
    assert!(f.contains("/settings") && f.contains("/status"), "{f}");
    // Tab again moves to the next candidate; the popup follows; any other key closes it.
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    let (cands, sel) = app.prompt.popup.clone().unwrap();
    assert_eq!(sel, Some(1));
    assert!(app.prompt.text.starts_with(&cands[1]));
    app.on_key(KeyEvent::new(KeyCode::Char(' '), KeyModifiers::NONE));
    assert!(app.prompt.popup.is_none());
    assert!(!frame_text(&mut app, 80, 24).contains("Tab cycles"));
}
