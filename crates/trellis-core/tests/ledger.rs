//! Property tests of the ledger merge rule and reducer-level robustness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use trellis_core::tool_call::{Location, ToolCallPatch, ToolContent};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Ledger, Policy, Session, ToolCall, ToolKind, ToolStatus, update};

fn arb_status() -> impl Strategy<Value = Option<ToolStatus>> {
    prop_oneof![
        Just(None),
        Just(Some(ToolStatus::Pending)),
        Just(Some(ToolStatus::InProgress)),
        Just(Some(ToolStatus::Completed)),
        Just(Some(ToolStatus::Failed)),
    ]
}

fn arb_patch() -> impl Strategy<Value = ToolCallPatch> {
    (
        proptest::option::of("[a-z ]{0,8}"),
        proptest::option::of(0usize..10),
        arb_status(),
        proptest::option::of(proptest::collection::vec("[a-z\n]{0,6}", 0..3)),
        proptest::option::of(proptest::collection::vec(
            ("/[a-z]{1,4}", proptest::option::of(1u32..50)),
            0..3,
        )),
        proptest::option::of("[a-z]{0,5}"),
    )
        .prop_map(
            |(title, kind, status, content, locations, name)| ToolCallPatch {
                tool_call_id: "c".into(),
                title,
                kind: kind.map(|k| ToolKind::ALL[k]),
                status,
                content: content.map(|v| {
                    v.into_iter()
                        .map(|text| ToolContent::Text { text: text.into() })
                        .collect()
                }),
                locations: locations.map(|v| {
                    v.into_iter()
                        .map(|(path, line)| Location { path, line })
                        .collect()
                }),
                raw_input: None,
                raw_output: None,
                name,
            },
        )
}

fn applied(patches: &[ToolCallPatch]) -> ToolCall {
    let mut l = Ledger::default();
    for p in patches {
        l.apply(p.clone(), true, 0.0, 1);
    }
    l.get("c")
        .map(|c| (*c).clone())
        .unwrap_or_else(|| ToolCall::placeholder("c".into(), 0.0, 1))
}

/// Keeps only the fields of `p` in `mask` (a bit per field).
fn only(p: &ToolCallPatch, mask: u8) -> ToolCallPatch {
    ToolCallPatch {
        tool_call_id: p.tool_call_id.clone(),
        title: p.title.clone().filter(|_| mask & 1 != 0),
        kind: p.kind.filter(|_| mask & 2 != 0),
        status: p.status.filter(|_| mask & 4 != 0),
        content: p.content.clone().filter(|_| mask & 8 != 0),
        locations: p.locations.clone().filter(|_| mask & 16 != 0),
        raw_input: None,
        raw_output: None,
        name: p.name.clone().filter(|_| mask & 32 != 0),
    }
}

proptest! {
    /// Applying updates one by one equals applying their merge.
    #[test]
    fn one_by_one_equals_merged(patches in proptest::collection::vec(arb_patch(), 1..8)) {
        let merged = patches.iter().cloned().reduce(ToolCallPatch::then).unwrap();
        prop_assert_eq!(applied(&patches), applied(&[merged]));
    }

    /// Messages that each own different fields converge to one state in any order
    /// (`tool_call` first or last: a late `tool_call` is an update of the placeholder).
    #[test]
    fn disjoint_messages_commute(base in arb_patch(), perm in Just(()).prop_perturb(|_, mut rng| {
        let mut v: Vec<usize> = (0..6).collect();
        for i in (1..v.len()).rev() { v.swap(i, (rng.next_u32() as usize) % (i + 1)); }
        v
    })) {
        let parts: Vec<ToolCallPatch> = (0..6).map(|i| only(&base, 1 << i)).collect();
        let in_order = applied(&parts);
        let shuffled: Vec<ToolCallPatch> = perm.iter().map(|&i| parts[i].clone()).collect();
        prop_assert_eq!(in_order, applied(&shuffled));
    }
}

#[test]
fn null_and_absent_fields_keep_values_and_collections_are_replaced() {
    let mut l = Ledger::default();
    let p1: ToolCallPatch = serde_json::from_str(
        &json!({"toolCallId":"x","title":"T","kind":"edit",
        "content":[{"type":"content","content":{"type":"text","text":"a"}},{"type":"bogus"}],
        "locations":[{"path":"/a"},{"path":"/b"}]})
        .to_string(),
    )
    .unwrap();
    l.apply(p1, true, 0.0, 1);
    let p2: ToolCallPatch = serde_json::from_str(
        &json!({"toolCallId":"x","title":null,"kind":"wat",
        "status":"weird","locations":[{"path":"/c"}],"_meta":{"k":1}})
        .to_string(),
    )
    .unwrap();
    l.apply(p2, false, 1.0, 1);
    let c = l.get("x").unwrap();
    assert_eq!(c.title, "T");
    assert_eq!(c.kind, ToolKind::Other, "unknown kind falls back to other");
    assert_eq!(c.status, ToolStatus::Pending, "unknown status is ignored");
    assert_eq!(c.content.len(), 1, "the malformed item was skipped");
    assert_eq!(
        c.locations,
        vec![Location {
            path: "/c".into(),
            line: None
        }]
    );
}

fn frame(seq: u64, dir: Dir, v: serde_json::Value) -> Action {
    Action::Frame {
        seq,
        t: seq as f64,
        dir,
        msg: Message::parse(&v.to_string()).unwrap(),
    }
}

#[test]
fn meta_only_update_changes_nothing_and_repeated_tool_call_is_an_update() {
    let mut s = Session::new(Policy::Ask);
    let up = |u: serde_json::Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}});
    update(
        &mut s,
        frame(
            1,
            Dir::AgentToClient,
            up(
                json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"A","status":"in_progress","kind":"read"}),
            ),
        ),
    );
    let before = s.ledger.get("a").unwrap().clone();
    let fx = update(
        &mut s,
        frame(
            2,
            Dir::AgentToClient,
            up(json!({"sessionUpdate":"tool_call_update","toolCallId":"a","_meta":{"x":1}})),
        ),
    );
    assert!(fx.is_empty(), "a _meta-only update emits nothing");
    assert_eq!(s.ledger.get("a").unwrap(), before);
    update(
        &mut s,
        frame(
            3,
            Dir::AgentToClient,
            up(json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"A2"})),
        ),
    );
    let c = s.ledger.get("a").unwrap();
    assert_eq!(
        (c.title.as_str(), c.status, c.kind),
        ("A2", ToolStatus::InProgress, ToolKind::Read)
    );
    assert_eq!(s.ledger.len(), 1);
    assert_eq!(&*s.ledger.frames(0), &[1, 2, 3]);
}

#[test]
fn cancel_answers_every_open_permission_once() {
    let mut s = Session::new(Policy::Ask);
    update(
        &mut s,
        frame(
            1,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}),
        ),
    );
    for id in [0, 1] {
        update(
            &mut s,
            frame(
                2 + id,
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission",
            "params":{"sessionId":"S","toolCall":{"toolCallId":format!("c{id}"),"title":"E"},
            "options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}}),
            ),
        );
    }
    // The user answers the first one, then cancels.
    let fx = update(
        &mut s,
        Action::Decide {
            t: 4.0,
            request_id: "0".into(),
            choice: trellis_core::Choice::Option("ok".into()),
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert_eq!(fx.len(), 1);
    let fx = update(&mut s, Action::Cancel { t: 5.0 });
    assert!(matches!(fx.as_slice(), [trellis_core::Effect::SendCancel]));
    let fx = update(
        &mut s,
        frame(
            6,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}),
        ),
    );
    let answers: Vec<_> = fx
        .iter()
        .filter_map(|f| match f {
            trellis_core::Effect::Answer {
                request_id,
                outcome,
                ..
            } => Some((request_id.clone(), outcome.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        vec![("1".to_string(), trellis_core::Outcome::Cancelled)]
    );
    // A second decision for an answered request is refused.
    let fx = update(
        &mut s,
        Action::Decide {
            t: 7.0,
            request_id: "1".into(),
            choice: trellis_core::Choice::Cancelled,
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert!(
        fx.iter()
            .all(|f| !matches!(f, trellis_core::Effect::Answer { .. }))
    );
}

#[test]
fn hot_and_lenient_decoding_agree() {
    // Every shape the hot path sees must decode exactly like the lenient path.
    let updates = [
        json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"T","kind":"read","status":"pending",
            "content":[{"type":"content","content":{"type":"text","text":"x\ny"}}],"locations":[{"path":"/p","line":3}]}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"a","content":[
            {"type":"content","content":{"type":"image","data":"AAAA","mimeType":"image/png"}},
            {"type":"diff","path":"/p","oldText":null,"newText":"n"},
            {"type":"terminal","terminalId":"t1"},
            {"type":"mystery"}]}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"a","kind":"nonsense","status":"weird","title":null}),
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"resource_link","uri":"file:///x","name":"x"}}),
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"said \"so\"\n"}}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"b","content":null,"status":"in_progress"}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"b","content":[
            {"type":"content","content":{"type":"text","text":"one"}},
            {"type":"diff","path":"/q","newText":"m"}]}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"b","content":["stray",
            {"type":"content","content":{"type":"text","text":"kept"}}]}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"b","content":{"type":"text","text":"not a list"}}),
        json!({"sessionUpdate":"agent_thought_chunk","content":[{"type":"text","text":"not a block"}]}),
    ];
    // Which of them the hot path decodes itself (the others are left to the lenient
    // decoders, which must then be all that decides).
    let hot_kinds = [
        true, false, true, true, true, true, true, false, false, false,
    ];
    let wrap = |u: &serde_json::Value| {
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}})
            .to_string()
    };
    let mut hot = Session::new(Policy::Ask);
    let mut slow = Session::new(Policy::Ask);
    for (i, u) in updates.iter().enumerate() {
        let line = wrap(u);
        let fast = Message::parse(&line).unwrap();
        assert_eq!(fast.decoded.is_some(), hot_kinds[i], "update {i}: {u}");
        let mut lenient = fast.clone();
        lenient.decoded = None;
        lenient.params = Some(
            serde_json::value::RawValue::from_string(
                json!({"sessionId":"S","update":u}).to_string(),
            )
            .unwrap(),
        );
        update(
            &mut hot,
            Action::Frame {
                seq: i as u64,
                t: 0.0,
                dir: Dir::AgentToClient,
                msg: fast,
            },
        );
        update(
            &mut slow,
            Action::Frame {
                seq: i as u64,
                t: 0.0,
                dir: Dir::AgentToClient,
                msg: lenient,
            },
        );
    }
    let a = hot.ledger.get("a").unwrap();
    assert_eq!(a, slow.ledger.get("a").unwrap());
    assert_eq!(
        a.content.len(),
        3,
        "image kept, diff and terminal read, unknown item skipped"
    );
    assert!(matches!(a.content[0], ToolContent::Block { .. }));
    assert_eq!(
        (a.kind, a.status, a.title.as_str()),
        (ToolKind::Other, ToolStatus::Pending, "T")
    );
    assert_eq!(hot.transcript, slow.transcript);
    let b = hot.ledger.get("b").unwrap();
    assert_eq!(b, slow.ledger.get("b").unwrap());
    assert_eq!(
        b.content.len(),
        1,
        "the last list: the stray item skipped, the text kept"
    );
}

/// After a reconnection (a new agent process counts its ids from the start again), a
/// `tool_call` that reuses an earlier connection's id is a new call, and what follows
/// about that id is about the new one; an update for an id of before (an agent that kept
/// its session finishing a call) still reaches the call it names.
#[test]
fn an_id_reused_after_a_reconnection_is_a_new_call() {
    let patch = |id: &str, status: ToolStatus| ToolCallPatch {
        tool_call_id: id.into(),
        status: Some(status),
        ..ToolCallPatch::default()
    };
    let mut l = Ledger::default();
    l.apply(patch("read-1", ToolStatus::InProgress), true, 0.0, 1);
    l.apply(patch("edit-1", ToolStatus::InProgress), true, 0.0, 1);
    l.reconnected();
    // Announced again: a new call.
    let a = l.apply(patch("read-1", ToolStatus::InProgress), true, 1.0, 2);
    assert!(a.created);
    assert_eq!(a.index, 2);
    // Its update finds the new call, and leaves the old one as it was.
    let u = l.apply(patch("read-1", ToolStatus::Completed), false, 2.0, 2);
    assert_eq!(u.index, 2);
    assert_eq!(l.at(0).status, ToolStatus::InProgress);
    assert_eq!(l.at(2).status, ToolStatus::Completed);
    // An update (not an announcement) of an earlier call still reaches it.
    let e = l.apply(patch("edit-1", ToolStatus::Completed), false, 3.0, 2);
    assert!(!e.created);
    assert_eq!(e.index, 1);
    // Before any reconnection a repeated announcement stays an update.
    let again = l.apply(patch("read-1", ToolStatus::Failed), true, 4.0, 2);
    assert!(!again.created);
    assert_eq!(again.index, 2);
    assert_eq!(l.len(), 3);
}
