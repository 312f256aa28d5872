//! The built-in stats against a real agent's recording: claude-agent-acp sends title- and
//! content-only updates for every call; they must not count as calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use trellis_ext_host::{Candidate, ExtHost, HostOptions};

#[test]
fn updates_without_a_status_change_are_not_new_calls() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let stats = trellis_builtins::all()
        .into_iter()
        .find(|e| e.manifest().name == "stats")
        .unwrap();
    let (host, _rx) = ExtHost::new(
        vec![Candidate {
            ext: stats,
            builtin: true,
        }],
        HostOptions::default(),
    );
    let mut session = trellis_core::Session::new(trellis_core::Policy::Ask);
    trellis_core::log::rebuild(&mut session, text.lines(), |fx| {
        if let trellis_core::Effect::Emit(ev) = fx {
            host.dispatch(&ev);
        }
    });
    assert!(host.flush(Duration::from_secs(10)));
    let calls = session.ledger.len();
    let sections = host.ui.sections();
    let head = sections[0].rows[0].line.text();
    assert_eq!(head, format!("{calls} calls  ✓ {calls}"), "{head}");
    assert_eq!(calls, 5);
    assert_eq!(
        host.ui.status_line_items(40)[0].text(),
        format!("{calls} calls")
    );
}
