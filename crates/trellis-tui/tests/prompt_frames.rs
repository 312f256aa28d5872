//! The prompt as the user types it: a line longer than the terminal wraps onto the next
//! rows, so its end and the cursor stay in sight (it was cut at the right edge, the
//! cursor stuck on the last column while keys went on going in unseen); more rows than
//! the prompt holds scroll to the cursor's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Position;
use trellis_tui::App;

mod common;
use common::{buffer_text, draw_with_cursor, new_session, session_of};

fn app() -> App {
    let mut app = App::new(session_of(new_session(Vec::new())), "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    app
}

fn type_in(app: &mut App, text: &str) {
    for c in text.chars() {
        let k = if c == '\n' {
            KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)
        } else {
            KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
        };
        app.on_key(k);
    }
}

/// The frame as text, and where the terminal's cursor is.
fn frame(app: &mut App, w: u16, h: u16) -> (String, Position) {
    let (buf, cursor) = draw_with_cursor(app, w, h);
    (buffer_text(&buf, w, h), cursor)
}

fn row(text: &str, y: u16) -> &str {
    text.lines().nth(y as usize).unwrap_or("")
}

#[test]
fn a_prompt_longer_than_the_terminal_wraps_and_its_end_stays_in_sight() {
    let mut app = app();
    let words = "please read every file under src and tell me which functions are never called \
                 from anywhere, then remove them one commit at a time";
    type_in(&mut app, words);
    let (f, at) = frame(&mut app, 60, 16);
    insta::assert_snapshot!("prompt_wrapped_60x16", f);
    // Every word shows: nothing is cut at the edge.
    let shown: String = f.split_whitespace().collect();
    let typed: String = words.split_whitespace().collect();
    assert!(shown.contains(&typed[typed.len() - 20..]), "{f}");
    // The cursor is right after the last character typed, on the prompt's last row.
    let line = row(&f, at.y);
    assert!(
        line.trim_end().ends_with("time"),
        "cursor row {}: {line:?}\n{f}",
        at.y
    );
    assert_eq!(at.x as usize, line.trim_end().chars().count(), "{f}");
    // A character more shows where the cursor was.
    type_in(&mut app, "!");
    let (f2, at2) = frame(&mut app, 60, 16);
    assert!(row(&f2, at.y).trim_end().ends_with("time!"), "{f2}");
    assert_eq!(at2, Position::new(at.x + 1, at.y));
    // ↑ moves up a row of the wrapped line, at the same column; the text stays.
    let before = app.prompt.text.clone();
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    let (_, at3) = frame(&mut app, 60, 16);
    assert_eq!(at3, Position::new(at2.x, at2.y - 1));
    assert_eq!(app.prompt.text, before);
}

#[test]
fn a_prompt_of_more_rows_than_fit_shows_the_cursors_row_never_the_status_bar() {
    let mut app = app();
    let text: Vec<String> = (1..=9).map(|i| format!("step {i}")).collect();
    type_in(&mut app, &text.join("\n"));
    let (f, at) = frame(&mut app, 40, 20);
    insta::assert_snapshot!("prompt_nine_lines_40x20", f);
    assert_eq!(row(&f, at.y).trim_end(), "  step 9", "{f}");
    assert!(
        !f.contains("step 3"),
        "six rows show, ending at the cursor's: {f}"
    );
    // The status bar is the last row; the prompt's bottom border is above it.
    assert!(at.y < 18, "{f}");
    // Back to the top: the first rows show.
    for _ in 0..8 {
        app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    }
    let (f, at) = frame(&mut app, 40, 20);
    assert!(row(&f, at.y).contains("step 1"), "{f}");
}

#[test]
fn wide_characters_wrap_whole() {
    let mut app = app();
    type_in(&mut app, &"日本語".repeat(10));
    let (f, at) = frame(&mut app, 20, 12);
    // Nine wide characters fill 18 cells behind the lead; no half glyph at the edge.
    assert!(f.contains("› 日本語日本語日本語\n"), "{f}");
    assert_eq!(row(&f, at.y).trim_end(), "  日本語", "{f}");
    assert_eq!(at.x, 8, "{f}");
    // On a narrower terminal, an odd number of cells: eight fit, never a half of one.
    let (f, _) = frame(&mut app, 19, 12);
    assert!(f.contains("› 日本語日本語日本\n"), "{f}");
}

#[test]
fn on_a_short_terminal_the_cursors_row_shows_and_the_rows_out_of_sight_are_said() {
    let mut app = app();
    let text: String = ('a'..='z').cycle().take(250).collect();
    type_in(&mut app, &text);
    type_in(&mut app, "Z");
    let (f, at) = frame(&mut app, 40, 9);
    // Rows 0.. are the transcript, then the prompt's top border, its rows, its bottom
    // border, the status bar: the cursor is on a row of the prompt, after the `Z`.
    assert!(at.y < 9 - 2, "the cursor below the prompt: {at:?}\n{f}");
    assert!(row(&f, at.y).trim_end().ends_with('Z'), "{f}");
    assert_eq!(
        at.x as usize,
        row(&f, at.y).trim_end().chars().count(),
        "{f}"
    );
    assert!(f.contains("↑ 4 more"), "{f}");
}

/// A session asking to edit a file.
fn asking() -> App {
    let mut app = App::new(
        session_of(new_session(vec![
            (
                trellis_core::wire::Dir::AgentToClient,
                serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{
                "sessionUpdate":"tool_call","toolCallId":"e","title":"Edit notes.txt","kind":"edit","status":"pending",
                "content":[{"type":"diff","path":"/w/notes.txt","oldText":"a\n","newText":"b\n"}]}}}),
            ),
            (
                trellis_core::wire::Dir::AgentToClient,
                serde_json::json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"S",
                "toolCall":{"toolCallId":"e"},
                "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},{"optionId":"n","name":"Reject","kind":"reject_once"}]}}),
            ),
        ])),
        "agent".into(),
        false,
    );
    app.theme = trellis_view::Theme::plain();
    app
}

#[test]
fn a_long_draft_leaves_room_for_the_question_and_its_keys() {
    let mut app = asking();
    app.prompt.text = "1234567890".repeat(50);
    app.prompt.cursor = app.prompt.text.len();
    let (f, at) = frame(&mut app, 80, 12);
    assert!(f.contains("[y] Allow") && f.contains("[n] Reject"), "{f}");
    // A quarter of the height for the draft (two rows here), the cursor's last, the rest
    // said.
    assert!(f.contains("↑ 5 more"), "{f}");
    assert!(row(&f, at.y).contains("1234567890"), "{f}");
}

#[test]
fn esc_closes_the_completions_and_stays_in_the_prompt() {
    let mut app = app();
    type_in(&mut app, "/");
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert!(app.prompt.popup.is_some());
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(app.prompt.popup.is_none());
    let (f, _) = frame(&mut app, 80, 20);
    assert!(
        f.contains(" prompt · Enter send"),
        "still in the prompt: {f}"
    );
    // Enter with them showing takes the one in the prompt and sends nothing; the next
    // Enter sends.
    app.prompt.text = "/".into();
    app.prompt.cursor = 1;
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert!(app.prompt.popup.is_some());
    let shown = app.prompt.text.clone();
    let sent = app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(sent.is_empty() && app.prompt.popup.is_none(), "{sent:?}");
    assert_eq!(app.prompt.text, shown);
}
