//! Queued prompts (issue 12, item 7): typed and sent while the agent works, they wait
//! above the prompt, numbered, in order; ↑ on an empty prompt takes the last one back to
//! edit. Text is drawn harmless. (Steering and sending at the turn's end are run against
//! the real binary in `crates/trellis/tests/it/replay_ui.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session, session_of, update};

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
}

#[test]
fn prompts_typed_while_the_agent_works_wait_above_the_prompt() {
    let s = session_of(new_session(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"fix the parser"}]}}),
        ),
        update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"cargo test","kind":"execute","status":"in_progress"}),
        ),
    ]));
    assert!(s.turn_open);
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    typed(&mut app, "then run clippy");
    typed(&mut app, "and update the \u{1b}[2Jchangelog");
    assert_eq!(app.queued.len(), 2);
    let f = frame_text(&mut app, 80, 20);
    assert!(!f.contains('\u{1b}'), "{f}");
    assert!(f.contains("queued 1/2 › then run clippy"), "{f}");
    insta::assert_snapshot!("queue_80x20", f);
    // ↑ takes the last one back into the prompt to edit; the first stays queued.
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    assert_eq!(app.queued.len(), 1);
    assert!(app.prompt.text.contains("changelog"));
    let f = frame_text(&mut app, 80, 20);
    assert!(f.contains("queued 1/1 › then run clippy"), "{f}");
    assert!(!f.contains("queued 2/2"), "{f}");
}
