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

/// One frame as it is drawn now, without waiting for extensions.
pub fn draw_text(app: &mut App, w: u16, h: u16) -> String {
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
    let buf = term.backend().buffer().clone();
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
    let buf = term.backend().buffer().clone();
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
