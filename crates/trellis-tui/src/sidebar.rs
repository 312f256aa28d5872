//! The sidebar: contributed sections, drawn by the host. Each section has a header
//! (`▾`/`▸`, title, count) that collapses it on click, rows fitted to the sidebar's width,
//! `… +N more` past its limit, and clickable rows that highlight under the mouse.
//!
//! Invariant: every line is at most the sidebar's width (contributed rows are measured
//! and clipped by the host), so no section can disturb the layout.

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use trellis_ext_host::ui::{SectionView, fit};
use trellis_view::Theme;

use crate::app::SidebarHit;
use crate::extui::line_of;

/// Columns the sidebar takes, border included.
pub const WIDTH: u16 = 38;
/// Narrowest terminal that still gets a sidebar.
pub const MIN_TERMINAL: u16 = 90;

/// The sidebar's lines for `sections` in an area `area` (border excluded), with what each
/// screen row is for clicks. `hover` is the screen row under the mouse.
pub fn lines(
    sections: &[SectionView],
    area: Rect,
    hover: Option<u16>,
    theme: &Theme,
) -> (Vec<Line<'static>>, Vec<(u16, u16, SidebarHit)>) {
    let width = area.width as usize;
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut hits = Vec::new();
    let row_y = |n: usize| area.y + n as u16;
    for (k, s) in sections.iter().enumerate() {
        if k > 0 {
            out.push(Line::default());
        }
        let arrow = if s.collapsed { "▸" } else { "▾" };
        let count = s.count.map(|c| format!(" ({c})")).unwrap_or_default();
        let head = format!("{arrow} {}{count}", s.title);
        let mut st = theme.title;
        if hover == Some(row_y(out.len())) {
            st = st.add_modifier(Modifier::UNDERLINED);
        }
        hits.push((row_y(out.len()), area.x, SidebarHit::Header(s.key.clone())));
        out.push(Line::styled(
            trellis_text::clip(&head, width).into_owned(),
            st,
        ));
        if s.collapsed {
            continue;
        }
        if let Some(e) = &s.error {
            out.push(Line::styled(
                trellis_text::clip(&format!("  {e}"), width).into_owned(),
                theme.failed,
            ));
            continue;
        }
        for r in &s.rows {
            let fitted = fit(&r.line, width.saturating_sub(2));
            let mut line = line_of(&fitted, theme);
            line.spans.insert(0, Span::raw("  "));
            if let Some(id) = &r.id {
                if hover == Some(row_y(out.len())) {
                    line = line.patch_style(theme.selected);
                }
                hits.push((
                    row_y(out.len()),
                    area.x,
                    SidebarHit::Row {
                        section: s.key.clone(),
                        row: id.clone(),
                    },
                ));
            }
            out.push(line);
        }
        if s.more > 0 {
            out.push(Line::styled(format!("  … +{} more", s.more), theme.dim));
        }
    }
    let h = area.height as usize;
    out.truncate(h);
    hits.retain(|(y, ..)| (*y as usize) < area.y as usize + h);
    (out, hits)
}
