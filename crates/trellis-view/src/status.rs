//! The status bar: agent, mode, session title, tokens and cost, plan progress, and a hint.

use ratatui_core::text::{Line, Span};
use trellis_core::Session;

use crate::theme::Theme;

fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// One line, exactly `width` columns: the facts on the left, the hint on the right; the
/// hint gives way first, then the title.
pub fn status_line(
    session: &Session,
    agent: &str,
    hint: &str,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let mut parts: Vec<String> = vec![agent.to_string()];
    if let Some(mode) = &session.mode {
        parts.push(format!("mode {mode}"));
    }
    if let Some(u) = &session.usage {
        let mut s = format!("{}/{} tokens", tokens(u.used), tokens(u.size));
        if let Some(c) = &u.cost {
            s.push_str(&format!(" · {}", c.display()));
        }
        parts.push(s);
    }
    let (done, total) = session.plan_progress();
    if total > 0 {
        parts.push(format!("plan {done}/{total}"));
    }
    if session.turn_open {
        parts.push("working…".into());
    }
    let title = session.title.clone().unwrap_or_default();
    let facts = format!(" {} ", parts.join(" │ "));
    let facts_w = trellis_text::display_width(&facts);
    let mut left = facts;
    if !title.is_empty() && facts_w + 4 < width {
        let room = width - facts_w - 3;
        left.push_str(&format!("│ {} ", trellis_text::clip(&title, room)));
    }
    let left = trellis_text::clip(&left, width).into_owned();
    let used = trellis_text::display_width(&left);
    let hint_w = trellis_text::display_width(hint) + 1;
    let right = if used + hint_w < width {
        format!("{hint} ")
    } else {
        String::new()
    };
    let pad = width.saturating_sub(used + trellis_text::display_width(&right));
    Line::from(vec![
        Span::styled(left, theme.status_bar),
        Span::styled(" ".repeat(pad), theme.status_bar),
        Span::styled(right, theme.status_bar),
    ])
}
