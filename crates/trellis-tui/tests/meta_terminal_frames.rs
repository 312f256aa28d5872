//! Command output in a call's `_meta` (issue 12, item 9: Codex's adapter never uses
//! `terminal/create`): `terminal_output_delta` chunks become the call's terminal output,
//! live in its card, with `terminal_exit`'s code; the agent's bytes made harmless.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session, session_of, update};

#[test]
fn output_in_meta_is_the_calls_terminal_output() {
    let mut frames = new_session(vec![update(
        json!({"sessionUpdate":"tool_call","toolCallId":"call_1","title":"cargo test",
            "kind":"execute","status":"in_progress",
            "rawInput":{"command":["bash","-lc","cargo test"]}}),
    )]);
    for chunk in [
        "running 3 tests\n",
        "test a ... ok\ntest b ... ",
        "FAILED\n\u{1b}[31mtest c ... ok\u{1b}[0m\n",
    ] {
        frames.push(update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"call_1",
            "_meta":{"terminal_output_delta":{"terminal_id":"call_1","data":chunk}}}),
        ));
    }
    frames.push(update(
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call_1",
        "_meta":{"terminal_exit":{"terminal_id":"call_1","exit_code":101}}}),
    ));
    // Odd metadata: no id, no data, another key — ignored.
    frames.push(update(json!({"sessionUpdate":"tool_call_update","toolCallId":"call_1",
        "_meta":{"terminal_output_delta":{"data":"lost"},"terminal_exit":{"exit_code":1},"other":{}}})));
    frames.push(update(
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"failed"}),
    ));
    let s = session_of(frames);
    let term = &s.terminals["call_1"];
    assert_eq!(term.command, "bash -lc cargo test");
    assert!(
        term.output
            .starts_with("running 3 tests\ntest a ... ok\ntest b ... FAILED\n")
    );
    assert!(!term.output.contains("lost"));
    assert_eq!(term.exit.as_ref().unwrap().exit_code, Some(101));
    let call = s.ledger.get("call_1").unwrap();
    assert_eq!(
        call.content
            .iter()
            .filter(|c| matches!(c, trellis_core::tool_call::ToolContent::Terminal { .. }))
            .count(),
        1,
        "attached once"
    );
    let mut app = App::new(s, "codex".into(), false);
    app.theme = trellis_view::Theme::plain();
    let f = frame_text(&mut app, 100, 16);
    assert!(!f.contains('\u{1b}'), "{f}");
    insta::assert_snapshot!("meta_terminal_100x16", f);
}
