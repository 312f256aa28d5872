//! The agent's questions (`elicitation/create`) in the UI: the form of typed fields, its
//! problems under their fields, the link dialog, and the one answer each key sends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use trellis_agents::demo_elicit::release_form;
use trellis_core::wire::Dir;
use trellis_core::{ElicitAnswer, Session};
use trellis_tui::App;
use trellis_tui::app::Intent;

mod common;
use common::{frame_text, session_of};

/// A session in a turn whose agent asks `params` (an `elicitation/create` with id 7).
fn asked(params: Value) -> Session {
    session_of(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"release"}]}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":params}),
        ),
    ])
}

fn app_of(s: Session) -> App {
    let mut app = App::new(s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app
}

fn press(app: &mut App, code: KeyCode) -> Vec<Intent> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        assert!(
            press(app, KeyCode::Char(c)).is_empty(),
            "typing sends nothing"
        );
    }
}

fn form_app() -> App {
    app_of(asked(json!({"sessionId":"S","mode":"form",
        "message":"Which release should I cut?","requestedSchema":release_form()})))
}

#[test]
fn a_form_shows_every_field_and_sends_only_what_its_schema_accepts() {
    let mut app = form_app();
    let f = frame_text(&mut app, 80, 30);
    insta::assert_snapshot!("ask_form_80x30", f);
    for s in [
        "Which release should I cut?",
        "› Version*",
        "semver, e.g. 1.4.0",
        "(•) Beta",
        "[x] linux",
        "Shards   [2]",
        "Enter send",
    ] {
        assert!(f.contains(s), "{s:?} in\n{f}");
    }

    // Enter with the required version empty: nothing is sent, the problem shows.
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    let f = frame_text(&mut app, 80, 30);
    assert!(f.contains("required"), "{f}");

    // A version against the pattern is refused too, and so is an e-mail without an @.
    typed(&mut app, "1.4");
    for _ in 0..6 {
        press(&mut app, KeyCode::Tab);
    }
    typed(&mut app, "nobody");
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    let f = frame_text(&mut app, 80, 30);
    insta::assert_snapshot!("ask_form_problems_80x30", f);
    assert!(f.contains("e-mail") || f.contains("email"), "{f}");

    // Enter put the focus on the first problem, the version: mend it there.
    press(&mut app, KeyCode::End);
    typed(&mut app, ".0");
    // Channel: Left picks Stable; Targets: move right, pick macos.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Char(' '));
    // On to the contact (past shards, dry run, notes): clear it, type an address.
    for _ in 0..4 {
        press(&mut app, KeyCode::Tab);
    }
    app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut app, "me@example.com");
    let sent = press(&mut app, KeyCode::Enter);
    let [Intent::Elicit { request_id, answer }] = sent.as_slice() else {
        panic!("one answer: {sent:?}\n{}", frame_text(&mut app, 80, 30));
    };
    assert_eq!(request_id, "7");
    let ElicitAnswer::Accept(content) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(
        Value::Object(content.clone()),
        json!({"version":"1.4.0","channel":"stable","targets":["linux","macos"],
            "shards":2,"dry_run":true,"contact":"me@example.com"})
    );
}

#[test]
fn escape_dismisses_and_ctrl_d_declines() {
    let mut app = form_app();
    frame_text(&mut app, 80, 30);
    let sent = press(&mut app, KeyCode::Esc);
    assert!(
        matches!(
            sent.as_slice(),
            [Intent::Elicit {
                answer: ElicitAnswer::Cancel,
                ..
            }]
        ),
        "{sent:?}"
    );
    let mut app = form_app();
    frame_text(&mut app, 80, 30);
    let sent = app.on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert!(
        matches!(
            sent.as_slice(),
            [Intent::Elicit {
                answer: ElicitAnswer::Decline,
                ..
            }]
        ),
        "{sent:?}"
    );
}

#[test]
fn a_tricky_link_is_named_and_never_opened() {
    let url = "https://github.com@evil.example/login?\u{1b}[31mnext=/";
    let mut app = app_of(asked(
        json!({"sessionId":"S","mode":"url","elicitationId":"E1",
        "message":"Sign in to \u{1b}]0;owned\u{7}continue","url":url}),
    ));
    let f = frame_text(&mut app, 80, 24);
    insta::assert_snapshot!("ask_link_80x24", f);
    assert!(f.contains("site  evil.example"), "{f}");
    assert!(f.contains("github.com"), "the trick is named: {f}");
    assert!(!f.contains('\u{1b}'), "no escape reaches the frame: {f:?}");
    // Not a plain address: Enter opens nothing; `c` copies and keeps the question open;
    // `y` goes on.
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    let sent = press(&mut app, KeyCode::Char('c'));
    assert!(
        matches!(sent.as_slice(), [Intent::Copy(u)] if u == url),
        "{sent:?}"
    );
    let sent = press(&mut app, KeyCode::Char('y'));
    assert!(
        matches!(sent.as_slice(), [Intent::Elicit { answer: ElicitAnswer::Accept(c), .. }] if c.is_empty()),
        "{sent:?}"
    );
}

#[test]
fn a_plain_link_is_a_hyperlink_and_enter_opens_it() {
    let url = "https://accounts.example.com/device?code=WXYZ-1234&next=%2Fhome";
    let mut app = app_of(asked(
        json!({"sessionId":"S","mode":"url","elicitationId":"E1",
        "message":"Authorize the device","url":url}),
    ));
    let buf = common::draw_buffer(&mut app, 40, 20);
    // The address wraps: each of its rows is one cell opening the link, the text, and
    // closing it; the rest of the row's cells are skipped when the screen updates.
    let open = format!("\u{1b}]8;;{url}\u{1b}\\");
    let rows: Vec<String> = (0..20u16)
        .filter_map(|y| {
            (0..40u16)
                .map(|x| buf[(x, y)].symbol().to_string())
                .find(|s| s.starts_with(&open))
        })
        .collect();
    assert!(rows.len() >= 2, "the address wraps over rows: {rows:?}");
    let text: String = rows
        .iter()
        .map(|r| {
            r.trim_start_matches(&open)
                .trim_end_matches("\u{1b}]8;;\u{1b}\\")
        })
        .collect();
    assert_eq!(text, url);
    let f = frame_text(&mut app, 80, 24);
    assert!(f.contains("Enter open in the browser"), "{f}");
    let sent = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(sent.as_slice(), [Intent::Visit { request_id, url: u }] if request_id == "7" && u == url),
        "{sent:?}"
    );
}

#[test]
fn a_permission_request_goes_first() {
    let mut s = asked(
        json!({"sessionId":"S","mode":"form","message":"Which release?",
        "requestedSchema":release_form()}),
    );
    for (i, f) in [
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
            "sessionUpdate":"tool_call","toolCallId":"e","title":"Edit notes.txt","kind":"edit","status":"pending"}}}),
        json!({"jsonrpc":"2.0","id":8,"method":"session/request_permission","params":{"sessionId":"S",
            "toolCall":{"toolCallId":"e"},
            "options":[{"optionId":"y","name":"Allow","kind":"allow_once"}]}}),
    ]
    .into_iter()
    .enumerate()
    {
        trellis_core::update(
            &mut s,
            trellis_core::Action::Frame {
                seq: 10 + i as u64,
                t: 10.0,
                dir: Dir::AgentToClient,
                msg: trellis_core::wire::Message::parse(&f.to_string()).unwrap(),
            },
        );
    }
    let mut app = app_of(s);
    let f = frame_text(&mut app, 80, 30);
    assert!(
        f.contains("[y] Allow") && !f.contains("Which release?"),
        "{f}"
    );
    let sent = press(&mut app, KeyCode::Char('y'));
    assert!(
        matches!(sent.as_slice(), [Intent::Decide { .. }]),
        "{sent:?}"
    );
}
