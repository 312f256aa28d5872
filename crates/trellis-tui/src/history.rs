//! The sessions picker (`/sessions`, `H`): past sessions, this directory's first, and
//! search as you type across every session (prompts, messages, tool calls and their
//! output). Enter opens the session read-only on the matching call (a replay, outside
//! the full screen; the live session waits); Ctrl-R resumes it (this session ends).
//!
//! The front end supplies the history ([`History`]): the UI crate knows no database.
//! Queries run on keys, never while drawing: a frame draws the rows in hand.

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use trellis_view::Theme;

/// Past sessions, as the front end finds them.
pub trait History: Send {
    /// Sessions, newest first, this directory's before the others.
    fn recent(&self) -> Result<Vec<PickRow>, String>;
    /// Every session's hits for `query` (the last word may be the start of one).
    fn search(&self, query: &str) -> Result<Vec<PickRow>, String>;
    /// Writes the session logged at `log` as `format` (`md`, `html`); the file written.
    fn export(&self, log: &Path, format: &str) -> Result<PathBuf, String>;
}

/// One row of the picker: a session, or a search hit in one.
#[derive(Debug, Clone, PartialEq)]
pub struct PickRow {
    pub id: String,
    pub log: PathBuf,
    /// `2026-12-01 14:03 UTC`.
    pub when: String,
    pub title: String,
    /// The session ran in this directory.
    pub here: bool,
    /// For a hit: where (`turn 2 · output`) and the call it is in.
    pub place: Option<String>,
    pub call_id: Option<String>,
    /// For a hit: the text around it; `\u{2}`/`\u{3}` mark the match.
    pub snippet: Option<String>,
    /// The agent's id of the session (`session/load`), where known.
    pub acp_id: Option<String>,
    /// Only the agent has this session (`session/list`): no log here, `log` is empty;
    /// it can be resumed, not opened.
    pub agent_only: bool,
}

impl PickRow {
    /// A session the agent lists (`session/list`), as a row; `cwd`: this session's.
    pub fn from_agent(
        s: &trellis_core::agent_sessions::AgentSession,
        cwd: Option<&str>,
    ) -> PickRow {
        let when = s
            .updated_at
            .as_deref()
            .map(|u| {
                // `2026-11-30T10:00:00Z` → `2026-11-30 10:00 UTC`; anything else as given.
                let b = u.as_bytes();
                if u.len() >= 16 && b.get(10) == Some(&b'T') && u.ends_with('Z') {
                    format!("{} {} UTC", &u[..10], &u[11..16])
                } else {
                    trellis_text::clip(&trellis_text::one_line(u), 20).into_owned()
                }
            })
            .unwrap_or_else(|| "—".into());
        let here = s.cwd.is_none() || s.cwd.as_deref() == cwd;
        PickRow {
            id: s.id.clone(),
            log: PathBuf::new(),
            when,
            title: s
                .title
                .as_deref()
                .map(|t| trellis_text::one_line(t).into_owned())
                .unwrap_or_else(|| "(untitled)".into()),
            here,
            place: s
                .cwd
                .as_deref()
                .filter(|_| !here)
                .map(|c| format!("in {}", trellis_text::one_line(c))),
            call_id: None,
            snippet: None,
            acp_id: Some(s.id.clone()),
            agent_only: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Picker {
    pub query: String,
    pub rows: Vec<PickRow>,
    pub cursor: usize,
    pub error: Option<String>,
    /// Sessions the agent listed that the history does not have (shown with the recent
    /// sessions, not in search results: the agent's list holds no text to search).
    pub agent: Vec<PickRow>,
}

/// What a key in the picker asks for.
pub enum PickerKey {
    Stay,
    Close,
    Open(PickRow),
    Resume(PickRow),
}

impl Picker {
    pub fn new(h: &dyn History) -> Picker {
        let mut p = Picker::default();
        p.refresh(h);
        p
    }

    fn refresh(&mut self, h: &dyn History) {
        let got = if self.query.trim().is_empty() {
            h.recent()
        } else {
            h.search(&self.query)
        };
        match got {
            Ok(mut rows) => {
                if self.query.trim().is_empty() && !self.agent.is_empty() {
                    // Those the history knows (by the agent's id) are already there.
                    let known: std::collections::HashSet<String> =
                        rows.iter().filter_map(|r| r.acp_id.clone()).collect();
                    rows.extend(
                        self.agent
                            .iter()
                            .filter(|a| !a.acp_id.as_ref().is_some_and(|id| known.contains(id)))
                            .cloned(),
                    );
                    // This directory's first, each group in the order it came.
                    rows.sort_by_key(|r| !r.here);
                }
                self.rows = rows;
                self.error = None;
            }
            Err(e) => {
                self.rows.clear();
                self.error = Some(e);
            }
        }
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
    }

    /// Adds the sessions the agent listed that the history does not know (by the agent's
    /// id) and that are not this one (`current`, the agent's id of the running session);
    /// `cwd`: this session's directory.
    pub fn merge_agent(
        &mut self,
        listed: &trellis_core::agent_sessions::AgentSessions,
        current: Option<&str>,
        cwd: Option<&str>,
        h: &dyn History,
    ) {
        self.agent = listed
            .sessions
            .iter()
            .filter(|s| Some(s.id.as_str()) != current)
            .map(|s| PickRow::from_agent(s, cwd))
            .collect();
        self.refresh(h);
    }

    pub fn key(&mut self, key: &KeyEvent, h: &dyn History) -> PickerKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return PickerKey::Close,
            KeyCode::Enter => {
                return match self.rows.get(self.cursor) {
                    Some(r) => PickerKey::Open(r.clone()),
                    None => PickerKey::Stay,
                };
            }
            KeyCode::Char('r') if ctrl => {
                return match self.rows.get(self.cursor) {
                    Some(r) => PickerKey::Resume(r.clone()),
                    None => PickerKey::Stay,
                };
            }
            KeyCode::Down => self.cursor = (self.cursor + 1).min(self.rows.len().saturating_sub(1)),
            KeyCode::Up => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::PageDown => {
                self.cursor = (self.cursor + 10).min(self.rows.len().saturating_sub(1))
            }
            KeyCode::PageUp => self.cursor = self.cursor.saturating_sub(10),
            KeyCode::Backspace => {
                self.query.pop();
                self.cursor = 0;
                self.refresh(h);
            }
            KeyCode::Char('u') if ctrl => {
                self.query.clear();
                self.cursor = 0;
                self.refresh(h);
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.cursor = 0;
                self.refresh(h);
            }
            _ => {}
        }
        PickerKey::Stay
    }

    /// The picker's lines at `width` (each row: two lines, a hit's snippet on the second).
    pub fn lines(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let clip =
            |s: &str, w: usize| trellis_text::clip(&trellis_text::for_display(s), w).into_owned();
        let mut out = vec![
            Line::from(vec![
                Span::styled("search › ", theme.dim),
                Span::styled(clip(&self.query, width.saturating_sub(10)), theme.title),
                Span::styled("▏", theme.user),
            ]),
            Line::styled(
                clip(
                    "type to search every session · ↑↓ choose · Enter open read-only · Ctrl-R resume · Esc close",
                    width,
                ),
                theme.dim,
            ),
            Line::raw(""),
        ];
        if let Some(e) = &self.error {
            out.push(Line::styled(clip(e, width), theme.failed));
            return out;
        }
        if self.rows.is_empty() {
            out.push(Line::styled(
                if self.query.trim().is_empty() {
                    "no sessions yet"
                } else {
                    "nothing found"
                },
                theme.dim,
            ));
            return out;
        }
        for (i, r) in self.rows.iter().enumerate() {
            let mark = if i == self.cursor { "▸ " } else { "  " };
            let here = match (r.here, r.agent_only) {
                (true, false) => "",
                (false, false) => " (elsewhere)",
                (true, true) => " (the agent's: resume only)",
                (false, true) => " (the agent's, elsewhere: resume only)",
            };
            let head = format!("{mark}{}  {}  ", r.id, r.when);
            let rest = match &r.place {
                Some(p) => format!("{p} · {}{here}", r.title),
                None => format!("{}{here}", r.title),
            };
            let room = width.saturating_sub(trellis_text::display_width(&head));
            let style = if i == self.cursor {
                theme.title.patch(theme.selected)
            } else {
                theme.title
            };
            out.push(Line::from(vec![
                Span::styled(head, style),
                Span::styled(clip(&rest, room), style),
            ]));
            if let Some(s) = &r.snippet {
                out.push(snippet_line(s, width, theme));
            }
        }
        out
    }
}

/// A snippet on one line, its matches highlighted.
fn snippet_line(s: &str, width: usize, theme: &Theme) -> Line<'static> {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut spans = vec![Span::raw("    ")];
    let mut room = width.saturating_sub(4);
    for (i, part) in flat.split(['\u{2}', '\u{3}']).enumerate() {
        if room == 0 {
            break;
        }
        let text = trellis_text::clip(&trellis_text::for_display(part), room).into_owned();
        room = room.saturating_sub(trellis_text::display_width(&text));
        let style = if i % 2 == 1 {
            theme.highlight
        } else {
            theme.dim
        };
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}
