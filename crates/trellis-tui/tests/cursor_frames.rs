//! The transcript cursor is visible on every kind of entry, not only on cards (issue 10,
//! item 10): j/k stop on messages and the user sees where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trellis_core::Session;
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{draw_marked, session_of};

fn session() -> Session {
    session_of(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"look around"}]}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"First I list the files."}}}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"tool_call","toolCallId":"ls","title":"ls","kind":"execute","status":"completed","rawInput":{"command":"ls"}}}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done looking."}}}}),
        ),
    ])
}

fn marked(app: &mut App) -> Vec<String> {
    let rows = draw_marked(app, 80, 16);
    let n = rows.len();
    rows.into_iter()
        .take(n - 1) // the status bar is drawn reversed
        .filter(|(_, m)| *m)
        .map(|(t, _)| t)
        .collect()
}

fn press(app: &mut App, code: KeyCode, mods: KeyModifiers) {
    app.on_key(KeyEvent::new(code, mods));
}

#[test]
fn the_cursor_shows_on_messages_and_cards() {
    let mut app = App::new(session(), "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    draw_marked(&mut app, 80, 16);
    // To the transcript (the turn is running: Ctrl-Up, Esc would cancel it): the cursor
    // starts on the latest card.
    press(&mut app, KeyCode::Up, KeyModifiers::CONTROL);
    let m = marked(&mut app);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("» ls"), "{m:?}");
    // j: the message after it is marked, the card is not.
    press(&mut app, KeyCode::Char('j'), KeyModifiers::NONE);
    let m = marked(&mut app);
    assert!(m.iter().any(|l| l.contains("Done looking.")), "{m:?}");
    assert!(!m.iter().any(|l| l.contains("» ls")), "{m:?}");
    // k twice: the first message.
    press(&mut app, KeyCode::Char('k'), KeyModifiers::NONE);
    press(&mut app, KeyCode::Char('k'), KeyModifiers::NONE);
    let m = marked(&mut app);
    assert!(
        m.iter().any(|l| l.contains("First I list the files.")),
        "{m:?}"
    );
}

/// A session with two calls: `ls`, then `cat` (the latest).
fn two_calls() -> Session {
    let mut s = session();
    trellis_core::update(
        &mut s,
        trellis_core::Action::Frame {
            seq: 100,
            t: 10.0,
            dir: Dir::AgentToClient,
            msg: trellis_core::wire::Message::parse(
                &json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
                "sessionUpdate":"tool_call","toolCallId":"cat","title":"cat","kind":"read","status":"completed"}}})
                .to_string(),
            )
            .unwrap(),
        },
    );
    s
}

#[test]
fn ctrl_t_inspects_the_latest_call_from_every_place() {
    use trellis_tui::app::Focus;
    let latest = |app: &App| {
        app.driver
            .session
            .ledger
            .at(app.inspector.unwrap().call)
            .id
            .clone()
    };
    for replay in [false, true] {
        let mut app = App::new(two_calls(), "demo".into(), replay);
        app.theme = trellis_view::Theme::plain();
        draw_marked(&mut app, 80, 16);
        // In the transcript, with the cursor on the older card.
        app.focus = Focus::Transcript;
        app.cursor = app
            .driver
            .session
            .transcript
            .iter()
            .position(|e| matches!(e, trellis_core::session::Entry::ToolCall { index: 0 }));
        assert!(app.cursor.is_some());
        press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
        assert_eq!(latest(&app), "cat", "replay={replay}");
        // Again inside the inspector: still the latest; Esc goes back to the transcript.
        press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
        assert_eq!(latest(&app), "cat");
        press(&mut app, KeyCode::Esc, KeyModifiers::NONE);
        assert!(app.inspector.is_none());
        assert_eq!(app.focus, Focus::Transcript);
    }
    // From the prompt: back to the prompt when closed.
    let mut app = App::new(two_calls(), "demo".into(), false);
    draw_marked(&mut app, 80, 16);
    app.focus = Focus::Prompt;
    press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(latest(&app), "cat");
    press(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(app.focus, Focus::Prompt);
}
