//! The help screen: every key of every place, made from the keymap in force (issue 10,
//! item 15), and the first-run line of an empty transcript.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trellis_core::{Policy, Session};
use trellis_tui::App;
use trellis_tui::keymap::Keymap;

mod common;
use common::frame_text;

fn press(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn the_help_screen_at_three_sizes() {
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 50)] {
        let mut app = App::new(Session::new(Policy::Ask), "demo".into(), false);
        app.theme = trellis_view::Theme::plain();
        let empty = frame_text(&mut app, w, h);
        assert!(
            empty.contains("Type a prompt and press Enter. F1"),
            "the first-run line: {empty}"
        );
        // F1 from the prompt.
        press(&mut app, KeyCode::F(1));
        let f = frame_text(&mut app, w, h);
        insta::assert_snapshot!(format!("help_{w}x{h}"), f);
        assert!(f.contains("Help · every key as bound now"), "{f}");
        // Descriptions wider than the screen go on below, never cut.
        assert!(!f.contains("…│"), "{f}");
        assert!(
            f.find("Anywhere").unwrap() < f.find("Prompt").unwrap(),
            "the keys that work anywhere first: {f}"
        );
        // F1 again closes it.
        press(&mut app, KeyCode::F(1));
        assert!(!frame_text(&mut app, w, h).contains("Help ·"));
    }
}

#[test]
fn the_help_follows_rebindings_and_scrolls_to_the_end() {
    let mut app = App::new(Session::new(Policy::Ask), "demo".into(), false);
    app.theme = trellis_view::Theme::plain();
    let mut cfg = BTreeMap::new();
    cfg.insert("inspect".to_string(), Some("gi".to_string()));
    cfg.insert("sidebar".to_string(), None);
    app.keys = Keymap::new(&cfg).unwrap();
    // `?` in the transcript.
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('?'));
    let mut seen = String::new();
    for _ in 0..12 {
        seen.push_str(&frame_text(&mut app, 100, 20));
        press(&mut app, KeyCode::PageDown);
    }
    let line = |what: &str| {
        seen.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what:?} in {seen}"))
            .to_string()
    };
    assert!(
        line("inspect the call at the cursor").contains("gi"),
        "{seen}"
    );
    assert!(!seen.contains("gT  "), "the default is gone: {seen}");
    assert!(
        line("show or hide the sidebar").contains("(unbound)"),
        "{seen}"
    );
    assert!(line("edit the prompt in $VISUAL").contains("Ctrl-G"));
    assert!(
        seen.contains("Rebind keys under [ui.keys]"),
        "scrolled to the end: {seen}"
    );
    // Esc closes it.
    press(&mut app, KeyCode::Esc);
    assert!(app.overlay.is_none());
}
