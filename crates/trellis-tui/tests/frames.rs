//! Whole frames drawn into ratatui's `TestBackend`, as snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Policy, Session, update};
use trellis_tui::App;

mod common;
use common::frame_text;

struct B {
    s: Session,
    seq: u64,
}

impl B {
    fn new() -> B {
        let mut b = B {
            s: Session::new(Policy::Ask),
            seq: 0,
        };
        b.f(Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"tidy up"}]}}));
        b
    }
    fn f(&mut self, dir: Dir, v: Value) {
        self.seq += 1;
        update(
            &mut self.s,
            Action::Frame {
                seq: self.seq,
                t: self.seq as f64,
                dir,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        );
    }
    fn up(&mut self, u: Value) {
        self.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}));
    }
    fn ask(&mut self, id: u64, call: &str, title: &str, kind: &str) {
        self.up(json!({"sessionUpdate":"tool_call","toolCallId":call,"title":title,"kind":kind,"status":"pending",
            "rawInput":{"path":format!("/w/{call}.txt")},
            "content":[{"type":"diff","path":format!("/w/{call}.txt"),"oldText":"old\n","newText":"new\n"}]}));
        self.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"S",
            "toolCall":{"toolCallId":call},
            "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},{"optionId":"a","name":"Always","kind":"allow_always"},
                       {"optionId":"n","name":"Reject","kind":"reject_once"}]}}));
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

#[test]
fn permission_dialog_with_a_queue() {
    let mut b = B::new();
    b.up(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"I will edit **three** files."}}));
    b.ask(0, "one", "Edit one.txt", "edit");
    b.ask(1, "two", "Edit two.txt", "edit");
    b.ask(2, "three", "Write three.txt", "edit");
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    insta::assert_snapshot!("dialog_80x30", frame_text(&mut app, 80, 30));
    // A key answers the first request only (the loop turns the intent into an answer).
    let intents = app.on_key(key('y'));
    assert_eq!(
        intents,
        vec![trellis_tui::Intent::Decide {
            request_id: "0".into(),
            option_id: "y".into(),
            reason: None,
        }]
    );
    // Keys of options the agent did not offer do nothing.
    assert!(app.on_key(key('N')).is_empty());
}

#[test]
fn a_reject_with_a_reason_is_written_in_the_dialog_and_sent_with_the_one_time_reject() {
    let mut b = B::new();
    b.ask(0, "one", "Edit one.txt", "edit");
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    // The dialog offers it beside the agent's own choices.
    assert!(frame_text(&mut app, 80, 30).contains("[r] reject with a reason"));
    assert!(app.on_key(key('r')).is_empty());
    // Enter on nothing sends nothing; Esc goes back to the question, unanswered.
    assert!(
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
            .is_empty()
    );
    for c in "use the helper in util.rs".chars() {
        assert!(app.on_key(key(c)).is_empty(), "typing {c} answered");
    }
    insta::assert_snapshot!("reason_80x20", frame_text(&mut app, 80, 20));
    assert!(
        app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE))
            .is_empty()
    );
    assert!(frame_text(&mut app, 80, 30).contains("[r] reject with a reason"));
    // Written again and sent: the one-time reject, with the words.
    app.on_key(key('r'));
    for c in " no: keep the old API ".chars() {
        app.on_key(key(c));
    }
    let intents = app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(
        intents,
        vec![trellis_tui::Intent::Decide {
            request_id: "0".into(),
            option_id: "n".into(),
            reason: Some("no: keep the old API".into()),
        }]
    );
    assert!(
        frame_text(&mut app, 80, 30).contains("your next message"),
        "what happens to the reason is said"
    );
}

#[test]
fn transcript_status_and_inspector_at_40_and_200_columns() {
    let mut b = B::new();
    b.up(json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Look first.\nThen act."}}));
    b.up(json!({"sessionUpdate":"plan","entries":[{"content":"Read","priority":"high","status":"completed"},{"content":"Edit","priority":"high","status":"in_progress"}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"r","title":"terminal","kind":"execute","status":"completed",
        "rawInput":{"command":"ls -la","cwd":"/w"},"content":[{"type":"content","content":{"type":"text","text":"a\tb\n日本語.txt\n"}}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"f","title":"Run tests","kind":"execute","status":"failed",
        "rawInput":{"command":"cargo test"},"content":[{"type":"content","content":{"type":"text","text":"\u{1b}[31merror\u{1b}[0m: 2 failed\n"}}]}));
    b.up(json!({"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.02,"currency":"USD"}}));
    b.up(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"## Result\n\n- listed\n- tested: `2 failed`"}}));
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    insta::assert_snapshot!("transcript_40x24", frame_text(&mut app, 40, 24));
    insta::assert_snapshot!("transcript_200x24", frame_text(&mut app, 200, 24));
    // Ctrl-T opens the inspector on the latest card from the prompt, even mid-turn.
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    insta::assert_snapshot!("inspector_result_80x20", frame_text(&mut app, 80, 20));
    app.on_key(key('K'));
    let f = frame_text(&mut app, 80, 20);
    insta::assert_snapshot!("inspector_call_80x20", f);
    // Nothing of the transcript shows beside the inspector's frame.
    assert!(
        f.lines()
            .filter(|l| l.chars().nth(1).is_some_and(|c| "│┌└".contains(c)))
            .all(|l| l.starts_with(' ')),
        "{f}"
    );
    // Opened from the prompt, closed with q: focus is back in the prompt.
    assert_eq!(app.focus, trellis_tui::app::Focus::Transcript);
    app.on_key(key('q'));
    assert!(app.inspector.is_none());
    assert_eq!(app.focus, trellis_tui::app::Focus::Prompt);
    // Opened from the transcript, it goes back there.
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::CONTROL));
    assert_eq!(app.focus, trellis_tui::app::Focus::Transcript);
    app.on_key(key('g'));
    app.on_key(key('T'));
    assert!(app.inspector.is_some());
    app.on_key(key('q'));
    assert!(app.inspector.is_none());
    assert_eq!(app.focus, trellis_tui::app::Focus::Transcript);
}

#[test]
fn diff_permission_and_raw_views() {
    let mut b = B::new();
    b.ask(0, "one", "Edit one.txt", "edit");
    b.f(
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"n"}}}),
    );
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    // The Raw view reads frames from the session log by line number.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut lines = vec![String::new(); 5];
    lines[1] = json!({"t":0.1,"dir":"agent_to_client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"one"}}}}).to_string();
    std::fs::write(&log, lines.join("\n")).unwrap();
    app.log_path = Some(log);
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    for (k, name) in [('D', "diff"), ('P', "permissions"), ('R', "raw")] {
        app.on_key(key(k));
        insta::assert_snapshot!(format!("view_{name}"), frame_text(&mut app, 80, 18));
    }
    assert!(
        matches!(app.on_key(key('y')).as_slice(), [trellis_tui::Intent::Copy(t)] if t.contains("frame 2"))
    );
}

#[test]
fn clicking_a_card_inspects_it_and_z_unfolds_thoughts() {
    let mut b = B::new();
    b.up(json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"First thought.\nSecond line."}}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Read a","kind":"read","status":"completed"}));
    b.f(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
    );
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    let screen = frame_text(&mut app, 60, 12);
    let row = screen.lines().position(|l| l.contains("Read a")).unwrap() as u16;
    app.on_mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: 4,
        row,
        modifiers: KeyModifiers::NONE,
    });
    assert!(frame_text(&mut app, 60, 12).contains("Tool Result: Read a [1/1]"));
    app.on_key(key('q'));
    // Closed, focus is where it was before the click: the prompt.
    assert_eq!(app.focus, trellis_tui::app::Focus::Prompt);
    assert!(screen.contains("∴ First thought. …"));
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::CONTROL));
    app.on_key(key('z'));
    let unfolded = frame_text(&mut app, 60, 12);
    assert!(unfolded.contains("Second line."), "{unfolded}");
}

#[test]
fn inspector_every_view_for_every_kind() {
    let mut b = B::new();
    let text = |t: &str| json!([{"type":"content","content":{"type":"text","text":t}}]);
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"rd","title":"Read lib.rs","kind":"read","status":"completed",
        "locations":[{"path":"/w/src/lib.rs","line":3}],"rawInput":{"path":"/w/src/lib.rs"},"content":text("fn add(a: i32) -> i32 {\n    a + 1\n}\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"ed","title":"Edit lib.rs","kind":"edit","status":"completed",
        "rawInput":{"path":"/w/src/lib.rs","old_string":"a + 1","new_string":"a + 2"},
        "content":[{"type":"diff","path":"/w/src/lib.rs","oldText":"fn add(a: i32) -> i32 {\n    a + 1\n}\n","newText":"fn add(a: i32) -> i32 {\n    a + 2\n}\n"}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"ex","title":"terminal","kind":"execute","status":"failed",
        "rawInput":{"command":"cargo test","env":{"RUST_LOG":"debug"}},"content":text("\u{1b}[31mFAILED\u{1b}[0m 1 test\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"se","title":"grep add","kind":"search","status":"completed",
        "rawInput":{"pattern":"add","path":"/w"},"content":text("src/lib.rs:1: fn add\nsrc/main.rs:4: add(1)\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"fe","title":"Fetch docs","kind":"fetch","status":"completed",
        "rawInput":{"url":"https://example.com/docs"},"content":text("<h1>Docs</h1>\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"bt","title":"Write notes","kind":"edit","status":"completed",
        "rawInput":{"path":"/w/notes.md","content":"```rust\nlet a = \"````\";\n```"}}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"ot","title":"Mystery","kind":"other","status":"completed",
        "content":[{"type":"content","content":{"type":"image","data":"AAAA","mimeType":"image/png"}}]}));
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    use trellis_view::inspector::InspectorView as V;
    let mut out = String::new();
    for call in 0..7 {
        for view in [V::Result, V::Call, V::Diff, V::Permissions, V::Raw] {
            app.inspector = Some(trellis_tui::app::Inspector {
                call,
                view,
                scroll: 0,
                original: false,
            });
            out.push_str(&frame_text(&mut app, 70, 14));
            out.push_str("----\n");
        }
    }
    insta::assert_snapshot!(out);
}

#[test]
fn cards_in_every_status_with_previews_of_wide_text_and_tabs() {
    let mut b = B::new();
    let text = |t: &str| json!([{"type":"content","content":{"type":"text","text":t}}]);
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"p","title":"Read a.rs","kind":"read","status":"pending"}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"r","title":"terminal","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"List","kind":"execute","status":"completed",
        "content":text("名前\t値\n成功\tok\n👨‍👩‍👧\tfamily\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"f","title":"Test","kind":"search","status":"failed","content":text("boom\n")}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Fetch","kind":"fetch","status":"in_progress"}));
    b.f(
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}),
    );
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"u","title":"Think","kind":"think","status":"in_progress"}));
    b.f(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
    );
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app.view.policies = trellis_view::OutputPolicies {
        by_kind: vec![(
            trellis_core::ToolKind::Execute,
            trellis_view::OutputPolicy::Preview(5),
        )],
        failed_preview: 3,
    };
    insta::assert_snapshot!("every_status_80", frame_text(&mut app, 80, 20));
    insta::assert_snapshot!("every_status_40", frame_text(&mut app, 40, 20));
}

#[test]
fn permission_alerts_only_when_the_terminal_is_elsewhere() {
    let mut b = B::new();
    b.ask(0, "one", "Edit one.txt", "edit");
    let mut app = App::new(b.s, "demo".into(), false);
    let asked = trellis_tui::Alert::Permission {
        title: "Edit one.txt".into(),
    };
    assert_eq!(app.alert(&asked), None, "focused: the dialog is enough");
    app.focused = false;
    let seq = app.alert(&asked).unwrap();
    assert!(
        seq.starts_with('\u{7}')
            && seq.contains("\u{1b}]2;● trellis — permission needed")
            && seq.contains("\u{1b}]9;Trellis: permission needed: Edit one.txt")
    );
    app.alerts.bell = false;
    app.alerts.notify = false;
    // Bell and notification off: only the title mark is left.
    assert_eq!(
        app.alert(&asked).as_deref(),
        Some("\u{1b}]2;● trellis — permission needed (demo)\u{7}")
    );
    // Once answered (nothing pending), the title mark is cleared.
    app.driver.session = Session::new(Policy::Ask);
    let resolved = trellis_tui::Alert::Answered;
    assert_eq!(
        app.alert(&resolved).as_deref(),
        Some("\u{1b}]2;trellis — demo\u{7}")
    );
    assert_eq!(app.alert(&resolved), None);
}

#[test]
fn text_from_outside_cannot_end_an_alerts_sequence_and_write_its_own() {
    let mut b = B::new();
    b.ask(0, "one", "Edit \u{1b}]2;owned\u{7} now", "edit");
    let mut app = App::new(b.s, "demo\u{7}\u{1b}]0;x".into(), false);
    app.focused = false;
    app.alerts.bell = false;
    let asked = trellis_tui::Alert::Permission {
        title: "Edit \u{1b}]2;owned\u{7} now".into(),
    };
    let seq = app.alert(&asked).unwrap();
    // The title's sequence and the notification's, each ended once: nothing else.
    assert_eq!(seq.matches('\u{1b}').count(), 2, "{seq:?}");
    assert_eq!(seq.matches('\u{7}').count(), 2, "{seq:?}");
    assert!(seq.contains("(demo^G^[]0;x)"), "{seq:?}");
    assert!(seq.contains("Edit ^[]2;owned^G now"), "{seq:?}");
}

/// The rewind tests' session: turn 1 (`tidy up`, with whatever the test gave it), then
/// turn 2 (`now explain it`); an app on it whose rewinder records what it was asked
/// (log, turn, force) and says `said`.
#[allow(clippy::type_complexity)]
fn rewinding(
    mut b: B,
    said: fn(u32, bool) -> Vec<String>,
) -> (
    App,
    std::sync::Arc<std::sync::Mutex<Vec<(std::path::PathBuf, u32, bool)>>>,
) {
    b.f(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
    );
    b.f(Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"now explain it"}]}}));
    b.f(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
    );
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app.log_path = Some("/logs/s.jsonl".into());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    app.rewinder = Some(Box::new(
        move |log: &std::path::Path, turn: u32, force: bool| {
            seen.lock().unwrap().push((log.to_path_buf(), turn, force));
            Ok(said(turn, force))
        },
    ));
    (app, asked)
}

/// The rewind list (issue 48, item 2): Esc Esc on an empty prompt (and `/rewind`) lists
/// the turns with their prompts and the files changed in each; `c` puts the code back
/// through the front end's rewinder, `v` asks the deck for a fork from before the turn,
/// `b` does both; nothing while a turn runs.
#[test]
fn esc_esc_lists_the_turns_and_rewinds_the_code_the_conversation_or_both() {
    let mut b = B::new();
    // Turn 1 ("tidy up") edits one file; turn 2 edits none.
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit a.txt","kind":"edit","status":"completed",
        "content":[{"type":"diff","path":"/w/a.txt","oldText":"a\nb\n","newText":"a\nc\nd\n"}]}));
    let (mut app, asked) = rewinding(b, |turn, force| {
        let mut said = vec![format!("put back the tree before turn {turn}:")];
        if !force {
            said.push("  kept      b.txt: changed by someone other than the agent".into());
        }
        said
    });
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    app.on_key(esc);
    app.on_key(esc);
    let f = frame_text(&mut app, 90, 24);
    insta::assert_snapshot!("rewind_90x24", f);
    assert!(
        f.contains("turn   1") && f.contains("1 file(s) +2 −1"),
        "{f}"
    );
    // The newest turn is chosen first; up to turn 1, its code put back.
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    app.on_key(key('c'));
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        &[(std::path::PathBuf::from("/logs/s.jsonl"), 1, false)]
    );
    let f = frame_text(&mut app, 90, 24);
    assert!(f.contains("put back the tree before turn 1:"), "{f}");
    assert!(app.fork_request.is_none());
    // What someone else changed is kept; the second yes (C) takes it too.
    assert!(f.contains("C puts those back too"), "{f}");
    app.on_key(key('C'));
    assert!(asked.lock().unwrap().last().unwrap().2, "forced");
    assert!(!frame_text(&mut app, 90, 24).contains("C puts those back too"));
    // Both: the code again, then the conversation forked from before turn 1; what the
    // code's rewind did goes with the fork (which takes the screen).
    app.on_key(key('b'));
    assert_eq!(asked.lock().unwrap().len(), 3);
    assert_eq!(app.fork_request.as_ref().and_then(|f| f.at), Some(1));
    assert_eq!(
        app.fork_request.as_ref().and_then(|f| f.said.as_deref()),
        Some("the code went back: 0 restored, 0 removed, 1 kept as it is")
    );
    // /rewind opens it too; Esc closes it, and Esc Esc slowly is only a change of focus.
    app.fork_request = None;
    for c in "/rewind".chars() {
        app.on_key(key(c));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(frame_text(&mut app, 90, 24).contains("Rewind: back to before a turn"));
    app.on_key(esc);
    assert!(!frame_text(&mut app, 90, 24).contains("Rewind: back to before a turn"));
}

/// Esc Esc that arrives in one read (a trial sent both at once) reads as Alt-Esc: it
/// opens the rewind list too.
#[test]
fn esc_esc_in_one_read_opens_the_rewind_list() {
    let (mut app, _) = rewinding(B::new(), |_, _| Vec::new());
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::ALT));
    let f = frame_text(&mut app, 90, 24);
    assert!(f.contains("Rewind: back to before a turn"), "{f}");
}

/// Edit and resend (issue 48, item 4): `e` on a past prompt puts it in the prompt; Enter
/// puts the code back to before its turn and asks for a fork from there that sends the
/// edit; Esc keeps the text as a new prompt instead.
#[test]
fn e_on_a_past_prompt_edits_it_and_resends_it_from_before_its_turn() {
    let b = B::new();
    let (mut app, asked) = rewinding(b, |_, _| Vec::new());
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    // To the transcript, onto the first prompt.
    app.on_key(esc);
    for _ in 0..5 {
        app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    }
    app.on_key(key('e'));
    assert_eq!(app.prompt.text, "tidy up");
    assert!(frame_text(&mut app, 100, 20).contains("editing the prompt of turn 1"));
    for c in " and the docs".chars() {
        app.on_key(key(c));
    }
    app.on_key(enter);
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        &[(std::path::PathBuf::from("/logs/s.jsonl"), 1, false)]
    );
    let ask = app.fork_request.take().unwrap();
    assert_eq!(ask.at, Some(1));
    assert_eq!(ask.prompt.as_deref(), Some("tidy up and the docs"));
    assert!(app.prompt.text.is_empty());
    // Esc while editing: a new prompt after all (nothing rewound).
    app.on_key(esc);
    for _ in 0..5 {
        app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    app.on_key(key('e'));
    assert_eq!(app.prompt.text, "now explain it");
    app.on_key(esc);
    assert!(frame_text(&mut app, 100, 20).contains("no longer a resend"));
    let sent = app.on_key(enter);
    assert!(
        matches!(sent.as_slice(), [trellis_tui::Intent::Prompt { .. }]),
        "{sent:?}"
    );
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(app.fork_request.is_none());
}

/// A permission question that opens while the user types (a trial found `why not`
/// approving an edit): keys that arrive within a moment of it showing, right after
/// typing, go on into the prompt; then its keys answer it.
#[test]
fn a_question_that_opens_mid_word_does_not_take_the_keys_being_typed() {
    let mut b = B::new();
    b.f(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
    );
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    for c in "wh".chars() {
        app.on_key(key(c));
    }
    // The question arrives and shows while "why not" is being typed.
    let mut s = app.driver.session.clone();
    let mut b2 = B {
        s: std::mem::take(&mut s),
        seq: 100,
    };
    b2.ask(7, "late", "Edit late.txt", "edit");
    app.driver.session = b2.s;
    frame_text(&mut app, 80, 30);
    assert!(app.on_key(key('y')).is_empty(), "the y was being typed");
    assert_eq!(app.prompt.text, "why");
    assert!(frame_text(&mut app, 80, 30).contains("just opened"));
    // Typing goes on past the first moment: still the prompt's, while the keys keep
    // coming (a trial's "please tidy up the readme and then say yes").
    for c in " not, yes".chars() {
        std::thread::sleep(std::time::Duration::from_millis(120));
        assert!(app.on_key(key(c)).is_empty(), "{c} was being typed");
    }
    assert_eq!(app.prompt.text, "why not, yes");
    // After a pause, a word typed into the prompt keeps its letters: the `n` of "line"
    // comes right after the `i` (a trial's queued prompt rejected an edit this way).
    std::thread::sleep(trellis_tui::app::DIALOG_ARM);
    for c in " li".chars() {
        assert!(app.on_key(key(c)).is_empty(), "{c} was being typed");
    }
    assert!(
        app.on_key(key('n')).is_empty(),
        "the n of line was being typed"
    );
    assert_eq!(app.prompt.text, "why not, yes lin");
    assert!(frame_text(&mut app, 80, 30).contains("pause, then answer"));
    // A question's key after a pause that opens a rule to save (`a`), followed at once by
    // more of the word ("ple", a pause, "ase"): the rule dialog goes, the question stays,
    // and the letters are the prompt's. (They went into the rule's path, and Enter saved
    // the rule.)
    std::thread::sleep(trellis_tui::app::DIALOG_ARM);
    assert!(app.on_key(key('a')).is_empty());
    assert!(app.on_key(key('s')).is_empty());
    assert_eq!(app.prompt.text, "why not, yes linas");
    let f = frame_text(&mut app, 80, 30);
    assert!(
        f.contains("that was typing") && f.contains("[y] Allow"),
        "{f}"
    );
    // Ctrl with a letter is the prompt's: Ctrl-A goes to the line's start, never "always".
    std::thread::sleep(trellis_tui::app::DIALOG_ARM);
    assert!(
        app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL))
            .is_empty()
    );
    assert!(app.overlay.is_none());
    // A moment later the same key answers.
    std::thread::sleep(trellis_tui::app::DIALOG_ARM);
    assert_eq!(
        app.on_key(key('y')),
        vec![trellis_tui::Intent::Decide {
            request_id: "7".into(),
            option_id: "y".into(),
            reason: None,
        }]
    );
}
