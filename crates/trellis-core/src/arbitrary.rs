//! Arbitrary calls for property tests: every field set, texts heavy in what JSON escapes.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::value::RawValue;

use crate::bulk::Text;
use crate::permission::PermissionRecord;
use crate::tool_call::{Location, StatusChange, ToolCall, ToolContent, ToolKind, ToolStatus};

pub(crate) fn status() -> impl Strategy<Value = ToolStatus> {
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
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z\"\\\\\n\t\r\u{0}-\u{1f}é→😀 ]{0,80}",]
}

fn raw() -> impl Strategy<Value = Option<crate::raw_json::RawJson>> {
    prop_oneof![
        Just(None),
        Just(Some(
            crate::raw_json::RawJson::from_string(r#"{"command":"ls","args":["-l"]}"#.into())
                .unwrap()
        )),
        Just(Some(
            crate::raw_json::RawJson::from_string("[1, 2.5e3, \"\\u0041\"]".into()).unwrap()
        )),
        // Not `null`: the wire's `null` is no value (`None`), never a raw `null`.
        Just(Some(
            crate::raw_json::RawJson::from_string("\"text\"".into()).unwrap()
        )),
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
    pub(crate) fn call()(
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
                reason: None,
            })
            .into_iter()
            .collect();
        call.anomalies = anomalies;
        call.subagent = subagent.map(Arc::from);
        call
    }
}
