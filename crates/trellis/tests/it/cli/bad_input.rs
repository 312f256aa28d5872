//! Bad input: recordings built on the fly, replayed through the real client.

use super::*;

#[test]
fn invalid_json_line_is_skipped_with_a_warning() {
    let text = base_recording(
        vec![
            update(
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"before "}}),
            ),
            json!({"t": 0.0, "dir": "agent_to_client", "raw": "{this is not json"}).to_string(),
            update(
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after"}}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let events = r.events();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "warning"
                && e["message"].as_str().unwrap().contains("invalid line"))
    );
    let s = r.rebuilt();
    assert_eq!(s.counters.invalid_lines, 1);
    assert!(trellis_core::summary::transcript_text(&s).contains("before after"));
    assert!(
        r.log().contains("{this is not json"),
        "the bad line is kept verbatim"
    );
}

#[test]
fn unknown_update_kind_is_counted_and_ignored() {
    let text = base_recording(
        vec![
            update(json!({"sessionUpdate":"hologram_update","stuff":1})),
            update(json!({"sessionUpdate":"hologram_update","stuff":2})),
            update(
                json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"A","status":"completed"}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let warnings = r
        .events()
        .into_iter()
        .filter(|e| e["type"] == "warning")
        .count();
    assert_eq!(warnings, 1, "warned once per kind");
    let s = r.rebuilt();
    assert_eq!(s.counters.unknown_updates.get("hologram_update"), Some(&2));
    assert_eq!(
        s.ledger.get("a").unwrap().status,
        trellis_core::ToolStatus::Completed
    );
}

#[test]
fn update_for_unknown_id_upserts_a_placeholder() {
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"ghost","status":"completed",
            "content":[{"type":"content","content":{"type":"text","text":"hi"}}]}),
        )],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(
        r.events()
            .iter()
            .any(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("ghost"))
    );
    let s = r.rebuilt();
    let c = s.ledger.get("ghost").unwrap();
    assert!(!c.announced);
    assert_eq!(c.status, trellis_core::ToolStatus::Completed);
    assert_eq!(c.display_title(), "(unannounced call ghost)");
}

#[test]
fn a_16_mib_line_goes_through() {
    let big = "x".repeat(16 << 20);
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":big}}),
        )],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.rebuilt();
    match &s.transcript[1] {
        trellis_core::session::Entry::Message(m) => assert_eq!(m.text.len(), 16 << 20),
        other => panic!("{other:?}"),
    }
}

#[test]
fn agent_exiting_mid_turn_is_reported_and_logged() {
    let text = base_recording(
        vec![update(
            json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Slow","status":"in_progress"}),
        )],
        false,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 7, "{}", r.stderr());
    assert!(r.stderr().contains("agent exited"), "{}", r.stderr());
    let events = r.events();
    assert!(events.iter().any(|e| e["type"] == "agent_exited"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_ended" && e["stop_reason"] == "agent_exited")
    );
    let s = r.rebuilt();
    assert_eq!(
        s.ledger.get("a").unwrap().status,
        trellis_core::ToolStatus::Unfinished
    );
    assert!(r.log().contains("\"type\":\"agent_exited\""));
}

#[test]
fn fs_request_outside_the_roots_is_refused() {
    let text = base_recording(
        vec![
            rec(
                "agent_to_client",
                json!({"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"S","path":"/etc/passwd"}}),
            ),
            rec(
                "client_to_agent",
                json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
            ),
            rec(
                "agent_to_client",
                json!({"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"sessionId":"S","path":"/rec/cwd/../escape.txt","content":"x"}}),
            ),
            rec(
                "client_to_agent",
                json!({"jsonrpc":"2.0","id":1,"result":{}}),
            ),
        ],
        true,
    );
    let r = replay_text(&text, &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let log = r.log();
    assert!(log.contains("is outside the session roots"), "{log}");
    assert!(log.contains("contains `..`"), "{log}");
    assert!(!r.dir.path().join("escape.txt").exists());
}
