//! Helpers shared by the frame tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use trellis_tui::{App, Clock, draw};

/// Waits until every extension has handled what it was sent (events, actions, the cards
/// and transforms the last frame asked for).
pub fn settle(app: &App) {
    if let Some(h) = &app.driver.host {
        assert!(h.flush(std::time::Duration::from_secs(10)));
    }
}

/// One frame drawn into a `TestBackend`, as text (wide glyphs once, trailing spaces cut),
/// once extensions have answered what an earlier frame of the same size asked for.
pub fn frame_text(app: &mut App, w: u16, h: u16) -> String {
    settle(app);
    draw_text(app, w, h);
    settle(app);
    draw_text(app, w, h)
}

/// One frame drawn now (without waiting for extensions), as the terminal's cells.
pub fn draw_buffer(app: &mut App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    draw_with_cursor(app, w, h).0
}

/// One frame drawn now, and where the terminal's cursor is left.
pub fn draw_with_cursor(
    app: &mut App,
    w: u16,
    h: u16,
) -> (ratatui::buffer::Buffer, ratatui::layout::Position) {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        draw(
            f,
            app,
            Clock {
                now: 10.0,
                frame: 0,
            },
        )
    })
    .unwrap();
    let cursor = term.get_cursor_position().unwrap();
    (term.backend().buffer().clone(), cursor)
}

/// A session built from ACP frames (direction, JSON), numbered from 1, one second apart.
pub fn session_of(
    frames: Vec<(trellis_core::wire::Dir, serde_json::Value)>,
) -> trellis_core::Session {
    let mut s = trellis_core::Session::new(trellis_core::Policy::Ask);
    for (i, (dir, f)) in frames.into_iter().enumerate() {
        trellis_core::update(
            &mut s,
            trellis_core::Action::Frame {
                seq: i as u64 + 1,
                t: i as f64,
                dir,
                msg: trellis_core::wire::Message::parse(&f.to_string()).unwrap(),
            },
        );
    }
    s
}

/// One frame as it is drawn now, without waiting for extensions.
pub fn draw_text(app: &mut App, w: u16, h: u16) -> String {
    buffer_text(&draw_buffer(app, w, h), w, h)
}

/// A drawn buffer as text: wide glyphs once, trailing spaces cut.
pub fn buffer_text(buf: &ratatui::buffer::Buffer, w: u16, h: u16) -> String {
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..w {
            // The cell after a wide glyph is its right half, not a character.
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            skip = trellis_text::display_width(sym).saturating_sub(1);
            line.push_str(sym);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One frame as it is drawn now: for each row, its text and whether every non-blank
/// cell of it is drawn reversed (the cursor's mark).
pub fn draw_marked(app: &mut App, w: u16, h: u16) -> Vec<(String, bool)> {
    let buf = draw_buffer(app, w, h);
    (0..h)
        .map(|y| {
            let cells: Vec<_> = (0..w).map(|x| buf[(x, y)].clone()).collect();
            let text: String = cells.iter().map(|c| c.symbol().to_string()).collect();
            let marked = cells
                .iter()
                .filter(|c| !c.symbol().trim().is_empty())
                .all(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED))
                && cells.iter().any(|c| !c.symbol().trim().is_empty());
            (text.trim_end().to_string(), marked)
        })
        .collect()
}

/// A `session/update` from the agent for session `S`.
pub fn update(u: serde_json::Value) -> (trellis_core::wire::Dir, serde_json::Value) {
    (
        trellis_core::wire::Dir::AgentToClient,
        serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}),
    )
}

/// `session/new` in `/home/dev/app` and the agent's answer (session `S`), then `more`.
pub fn new_session(
    more: Vec<(trellis_core::wire::Dir, serde_json::Value)>,
) -> Vec<(trellis_core::wire::Dir, serde_json::Value)> {
    new_session_with(serde_json::json!({"sessionId": "S"}), more)
}

/// [`new_session`] with the agent's whole answer given (`result`).
pub fn new_session_with(
    result: serde_json::Value,
    more: Vec<(trellis_core::wire::Dir, serde_json::Value)>,
) -> Vec<(trellis_core::wire::Dir, serde_json::Value)> {
    use trellis_core::wire::Dir;
    let mut v = vec![
        (
            Dir::ClientToAgent,
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/app","mcpServers":[]}}),
        ),
        (
            Dir::AgentToClient,
            serde_json::json!({"jsonrpc":"2.0","id":1,"result":result}),
        ),
    ];
    v.extend(more);
    v
}
