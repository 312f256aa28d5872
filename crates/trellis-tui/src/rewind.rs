//! The rewind list (Esc Esc on an empty prompt, `/rewind`): the session's own turns —
//! each with its prompt and the files the agent changed in it — and, for the one chosen,
//! going back to before it: the code (`c`, through the front end's [`Rewinder`]: the UI
//! crate runs no git), the conversation (`v`, a fork from before that turn opened beside
//! this session), or both (`b`). Turns are numbered as the session's log and checkpoints
//! number them (`trellis sessions checkpoints`).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};
use trellis_core::transcript::{Entry, Role};
use trellis_core::{Session, ToolStatus};
use trellis_view::Theme;

/// Puts back the files of the session logged at the path as they were before its turn
/// (its own numbering; `true`: also those someone else changed since, the second yes);
/// what it did, in lines, or why it could not.
pub type Rewinder = Box<dyn FnMut(&std::path::Path, u32, bool) -> Result<Vec<String>, String>>;

/// Calls looked at for the files each turn changed, from the newest.
const LOOKED_AT: usize = 20_000;

/// One of the session's own turns.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRow {
    /// Its number in the session's log (1: its first own turn).
    pub turn: u32,
    pub prompt: String,
    /// How long ago it began (seconds, when the list was opened).
    pub age: Option<f64>,
    /// Files the agent changed in it (completed edits), lines added and removed.
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

/// What a rewind of the code did, in one line: how many files it put back, removed and
/// kept (or why it could not).
pub fn summary(said: &[String]) -> String {
    let count = |word: &str| {
        said.iter()
            .filter(|l| l.trim_start().starts_with(word))
            .count()
    };
    if let Some(e) = said.iter().find(|l| l.starts_with("cannot")) {
        return e.clone();
    }
    format!(
        "the code went back: {} restored, {} removed, {} kept as it is",
        count("restored"),
        count("removed"),
        count("kept")
    )
}

/// `12s ago`, `4m ago`, `3h ago`, `2d ago`.
fn ago(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// The list, its cursor, and what the last rewind said.
#[derive(Debug, Clone, PartialEq)]
pub struct RewindList {
    pub rows: Vec<TurnRow>,
    pub cursor: usize,
    /// Turns above from an earlier session's log (not rewound from here).
    pub earlier: u32,
    pub said: Vec<String>,
}

/// What a key asks for.
#[derive(Debug, PartialEq)]
pub enum RewindKey {
    Stay,
    Close,
    /// The code to before this turn.
    Code(u32),
    /// The code, files changed by someone else since too (after `c` listed them).
    CodeForce(u32),
    /// The conversation: a fork from before this turn.
    Conversation(u32),
    /// The code, then the conversation.
    Both(u32),
}

impl RewindList {
    /// The session's own turns, newest first in view (the cursor on the newest); `now`
    /// is the session's clock.
    pub fn of(session: &Session, now: f64) -> RewindList {
        let before = session.turns_before;
        let mut rows: Vec<TurnRow> = Vec::new();
        for e in &session.transcript {
            if let Entry::Message(m) = e
                && m.role == Role::User
                && m.turn > before
                && !rows.iter().any(|r| r.turn == m.turn - before)
            {
                rows.push(TurnRow {
                    turn: m.turn - before,
                    prompt: trellis_text::one_line(&m.text).into_owned(),
                    age: session.turn_started_at(m.turn).map(|t| (now - t).max(0.0)),
                    files: 0,
                    added: 0,
                    removed: 0,
                });
            }
        }
        let n = session.ledger.len();
        let mut seen: Vec<(u32, String)> = Vec::new();
        for i in n.saturating_sub(LOOKED_AT)..n {
            let c = session.ledger.at(i);
            if c.status != ToolStatus::Completed || c.turn <= before {
                continue;
            }
            let Some((a, d)) = trellis_core::enrich::diff_stat(&c) else {
                continue;
            };
            let turn = c.turn - before;
            if let Some(r) = rows.iter_mut().find(|r| r.turn == turn) {
                r.added += a;
                r.removed += d;
                for p in trellis_core::enrich::paths_of(&c) {
                    if !seen.iter().any(|(t, q)| *t == turn && *q == p) {
                        seen.push((turn, p));
                        r.files += 1;
                    }
                }
            }
        }
        let cursor = rows.len().saturating_sub(1);
        RewindList {
            rows,
            cursor,
            earlier: before,
            said: Vec::new(),
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> RewindKey {
        let Some(row) = self.rows.get(self.cursor) else {
            return RewindKey::Close;
        };
        let turn = row.turn;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => RewindKey::Close,
            KeyCode::Up | KeyCode::Char('k') => {
                self.cursor = self.cursor.saturating_sub(1);
                RewindKey::Stay
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.cursor = (self.cursor + 1).min(self.rows.len().saturating_sub(1));
                RewindKey::Stay
            }
            KeyCode::Char('c') => RewindKey::Code(turn),
            // The second yes: only once `c` said what it kept.
            KeyCode::Char('C') if self.kept_some() => RewindKey::CodeForce(turn),
            KeyCode::Char('v') => RewindKey::Conversation(turn),
            KeyCode::Char('b') => RewindKey::Both(turn),
            _ => RewindKey::Stay,
        }
    }

    /// Whether the last rewind kept files someone else changed (a second yes may take
    /// them).
    pub fn kept_some(&self) -> bool {
        self.said
            .iter()
            .any(|l| l.trim_start().starts_with("kept") && !l.contains("in no checkpoint"))
    }

    /// The overlay's lines, `width` columns wide; the cursor's line is where it is.
    pub fn lines(&self, width: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
        let mut out = Vec::new();
        if self.rows.is_empty() {
            out.push(Line::styled(
                "No turn of this session to go back to yet.",
                theme.dim,
            ));
        }
        let mut at = 0;
        for (i, r) in self.rows.iter().enumerate() {
            let on = i == self.cursor;
            if on {
                at = out.len();
            }
            let files = if r.files == 0 {
                "no file changed".to_string()
            } else {
                format!("{} file(s) +{} −{}", r.files, r.added, r.removed)
            };
            let head = format!(
                "{} turn {:>3}  {:>8}  ",
                if on { "▶" } else { " " },
                r.turn,
                r.age.map(ago).unwrap_or_default()
            );
            let room = width.saturating_sub(head.chars().count() + files.chars().count() + 2);
            out.push(Line::from(vec![
                Span::styled(head, if on { theme.selected } else { theme.title }),
                Span::styled(
                    format!("{:<room$}  ", trellis_text::clip(&r.prompt, room)),
                    theme.text,
                ),
                Span::styled(files, theme.meta),
            ]));
        }
        if self.earlier > 0 {
            out.push(Line::styled(
                format!(
                    "({} earlier turn(s) above are another session's: rewind it there)",
                    self.earlier
                ),
                theme.dim,
            ));
        }
        out.push(Line::default());
        for l in &self.said {
            out.extend(trellis_text::wrap::wrap_line(
                &Line::styled(l.clone(), theme.notice),
                width.max(1),
            ));
        }
        if self.kept_some() {
            out.extend(trellis_text::wrap::wrap_line(
                &Line::styled(
                    "C puts those back too (what is there now is kept first: --undo brings it back)",
                    theme.failed,
                ),
                width.max(1),
            ));
        }
        out.extend(trellis_text::wrap::wrap_line(
            &Line::styled(
                "Back to before the chosen turn: c the code (the files the agent changed since) · v the conversation (a fork from there, beside this session) · b both · ↑↓ choose · Esc closes",
                theme.dim,
            ),
            width.max(1),
        ));
        (out, at)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use trellis_core::wire::{Dir, Message};
    use trellis_core::{Action, Policy, Session, update};

    fn prompt_at(s: &mut Session, seq: u64, t: f64, text: &str) {
        let v = serde_json::json!({"jsonrpc":"2.0","id":seq,"method":"session/prompt",
            "params":{"sessionId":"S","prompt":[{"type":"text","text":text}]}});
        update(
            s,
            Action::Frame {
                seq,
                t,
                dir: Dir::ClientToAgent,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        );
    }

    /// Each turn says how long ago it began, on the session's clock.
    #[test]
    fn each_turn_says_how_long_ago_it_began() {
        let mut s = Session::new(Policy::Ask);
        prompt_at(&mut s, 1, 10.0, "first");
        prompt_at(&mut s, 2, 4000.0, "second");
        let list = super::RewindList::of(&s, 4030.0);
        let ages: Vec<_> = list.rows.iter().map(|r| r.age).collect();
        assert_eq!(ages, [Some(4020.0), Some(30.0)]);
        let (lines, _) = list.lines(90, &trellis_view::Theme::plain());
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert!(
            text[0].contains("1h ago") && text[0].contains("first"),
            "{text:?}"
        );
        assert!(text[1].contains("30s ago"), "{text:?}");
        assert_eq!(super::ago(2.0 * 86_400.0 + 5.0), "2d ago");
        assert_eq!(super::ago(-3.0), "0s ago");
    }
}
