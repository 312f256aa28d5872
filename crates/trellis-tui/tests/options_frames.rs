//! The agent's options (issue 12, item 1): the list with current values (`M`,
//! `/config`), a selector's grouped choices (`/model`), a switch, the legacy modes, and
//! the status bar's mode, model and thinking level — as the agent reports them, its text
//! made harmless.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use trellis_core::Session;
use trellis_core::wire::Dir;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session_with, session_of};

fn options(model: &str, web: bool) -> Value {
    json!([
        {"id": "model", "name": "Model", "category": "model", "type": "select",
         "description": "Which model answers", "currentValue": model, "options": [
            {"group": "quick", "name": "Quick", "options": [
                {"value": "fast", "name": "Fast One", "description": "answers at once"}]},
            {"group": "careful", "name": "Careful", "options": [
                {"value": "deep", "name": "Deep \u{1b}[31mThinker", "description": "thinks first"},
                {"value": "max", "name": "Max"}]}]},
        {"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select",
         "currentValue": "medium", "options": [
            {"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"},
            {"value": "high", "name": "High"}]},
        {"id": "web_search", "name": "Web search", "type": "boolean", "currentValue": web},
        {"id": "dial", "name": "A kind Trellis does not know", "type": "dial", "currentValue": 3}
    ])
}

/// A session set up with config options and legacy modes; `later` frames after that.
fn session(later: Vec<(Dir, Value)>) -> Session {
    let frames = new_session_with(
        json!({"sessionId":"S",
            "modes": {"currentModeId": "ask", "availableModes": [
                {"id": "ask", "name": "Ask first"}, {"id": "auto", "name": "Act alone"}]},
            "configOptions": options("fast", false)}),
        later,
    );
    session_of(frames)
}

fn app(s: Session) -> App {
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    app
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn command(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
    key(app, KeyCode::Enter);
}

fn last_line(frame: &str) -> String {
    frame.lines().last().unwrap_or("").to_string()
}

#[test]
fn the_list_a_selectors_grouped_choices_and_the_status_bar() {
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let mut a = app(session(vec![]));
        let f = frame_text(&mut a, w, h);
        assert!(
            last_line(&f).contains("mode Ask first │ Fast One │ thinking Medium"),
            "{}",
            last_line(&f)
        );
        // M from the transcript (Esc leaves the prompt).
        key(&mut a, KeyCode::Esc);
        key(&mut a, KeyCode::Char('M'));
        let f = frame_text(&mut a, w, h);
        assert!(!f.contains("A kind Trellis"), "unknown kinds are left out");
        insta::assert_snapshot!(format!("options_list_{w}x{h}"), f);
        // Enter on Model: its choices, grouped, the current one marked.
        key(&mut a, KeyCode::Enter);
        let f = frame_text(&mut a, w, h);
        assert!(!f.contains('\u{1b}'), "the agent's text is made harmless");
        insta::assert_snapshot!(format!("options_model_{w}x{h}"), f);
        // Down to Deep, Enter: asked of the agent; back on the list.
        key(&mut a, KeyCode::Down);
        key(&mut a, KeyCode::Enter);
        assert_eq!(
            a.message.as_deref(),
            Some("asked the agent for Model = deep")
        );
        assert!(frame_text(&mut a, w, h).contains("Agent options"));
    }
}

#[test]
fn commands_open_one_option_a_switch_flips_and_modes_are_offered() {
    let mut a = app(session(vec![]));
    // `/model` opens the choices directly; Esc closes the picker.
    command(&mut a, "/model");
    let f = frame_text(&mut a, 80, 24);
    assert!(f.contains(" Model ") && f.contains("Careful"), "{f}");
    key(&mut a, KeyCode::Esc);
    assert!(!frame_text(&mut a, 80, 24).contains(" Model "));
    // `/mode`: the legacy modes (no config option of that category).
    command(&mut a, "/mode");
    let f = frame_text(&mut a, 80, 24);
    assert!(
        f.contains("● Ask first") && f.contains("○ Act alone"),
        "{f}"
    );
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        a.message.as_deref(),
        Some("asked the agent for mode = auto")
    );
    // `/config`: the list; the switch flips with Enter and the picker stays.
    command(&mut a, "/config");
    for _ in 0..2 {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        a.message.as_deref(),
        Some("asked the agent for Web search = on")
    );
    assert!(
        frame_text(&mut a, 80, 24).contains("[off]"),
        "until the agent answers"
    );
    key(&mut a, KeyCode::Esc);
    // An option the agent does not offer.
    command(&mut a, "/config colour");
    assert_eq!(
        a.message.as_deref(),
        Some("the agent offers no option colour")
    );
}

#[test]
fn the_agents_answer_and_its_updates_are_what_is_shown() {
    // The user set the model (request and answer), then the agent changed the switch.
    let a_session = session(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":2,"method":"session/set_config_option","params":{
                "sessionId":"S","configId":"model","value":"max"}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":2,"result":{"configOptions": options("max", false)}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
                "sessionUpdate":"config_option_update","configOptions": options("max", true)}}}),
        ),
    ]);
    assert_eq!(a_session.settings_answered, 1);
    assert_eq!(a_session.settings_refused, 0);
    // A refusal is counted (a headless run stops on it) and said.
    let refused = session(vec![
        (
            Dir::ClientToAgent,
            json!({"jsonrpc":"2.0","id":2,"method":"session/set_config_option","params":{
                "sessionId":"S","configId":"model","value":"max"}}),
        ),
        (
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"not for you"}}),
        ),
    ]);
    assert_eq!(
        (refused.settings_answered, refused.settings_refused),
        (1, 1)
    );
    assert_eq!(refused.config[0].shown_value(), "Fast One", "unchanged");
    let mut a = app(a_session);
    let f = frame_text(&mut a, 120, 12);
    assert!(last_line(&f).contains("│ Max │"), "{}", last_line(&f));
    command(&mut a, "/config");
    let f = frame_text(&mut a, 120, 24);
    assert!(f.contains("[on]") && f.contains("Max ›"), "{f}");
}

#[test]
fn an_agent_without_options_says_so() {
    let mut a = app(Session::new(trellis_core::Policy::Ask));
    command(&mut a, "/model");
    assert_eq!(
        a.message.as_deref(),
        Some("the agent offers no options to set")
    );
    command(&mut a, "/config");
    let f = frame_text(&mut a, 80, 24);
    assert!(f.contains("the agent offers no options to set"), "{f}");
}
