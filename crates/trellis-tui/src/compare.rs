//! Comparing sessions that did the same work (`trellis fan`): one row per session from
//! its ledger — state, lines and files changed, commands run and how the last test-like
//! one ended, failed calls, tokens and cost, time taken. Rows are computed when the view
//! opens and when a member's state changes, never while a frame is drawn.

use std::time::{Duration, Instant};

use ratatui::text::Line;
use trellis_core::attention::Attention;
use trellis_core::tool_call::{ToolKind, ToolStatus};
use trellis_view::Theme;

use crate::deck::{SessionKey, Slot};

/// One session as the comparison shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: SessionKey,
    /// Its number on the rail.
    pub number: usize,
    pub agent: String,
    /// Its worktree's label.
    pub label: Option<String>,
    pub attention: Attention,
    pub added: usize,
    pub removed: usize,
    pub files: usize,
    pub calls: usize,
    pub commands: usize,
    /// The last command that looks like a test run, and how it ended (`passed, exit 0`,
    /// `failed, exit 101`, `running`).
    pub last_test: Option<(String, String)>,
    pub failed: usize,
    pub tokens: Option<u64>,
    pub cost: Option<String>,
    pub took: Duration,
}

/// Whether a command line looks like a test run.
pub fn test_like(cmd: &str) -> bool {
    let c = cmd.to_ascii_lowercase();
    ["test", "pytest", "jest", "vitest", "spec", "check"]
        .iter()
        .any(|w| c.contains(w))
}

/// A session's row, from its ledger.
pub fn row(slot: &Slot, number: usize, now: Instant) -> Row {
    let s = &slot.app.driver.session;
    let (added, removed) = slot.diffstat();
    let mut files = std::collections::BTreeSet::new();
    let (mut commands, mut failed) = (0, 0);
    let mut last_test = None;
    let calls = s.ledger.len();
    for p in 0..calls {
        let c = s.ledger.at(p);
        if c.status == ToolStatus::Failed {
            failed += 1;
        }
        match c.kind {
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move => {
                files.extend(trellis_core::enrich::paths_of(&c));
            }
            ToolKind::Execute => {
                commands += 1;
                let cmd = trellis_core::enrich::command_of(&c).unwrap_or_else(|| c.display_title());
                if test_like(&cmd) {
                    let word = match c.status {
                        ToolStatus::Completed => "passed",
                        ToolStatus::Failed => "failed",
                        _ => "running",
                    };
                    // The exit as the terminal reported it, else as the agent did.
                    let exit = trellis_view::card::exit_summary(&c, s).or_else(|| {
                        trellis_core::enrich::exit_code_of(&c).map(|code| format!("exit {code}"))
                    });
                    let end = match exit {
                        Some(e) if c.status.is_terminal() => format!("{word}, {e}"),
                        _ => word.to_string(),
                    };
                    last_test = Some((cmd, end));
                }
            }
            _ => {}
        }
    }
    let still = matches!(
        slot.attention,
        Attention::Working | Attention::Starting | Attention::Blocked(_)
    );
    let until = if still { now } else { slot.since };
    Row {
        key: slot.key,
        number,
        agent: slot.app.agent.clone(),
        label: s.worktree.as_ref().map(|w| w.label.clone()),
        attention: slot.attention,
        added,
        removed,
        files: files.len(),
        calls,
        commands,
        last_test,
        failed,
        tokens: s.usage.as_ref().map(|u| u.used).filter(|&u| u > 0),
        cost: s
            .usage
            .as_ref()
            .and_then(|u| u.cost.as_ref())
            .map(|c| c.display()),
        took: until.saturating_duration_since(slot.started),
    }
}

/// The comparison view's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compare {
    pub keys: Vec<SessionKey>,
    pub rows: Vec<Row>,
    pub selected: usize,
    /// The row `d` was pressed on first (the next `d` shows the diff to it).
    pub mark: Option<usize>,
}

fn took(d: Duration) -> String {
    let s = d.as_secs();
    if s < 10 {
        format!("{:.1}s", d.as_secs_f64())
    } else if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// The view's lines: a header, one line per session, then its last test command, and the
/// keys.
pub fn lines(c: &Compare, width: usize, theme: &Theme, ascii: bool) -> Vec<Line<'static>> {
    let clip = |s: &str| trellis_text::clip(s, width).into_owned();
    let mut out = vec![Line::styled(
        clip(
            "   #  agent       worktree         state        +/−        files  cmds failed  tokens        cost    time",
        ),
        theme.meta,
    )];
    for (i, r) in c.rows.iter().enumerate() {
        let on = i == c.selected;
        let marked = c.mark == Some(i);
        let state = format!("{} {}", r.attention.mark(ascii), r.attention.word());
        let text = format!(
            "{}{} {:<2} {:<11} {:<16} {:<12} {:<10} {:>5} {:>5} {:>6} {:>7} {:>11} {:>7}",
            if on { ">" } else { " " },
            if marked { "*" } else { " " },
            r.number,
            trellis_text::clip(&trellis_text::one_line(&r.agent), 11),
            trellis_text::clip(r.label.as_deref().unwrap_or("-"), 16),
            state,
            format!("+{} −{}", r.added, r.removed),
            r.files,
            r.commands,
            r.failed,
            r.tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into()),
            r.cost.clone().unwrap_or_else(|| "-".into()),
            took(r.took),
        );
        out.push(Line::styled(
            clip(&text),
            if on { theme.selected } else { theme.text },
        ));
        let test = match &r.last_test {
            Some((cmd, end)) => format!("      last test: {} — {end}", trellis_text::one_line(cmd)),
            None => "      no test run".to_string(),
        };
        out.push(Line::styled(clip(&test), theme.dim));
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        clip("j/k select · d, then d on another: their diff · K keep this one (land it, discard the others behind snapshot refs) · Enter open · Esc close"),
        theme.dim,
    ));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_like_commands() {
        for c in [
            "cargo test",
            "pytest -q",
            "npm run test",
            "make check",
            "npx jest",
        ] {
            assert!(super::test_like(c), "{c}");
        }
        for c in ["ls", "git status", "cat README.md"] {
            assert!(!super::test_like(c), "{c}");
        }
    }
}
