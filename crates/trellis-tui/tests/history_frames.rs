//! The sessions picker (issue 11): this directory's sessions first, search as you type,
//! hits with their place and snippet, Enter opens a hit on its call, Ctrl-R resumes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trellis_core::{Policy, Session};
use trellis_tui::App;
use trellis_tui::app::Intent;
use trellis_tui::history::{History, PickRow};

mod common;
use common::frame_text;

/// A made-up history that records the queries it was asked.
struct Fake {
    asked: Arc<Mutex<Vec<String>>>,
}

fn row(id: &str, title: &str, here: bool) -> PickRow {
    PickRow {
        id: id.into(),
        log: PathBuf::from(format!("/logs/{id}.jsonl")),
        when: "2026-12-01 10:00 UTC".into(),
        title: title.into(),
        here,
        place: None,
        call_id: None,
        snippet: None,
        acp_id: Some(format!("acp-{id}")),
        agent_only: false,
    }
}

impl History for Fake {
    fn recent(&self) -> Result<Vec<PickRow>, String> {
        self.asked.lock().unwrap().push(String::new());
        Ok(vec![
            row("aaaa1111", "Fix the TODO in the demo workspace", true),
            row("bbbb2222", "Refactor the parser", true),
            row("cccc3333", "Another project's session", false),
        ])
    }

    fn search(&self, query: &str) -> Result<Vec<PickRow>, String> {
        self.asked.lock().unwrap().push(query.to_string());
        let mut hit = row("bbbb2222", "Refactor the parser", true);
        hit.place = Some("turn 2 · output of exec-3".into());
        hit.call_id = Some("exec-3".into());
        hit.snippet = Some(format!(
            "error: the \u{2}{query}\u{3} failed \x1b]0;pwned\x07 twice"
        ));
        Ok(vec![hit])
    }

    fn export(&self, _: &Path, _: &str) -> Result<PathBuf, String> {
        Err("not here".into())
    }
}

fn press(app: &mut App, code: KeyCode, m: KeyModifiers) -> Vec<Intent> {
    app.on_key(KeyEvent::new(code, m))
}

fn app_with_history() -> (App, Arc<Mutex<Vec<String>>>) {
    let mut app = App::new(Session::new(Policy::Ask), "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    let asked = Arc::new(Mutex::new(Vec::new()));
    app.history = Some(Box::new(Fake {
        asked: asked.clone(),
    }));
    (app, asked)
}

#[test]
fn the_picker_lists_searches_and_opens_a_hit_on_its_call() {
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let (mut app, asked) = app_with_history();
        // `/sessions` from the prompt.
        for c in "/sessions".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        press(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("picker_{w}x{h}"), f);
        assert!(f.contains("cccc3333") && f.contains("(elsewhere)"), "{f}");
        // Search as you type: one query per key.
        for c in "pars".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert_eq!(
            asked.lock().unwrap().as_slice(),
            ["", "p", "pa", "par", "pars"]
        );
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("picker_search_{w}x{h}"), f);
        assert!(f.contains("turn 2 · output of exec-3"), "{f}");
        assert!(!f.contains('\x1b'), "the snippet is sanitized: {f}");
        // Enter: the hit, read-only, on its call.
        let intents = press(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert!(
            matches!(&intents[..], [Intent::Open { log, call: Some(c) }]
                if log == Path::new("/logs/bbbb2222.jsonl") && c == "exec-3"),
            "{intents:?}"
        );
        // Still open after the replay returns; Esc closes it.
        press(&mut app, KeyCode::Esc, KeyModifiers::NONE);
        assert!(!frame_text(&mut app, w, h).contains("Sessions"));
    }
}

#[test]
fn ctrl_r_in_the_picker_resumes_the_session_in_place_of_this_one() {
    let (mut app, _) = app_with_history();
    // `H` in the transcript.
    press(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    press(&mut app, KeyCode::Char('H'), KeyModifiers::NONE);
    press(&mut app, KeyCode::Down, KeyModifiers::NONE);
    let intents = press(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
    assert!(matches!(&intents[..], [Intent::Quit]), "{intents:?}");
    assert!(app.quit);
    assert_eq!(
        app.then_run.as_deref(),
        Some(&["sessions".to_string(), "resume".into(), "bbbb2222".into()][..])
    );
}

#[test]
fn without_a_history_the_picker_says_so() {
    let mut app = App::new(Session::new(Policy::Ask), "demo".into(), false);
    for c in "/sessions".chars() {
        press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
    }
    press(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(frame_text(&mut app, 80, 24).contains("no session history here"));
}

/// The agent's own sessions (`session/list`) join the recent rows: those the history
/// knows (by the agent's id) once, the others marked as the agent's, their text made safe.
#[test]
fn the_agents_sessions_join_the_recent_rows_once() {
    use trellis_core::agent_sessions::{AgentSession, AgentSessions};
    let fake = Fake {
        asked: Arc::new(Mutex::new(Vec::new())),
    };
    let mut p = trellis_tui::history::Picker::new(&fake);
    let s = |id: &str, cwd: &str, title: &str| AgentSession {
        id: id.into(),
        cwd: Some(cwd.into()),
        title: Some(title.into()),
        updated_at: Some("2026-11-30T16:40:00Z".into()),
    };
    let listed = AgentSessions {
        sessions: vec![
            s("acp-bbbb2222", "/p", "known here already"),
            s("this-one", "/p", "the running session"),
            s("agent-9", "/p", "Only the agent\x1b]0;pwned\x07 has it"),
            s("agent-7", "/elsewhere", "From another directory"),
        ],
        ..AgentSessions::default()
    };
    p.merge_agent(&listed, Some("this-one"), Some("/p"), &fake);
    let text: String = p
        .lines(110, &trellis_view::Theme::plain())
        .iter()
        .map(|l| {
            let mut s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            s.push('\n');
            s
        })
        .collect();
    insta::assert_snapshot!("picker_agent_sessions", text);
    assert!(!text.contains("known here already"), "{text}");
    assert!(!text.contains("the running session"), "{text}");
    assert!(!text.contains('\x1b'), "{text}");
    assert_eq!(p.rows.iter().filter(|r| r.agent_only).count(), 2);
    // This directory's first: the local ones, then the agent's; the others after.
    let order: Vec<&str> = p.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        order,
        ["aaaa1111", "bbbb2222", "agent-9", "cccc3333", "agent-7"]
    );
    // A search shows hits only (the agent's list has no text to search).
    p.key(
        &KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE),
        &fake,
    );
    assert!(p.rows.iter().all(|r| !r.agent_only));
}
