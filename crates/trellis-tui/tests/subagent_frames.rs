//! A child session's tree (issue 12, item 4): the card of the call that started a subagent
//! shows its state, its latest calls and its last words; its permission request opens the
//! dialog on that card, saying which child asks; the inspector tells the child's story,
//! steps into its calls (`]s`, Tab among them) and back (`[s`). The child's text is made
//! harmless.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session, session_of, update};

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn child(u: Value) -> (Dir, Value) {
    (
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"K","update":u}}),
    )
}

fn frames() -> Vec<(Dir, Value)> {
    let text = |t: &str| json!([{"type":"content","content":{"type":"text","text":t}}]);
    let mut v = vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"fix the TODOs"}]}}),
        ),
        update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Delegating."}}),
        ),
        update(
            json!({"sessionUpdate":"subagent_update","sessionId":"K","title":"Explorer \u{1b}[2J",
            "description":"Finds the TODOs","state":{"state":"running"}}),
        ),
        update(
            json!({"sessionUpdate":"tool_call","toolCallId":"task","title":"Delegate: fix the TODOs",
            "kind":"other","status":"in_progress","content":[{"type":"session","sessionId":"K"}],
            "rawInput":{"prompt":"fix the TODOs"}}),
        ),
        update(
            json!({"sessionUpdate":"session_message","messageId":"m","senderSessionId":"S",
            "recipientSessionId":"K","content":[{"type":"text","text":"Fix the TODOs in src/."}]}),
        ),
        child(
            json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Read, then search."}}),
        ),
    ];
    for i in 0..6 {
        v.push(child(
            json!({"sessionUpdate":"tool_call","toolCallId":format!("r{i}"),
            "title":format!("Read src/m{i}.rs"),"kind":"read","status":"completed",
            "content":text(&format!("mod m{i};\n"))}),
        ));
    }
    v.push(child(
        json!({"sessionUpdate":"tool_call","toolCallId":"e","title":"Edit src/lib.rs",
        "kind":"edit","status":"pending","rawInput":{"path":"src/lib.rs"},
        "content":[{"type":"diff","path":"src/lib.rs","oldText":"// TODO\na\n","newText":"a\n"}]}),
    ));
    v.push(child(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"One TODO left \u{1b}]0;x\u{7}in lib.rs."}})));
    v.push(update(json!({"sessionUpdate":"subagent_update","sessionId":"K","state":{"state":"requires_action"}})));
    v.push((
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{
            "sessionId":"K","toolCall":{"toolCallId":"e","title":"Edit src/lib.rs","kind":"edit"},
            "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},
                       {"optionId":"n","name":"Reject","kind":"reject_once"}]}}),
    ));
    new_session(v)
}

#[test]
fn a_child_sessions_tree_card_its_permission_and_its_story() {
    let mut app = App::new(session_of(frames()), "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    // The dialog names the child and the call that started it; the card behind it shows
    // the tree.
    let f = frame_text(&mut app, 90, 40);
    assert!(!f.contains('\u{1b}') && !f.contains('\u{7}'), "{f}");
    assert!(f.contains("asked by subagent Explorer"), "{f}");
    insta::assert_snapshot!("subagent_permission_90x40", f);
    // Answered: the tree card alone (the answer is the reducer's to record; here the
    // dialog is dismissed by deciding).
    app.on_key(key('y'));
    let mut s = session_of(frames());
    trellis_core::update(
        &mut s,
        trellis_core::Action::Frame {
            seq: 100,
            t: 30.0,
            dir: Dir::ClientToAgent,
            msg: trellis_core::wire::Message::parse(
                &json!({"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"y"}}})
                    .to_string(),
            )
            .unwrap(),
        },
    );
    for (i, u) in [
        child(json!({"sessionUpdate":"tool_call_update","toolCallId":"e","status":"completed"})),
        update(json!({"sessionUpdate":"subagent_update","sessionId":"K","state":{"state":"idle","stopReason":"end_turn"}})),
    ]
    .into_iter()
    .enumerate()
    {
        trellis_core::update(
            &mut s,
            trellis_core::Action::Frame {
                seq: 101 + i as u64,
                t: 31.0 + i as f64,
                dir: u.0,
                msg: trellis_core::wire::Message::parse(&u.1.to_string()).unwrap(),
            },
        );
    }
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    let f = frame_text(&mut app, 90, 24);
    assert!(f.contains("… 2 earlier calls"), "{f}");
    insta::assert_snapshot!("subagent_tree_90x24", f);
    // The inspector on the delegating call: the child's story.
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    let ins = app.inspector.unwrap();
    assert_eq!(
        app.driver.session.ledger.at(ins.call).id,
        "task",
        "the latest of the session's own calls"
    );
    insta::assert_snapshot!("subagent_story_90x30", frame_text(&mut app, 90, 30));
    // ]s: into the child's first call; Tab steps among the child's calls only.
    app.on_key(key(']'));
    app.on_key(key('s'));
    let f = frame_text(&mut app, 90, 12);
    assert!(
        f.contains("⤷ Explorer") && f.contains("Read src/m0.rs [1/7]"),
        "{f}"
    );
    for _ in 0..6 {
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    }
    let f = frame_text(&mut app, 90, 12);
    assert!(f.contains("Edit src/lib.rs [7/7]"), "{f}");
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert!(frame_text(&mut app, 90, 12).contains("Read src/m0.rs [1/7]"));
    // [s: back to the call that started it; ]s on a call without a child says so.
    app.on_key(key('['));
    app.on_key(key('s'));
    let f = frame_text(&mut app, 90, 12);
    assert!(
        f.contains("Tool Result: Delegate: fix the TODOs [1/1]"),
        "{f}"
    );
    app.on_key(key('['));
    app.on_key(key('s'));
    assert_eq!(
        app.message.as_deref(),
        Some("this call is not a subagent's")
    );
}
