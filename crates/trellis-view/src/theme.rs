//! Theme roles: every style the views use, named by what it means.

use ratatui_core::style::{Color, Modifier, Style};
use trellis_core::ToolStatus;

#[derive(Debug, Clone)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub user: Style,
    pub thought: Style,
    pub notice: Style,
    pub title: Style,
    pub meta: Style,
    pub selected: Style,
    pub highlight: Style,
    pub ok: Style,
    pub failed: Style,
    pub cancelled: Style,
    pub running: Style,
    pub status_bar: Style,
    pub md: trellis_text::markdown::MdTheme,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            text: Style::default(),
            dim: Style::default().fg(Color::DarkGray),
            user: Style::default()
                .fg(Color::LightCyan)
                .add_modifier(Modifier::BOLD),
            thought: Style::default()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::ITALIC),
            notice: Style::default().fg(Color::Yellow),
            title: Style::default().add_modifier(Modifier::BOLD),
            meta: Style::default().fg(Color::DarkGray),
            selected: Style::default().add_modifier(Modifier::REVERSED),
            highlight: Style::default().fg(Color::Black).bg(Color::Yellow),
            ok: Style::default().fg(Color::Green),
            failed: Style::default().fg(Color::Red),
            cancelled: Style::default().fg(Color::Yellow),
            running: Style::default().fg(Color::Cyan),
            status_bar: Style::default().fg(Color::White).bg(Color::DarkGray),
            md: Default::default(),
        }
    }
}

impl Theme {
    pub fn status(&self, s: ToolStatus) -> Style {
        match s {
            ToolStatus::Completed => self.ok,
            ToolStatus::Failed => self.failed,
            ToolStatus::Cancelled => self.cancelled,
            ToolStatus::Unfinished => self.dim,
            ToolStatus::Pending | ToolStatus::InProgress => self.running,
        }
    }

    /// A theme without colours (for `NO_COLOR` and snapshot tests of layout).
    pub fn plain() -> Theme {
        let s = Style::default();
        Theme {
            text: s,
            dim: s,
            user: s,
            thought: s,
            notice: s,
            title: s,
            meta: s,
            selected: s.add_modifier(Modifier::REVERSED),
            highlight: s.add_modifier(Modifier::REVERSED),
            ok: s,
            failed: s,
            cancelled: s,
            running: s,
            status_bar: s.add_modifier(Modifier::REVERSED),
            md: trellis_text::markdown::MdTheme {
                heading: s,
                code: s,
                code_block: s,
                link: s,
                quote: s,
                marker: s,
                syntax: false,
            },
        }
    }
}
