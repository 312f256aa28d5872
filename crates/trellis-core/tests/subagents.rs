//! Subagents (issue 12, item 4): child sessions announced with `subagent_update` become a
//! tree in the ledger — their calls under their own ids, their messages in their own
//! transcript, their permission requests attributed and answered — and `log show`'s text
//! draws the tree.
#![allow(clippy::unwrap_used)]

mod common;

use common::{frame, session};
use serde_json::{Value, json};
use trellis_core::event::EventBody;
use trellis_core::session::Entry;
use trellis_core::tool_call::ToolContent;
use trellis_core::wire::Dir;
use trellis_core::{Effect, Session, update};

fn on(s: &mut Session, seq: u64, sid: &str, u: Value) -> Vec<EventBody> {
    events(update(
        s,
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":sid,"update":u}}),
        ),
    ))
}

fn events(fx: Vec<Effect>) -> Vec<EventBody> {
    fx.into_iter()
        .filter_map(|e| match e {
            Effect::Emit(ev) => Some(ev.body),
            _ => None,
        })
        .collect()
}

fn warnings(ev: &[EventBody]) -> Vec<String> {
    ev.iter()
        .filter_map(|e| match e {
            EventBody::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The frames of a parent that delegates to child `kid`: the announcement, a call naming
/// it, a message to it, the child's thought, two calls (one with the parent's call id),
/// the child's answer and its idle state.
fn delegation(s: &mut Session) -> Vec<EventBody> {
    let mut all = Vec::new();
    let mut seq = 10;
    let mut push = |s: &mut Session, sid: &str, u: Value| {
        seq += 1;
        all.extend(on(s, seq, sid, u));
    };
    push(
        s,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid","title":"Explorer",
            "description":"Finds things","state":{"state":"running"},"capabilities":{"cancel":{}}}),
    );
    push(
        s,
        "s1",
        json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Delegate","kind":"other",
            "status":"in_progress","content":[{"type":"session","sessionId":"kid"}]}),
    );
    push(
        s,
        "s1",
        json!({"sessionUpdate":"session_message","messageId":"m1","senderSessionId":"s1",
            "recipientSessionId":"kid","content":[{"type":"text","text":"Look for TODOs"}]}),
    );
    push(
        s,
        "s1",
        json!({"sessionUpdate":"session_message_chunk","messageId":"m1",
            "content":{"type":"text","text":" in src/"}}),
    );
    push(
        s,
        "kid",
        json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Reading first"}}),
    );
    // The child's first call has the parent's call id: it is another call.
    push(
        s,
        "kid",
        json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read a.rs","kind":"read","status":"completed"}),
    );
    push(
        s,
        "kid",
        json!({"sessionUpdate":"tool_call","toolCallId":"k2","title":"Edit a.rs","kind":"edit","status":"pending"}),
    );
    push(
        s,
        "kid",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Found one"}}),
    );
    push(
        s,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid","state":{"state":"idle","stopReason":"end_turn"}}),
    );
    all
}

#[test]
fn a_child_is_a_tree_under_the_call_that_started_it() {
    let mut s = session();
    let ev = delegation(&mut s);
    assert!(warnings(&ev).is_empty(), "{:?}", warnings(&ev));
    assert_eq!(s.subagents.list.len(), 1);
    let kid = &s.subagents.list[0];
    assert_eq!(kid.label(), "Explorer");
    assert_eq!(kid.description.as_deref(), Some("Finds things"));
    assert_eq!(kid.state.as_deref(), Some("idle"));
    assert_eq!(kid.stop_reason.as_deref(), Some("end_turn"));
    assert!(kid.can_cancel);
    assert_eq!(kid.call_id.as_deref(), Some("t1"));
    assert_eq!(kid.calls, 2);
    assert_eq!(kid.last_message(), Some("Found one"));
    // Three calls: the parent's t1, and the child's own t1 and k2.
    assert_eq!(s.ledger.len(), 3);
    let parent_t1 = s.call_position(None, "t1").unwrap();
    let child_t1 = s.call_position(Some("kid"), "t1").unwrap();
    assert_ne!(parent_t1, child_t1);
    assert_eq!(s.ledger.at(parent_t1).title, "Delegate");
    assert_eq!(s.ledger.at(child_t1).title, "Read a.rs");
    assert_eq!(s.ledger.at(child_t1).subagent.as_deref(), Some("kid"));
    assert!(
        s.ledger
            .at(parent_t1)
            .content
            .contains(&ToolContent::Session {
                session_id: "kid".into()
            })
    );
    // The session's own transcript holds the parent's call and the announcement; the
    // child's thought, calls and message are in the child's.
    let top: Vec<&Entry> = s
        .transcript
        .iter()
        .filter(|e| !matches!(e, Entry::Message(_)))
        .collect();
    assert!(matches!(
        top[..],
        [Entry::Subagent { index: 0 }, Entry::ToolCall { .. }]
    ));
    assert_eq!(s.subagents.list[0].entries.len(), 4);
    assert_eq!(
        s.subagents.list[0].call_indices().collect::<Vec<_>>(),
        vec![child_t1, s.call_position(Some("kid"), "k2").unwrap()]
    );
    // The message between them, joined.
    assert_eq!(s.subagents.messages.len(), 1);
    assert_eq!(s.subagents.messages[0].text, "Look for TODOs in src/");
    assert_eq!(s.subagents.messages[0].recipient.as_deref(), Some("kid"));
    // The call that shows a child's call is the one that started the child.
    assert_eq!(s.shown_call(child_t1), Some(parent_t1));
    // Events: the child's chunks and calls name it.
    assert!(ev.iter().any(|e| matches!(e,
        EventBody::MessageChunk { subagent: Some(k), text, .. } if &**k == "kid" && text == "Found one")));
    assert!(ev.iter().any(|e| matches!(e,
        EventBody::ToolCallCreated { call } if call.subagent.as_deref() == Some("kid") && call.id == "t1")));
    let last = ev
        .iter()
        .rev()
        .find_map(|e| match e {
            EventBody::Subagent { subagent } => Some(subagent.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(last.state.as_deref(), Some("idle"));
    // `log show`'s text rebuilds the tree: the child under the call that started it.
    let text = trellis_core::summary::transcript_text(&s);
    let delegate = text.find("Delegate").unwrap();
    let head = text
        .find("⤷ subagent Explorer · idle (end_turn) · 2 calls")
        .unwrap();
    let read = text.find("    ✓ read    Read a.rs").unwrap();
    assert!(delegate < head && head < read, "{text}");
}

#[test]
fn a_childs_permission_request_is_attributed_and_answered_once() {
    let mut s = session();
    delegation(&mut s);
    let ev = events(update(
        &mut s,
        frame(
            40,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{
                "sessionId":"kid","toolCall":{"toolCallId":"k2","title":"Edit a.rs","kind":"edit"},
                "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},
                           {"optionId":"n","name":"Reject","kind":"reject_once"}]}}),
        ),
    ));
    assert!(warnings(&ev).is_empty(), "{:?}", warnings(&ev));
    let k2 = s.call_position(Some("kid"), "k2").unwrap();
    assert!(ev.iter().any(|e| matches!(e,
        EventBody::PermissionRequested { call_id, subagent: Some(k), .. } if call_id == "k2" && &**k == "kid")));
    // No new call: the child's own k2 carries the request.
    assert_eq!(s.ledger.len(), 3);
    assert_eq!(s.ledger.at(k2).permissions.len(), 1);
    let pending = s.pending_permissions();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].1, k2);
    // Answered by the user: one answer; a second is refused.
    let fx = update(
        &mut s,
        trellis_core::Action::Decide {
            t: 41.0,
            request_id: "7".into(),
            choice: trellis_core::Choice::Option("y".into()),
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert_eq!(
        fx.iter()
            .filter(|e| matches!(e, Effect::Answer { .. }))
            .count(),
        1
    );
    let again = update(
        &mut s,
        trellis_core::Action::Decide {
            t: 41.5,
            request_id: "7".into(),
            choice: trellis_core::Choice::Option("n".into()),
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert!(!again.iter().any(|e| matches!(e, Effect::Answer { .. })));
    let ev = events(update(
        &mut s,
        frame(
            42,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"y"}}}),
        ),
    ));
    assert!(ev.iter().any(|e| matches!(e,
        EventBody::PermissionResolved { call_id, subagent: Some(k), .. } if call_id == "k2" && &**k == "kid")));
    assert!(s.open_permissions().is_empty());
    assert!(s.ledger.at(k2).permissions[0].outcome.is_some());
}

#[test]
fn sessions_nobody_announced_stay_foreign() {
    let mut s = session();
    delegation(&mut s);
    let ev = on(
        &mut s,
        50,
        "stranger",
        json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"rm -rf","kind":"execute"}),
    );
    assert_eq!(s.ledger.len(), 3, "not applied");
    assert!(warnings(&ev).iter().any(|w| w.contains("another session")));
    let ev = events(update(
        &mut s,
        frame(
            51,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{
                "sessionId":"stranger","toolCall":{"toolCallId":"x"},
                "options":[{"optionId":"y","name":"Allow","kind":"allow_once"}]}}),
        ),
    ));
    assert!(
        warnings(&ev)
            .iter()
            .any(|w| w.contains("not this session's"))
    );
    assert!(s.pending_permissions().is_empty());
    // A stranger cannot announce a child, nor can a session be its own child, nor can a
    // child be taken over by another parent.
    on(
        &mut s,
        52,
        "stranger",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid2"}),
    );
    let own = on(
        &mut s,
        53,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"s1"}),
    );
    assert!(warnings(&own).iter().any(|w| w.contains("own subagent")));
    on(
        &mut s,
        54,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid-b"}),
    );
    let steal = on(
        &mut s,
        55,
        "kid-b",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid"}),
    );
    assert!(
        warnings(&steal)
            .iter()
            .any(|w| w.contains("another session"))
    );
    assert_eq!(s.subagents.list.len(), 2);
    assert_eq!(s.subagents.list[0].parent, None);
    // What a child says about the session's settings is not the session's.
    let ev = on(
        &mut s,
        56,
        "kid",
        json!({"sessionUpdate":"current_mode_update","currentModeId":"yolo"}),
    );
    assert_eq!(s.mode, None);
    assert!(warnings(&ev).iter().any(|w| w.contains("from a subagent")));
}

#[test]
fn nesting_is_followed_to_a_bound_and_patches_keep_what_they_omit() {
    let mut s = session();
    let mut parent = "s1".to_string();
    for d in 0..12 {
        let kid = format!("k{d}");
        on(
            &mut s,
            100 + d,
            &parent,
            json!({"sessionUpdate":"subagent_update","sessionId":kid,"title":format!("level {d}")}),
        );
        parent = kid;
    }
    assert_eq!(s.subagents.list.len(), trellis_core::subagents::MAX_DEPTH);
    assert_eq!(
        s.subagents.list[1].parent.as_deref(),
        Some("k0"),
        "a child's child"
    );
    // Omitted fields stay; null clears.
    on(
        &mut s,
        200,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"k0","description":"d"}),
    );
    assert_eq!(s.subagents.list[0].title.as_deref(), Some("level 0"));
    on(
        &mut s,
        201,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"k0","title":null,"state":{"state":"_waiting"}}),
    );
    assert_eq!(s.subagents.list[0].title, None);
    assert_eq!(s.subagents.list[0].label(), "d");
    assert_eq!(s.subagents.list[0].state.as_deref(), Some("_waiting"));
    // A grandchild's call is shown by the outermost call up the tree.
    on(
        &mut s,
        202,
        "s1",
        json!({"sessionUpdate":"tool_call","toolCallId":"a","content":[{"type":"session","sessionId":"k0"}]}),
    );
    on(
        &mut s,
        203,
        "k0",
        json!({"sessionUpdate":"tool_call","toolCallId":"b","content":[{"type":"session","sessionId":"k1"}]}),
    );
    on(
        &mut s,
        204,
        "k1",
        json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"deep"}),
    );
    let c = s.call_position(Some("k1"), "c").unwrap();
    assert_eq!(s.shown_call(c), s.call_position(None, "a"));
    // A call that names its own session shows nothing (no loop).
    on(
        &mut s,
        205,
        "k0",
        json!({"sessionUpdate":"tool_call","toolCallId":"self","content":[{"type":"session","sessionId":"k0"}]}),
    );
    let me = s.call_position(Some("k0"), "self").unwrap();
    assert!(s.subagents.for_call(&s.ledger.at(me)).is_none());
    let text = trellis_core::summary::transcript_text(&s);
    assert!(text.contains("deep"), "{text}");
}

#[test]
fn cancelling_a_child_stops_only_its_work_and_only_when_the_agent_allows() {
    let mut s = session();
    delegation(&mut s);
    // The child is idle after the delegation: working again, with a request open.
    on(
        &mut s,
        60,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid","state":{"state":"running"}}),
    );
    update(
        &mut s,
        frame(
            61,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":8,"method":"session/request_permission","params":{
                "sessionId":"kid","toolCall":{"toolCallId":"k2"},
                "options":[{"optionId":"y","name":"Allow","kind":"allow_once"}]}}),
        ),
    );
    let fx = update(
        &mut s,
        trellis_core::Action::CancelSubagent {
            t: 62.0,
            session_id: "kid".into(),
        },
    );
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::CancelSubagent { session_id } if session_id == "kid"))
    );
    // The cancel on the wire: the child's open call and request end; the parent's go on.
    let fx = update(
        &mut s,
        frame(
            63,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"kid"}}),
        ),
    );
    let k2 = s.call_position(Some("kid"), "k2").unwrap();
    assert_eq!(s.ledger.at(k2).status, trellis_core::ToolStatus::Cancelled);
    let t1 = s.call_position(None, "t1").unwrap();
    assert_eq!(s.ledger.at(t1).status, trellis_core::ToolStatus::InProgress);
    assert!(s.turn_open);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Answer { request_id, .. } if request_id == "8"))
    );
    // A child whose agent does not allow it is not cancelled.
    on(
        &mut s,
        64,
        "s1",
        json!({"sessionUpdate":"subagent_update","sessionId":"kid","capabilities":null}),
    );
    let fx = update(
        &mut s,
        trellis_core::Action::CancelSubagent {
            t: 65.0,
            session_id: "kid".into(),
        },
    );
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::CancelSubagent { .. }))
    );
    assert!(
        warnings(&events(fx))
            .iter()
            .any(|w| w.contains("does not let"))
    );
}
