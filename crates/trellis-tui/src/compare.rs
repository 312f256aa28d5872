//! Comparing sessions that did the same work (`trellis fan`): one row per session. What
//! each changed comes from its worktree itself — committed, uncommitted and untracked
//! files against the base it was made from, measured by git off the UI's thread
//! ([`crate::deck::WorktreeOps::measure`]) — never from the agent's word. The ledger adds
//! what the agent reported (its completed edits, labelled as such), the commands it ran
//! and how the last test-like one ended, failed calls, tokens and cost, time taken.
//!
//! Rows are computed when the view opens and when a member's state changes, never while
//! a frame is drawn; measurements arrive later and fill their rows in.

use std::time::Duration;

use ratatui::text::Line;
use trellis_core::attention::Attention;
use trellis_core::tool_call::ToolStatus;
use trellis_view::Theme;

use trellis_deck::SessionKey;

/// What a worktree's work is against its base, as git counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeStat {
    pub added: u64,
    pub removed: u64,
    pub files: usize,
}

/// A session's worktree as the comparison knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// The session runs in no worktree of Trellis's.
    None,
    /// Being measured.
    Measuring,
    Measured {
        stat: TreeStat,
        /// The branch a land would move (the source's), when it is on one.
        into: Option<String>,
    },
    /// Git could not say (the tree is gone, say).
    Unknown(String),
}

/// What the agent reported of its own edits: completed edit, delete and move calls only
/// (an edit still waiting for permission, or rejected, changed nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reported {
    pub added: usize,
    pub removed: usize,
    pub files: usize,
}

/// The last command that looks like a test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// What the agent called it (its card's title), else its command; one line.
    pub what: String,
    /// `passed, exit 0`, `failed, exit 101`, `running`.
    pub end: String,
    /// The last line it printed, as text (colours and escapes gone).
    pub said: Option<String>,
}

/// One session as the comparison shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: SessionKey,
    /// Its number on the rail.
    pub number: usize,
    pub agent: String,
    /// Its worktree's label.
    pub label: Option<String>,
    /// What the session was asked (its first prompt), for the commit that lands it.
    pub prompt: Option<String>,
    pub attention: Attention,
    pub tree: Tree,
    pub reported: Reported,
    pub calls: usize,
    pub commands: usize,
    pub last_test: Option<TestRun>,
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

/// The last non-empty line of `text`, its escapes and colours gone, on one line.
fn last_line(text: &str) -> Option<String> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let styled = trellis_text::ansi::ansi_line(line, &mut ratatui::style::Style::default());
    let plain = trellis_text::plain_text(&[styled]);
    let plain = trellis_text::one_line(plain.trim()).into_owned();
    (!plain.is_empty()).then_some(plain)
}

/// How a test-like call ended.
pub(crate) fn test_run(
    c: &trellis_core::ToolCall,
    s: &trellis_core::Session,
    cmd: &str,
) -> TestRun {
    let word = match c.status {
        ToolStatus::Completed => "passed",
        ToolStatus::Failed => "failed",
        ToolStatus::Cancelled => "cancelled",
        _ => "running",
    };
    // The exit as the terminal reported it, else as the agent did.
    let exit = trellis_view::card::exit_summary(c, s)
        .or_else(|| trellis_core::enrich::exit_code_of(c).map(|code| format!("exit {code}")));
    let end = match exit {
        Some(e) if c.status.is_terminal() => format!("{word}, {e}"),
        _ => word.to_string(),
    };
    let what = if c.title.trim().is_empty() {
        format!("$ {cmd}")
    } else {
        c.title.clone()
    };
    TestRun {
        what: trellis_text::one_line(&what).into_owned(),
        end,
        said: c
            .status
            .is_terminal()
            .then(|| last_line(&trellis_view::card::output_text(c, s)))
            .flatten(),
    }
}

/// What landing a worktree would do, found before the question is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// `target` fast-forwarded to the worktree's branch; `commit`: its uncommitted work
    /// committed first.
    FastForward { target: String, commit: bool },
    /// `target` moved on since the worktree began: its changes staged in the source,
    /// nothing committed.
    Apply { target: String },
}

/// Landing one session's worktree and discarding the others', asked and not yet answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    /// The row to land.
    pub chosen: usize,
    /// What the land will do.
    pub landing: Landing,
}

/// The comparison view's state.
#[derive(Debug, Default)]
pub struct Compare {
    pub keys: Vec<SessionKey>,
    pub rows: Vec<Row>,
    pub selected: usize,
    /// The row `d` was pressed on first (the next `d` shows the diff to it).
    pub mark: Option<usize>,
    /// A land waiting for its yes.
    pub confirm: Option<Confirm>,
    /// Worktrees of the fan-out whose sessions closed (still open): a land discards them
    /// with the others.
    pub closed: Vec<String>,
    /// Measurements on their way (see [`crate::deck::Deck::measure_compare`]).
    pub(crate) measuring: Option<tokio::sync::mpsc::Receiver<Measured>>,
    /// Measure again when the one on its way is in (a member changed meanwhile).
    pub(crate) again: bool,
}

/// One worktree measured, for the session `key`.
#[derive(Debug)]
pub struct Measured {
    pub key: SessionKey,
    pub tree: Tree,
}

impl Compare {
    /// What is known of `key`'s worktree so far.
    pub fn tree_of(&self, key: SessionKey) -> Tree {
        self.rows
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.tree.clone())
            .unwrap_or(Tree::Measuring)
    }

    /// A measurement came in.
    pub fn measured(&mut self, m: Measured) {
        if let Some(r) = self.rows.iter_mut().find(|r| r.key == m.key) {
            r.tree = m.tree;
        }
    }

    /// The worktrees a land of row `chosen` would discard: the other rows', then those of
    /// the fan-out's closed sessions.
    pub fn others(&self, chosen: usize) -> Vec<String> {
        let chosen_label = self.rows.get(chosen).and_then(|r| r.label.clone());
        let mut out: Vec<String> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != chosen)
            .filter_map(|(_, r)| r.label.clone())
            .collect();
        for l in &self.closed {
            if !out.contains(l) && chosen_label.as_ref() != Some(l) {
                out.push(l.clone());
            }
        }
        out
    }
}

/// The next worktree measured for the comparison `c` (forever pending when none is on its
/// way); `None` once a round is over. Cancel-safe.
pub async fn next_measure(c: &mut Option<Compare>) -> Option<Measured> {
    let Some(rx) = c.as_mut().and_then(|c| c.measuring.as_mut()) else {
        return std::future::pending().await;
    };
    rx.recv().await
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

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// A worktree's figures as the table shows them.
fn tree_cell(t: &Tree) -> String {
    match t {
        Tree::None => "no worktree".into(),
        Tree::Measuring => "measuring…".into(),
        Tree::Measured { stat, .. } => {
            format!(
                "+{} −{} · {}",
                stat.added,
                stat.removed,
                plural(stat.files, "file")
            )
        }
        Tree::Unknown(_) => "unknown".into(),
    }
}

/// Items joined with ` · `, as many lines as `width` needs (an item is never split unless
/// it is wider than a line by itself).
fn fitted(items: &[String], width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for item in items {
        let w = trellis_text::display_width(item);
        let cur_w = trellis_text::display_width(&cur);
        if !cur.is_empty() && cur_w + 3 + w > width {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push_str(" · ");
        }
        cur.push_str(item);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The key hints, fitted to the width.
fn hints(c: &Compare, width: usize) -> Vec<String> {
    let land = match c.rows.get(c.selected).and_then(|r| r.label.as_deref()) {
        Some(l) => format!("L land {l}, discard the others (asks first)"),
        None => "L land one (sessions in worktrees)".into(),
    };
    let items = [
        "j/k select".to_string(),
        "d, then d on another: their diff".into(),
        land,
        "Enter open".into(),
        "Esc close".into(),
    ];
    fitted(&items, width)
}

/// The question a land asks first: what lands where, what is discarded, what closes.
pub fn question(c: &Compare, q: &Confirm) -> Vec<String> {
    let Some(r) = c.rows.get(q.chosen) else {
        return Vec::new();
    };
    let label = r.label.as_deref().unwrap_or("-");
    let what = match &r.tree {
        Tree::Measured { stat, .. } => format!(
            " (+{} −{} in {})",
            stat.added,
            stat.removed,
            plural(stat.files, "file")
        ),
        _ => String::new(),
    };
    let work = trellis_text::clip(
        &trellis_text::one_line(r.prompt.as_deref().unwrap_or("its session's work")),
        60,
    )
    .into_owned();
    let first = match &q.landing {
        Landing::FastForward {
            target,
            commit: true,
        } => format!(
            "Land worktree {label}{what} onto {target} — its uncommitted work committed as \"{work}\"?"
        ),
        Landing::FastForward {
            target,
            commit: false,
        } => format!("Land worktree {label}{what} onto {target} (a fast-forward)?"),
        Landing::Apply { target } => format!(
            "{target} has moved on since worktree {label} began: apply its changes{what} to your working tree as staged changes (nothing committed)?"
        ),
    };
    let others = c.others(q.chosen);
    let mut out = vec![first];
    if !others.is_empty() {
        let named: Vec<String> = others
            .iter()
            .map(|l| {
                if c.closed.contains(l) {
                    format!("{l} (its session closed)")
                } else {
                    l.clone()
                }
            })
            .collect();
        out.push(format!(
            "Discard {} (each kept first under refs/trellis/retired/; branches stay).",
            named.join(", ")
        ));
    }
    let closing = if c.rows.len() == 1 {
        "Its session closes first".to_string()
    } else {
        format!(
            "The {} sessions of the comparison close first",
            c.rows.len()
        )
    };
    out.push(format!(
        "{closing}. y lands · any other key keeps everything as it is"
    ));
    out
}

/// The view's lines: a header, two lines per session (its figures; what its agent
/// reported and its last test), and the keys or the question being asked.
pub fn lines(c: &Compare, width: usize, theme: &Theme, ascii: bool) -> Vec<Line<'static>> {
    let clip = |s: &str| trellis_text::clip(s, width).into_owned();
    let mut out = vec![Line::styled(
        clip(
            "   #  agent        worktree         state         in the worktree (git)  cmds failed  tokens        cost    time",
        ),
        theme.meta,
    )];
    for (i, r) in c.rows.iter().enumerate() {
        let on = i == c.selected;
        let marked = c.mark == Some(i);
        let state = format!("{} {}", r.attention.mark(ascii), r.attention.word());
        let text = format!(
            "{}{} {:<2} {:<12} {:<16} {:<13} {:<22} {:>5} {:>6} {:>7} {:>11} {:>7}",
            if on { ">" } else { " " },
            if marked { "*" } else { " " },
            r.number,
            trellis_text::clip(&trellis_text::one_line(&r.agent), 12),
            trellis_text::clip(r.label.as_deref().unwrap_or("-"), 16),
            state,
            tree_cell(&r.tree),
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
        let rep = r.reported;
        let reported = if rep.files == 0 && rep.added == 0 && rep.removed == 0 {
            "agent reported no completed edit".to_string()
        } else {
            format!(
                "agent reported +{} −{} in {}",
                rep.added,
                rep.removed,
                plural(rep.files, "file")
            )
        };
        let test = match &r.last_test {
            Some(t) => {
                let said = t
                    .said
                    .as_deref()
                    .map(|s| format!(": {}", trellis_text::clip(s, 40)))
                    .unwrap_or_default();
                format!(
                    "last test: {} — {}{said}",
                    trellis_text::clip(&t.what, 40),
                    t.end
                )
            }
            None => "no test run".to_string(),
        };
        let mut detail = format!("      {reported} · {test}");
        if let Tree::Unknown(why) = &r.tree {
            detail.push_str(&format!(" · worktree: {}", trellis_text::one_line(why)));
        }
        out.push(Line::styled(clip(&detail), theme.dim));
    }
    out.push(Line::raw(""));
    match &c.confirm {
        Some(q) => {
            // Wrapped by words, never cut: it is what the user says yes to.
            for l in question(c, q) {
                for piece in trellis_text::wrap::wrap_line(&Line::raw(l), width) {
                    out.push(piece.style(theme.title));
                }
            }
        }
        None => {
            for h in hints(c, width) {
                out.push(Line::styled(clip(&h), theme.dim));
            }
        }
    }
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

    #[test]
    fn the_last_line_loses_its_escapes() {
        assert_eq!(
            super::last_line("test a ... \x1b[32mok\x1b[0m\n3 \x1b[1mpassed\x1b[0m\n\n").as_deref(),
            Some("3 passed")
        );
        assert_eq!(super::last_line("\n \n"), None);
    }

    #[test]
    fn hints_fit_the_width_by_whole_items() {
        let c = super::Compare::default();
        for width in [40, 60, 90, 126] {
            let lines = super::hints(&c, width);
            assert!(lines.len() > 1 || width > 100, "{width}: {lines:?}");
            for l in &lines {
                assert!(trellis_text::display_width(l) <= width, "{width}: {l}");
            }
            assert!(lines.join(" · ").contains("Esc close"), "{lines:?}");
        }
    }
}
