//! The hand-written encoders write exactly what serde_json writes from the derived impls.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::value::RawValue;

use super::{event_string, write_event};
use crate::bulk::Text;
use crate::event::{Event, EventBody};
use crate::permission::PermissionRecord;
use crate::tool_call::{Location, StatusChange, ToolCall, ToolContent, ToolKind, ToolStatus};
use crate::transcript::Role;

fn status() -> impl Strategy<Value = ToolStatus> {
    prop_oneof![
        Just(ToolStatus::Pending),
        Just(ToolStatus::InProgress),
        Just(ToolStatus::Completed),
        Just(ToolStatus::Failed),
        Just(ToolStatus::Cancelled),
        Just(ToolStatus::Unfinished),
    ]
}

/// Text heavy in what JSON escapes.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z\"\\\\\n\t\r\u{0}-\u{1f}é→😀 ]{0,80}",]
}

fn raw() -> impl Strategy<Value = Option<Box<RawValue>>> {
    prop_oneof![
        Just(None),
        Just(Some(
            RawValue::from_string(r#"{"command":"ls","args":["-l"]}"#.into()).unwrap()
        )),
        Just(Some(
            RawValue::from_string("[1, 2.5e3, \"\\u0041\"]".into()).unwrap()
        )),
        Just(Some(RawValue::from_string("null".into()).unwrap())),
    ]
}

fn content() -> impl Strategy<Value = ToolContent> {
    prop_oneof![
        text().prop_map(|t| ToolContent::Text { text: Text::new(t) }),
        (text(), proptest::option::of(text()), text()).prop_map(|(path, old_text, new_text)| {
            ToolContent::Diff {
                path,
                old_text,
                new_text,
            }
        }),
        text().prop_map(|terminal_id| ToolContent::Terminal { terminal_id }),
        text().prop_map(|session_id| ToolContent::Session { session_id }),
        Just(ToolContent::Block {
            block: RawValue::from_string(r#"{"type":"image","data":"AA=="}"#.into()).unwrap(),
        }),
    ]
}

prop_compose! {
    fn call()(
        id in text(),
        title in text(),
        kind in prop::sample::select(ToolKind::ALL.to_vec()),
        status in status(),
        content in prop::collection::vec(content(), 0..3),
        locations in prop::collection::vec(
            (text(), proptest::option::of(any::<u32>())).prop_map(|(path, line)| Location { path, line }),
            0..3,
        ),
        raw_input in raw(),
        raw_output in raw(),
        name in proptest::option::of(text()),
        announced in any::<bool>(),
        status_history in prop::collection::vec(
            (status(), any::<f64>()).prop_map(|(status, t)| StatusChange { status, t }),
            0..4,
        ),
        asked in proptest::option::of(any::<f64>()),
        turn in any::<u32>(),
        anomalies in prop::collection::vec(text(), 0..2),
        subagent in proptest::option::of(text()),
    ) -> ToolCall {
        let mut call = ToolCall::placeholder(id, 0.0, turn);
        call.title = title;
        call.kind = kind;
        call.status = status;
        call.content = content;
        call.locations = locations;
        call.raw_input = raw_input;
        call.raw_output = raw_output;
        call.name = name;
        call.announced = announced;
        call.status_history = status_history;
        call.permissions = asked
            .map(|asked_at| PermissionRecord {
                request_id: "7".into(),
                options: Vec::new(),
                asked_at,
                outcome: None,
                decider: None,
                decided_at: None,
            })
            .into_iter()
            .collect();
        call.anomalies = anomalies;
        call.subagent = subagent.map(Arc::from);
        call
    }
}

fn body() -> impl Strategy<Value = EventBody> {
    prop_oneof![
        call().prop_map(|c| EventBody::ToolCallCreated { call: Arc::new(c) }),
        (proptest::option::of(status()), status(), call()).prop_map(
            |(previous_status, status, c)| {
                EventBody::ToolCallUpdated {
                    previous_status,
                    status,
                    call: Arc::new(c),
                }
            }
        ),
        (
            prop_oneof![Just(Role::User), Just(Role::Agent), Just(Role::Thought)],
            proptest::option::of(text()),
            text(),
            proptest::option::of(text()),
        )
            .prop_map(
                |(role, message_id, text, subagent)| EventBody::MessageChunk {
                    role,
                    message_id,
                    text,
                    subagent: subagent.map(Arc::from),
                }
            ),
        text().prop_map(|reason| EventBody::SessionEnded { reason }),
    ]
}

prop_compose! {
    fn event()(
        schema in 0u32..3,
        t in any::<f64>(),
        session in proptest::option::of(text()),
        hub_session in proptest::option::of(text()),
        body in body(),
    ) -> Event {
        Event {
            schema,
            t,
            session: session.map(Arc::from),
            hub_session: hub_session.map(Arc::from),
            body,
            acp: Some("{\"jsonrpc\":\"2.0\"}".into()),
            wire: Default::default(),
            position: Some(3),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn an_event_is_written_as_serde_json_writes_it(ev in event()) {
        let theirs = String::from_utf8(serde_json::to_vec(&ev).unwrap()).unwrap();
        prop_assert_eq!(event_string(&ev).unwrap(), theirs);
    }
}

#[test]
fn an_event_is_appended_after_what_the_buffer_holds() {
    let ev = Event {
        schema: 1,
        t: 0.5,
        session: None,
        hub_session: None,
        body: EventBody::SessionEnded {
            reason: "done".into(),
        },
        acp: None,
        wire: Default::default(),
        position: None,
    };
    let mut out = b"x\n".to_vec();
    write_event(&mut out, &ev).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "x\n{\"schema\":1,\"t\":0.5,\"type\":\"session_ended\",\"reason\":\"done\"}"
    );
}
