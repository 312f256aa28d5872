//! Elicitations through the reducer: asked, checked, answered exactly once whoever answers
//! (the user, a cancel, the agent withdrawing it, the agent exiting), refused when hostile,
//! and rebuilt the same from the session log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use trellis_core::wire::Dir;
use trellis_core::{
    Action, Decider, Effect, ElicitAnswer, EventBody, LocalRecord, Policy, Session, update,
};

mod common;
use common::{frame, session};

fn ask(seq: u64, id: u64, params: Value) -> Action {
    frame(
        seq,
        Dir::AgentToClient,
        json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params}),
    )
}

fn form(seq: u64, id: u64) -> Action {
    ask(
        seq,
        id,
        json!({"sessionId": "s1", "mode": "form", "message": "Which version?",
            "requestedSchema": {"type": "object", "title": "Release", "properties": {
                "version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
                "shards": {"type": "integer", "minimum": 1}},
            "required": ["version"]}}),
    )
}

fn elicit(id: u64, answer: ElicitAnswer) -> Action {
    Action::Elicit {
        t: 50.0,
        request_id: id.to_string(),
        answer,
        decider: Decider::User,
    }
}

fn content(v: Value) -> ElicitAnswer {
    ElicitAnswer::Accept(v.as_object().unwrap().clone())
}

/// The answers the reducer asked the connection to send: (request id, answer as JSON).
fn answers(fx: &[Effect]) -> Vec<(String, Value)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Elicit {
                request_id, answer, ..
            } => Some((request_id.clone(), answer.to_json())),
            _ => None,
        })
        .collect()
}

fn events(fx: &[Effect]) -> Vec<&EventBody> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Emit(ev) => Some(&ev.body),
            _ => None,
        })
        .collect()
}

fn warned(fx: &[Effect]) -> bool {
    events(fx)
        .iter()
        .any(|b| matches!(b, EventBody::Warning { .. }))
}

/// The client's answer as it goes out on the wire, and the record of who decided.
fn sent(s: &mut Session, seq: u64, id: u64, result: Value) -> Vec<Effect> {
    update(
        s,
        Action::Local {
            t: seq as f64,
            record: Box::new(LocalRecord::ElicitationDecided {
                request_id: id.to_string(),
                decider: Decider::User,
            }),
        },
    );
    update(
        s,
        frame(
            seq,
            Dir::ClientToAgent,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        ),
    )
}

#[test]
fn a_form_is_answered_once_with_content_the_form_accepts() {
    let mut s = session();
    let fx = update(&mut s, form(10, 5));
    assert!(events(&fx).iter().any(|b| matches!(b,
        EventBody::ElicitationRequested { elicitation } if elicitation.request_id == "5")));
    assert_eq!(s.pending_elicitations().count(), 1);
    // Content the form refuses is not sent: the request stays open.
    for bad in [
        json!({"version": "one"}),
        json!({"shards": 2}),
        json!({"version": "1.2", "shards": 0}),
        json!({"version": "1.2", "other": true}),
    ] {
        let fx = update(&mut s, elicit(5, content(bad.clone())));
        assert!(answers(&fx).is_empty(), "{bad} was sent");
        assert!(warned(&fx), "{bad}");
    }
    // Whole numbers of integer fields go out as integers.
    let fx = update(
        &mut s,
        elicit(5, content(json!({"version": "1.2", "shards": 3.0}))),
    );
    assert_eq!(
        answers(&fx),
        [(
            "5".to_string(),
            json!({"action": "accept", "content": {"version": "1.2", "shards": 3}})
        )]
    );
    assert_eq!(s.pending_elicitations().count(), 0);
    // Answered: a second answer, or a cancel of the turn, sends nothing more.
    assert!(answers(&update(&mut s, elicit(5, ElicitAnswer::Decline))).is_empty());
    let cancel = frame(
        20,
        Dir::ClientToAgent,
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
    );
    assert!(answers(&update(&mut s, cancel)).is_empty());
    // The answer on the wire closes it, with who decided.
    let fx = sent(
        &mut s,
        21,
        5,
        json!({"action": "accept", "content": {"version": "1.2", "shards": 3}}),
    );
    assert!(events(&fx).iter().any(|b| matches!(b,
        EventBody::ElicitationResolved { request_id, action, decider: Decider::User, content: Some(_) }
            if request_id == "5" && action == "accept")));
    assert!(s.elicitations.is_empty());
    assert!(
        trellis_core::summary::transcript_text(&s).contains("form \"Release\" accepted (user)")
    );
}

#[test]
fn cancels_withdrawals_and_exits_answer_each_open_question_once() {
    let mut s = session();
    update(&mut s, form(10, 1));
    update(&mut s, form(11, 2));
    update(&mut s, form(12, 3));
    // The user cancels the turn: every question nobody answered yet is answered `cancel`.
    update(&mut s, elicit(1, ElicitAnswer::Decline));
    let cancel = frame(
        13,
        Dir::ClientToAgent,
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
    );
    let fx = update(&mut s, cancel);
    let mut got = answers(&fx);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        [
            ("2".to_string(), json!({"action": "cancel"})),
            ("3".to_string(), json!({"action": "cancel"}))
        ]
    );
    // The agent withdraws a question: answered `cancel`, once.
    update(&mut s, form(14, 4));
    let withdraw = |seq| {
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}}),
        )
    };
    assert_eq!(
        answers(&update(&mut s, withdraw(15))),
        [("4".to_string(), json!({"action": "cancel"}))]
    );
    assert!(answers(&update(&mut s, withdraw(16))).is_empty());
    // The agent exits with questions open (sent or not): each is closed once, as cancel.
    update(&mut s, form(17, 6));
    let fx = update(
        &mut s,
        Action::Local {
            t: 18.0,
            record: Box::new(LocalRecord::AgentExited {
                code: Some(1),
                message: "crashed".into(),
            }),
        },
    );
    let closed: Vec<_> = events(&fx)
        .into_iter()
        .filter_map(|b| match b {
            EventBody::ElicitationResolved {
                request_id, action, ..
            } => Some((request_id.clone(), action.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(closed.len(), 5, "{closed:?}");
    assert!(closed.iter().all(|(_, a)| a == "cancel"));
    assert!(s.elicitations.is_empty());
    assert!(answers(&update(&mut s, elicit(6, ElicitAnswer::Decline))).is_empty());
}

#[test]
fn hostile_questions_are_refused_and_never_shown() {
    let mut s = session();
    for (id, params) in [
        (
            1,
            json!({"sessionId": "s2", "mode": "form", "message": "x", "requestedSchema": {"properties": {}}}),
        ),
        (
            2,
            json!({"sessionId": "s1", "mode": "telepathy", "message": "x"}),
        ),
        (
            3,
            json!({"sessionId": "s1", "mode": "form", "message": "x", "requestedSchema": {"properties": [1]}}),
        ),
        (4, json!({"sessionId": "s1", "mode": "url", "message": "x"})),
        (5, json!([1, 2])),
    ] {
        let fx = update(&mut s, ask(10 + id, id, params.clone()));
        assert!(warned(&fx), "{params}");
        assert!(
            !events(&fx)
                .iter()
                .any(|b| matches!(b, EventBody::ElicitationRequested { .. })),
            "{params}"
        );
    }
    assert_eq!(s.elicitations.len(), 0);
    // A mode the client did not offer (it said forms only): refused too.
    update(
        &mut s,
        frame(
            20,
            Dir::ClientToAgent,
            json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {
                "protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}}}),
        ),
    );
    let link = json!({"sessionId": "s1", "mode": "url", "message": "Sign in",
        "elicitationId": "e", "url": "https://example.com"});
    let fx = update(&mut s, ask(21, 9, link));
    assert!(warned(&fx) && s.elicitations.is_empty());
    assert!(!warned(&update(&mut s, form(22, 10))));
    assert_eq!(s.pending_elicitations().count(), 1);
    // Nobody can answer a question that was refused.
    assert!(answers(&update(&mut s, elicit(2, ElicitAnswer::Decline))).is_empty());
    // `elicitation/complete` without an id: skipped with a warning.
    let fx = update(
        &mut s,
        frame(
            30,
            Dir::AgentToClient,
            json!({"jsonrpc": "2.0", "method": "elicitation/complete", "params": {}}),
        ),
    );
    assert!(warned(&fx));
}

#[test]
fn the_log_rebuilds_the_same_answers_and_deciders() {
    use trellis_core::log::{encode_frame, encode_local};
    let frames = [
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w"}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":"s1"}}),
        ),
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":"q","method":"elicitation/create","params":{"sessionId":"s1","mode":"url","message":"Sign in","elicitationId":"e1","url":"https://example.com/in"}}),
        ),
    ];
    let mut lines: Vec<String> = frames
        .iter()
        .enumerate()
        .map(|(i, (d, v))| encode_frame(i as u64 + 1, i as f64, *d, &v.to_string()))
        .collect();
    lines.push(encode_local(
        5,
        5.0,
        &LocalRecord::ElicitationDecided {
            request_id: "\"q\"".into(),
            decider: Decider::Extension("sso".into()),
        },
    ));
    lines.push(encode_frame(
        6,
        6.0,
        Dir::ClientToAgent,
        &json!({"jsonrpc":"2.0","id":"q","result":{"action":"accept"}}).to_string(),
    ));
    lines.push(encode_frame(
        7,
        7.0,
        Dir::AgentToClient,
        &json!({"jsonrpc":"2.0","method":"elicitation/complete","params":{"elicitationId":"e1"}})
            .to_string(),
    ));
    let mut s = Session::new(Policy::Ask);
    let mut seen = Vec::new();
    let problems = trellis_core::log::rebuild(&mut s, lines.iter().map(|l| l.trim_end()), |fx| {
        if let Effect::Emit(ev) = fx {
            seen.push(ev.body.clone());
        }
    });
    assert!(problems.is_empty(), "{problems:?}");
    assert!(seen.iter().any(|b| matches!(b,
        EventBody::ElicitationResolved { request_id, action, decider: Decider::Extension(e), .. }
            if request_id == "\"q\"" && action == "accept" && e == "sso")));
    assert!(seen.iter().any(
        |b| matches!(b, EventBody::ElicitationCompleted { elicitation_id } if elicitation_id == "e1")
    ));
    assert!(s.elicitations.is_empty());
}
