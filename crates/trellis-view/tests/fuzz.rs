//! The layout end of the ingest fuzz: sessions folded from hostile agent lines are laid out
//! and drawn — the transcript at several widths, every inspector view of every call, the
//! permission dialog — without a panic, and transcript lines within their width.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value, json};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Policy, Session, update};
use trellis_view::inspector::{InspectorView, view_lines};
use trellis_view::{Theme, TranscriptView};

/// Updates and requests an agent may send, well-formed or not: fixture messages, random
/// mutations of them, and shapes chosen to hurt layout (huge, wide, control characters).
fn hostile_line() -> impl Strategy<Value = String> {
    let fixture: Vec<String> = include_str!("../../../fixtures/acp/claude-agent-acp-0.23.1.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["dir"] == "agent_to_client")
        .map(|v| v["msg"].to_string())
        .collect();
    let text = prop_oneof![
        "[a-z \\n]{0,80}",
        "[\\u{0}-\\u{1f}\\u{7f}-\\u{9f}\\u{1b}\\[;0-9m]{0,40}",
        "[\\u{4e00}-\\u{4e20}\\u{1f600}-\\u{1f610}\\u{200d}\\u{fe0f}\\t ]{0,40}",
        (1usize..20_000).prop_map(|n| "x".repeat(n)),
    ];
    prop_oneof![
        proptest::sample::select(fixture.clone()),
        (proptest::sample::select(fixture), any::<usize>(), any::<u8>()).prop_map(|(l, at, b)| {
            let mut bytes = l.into_bytes();
            let i = at % bytes.len().max(1);
            if let Some(x) = bytes.get_mut(i) {
                *x = b;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        (text.clone(), text.clone(), 0usize..4, 0usize..3).prop_map(|(a, b, kind, st)| {
            let kind = ["read", "edit", "execute", "other"][kind];
            let status = ["pending", "completed", "failed"][st];
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{
                "sessionUpdate":"tool_call","toolCallId":format!("c{}", a.len() % 5),"title":a,"kind":kind,"status":status,
                "rawInput":{"command":b.clone(),"path":b.clone()},
                "locations":[{"path":b.clone(),"line":3}],
                "content":[{"type":"content","content":{"type":"text","text":b.clone()}},
                           {"type":"diff","path":"/w/f","oldText":a,"newText":b}]}}})
            .to_string()
        }),
        text.clone().prop_map(|t| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{
            "sessionUpdate":"agent_message_chunk","content":{"type":"text","text":t}}}}).to_string()),
        text.prop_map(|t| json!({"jsonrpc":"2.0","id":t.len(),"method":"session/request_permission","params":{"sessionId":"s1",
            "toolCall":{"toolCallId":"c1","title":t},
            "options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}).to_string()),
    ]
}

fn frame(seq: u64, dir: Dir, v: Value) -> Action {
    Action::Frame {
        seq,
        t: seq as f64,
        dir,
        msg: Message::parse(&v.to_string()).unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("TRELLIS_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn hostile_sessions_lay_out_within_their_width(lines in proptest::collection::vec(hostile_line(), 1..25)) {
        let mut s = Session::new(Policy::Ask);
        update(&mut s, frame(1, Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w"}})));
        update(&mut s, frame(2, Dir::AgentToClient, json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":"s1"}})));
        update(&mut s, frame(3, Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}})));
        for (i, line) in lines.iter().enumerate() {
            let seq = 10 + i as u64;
            let action = match Message::parse(line) {
                Ok(msg) => Action::Frame { seq, t: seq as f64, dir: Dir::AgentToClient, msg },
                Err(e) => Action::InvalidLine { t: seq as f64, dir: Dir::AgentToClient, len: line.len(), error: e.to_string() },
            };
            update(&mut s, action);
        }
        let theme = Theme::plain();
        for width in [1usize, 9, 40, 120] {
            let mut v = TranscriptView::new();
            v.sync(&s, width, &theme);
            let total = v.total_height();
            for l in v.render(&s, 0, total.min(400), &theme, 100.0, 0, None, None) {
                // Measured as it is drawn: span by span (a cell buffer never joins graphemes
                // across spans), each with trellis-text's terminal measure. A one-column
                // terminal only needs no panic; from a usable width up, every line fits.
                let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                let w: usize = l.spans.iter().map(|s| trellis_text::display_width(&s.content)).sum();
                prop_assert!(width < 9 || w <= width, "a transcript line of {w} columns at width {width}: {text:?}");
            }
            for call in s.ledger.calls() {
                for view in [InspectorView::Result, InspectorView::Call, InspectorView::Diff, InspectorView::Permissions, InspectorView::Raw] {
                    let _ = view_lines(&call, &s, view, width, &theme, None);
                }
                let _ = trellis_view::dialog::permission_dialog(&call, &s, &[], 1, 1, width, &theme);
            }
        }
    }
}
