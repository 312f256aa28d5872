//! Extensions in whole frames: the sidebar with the built-in sections, the follow pane, a
//! designed card, the Settings menu, `/status` and the "always" rule preview.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use trellis_core::ext::{Capability, ExtError, Extension, Host, Manifest, Registration};
use trellis_core::session::LocalRecord;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Effect, Event, Policy, Session, update};
use trellis_ext_host::ui::RowTarget;
use trellis_ext_host::{Candidate, ExtHost, HostOptions};
use trellis_tui::{App, Intent};

mod common;
use common::frame_text;

struct B {
    s: Session,
    seq: u64,
    events: Vec<Event>,
}

impl B {
    fn new() -> B {
        let mut b = B {
            s: Session::new(Policy::Ask),
            seq: 0,
            events: Vec::new(),
        };
        b.f(Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"fix it"}]}}));
        b
    }
    fn act(&mut self, a: Action) {
        for fx in update(&mut self.s, a) {
            if let Effect::Emit(e) = fx {
                self.events.push(e);
            }
        }
    }
    fn f(&mut self, dir: Dir, v: Value) {
        self.seq += 1;
        let mut msg = Message::parse(&v.to_string()).unwrap();
        msg.raw = Some(v.to_string().into());
        self.act(Action::Frame {
            seq: self.seq,
            t: self.seq as f64,
            dir,
            msg,
        });
    }
    fn up(&mut self, u: Value) {
        self.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}));
    }
    fn local(&mut self, record: LocalRecord) {
        self.act(Action::Local {
            t: self.seq as f64,
            record: Box::new(record),
        });
    }
}

/// A short session: a read, a passing and a failing command, an edit written to disk.
fn session() -> B {
    let mut b = B::new();
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"r1","title":"Read lib.rs","kind":"read","status":"completed",
        "locations":[{"path":"/w/src/lib.rs","line":2}],
        "content":[{"type":"content","content":{"type":"text","text":"pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"}}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x1","title":"Run tests","kind":"execute","status":"completed",
        "rawInput":{"command":"cargo test"},
        "content":[{"type":"content","content":{"type":"text","text":"running 3 tests\ntest result: ok. 3 passed\n"}}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x2","title":"Show env","kind":"execute","status":"failed",
        "rawInput":{"command":"env | grep KEY"},
        "content":[{"type":"content","content":{"type":"text","text":"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx\n"}}]}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit lib.rs","kind":"edit","status":"in_progress",
        "locations":[{"path":"/w/src/lib.rs"}],
        "content":[{"type":"diff","path":"/w/src/lib.rs","oldText":"    a + b\n","newText":"    a.checked_add(b)\n        .expect(\"overflow\")\n"}]}));
    let new = "pub fn add(a: i32, b: i32) -> i32 {\n    a.checked_add(b)\n        .expect(\"overflow\")\n}\n";
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":7,"method":"fs/write_text_file","params":{"sessionId":"S","path":"/w/src/lib.rs","content":new}}));
    b.local(LocalRecord::FileWritten {
        request_id: "7".into(),
        old: Some("pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n".into()),
        existed: Some(true),
    });
    b.f(
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":7,"result":{}}),
    );
    b.up(json!({"sessionUpdate":"usage_update","used":5321,"size":200000,"cost":{"amount":0.0123,"currency":"USD"}}));
    b
}

/// Panics whenever it is called: isolation in the frame and in `/status`.
struct Broken;

impl Extension for Broken {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "broken".into(),
            version: "0.0.1".into(),
            description: "fails on purpose".into(),
            capabilities: vec![Capability::Observe, Capability::Ui, Capability::Store],
            ui_only: false,
        }
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            sections: vec![trellis_core::ext::SectionDecl {
                id: "x".into(),
                title: "Broken: section".into(),
                max_rows: 3,
                collapsed: false,
            }],
            // Taken by Trellis (transcript "down"): rejected, said in /status.
            keys: vec![trellis_core::ext::KeyDecl {
                id: "k".into(),
                keys: "j".into(),
                label: "Jump".into(),
            }],
            ..Registration::default()
        })
    }
    fn on_event(&mut self, e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        if matches!(e.body, trellis_core::EventBody::Usage { .. }) {
            panic!("usage overflowed my counter");
        }
        Err(ExtError::msg("cannot handle this event"))
    }
}

fn app_with(b: B, extra: Vec<Box<dyn Extension>>, w: &std::path::Path) -> App {
    app_with_builtins(b, trellis_builtins::all(), extra, w)
}

fn app_with_builtins(
    b: B,
    builtins: Vec<Box<dyn Extension>>,
    extra: Vec<Box<dyn Extension>>,
    w: &std::path::Path,
) -> App {
    trellis_ext_host::install_panic_guard();
    let mut exts: Vec<Candidate> = builtins
        .into_iter()
        .map(|ext| Candidate { ext, builtin: true })
        .collect();
    exts.extend(extra.into_iter().map(|ext| Candidate {
        ext,
        builtin: false,
    }));
    let mut opts = HostOptions {
        path_map: vec![("/w".into(), w.to_string_lossy().into_owned())],
        failure_limit: 100,
        ..HostOptions::default()
    };
    opts.config.insert(
        "broken".into(),
        trellis_ext_host::ExtConfig {
            enabled: Some(true),
            grant: Some(vec![Capability::Observe, Capability::Ui]),
            ..Default::default()
        },
    );
    opts.config.insert(
        "redact".into(),
        trellis_ext_host::ExtConfig {
            enabled: Some(true),
            grant: Some(vec![Capability::Ui, Capability::Store]),
            ..Default::default()
        },
    );
    let names: Vec<String> = exts.iter().map(|c| c.ext.manifest().name).collect();
    if names.iter().any(|n| n == "approver") {
        opts.config.insert(
            "approver".into(),
            trellis_ext_host::ExtConfig {
                enabled: Some(true),
                grant: Some(vec![Capability::InterceptPermissions]),
                ..Default::default()
            },
        );
    }
    let (host, rx) = ExtHost::new(exts, opts);
    for e in &b.events {
        host.dispatch(e);
    }
    assert!(host.flush(Duration::from_secs(10)));
    let mut app = App::new(b.s, "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    app.set_ext(host, rx);
    app
}

/// On the Redaction page, with the cursor on `Hide secrets`: `off` applied repaints the
/// row, and the transcript shows the secret again.
fn redaction_off_shows_the_secret(app: &mut App) {
    app.on_key(k(KeyCode::Right));
    app.on_key(k(KeyCode::Enter));
    let f = frame_text(app, 100, 30);
    assert!(f.contains("Hide secrets  ○ on  ● off"), "{f}");
    app.on_key(k(KeyCode::Esc));
    app.sidebar = false;
    let f = frame_text(app, 100, 30);
    assert!(
        f.contains("sk-proj-abc"),
        "redaction off shows the text: {f}"
    );
}

fn workspace() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("src")).unwrap();
    std::fs::write(
        d.path().join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a.checked_add(b)\n        .expect(\"overflow\")\n}\n",
    )
    .unwrap();
    d
}

fn k(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn sidebar_sections_follow_pane_and_redacted_output() {
    let w = workspace();
    let mut app = app_with(session(), vec![], w.path());
    let f = frame_text(&mut app, 120, 34);
    insta::assert_snapshot!("ext_sidebar_120x34", f);
    // Follow: the written file, its changed lines marked.
    assert!(f.contains("/w/src/lib.rs:2"), "{f}");
    assert!(f.contains("2 +     a.checked_add(b)"), "{f}");
    // Redaction: the key is hidden on the card, the ledger keeps it.
    assert!(f.contains("OPENAI_API_KEY=‹redacted›"), "{f}");
    assert!(!f.contains("sk-proj-abc"), "{f}");
    // The inspector shows the displayed output, and the original on request.
    app.inspect_call("x2");
    let f = frame_text(&mut app, 120, 34);
    assert!(
        f.contains("OPENAI_API_KEY=‹redacted›") && !f.contains("sk-proj"),
        "{f}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('O'), KeyModifiers::SHIFT));
    let f = frame_text(&mut app, 120, 34);
    assert!(f.contains("sk-proj-abcdefghijklmnopqrstuvwx"), "{f}");
    assert!(f.contains("(original)"), "{f}");
}

#[test]
fn switching_a_card_design_repaints_cards_already_drawn() {
    let w = workspace();
    let mut app = app_with(session(), vec![], w.path());
    app.sidebar = false;
    let before = frame_text(&mut app, 90, 20);
    assert!(before.contains("» Run tests"), "{before}");
    let ui = app.driver.host.as_ref().unwrap().ui.clone();
    ui.apply(&RowTarget::Card("kind:execute".into()), "cards/terminal");
    ui.apply(&RowTarget::Card("kind:edit".into()), "cards/diffstat");
    let after = frame_text(&mut app, 90, 20);
    insta::assert_snapshot!("ext_designed_cards_90x20", after);
    assert!(after.contains("✓ $ cargo test"), "{after}");
    assert!(after.contains("✎ /w/src/lib.rs +2 −1"), "{after}");
    assert!(!after.contains("» Run tests"));
    // Back to native: the card is the native one again.
    ui.apply(&RowTarget::Card("kind:execute".into()), "native");
    let back = frame_text(&mut app, 90, 20);
    assert!(back.contains("» Run tests"), "{back}");
    // A choice whose design is gone falls back to the native card.
    ui.apply(&RowTarget::Card("kind:execute".into()), "cards/removed");
    assert!(frame_text(&mut app, 90, 20).contains("» Run tests"));
}

#[test]
fn settings_menu_moves_without_applying_and_enter_applies() {
    let w = workspace();
    let mut app = app_with(session(), vec![], w.path());
    app.on_key(k(KeyCode::F(2)));
    let f = frame_text(&mut app, 100, 30);
    insta::assert_snapshot!("ext_settings_sections_100x30", f);
    // Right moves the cursor to "collapsed" — nothing changes until Enter.
    app.on_key(k(KeyCode::Right));
    assert!(!frame_text(&mut app, 100, 30).contains("▸ Follow"));
    app.on_key(k(KeyCode::Enter));
    app.on_key(k(KeyCode::Esc));
    let f = frame_text(&mut app, 100, 30);
    assert!(f.contains("▸ Follow"), "collapsed: {f}");
    assert!(
        !f.contains("checked_add"),
        "a collapsed section shows no body: {f}"
    );
    // The Cards page: one line per tool with designs.
    app.open_settings();
    app.on_key(k(KeyCode::Tab));
    let f = frame_text(&mut app, 100, 30);
    insta::assert_snapshot!("ext_settings_cards_100x30", f);
    // An extension's row: its action runs on Enter and the row repaints at once.
    app.on_key(k(KeyCode::Tab));
    redaction_off_shows_the_secret(&mut app);
}

#[test]
fn status_lists_every_extension_and_the_failures_of_a_broken_one() {
    let w = workspace();
    let mut app = app_with(session(), vec![Box::new(Broken)], w.path());
    app.prompt.text = "/status".into();
    app.prompt.cursor = 7;
    assert!(
        app.on_key(k(KeyCode::Enter)).is_empty(),
        "not sent to the agent"
    );
    let f = frame_text(&mut app, 110, 60);
    // Timings vary run to run: keep their shape only.
    let f: String = f
        .lines()
        .map(|l| {
            match l
                .find("events, p50")
                .or_else(|| l.find("queue: at most").map(|_| 0))
            {
                Some(0) => "       │  queue: at most N of 16384 events waiting".to_string(),
                Some(i) => {
                    let head = &l[..i];
                    let head = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ');
                    format!("{head} N events, p50 … µs, p99 … µs")
                }
                None => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("ext_status_110x60", f);
    assert!(f.contains("broken 0.0.1 (plugin): degraded"), "{f}");
    assert!(f.contains("panicked: usage overflowed my counter"), "{f}");
    assert!(f.contains("not granted: store"), "{f}");
    assert!(
        f.contains("rejected section title: \"Broken: section\""),
        "{f}"
    );
    assert!(
        f.contains("rejected key: \"j\" — the key is bound to Trellis's down action"),
        "{f}"
    );
    // The healthy built-ins are untouched.
    assert!(f.contains("stats 0.1.0 (built-in): ready"), "{f}");
}

#[test]
fn always_opens_a_rule_preview_that_can_be_edited_or_abandoned() {
    let w = workspace();
    let mut b = session();
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x3","title":"Run tests again","kind":"execute","status":"pending",
        "rawInput":{"command":"cargo test --all"}}));
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x3"},
        "options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always"},
                   {"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    let mut app = app_with(b, vec![], w.path());
    app.sidebar = false;
    assert!(
        app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE))
            .is_empty()
    );
    let f = frame_text(&mut app, 100, 30);
    insta::assert_snapshot!("ext_always_preview_100x30", f);
    assert!(f.contains("command  cargo test --all"), "{f}");
    // Esc abandons: nothing answered, the question is back.
    assert!(app.on_key(k(KeyCode::Esc)).is_empty());
    assert!(app.dialog().is_some());
    // Edit the pattern to a glob, pick the scope, save: the answer goes out.
    app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
    for _ in 0.." --all".len() {
        app.on_key(k(KeyCode::Backspace));
    }
    app.on_key(KeyEvent::new(KeyCode::Char('*'), KeyModifiers::NONE));
    let f = frame_text(&mut app, 100, 30);
    assert!(f.contains("Matches 2 calls of this session so far"), "{f}");
    // Scope: this project (kept in the store). ←/→ change the scope from the pattern
    // field too, as the hint says.
    app.on_key(k(KeyCode::Right));
    let intents = app.on_key(k(KeyCode::Enter));
    assert_eq!(
        intents,
        vec![Intent::Decide {
            request_id: "9".into(),
            option_id: "always".into(),
            reason: None,
        }]
    );
    let stored = app
        .driver
        .host
        .as_ref()
        .unwrap()
        .host_store_get("rules")
        .unwrap();
    assert_eq!(
        stored["projects"][""][0]["command"], "cargo test*",
        "{stored}"
    );
    // Settings → Rules lists it, and can delete it (then tested again below).
    app.open_settings();
    for _ in 0..3 {
        app.on_key(k(KeyCode::Tab));
    }
    let f = frame_text(&mut app, 110, 30);
    assert!(
        f.contains("Rule 1  ● project: allow kind=execute command=cargo test*  ○ delete"),
        "{f}"
    );
    // Narrow: the rule is clipped, the delete choice stays, the whole rule is below.
    let f = frame_text(&mut app, 60, 30);
    assert!(
        f.contains("● project: allow") && f.contains("○ delete"),
        "{f}"
    );
    assert!(
        f.contains("project: allow kind=execute command=cargo test*"),
        "{f}"
    );
    app.on_key(k(KeyCode::Right));
    app.on_key(k(KeyCode::Enter));
    app.on_key(k(KeyCode::Esc));
    assert!(app.driver.saved_rules.is_empty());
    let stored = app
        .driver
        .host
        .as_ref()
        .unwrap()
        .host_store_get("rules")
        .unwrap();
    assert_eq!(stored["projects"][""], json!([]), "{stored}");
    match &app.driver.session.policy {
        Policy::Rules { rules, .. } => assert!(rules.is_empty()),
        other => panic!("{other:?}"),
    }
    // Saved again (session scope this time) for the decision below.
    app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
    for _ in 0.." --all".len() {
        app.on_key(k(KeyCode::Backspace));
    }
    app.on_key(KeyEvent::new(KeyCode::Char('*'), KeyModifiers::NONE));
    assert_eq!(app.on_key(k(KeyCode::Enter)), intents);
    // The rule is in force: the next matching request is decided by it.
    match &app.driver.session.policy {
        Policy::Rules { rules, .. } => {
            assert_eq!(rules[0].command.as_deref(), Some("cargo test*"));
        }
        other => panic!("{other:?}"),
    }
    let mut next = B {
        s: std::mem::take(&mut app.driver.session),
        seq: 100,
        events: Vec::new(),
    };
    next.up(json!({"sessionUpdate":"tool_call","toolCallId":"x4","title":"tests","kind":"execute","status":"pending",
        "rawInput":{"command":"cargo test -p core"}}));
    let mut answered = Vec::new();
    next.seq += 1;
    let msg = Message::parse(&json!({"jsonrpc":"2.0","id":10,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x4"},
        "options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}}).to_string()).unwrap();
    for fx in update(
        &mut next.s,
        Action::Frame {
            seq: next.seq,
            t: 101.0,
            dir: Dir::AgentToClient,
            msg,
        },
    ) {
        if let Effect::Answer {
            decider, outcome, ..
        } = fx
        {
            answered.push((decider, outcome));
        }
    }
    assert_eq!(answered.len(), 1);
    assert!(
        matches!(&answered[0].0, trellis_core::Decider::Rule(r) if r.contains("command=cargo test*"))
    );
    assert!(answered[0].1.is_allowed());
}

/// Claims every request and allows it once.
struct Approver;

impl Extension for Approver {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "approver".into(),
            version: "1.0.0".into(),
            description: "allows everything once".into(),
            capabilities: vec![Capability::InterceptPermissions],
            ui_only: false,
        }
    }
    fn on_permission(
        &mut self,
        ask: &trellis_core::ext::PermissionAsk,
        host: &mut dyn Host,
    ) -> Result<trellis_core::ext::Claim, ExtError> {
        // Answer a little later: meanwhile the request is the extension's, not the dialog's.
        std::thread::sleep(Duration::from_millis(50));
        let once = ask
            .options
            .iter()
            .find(|o| o.kind == trellis_core::permission::OptionKind::AllowOnce)
            .unwrap();
        host.respond_permission(&ask.request_id, &once.option_id)?;
        Ok(trellis_core::ext::Claim::Claim)
    }
}

/// A long session: the preview counts what the rule matches a budget of calls per frame,
/// newest first, so opening it never reads a whole session back in one frame; calls that
/// arrive meanwhile count, and an edit starts the count again.
#[test]
fn the_rule_preview_counts_a_long_session_a_budget_at_a_time() {
    let w = workspace();
    let mut b = B::new();
    let calls = 20_000;
    let command = |i: usize| {
        if i.is_multiple_of(3) {
            "cargo test --all"
        } else {
            "ls"
        }
    };
    for i in 0..calls {
        b.up(json!({"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":format!("Call {i}"),
            "kind":"execute","status":"completed","rawInput":{"command":command(i)}}));
    }
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x3","title":"Run tests again","kind":"execute","status":"pending",
        "rawInput":{"command":"cargo test --all"}}));
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x3"},
        "options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always"}]}}));
    let mut app = app_with_builtins(b, vec![], vec![], w.path());
    app.sidebar = false;
    app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
    let budget = trellis_tui::extui::Hits::BUDGET;
    let f = common::draw_text(&mut app, 100, 30);
    // The newest `budget` calls: the one asking, and calls `calls - budget + 1..calls`.
    let first = 1
        + (calls + 1 - budget..calls)
            .filter(|i| i.is_multiple_of(3))
            .count();
    assert!(
        f.contains(&format!(
            "Matches {first} calls among the latest {budget} of {} (looking…)",
            calls + 1
        )),
        "{f}"
    );
    assert!(
        f.contains("Run tests again") && f.contains("Call 19998"),
        "{f}"
    );
    // A call arrives while it counts: it is the newest match.
    let mut seq = 1_000_000;
    let mut feed = |app: &mut App, v: Value| {
        seq += 1;
        update(
            &mut app.driver.session,
            Action::Frame {
                seq,
                t: seq as f64,
                dir: Dir::AgentToClient,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        );
    };
    feed(
        &mut app,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":
        {"sessionUpdate":"tool_call","toolCallId":"late","title":"Late tests","kind":"execute","status":"completed",
         "rawInput":{"command":"cargo test --all"}}}}),
    );
    let mut f = String::new();
    for _ in 0..(calls / budget + 1) {
        f = common::draw_text(&mut app, 100, 30);
    }
    let all = 2 + (0..calls).filter(|i| i.is_multiple_of(3)).count();
    assert!(
        f.contains(&format!("Matches {all} calls of this session so far:")),
        "{f}"
    );
    let late = f.find("Late tests").unwrap();
    assert!(late < f.find("Run tests again").unwrap(), "{f}");
    assert!(f.contains(&format!("… +{} more", all - 4)), "{f}");
    // An edit counts again, from the newest.
    app.on_key(k(KeyCode::Backspace));
    let f = common::draw_text(&mut app, 100, 30);
    assert!(f.contains("Matches 0 calls among the latest"), "{f}");
    for _ in 0..(calls / budget + 1) {
        common::draw_text(&mut app, 100, 30);
    }
    let f = common::draw_text(&mut app, 100, 30);
    assert!(f.contains("Matches 0 calls of this session so far:"), "{f}");
}

#[test]
fn an_extension_claims_a_request_in_the_ui_and_the_dialog_never_shows_it() {
    let w = workspace();
    let mut b = session();
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x9","title":"Run it","kind":"execute","status":"pending",
        "rawInput":{"command":"make"}}));
    let before = b.events.len();
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":11,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x9"},
        "options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    let asked: Vec<Effect> = b.events.drain(before..).map(Effect::Emit).collect();
    let mut app = app_with(b, vec![Box::new(Approver)], w.path());
    let mut rx = app.driver.take_host_rx().unwrap();
    trellis_tui::apply_effects(&mut app, asked);
    assert!(app.dialog().is_none(), "held by the extension, not asked");
    assert_eq!(app.driver.session.pending_permissions().len(), 1);
    let host = app.driver.host.as_ref().unwrap();
    assert_eq!(host.holder("11"), Some("approver"));
    assert!(host.flush(Duration::from_secs(10)));
    while let Ok(m) = rx.try_recv() {
        let outs = app.driver.host.as_mut().unwrap().on_msg(m, 1.0);
        trellis_tui::perform_outs(&mut app, outs);
    }
    assert!(
        app.driver.session.pending_permissions().is_empty(),
        "answered by the extension"
    );
    assert!(app.dialog().is_none());
}

/// The built-in `redact`, replaced by the same extension written as a Python plugin
/// (`examples/plugins/redact`): the frames are the built-in's snapshots, unchanged.
#[test]
fn the_redact_plugin_draws_the_same_frames_as_the_built_in() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("python3 is missing: run the suite with scripts/test, which installs it");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let package = trellis_plugin::Package::load(&root.join("examples/plugins/redact")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let reg = trellis_plugin::registry::Registry::new(data.path().to_path_buf(), None);
    let mut spec = trellis_plugin::registry::spec_of(&package, &reg, None).unwrap();
    spec.launch
        .env
        .push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    let builtins: Vec<Box<dyn Extension>> = trellis_builtins::all()
        .into_iter()
        .filter(|e| e.manifest().name != "redact")
        .collect();
    let w = workspace();
    let mut app = app_with_builtins(
        session(),
        builtins,
        vec![Box::new(trellis_plugin::PluginExt::new(spec))],
        w.path(),
    );
    let f = frame_text(&mut app, 120, 34);
    insta::assert_snapshot!("ext_sidebar_120x34", f);
    // Its Settings row works the same: off shows the secret, the store keeps the choice.
    app.on_key(k(KeyCode::F(2)));
    let f = frame_text(&mut app, 100, 30);
    insta::assert_snapshot!("ext_settings_sections_100x30", f);
    app.on_key(k(KeyCode::Tab));
    app.on_key(k(KeyCode::Tab));
    redaction_off_shows_the_secret(&mut app);
    let host = app.driver.host.as_ref().unwrap();
    assert_eq!(
        host.store_dump("redact"),
        vec![("enabled".to_string(), serde_json::json!(false))]
    );
}

/// Settings → Plugins: each package found, off or on; `on` names what it grants, and
/// applying it enables the plugin (with its content hash) for the next session.
#[test]
fn the_plugins_page_enables_a_plugin_granting_exactly_what_it_asks() {
    let data = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plugins");
    for name in ["shell-cards", "permission-helper"] {
        let dest = data.path().join("plugins").join(name);
        std::fs::create_dir_all(&dest).unwrap();
        for f in ["plugin.json", "plugin.py"] {
            std::fs::copy(root.join(name).join(f), dest.join(f)).unwrap();
        }
    }
    let w = workspace();
    let mut app = app_with(session(), vec![], w.path());
    let reg = trellis_plugin::registry::Registry::new(data.path().to_path_buf(), None);
    app.plugins = Some(reg.clone());
    app.open_settings();
    // Sections, Cards, Redaction, Plugins.
    for _ in 0..3 {
        app.on_key(k(KeyCode::Tab));
    }
    let f = frame_text(&mut app, 110, 30);
    assert!(
        f.contains("permission-helper  ● off  ○ on · grant intercept-permissions, ui"),
        "{f}"
    );
    assert!(
        f.contains("shell-cards        ● off  ○ on · grant ui"),
        "{f}"
    );
    // The second row: on.
    app.on_key(k(KeyCode::Down));
    app.on_key(k(KeyCode::Right));
    app.on_key(k(KeyCode::Enter));
    let f = frame_text(&mut app, 110, 30);
    assert!(
        f.contains("shell-cards        ○ off  ● on · grant ui"),
        "{f}"
    );
    assert_eq!(
        app.message.as_deref(),
        Some("plugin shell-cards enabled, granted ui; it starts with your next session")
    );
    let (state, _) = reg.state();
    assert_eq!(state.enabled.len(), 1);
    assert_eq!(state.enabled[0].grant, ["ui"]);
    assert!(state.enabled[0].hash.starts_with("sha256:"));
}

/// A design decides the call part only: who decided the call's permission, and a failed
/// call's output, still show with it.
#[test]
fn designed_cards_keep_the_decider_and_a_failures_output() {
    let w = workspace();
    let mut b = session();
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x3","title":"Deploy","kind":"execute","status":"pending",
        "rawInput":{"command":"make deploy"}}));
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":21,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x3"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    b.f(Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":21,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}));
    b.up(json!({"sessionUpdate":"tool_call_update","toolCallId":"x3","status":"completed"}));
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"r2","title":"Read missing.rs","kind":"read","status":"failed",
        "locations":[{"path":"/w/src/missing.rs"}],
        "content":[{"type":"content","content":{"type":"text","text":"error: no such file: missing.rs\n"}}]}));
    let mut app = app_with(b, vec![], w.path());
    app.sidebar = false;
    let ui = app.driver.host.as_ref().unwrap().ui.clone();
    ui.apply(&RowTarget::Card("kind:execute".into()), "cards/terminal");
    ui.apply(&RowTarget::Card("kind:read".into()), "cards/compact");
    let f = frame_text(&mut app, 100, 30);
    // The status mark and duration stay with a design, and so does who decided.
    assert!(f.contains("✓ $ make deploy  · 3.0s · allowed once"), "{f}");
    assert!(f.contains("▸ /w/src/missing.rs"), "{f}");
    assert!(f.contains("error: no such file: missing.rs"), "{f}");
}

/// A question that waits for the human gets the width: at 90 columns the sidebar (38 of
/// them) gives way while the permission dialog is in front.
#[test]
fn the_sidebar_gives_way_to_an_open_dialog_on_a_narrow_terminal() {
    let w = workspace();
    let mut b = session();
    b.up(json!({"sessionUpdate":"tool_call","toolCallId":"x3","title":"Run tests again","kind":"execute","status":"pending",
        "rawInput":{"command":"cargo test --all"}}));
    b.f(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"x3"},
        "options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}}));
    let mut app = app_with(b, vec![], w.path());
    let f = frame_text(&mut app, 90, 30);
    assert!(
        !f.contains("▾ Follow"),
        "no sidebar while the question is open: {f}"
    );
    let widest = f
        .lines()
        .filter(|l| l.contains('┌'))
        .map(|l| l.chars().filter(|c| *c == '─').count())
        .max()
        .unwrap_or(0);
    assert!(widest > 70, "the dialog takes the width: {f}");
    let f = frame_text(&mut app, 140, 30);
    assert!(f.contains("▾ Follow"), "wide enough for both: {f}");
}
