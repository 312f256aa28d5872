//! An agent's question drawn over the transcript (or the inbox), from the form's state in
//! [`crate::ask`]: above the app, beside the other drawing.

use trellis_core::Elicitation;

use ratatui::text::Line;

use crate::ask::{Shown, state_for};

/// Draws the open question over `main`: the body scrolls (keeping the field with focus in
/// view); the key line stays at the bottom.
pub(crate) fn draw(
    f: &mut ratatui::Frame<'_>,
    app: &mut crate::app::App,
    e: &Elicitation,
    main: ratatui::layout::Rect,
) {
    draw_from(f, app, e, main, None);
}

/// [`draw`], the title naming the session that asks (`from`) when it is not the one on
/// screen (the inbox).
pub(crate) fn draw_from(
    f: &mut ratatui::Frame<'_>,
    app: &mut crate::app::App,
    e: &Elicitation,
    main: ratatui::layout::Rect,
    from: Option<&str>,
) {
    use ratatui::widgets::{Block, Borders, Clear, Paragraph};
    let asking = state_for(&mut app.asking, e);
    let w = main.width.saturating_sub(4).min(100);
    let Shown {
        title,
        body,
        keys,
        focus,
        link,
    } = asking.lines(e, w.saturating_sub(2) as usize, &app.theme);
    // Borders, the blank line and the key lines take their rows first.
    let room = (main.height as usize).saturating_sub(3 + keys.len()).max(1);
    let max_scroll = body.len().saturating_sub(room);
    // The field with focus (and its hint line) stays in view.
    if focus + 2 > asking.scroll + room {
        asking.scroll = (focus + 2).saturating_sub(room);
    }
    if focus < asking.scroll {
        asking.scroll = focus;
    }
    asking.scroll = asking.scroll.min(max_scroll);
    let scroll = asking.scroll;
    let mut lines: Vec<Line<'static>> = body.into_iter().skip(scroll).take(room).collect();
    let shown = lines.len();
    lines.push(Line::default());
    lines.extend(keys);
    let h = (lines.len() as u16 + 2).min(main.height);
    let r = crate::layout::centered(main, w, h);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(match from {
            Some(from) => format!(" {from} · {title} "),
            None => format!(" {title} "),
        })
        .border_style(app.theme.cancelled);
    f.render_widget(Paragraph::new(lines).block(block), r);
    if let Some((rows, url)) = link {
        let inner = r.inner(ratatui::layout::Margin::new(1, 1));
        for row in rows.filter(|i| (scroll..scroll + shown).contains(i)) {
            let y = inner.y + (row - scroll) as u16;
            if y < inner.bottom() {
                hyperlink(f.buffer_mut(), inner.x, y, inner.right(), &url);
            }
        }
    }
}

/// Makes the text drawn on row `y` from `x` to `right` (up to its last non-blank cell) a
/// hyperlink to `url` (OSC 8): the first cell carries the sequence, the text and the
/// closing sequence, with the run's width; the others are skipped when the screen is
/// updated. `url` must be [`crate::ask::openable`] (printable ASCII, nothing that ends the sequence).
fn hyperlink(buf: &mut ratatui::buffer::Buffer, x: u16, y: u16, right: u16, url: &str) {
    use ratatui::buffer::CellDiffOption;
    let end = (x..right)
        .rev()
        .find(|&cx| {
            buf.cell((cx, y))
                .is_some_and(|c| !c.symbol().trim().is_empty())
        })
        .map_or(x, |cx| cx + 1);
    let Some(width) = std::num::NonZeroU16::new(end.saturating_sub(x)) else {
        return;
    };
    let text: String = (x..end)
        .filter_map(|cx| buf.cell((cx, y)).map(|c| c.symbol().to_string()))
        .collect();
    for cx in x + 1..end {
        if let Some(c) = buf.cell_mut((cx, y)) {
            c.set_diff_option(CellDiffOption::Skip);
        }
    }
    if let Some(c) = buf.cell_mut((x, y)) {
        c.set_symbol(&format!("\x1b]8;;{url}\x1b\\{text}\x1b]8;;\x1b\\"));
        c.set_diff_option(CellDiffOption::ForcedWidth(width));
    }
}
