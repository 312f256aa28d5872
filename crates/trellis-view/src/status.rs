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

/// What the status bar shows besides the session's own facts.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusExtras<'a> {
    /// The session's working directory (shortened: `~` for the home directory).
    pub cwd: Option<&'a str>,
    /// A transient message ("copied", "press Ctrl-C again to quit", completions…): it
    /// has priority over everything but the agent's name.
    pub message: Option<&'a str>,
    /// Extensions' status items.
    pub items: &'a [String],
}

/// `path` for the status bar: the home directory as `~`, and at most `max` columns
/// (the last components kept).
pub fn short_path(path: &str, home: Option<&str>, max: usize) -> String {
    let p = match home {
        Some(h) if !h.is_empty() && h != "/" && path.starts_with(h) => {
            let rest = &path[h.len()..];
            if rest.is_empty() || rest.starts_with('/') {
                format!("~{rest}")
            } else {
                path.to_string()
            }
        }
        _ => path.to_string(),
    };
    if trellis_text::display_width(&p) <= max {
        return p;
    }
    // The last components that fit after "…/".
    let mut tail = String::new();
    for part in p.rsplit('/').filter(|s| !s.is_empty()) {
        let next = if tail.is_empty() {
            part.to_string()
        } else {
            format!("{part}/{tail}")
        };
        if trellis_text::display_width(&next) + 2 > max {
            break;
        }
        tail = next;
    }
    if tail.is_empty() {
        let last = p.rsplit('/').find(|s| !s.is_empty()).unwrap_or(&p);
        return trellis_text::clip(last, max).into_owned();
    }
    format!("…/{tail}")
}

/// One line, exactly `width` columns: the facts on the left (agent, mode, tokens, plan,
/// state, cwd, title — clipped from the end), the right side a message when there is
/// one (always shown, the facts give way), else the extensions' items and the hint
/// (shown when they fit).
pub fn status_line(
    session: &Session,
    agent: &str,
    hint: &str,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    status_line_with(session, agent, hint, StatusExtras::default(), width, theme)
}

/// [`status_line`] with the working directory, a message and extension items.
pub fn status_line_with(
    session: &Session,
    agent: &str,
    hint: &str,
    extras: StatusExtras<'_>,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let mut parts: Vec<String> = vec![agent.to_string()];
    // The agent's options that say how it works: its mode (a config option of that
    // category, else the legacy mode), then model and thinking level.
    let option = |cat: &str| {
        session
            .config
            .iter()
            .find(|o| o.category.as_deref() == Some(cat))
    };
    match (option("mode"), &session.mode) {
        (Some(o), _) => parts.push(format!("mode {}", trellis_text::one_line(&o.shown_value()))),
        (None, Some(_)) => {
            let name = session.mode_name().unwrap_or_default();
            parts.push(format!("mode {}", trellis_text::one_line(name)));
        }
        (None, None) => {}
    }
    if let Some(o) = option("model") {
        parts.push(trellis_text::one_line(&o.shown_value()).into_owned());
    }
    if let Some(o) = option("thought_level") {
        let name = o.name.to_lowercase();
        parts.push(trellis_text::one_line(&format!("{name} {}", o.shown_value())).into_owned());
    }
    if let Some(u) = &session.usage {
        let mut s = format!("{}/{} tokens", tokens(u.used), tokens(u.size));
        // Near the agent's limit: said before it compacts or stops.
        if u.size > 0 && u.used.saturating_mul(100) / u.size >= 80 {
            s.push_str(&format!(
                " ({}%: near the limit)",
                u.used.saturating_mul(100) / u.size
            ));
        }
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
    if let Some(cwd) = extras.cwd {
        parts.push(cwd.to_string());
    }
    if let Some(t) = session.title.as_deref().filter(|t| !t.is_empty()) {
        parts.push(t.to_string());
    }
    let facts = format!(" {} ", parts.join(" │ "));
    let (left, right) = match extras.message {
        Some(m) => {
            // The message first: the agent's name and the message always show.
            let m = trellis_text::one_line(m);
            let agent_w = trellis_text::display_width(agent) + 3;
            let room = width.saturating_sub(agent_w.min(width / 3));
            let right = format!("{} ", trellis_text::clip(&m, room.saturating_sub(1)));
            let rw = trellis_text::display_width(&right);
            let left_room = width.saturating_sub(rw + 1);
            (trellis_text::clip(&facts, left_room).into_owned(), right)
        }
        None => {
            let left = trellis_text::clip(&facts, width).into_owned();
            let used = trellis_text::display_width(&left);
            let fits = |s: &str| used + trellis_text::display_width(s) + 1 < width;
            let items = extras.items.join(" │ ");
            let both = if items.is_empty() {
                hint.to_string()
            } else {
                format!("{items} │ {hint}")
            };
            let right = if fits(&both) {
                format!("{both} ")
            } else if !items.is_empty() && fits(&items) {
                format!("{items} ")
            } else {
                String::new()
            };
            (left, right)
        }
    };
    let used = trellis_text::display_width(&left);
    let pad = width.saturating_sub(used + trellis_text::display_width(&right));
    Line::from(vec![
        Span::styled(left, theme.status_bar),
        Span::styled(" ".repeat(pad), theme.status_bar),
        Span::styled(right, theme.status_bar),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shortened_from_the_front() {
        assert_eq!(
            short_path("/home/u/src/app", Some("/home/u"), 40),
            "~/src/app"
        );
        assert_eq!(short_path("/home/u", Some("/home/u"), 40), "~");
        assert_eq!(short_path("/home/uv/x", Some("/home/u"), 40), "/home/uv/x");
        assert_eq!(
            short_path("/very/long/path/to/the/project", None, 16),
            "…/to/the/project"
        );
        assert_eq!(
            short_path("/very/long/path/to/the/project", None, 15),
            "…/the/project"
        );
        assert_eq!(short_path("/a/averyveryverylongname", None, 8), "averyve…");
    }
}
