//! What opens over the whole screen: Settings, `/status` (wrapped, never cut), a rule's
//! preview, the help.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::app::App;
use crate::layout::centered;

/// Settings, `/status` or a rule preview, centered over the whole screen.
pub(crate) fn draw_overlay(
    f: &mut Frame<'_>,
    app: &mut App,
    ov: &crate::extui::Overlay,
    area: Rect,
) {
    use crate::extui::Overlay;
    let theme = app.theme.clone();
    let w = area.width.saturating_sub(4).min(96);
    let inner_w = w.saturating_sub(2) as usize;
    let (title, mut lines, scroll) = match ov {
        Overlay::Settings(st) => {
            let pages = app.settings_pages();
            (
                " Settings ".to_string(),
                st.lines(&pages, inner_w, &theme),
                0,
            )
        }
        Overlay::Status { scroll } => {
            let report = app
                .driver
                .host
                .as_ref()
                .map(|h| h.status())
                .unwrap_or_default();
            let mut text = report.lines();
            // Where finished calls' output is kept (memory, or the session log).
            if let Some(line) = app.driver.output_held() {
                text.push(String::new());
                text.push("Tool output".into());
                text.extend(line.lines().map(|l| format!("  {l}")));
            }
            // The MCP servers offered to the agent, and those that were not (and why).
            if !app.driver.mcp.is_empty() || !app.mcp_problems.is_empty() {
                text.push(String::new());
                text.push("MCP servers".into());
                for o in &app.driver.mcp {
                    text.push(format!("  {}", o.line()));
                }
                for p in &app.mcp_problems {
                    text.push(format!("  failed: {p}"));
                }
            }
            for section in &app.status_sections {
                if let Some((head, rest)) = section.split_first() {
                    text.push(String::new());
                    text.push(head.clone());
                    text.extend(rest.iter().map(|l| format!("  {l}")));
                }
            }
            // Wrapped, never cut: a failure's reason is what the page is opened for.
            let mut lines: Vec<Line<'static>> = text
                .into_iter()
                .flat_map(|l| {
                    let st = if l.contains("disabled —") || l.starts_with("  failed") {
                        theme.failed
                    } else if l.contains("degraded —") || l.starts_with("  rejected") {
                        theme.cancelled
                    } else if l.starts_with("  ") {
                        theme.text
                    } else {
                        theme.title
                    };
                    status_line(&l, inner_w, st)
                })
                .collect();
            if app.driver.host.is_none() {
                lines.push(Line::styled(
                    "No extension host in this session.",
                    theme.dim,
                ));
            }
            (" Status · extensions ".to_string(), lines, *scroll)
        }
        Overlay::Help { scroll } => (
            " Help · every key as bound now · Esc closes ".to_string(),
            crate::help::help_lines(app, inner_w, &theme),
            *scroll,
        ),
        Overlay::Rewind(r) => {
            let (lines, at) = r.lines(inner_w, &theme);
            let inner_h = area.height.saturating_sub(2) as usize;
            let scroll = (at + 2).saturating_sub(inner_h);
            (" Rewind: back to before a turn ".to_string(), lines, scroll)
        }
        Overlay::Reason(r) => (
            " Reject with a reason ".to_string(),
            r.lines(inner_w, &theme),
            0,
        ),
        Overlay::Rule(p) => (
            " Always: save a rule? ".to_string(),
            p.lines(&app.driver.session, &theme),
            0,
        ),
        Overlay::Options(p) => {
            let s = &app.driver.session;
            let (lines, at) = p.lines(s, inner_w, &theme);
            let inner_h = area.height.saturating_sub(2) as usize;
            let scroll = (at + 2).saturating_sub(inner_h);
            (p.title(s), lines, scroll)
        }
        Overlay::Sessions(p) => {
            // The cursor's row in view: scrolled so that it sits on the last lines.
            let lines = p.lines(inner_w, &theme);
            let at = 3 + p.rows[..p.cursor.min(p.rows.len())]
                .iter()
                .map(|r| 1 + usize::from(r.snippet.is_some()))
                .sum::<usize>();
            let inner_h = area.height.saturating_sub(2) as usize;
            let scroll = (at + 3).saturating_sub(inner_h);
            (" Sessions ".to_string(), lines, scroll)
        }
    };
    let h = (lines.len() as u16 + 2).min(area.height);
    let inner_h = h.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(inner_h));
    if let Some(Overlay::Status { scroll: s } | Overlay::Help { scroll: s }) = app.overlay.as_mut()
    {
        *s = scroll;
    }
    app.overlay_page = inner_h;
    let below = lines.len().saturating_sub(scroll + inner_h);
    lines.drain(..scroll);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .title(title)
        .border_style(theme.running);
    if below > 0 || scroll > 0 {
        block = block.title_bottom(Line::styled(
            format!(" ↓ {below} more · j/k PgUp/PgDn scroll "),
            theme.dim,
        ));
    }
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// A `/status` line wrapped to `width`, its continuation lines indented under it.
fn status_line(l: &str, width: usize, st: ratatui::style::Style) -> Vec<Line<'static>> {
    const INDENT: &str = "    ";
    if trellis_text::display_width(l) <= width || width <= INDENT.len() * 2 {
        return vec![Line::styled(trellis_text::clip(l, width).into_owned(), st)];
    }
    let wrapped = trellis_text::wrap::wrap_line(&Line::raw(l.to_string()), width - INDENT.len());
    wrapped
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let text: String = w.spans.iter().map(|s| s.content.as_ref()).collect();
            let text = if i == 0 {
                text
            } else {
                format!("{INDENT}{}", text.trim_start())
            };
            Line::styled(text, st)
        })
        .collect()
}
