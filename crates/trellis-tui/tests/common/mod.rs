//! Helpers shared by the frame tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use trellis_tui::{App, Clock, draw};

/// One frame drawn into a `TestBackend`, as text (wide glyphs once, trailing spaces cut).
pub fn frame_text(app: &mut App, w: u16, h: u16) -> String {
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
