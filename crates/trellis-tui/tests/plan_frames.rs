//! Several plans at once (issue 12, item 5): the legacy whole plan beside plans the agent
//! keeps by id — a checklist, Markdown, a file — updated and removed in place above the
//! prompt while the turn runs; the status bar counts every checklist. The agent's text
//! is made harmless.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session, session_of, update};

fn frames(more: Vec<(Dir, Value)>) -> Vec<(Dir, Value)> {
    let mut v = new_session(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
        update(json!({"sessionUpdate":"plan","entries":[
            {"content":"Legacy step","priority":"high","status":"completed"},
            {"content":"Another \u{1b}[2Jstep","priority":"high","status":"pending"}]})),
        update(
            json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"fix","entries":[
            {"content":"Write the failing test","priority":"medium","status":"completed"},
            {"content":"Fix the parser","priority":"medium","status":"in_progress"},
            {"not an entry": true}]}}),
        ),
        update(
            json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"design",
            "content":"# Design\n\n- Parse lazily\n- Keep spans\n- 3\n- 4\n- 5\n- 6\n- 7\n- 8\n"}}),
        ),
        update(
            json!({"sessionUpdate":"plan_update","plan":{"type":"file","planId":"notes",
            "uri":"file:///home/dev/app/PLAN.md"}}),
        ),
        update(json!({"sessionUpdate":"plan_update","plan":{"type":"hologram","planId":"odd"}})),
        update(json!({"sessionUpdate":"plan_update","plan":{"type":"items"}})),
    ]);
    v.extend(more);
    v
}

#[test]
fn several_plans_above_the_prompt_and_their_removal() {
    let s = session_of(frames(vec![]));
    assert_eq!(
        s.plans.len(),
        3,
        "unknown kinds and plans without an id are skipped"
    );
    assert_eq!(s.plan_progress(), (2, 4), "legacy and checklists counted");
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    let f = frame_text(&mut app, 100, 40);
    assert!(!f.contains('\u{1b}'), "{f}");
    assert!(f.contains("plan 2/4"), "status bar: {f}");
    insta::assert_snapshot!("plans_100x40", f);

    // Replaced in place, then removed; after the turn only unfinished checklists stay.
    let s = session_of(frames(vec![
        update(
            json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"fix","entries":[
            {"content":"Write the failing test","priority":"medium","status":"completed"},
            {"content":"Fix the parser","priority":"medium","status":"completed"}]}}),
        ),
        update(json!({"sessionUpdate":"plan_removed","planId":"design"})),
        update(json!({"sessionUpdate":"plan_removed","planId":"never-was"})),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
        ),
    ]));
    assert_eq!(
        s.plans.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["fix", "notes"]
    );
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    let f = frame_text(&mut app, 100, 40);
    assert!(f.contains("Plan 1/2"), "the legacy plan is unfinished: {f}");
    assert!(
        !f.contains("Plan fix"),
        "a finished checklist goes after the turn: {f}"
    );
    assert!(
        !f.contains("Plan design") && !f.contains("Plan notes"),
        "{f}"
    );
}
