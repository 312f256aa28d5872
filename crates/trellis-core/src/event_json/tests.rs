//! The hand-written encoders write exactly what serde_json writes from the derived impls.

use std::sync::Arc;

use proptest::prelude::*;

use super::{event_string, write_event};
use crate::arbitrary::{call, status, text};
use crate::event::{Event, EventBody};
use crate::transcript::Role;

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

proptest! {
    /// Floats written one after another (each often the one before: the cache of the
    /// last one) read as serde_json writes each.
    #[test]
    fn floats_in_a_row_are_written_as_serde_json_writes_them(
        vs in prop::collection::vec(
            prop_oneof![any::<f64>(), Just(0.0), Just(-0.0), Just(12.345), Just(f64::NAN)],
            1..12,
        )
    ) {
        let vs: Vec<f64> = vs.iter().flat_map(|v| [*v, *v]).collect();
        for v in vs {
            let mut out = Vec::new();
            super::write_f64(&mut out, v);
            prop_assert_eq!(out, serde_json::to_vec(&v).unwrap());
        }
    }
}
