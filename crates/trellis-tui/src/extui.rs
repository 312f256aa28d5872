//! Extensions in the UI: card designs and transforms for the transcript ([`ExtDecor`]),
//! and the overlays the host owns — the Settings menu, `/status`, and the preview of a
//! rule about to be saved from an "always" answer.
//!
//! Invariants: in Settings, moving only moves the cursor, Enter applies; a rule preview
//! saves nothing and answers nothing until Enter, and Esc returns to the dialog with the
//! request still open.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use trellis_core::ext::{StyledLine, Tone};
use trellis_core::permission::Verdict;
use trellis_core::{Session, ToolCall};
use trellis_ext_host::ui::{RowTarget, SettingsPage, Ui};
use trellis_view::Theme;
use trellis_view::transcript::{Decor, DesignedCard};

/// The style of a contribution's tone in the theme.
pub fn tone_style(t: Tone, theme: &Theme) -> Style {
    match t {
        Tone::Normal => theme.text,
        Tone::Dim => theme.dim,
        Tone::Accent => theme.running,
        Tone::Good | Tone::Added => theme.ok,
        Tone::Warn => theme.cancelled,
        Tone::Bad | Tone::Removed => theme.failed,
    }
}

/// A contributed line as a styled terminal line. Span text may carry ANSI SGR (kept as
/// styles) — it was clipped by the host already.
pub fn line_of(l: &StyledLine, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::with_capacity(l.0.len());
    for s in &l.0 {
        let mut st = tone_style(s.tone, theme);
        if s.bold {
            st = st.add_modifier(Modifier::BOLD);
        }
        if s.text.chars().any(char::is_control) {
            let mut carry = st;
            let parsed = trellis_text::ansi::ansi_line(&s.text, &mut carry);
            spans.extend(
                parsed
                    .spans
                    .into_iter()
                    .map(|sp| Span::styled(sp.content, st.patch(sp.style))),
            );
        } else {
            spans.push(Span::styled(s.text.clone(), st));
        }
    }
    Line::from(spans)
}

/// Card designs and display transforms from the extension host.
pub struct ExtDecor(pub Arc<Ui>);

impl Decor for ExtDecor {
    fn card(&self, call: &ToolCall, width: usize, theme: &Theme) -> Option<DesignedCard> {
        let lines = self.0.card(call, width)?;
        let gutter = "  │ ";
        let room = width.saturating_sub(4);
        Some(DesignedCard {
            call: lines.call.iter().map(|l| line_of(l, theme)).collect(),
            result: lines
                .result
                .iter()
                .map(|l| {
                    let l = trellis_ext_host::ui::fit(l, room);
                    let mut line = line_of(&l, theme);
                    line.spans.insert(0, Span::styled(gutter, theme.dim));
                    line
                })
                .collect(),
            bare: lines.bare,
        })
    }

    fn transform(&self, call: &ToolCall, text: &str) -> Option<String> {
        self.0.transform(call, text)
    }

    fn epoch(&self) -> u64 {
        self.0.epoch()
    }

    fn changed(&self) -> Vec<String> {
        self.0.take_changed()
    }

    fn generation(&self) -> u64 {
        self.0.generation()
    }

    fn flush(&self) {
        self.0.send_requests();
    }
}

pub use trellis_driver::rules::{Hits, RulePreview, Scope};

/// The field of the rule preview being edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleField {
    Pattern,
    Scope,
}

/// An "always" answer's rule being edited before it is saved.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleEdit {
    pub preview: RulePreview,
    pub field: RuleField,
}

impl RuleEdit {
    pub fn new(preview: RulePreview) -> RuleEdit {
        RuleEdit {
            preview,
            field: RuleField::Pattern,
        }
    }

    /// Edits the preview; returns `Some(true)` to save, `Some(false)` to abandon.
    pub fn key(&mut self, key: KeyEvent) -> Option<bool> {
        let p = &mut self.preview;
        match key.code {
            KeyCode::Enter => return Some(true),
            KeyCode::Esc => return Some(false),
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Up | KeyCode::Down => {
                self.field = match self.field {
                    RuleField::Pattern => RuleField::Scope,
                    RuleField::Scope => RuleField::Pattern,
                };
            }
            // The scope, from either field (the pattern has no cursor to move).
            KeyCode::Left | KeyCode::Right => {
                let i = Scope::ALL.iter().position(|s| *s == p.scope).unwrap_or(0);
                let n = Scope::ALL.len();
                let j = if key.code == KeyCode::Left {
                    (i + n - 1) % n
                } else {
                    (i + 1) % n
                };
                p.scope = Scope::ALL[j];
            }
            KeyCode::Backspace if self.field == RuleField::Pattern => {
                p.pattern.pop();
                p.edited();
            }
            KeyCode::Char(c) if self.field == RuleField::Pattern => {
                p.pattern.push(c);
                p.edited();
            }
            _ => {}
        }
        None
    }

    /// The preview's lines (from what [`RulePreview::advance`] found).
    pub fn lines(&self, session: &Session, theme: &Theme) -> Vec<Line<'static>> {
        let verdict = match self.preview.verdict {
            Verdict::Allow => "allow",
            Verdict::Reject => "reject",
            Verdict::Ask => "ask",
        };
        let mark = |on: bool| if on { theme.selected } else { theme.text };
        let mut out = vec![
            Line::from(vec![
                Span::styled("Rule     ", theme.dim),
                Span::styled(
                    format!("{verdict} {} calls", self.preview.kind.as_str()),
                    theme.title,
                ),
            ]),
            Line::from(vec![
                Span::styled(format!("{:<9}", self.preview.matcher), theme.dim),
                Span::styled(
                    format!("{}▏", self.preview.pattern),
                    mark(self.field == RuleField::Pattern),
                ),
                Span::styled("  (glob: * any text)", theme.dim),
            ]),
            // Its reach in words, before anything is saved: one file is one file.
            Line::styled(self.preview.reach(), theme.text),
        ];
        let mut scope = vec![Span::styled("Scope    ", theme.dim)];
        for s in Scope::ALL {
            let on = s == self.preview.scope;
            let text = if on {
                format!("● {}", s.name())
            } else {
                format!("○ {}", s.name())
            };
            let st = if on && self.field == RuleField::Scope {
                theme.selected
            } else if on {
                theme.title
            } else {
                theme.dim
            };
            scope.push(Span::styled(text, st));
            scope.push(Span::raw("  "));
        }
        out.push(Line::from(scope));
        let h = &self.preview.hits;
        let plural = if h.count == 1 { "" } else { "s" };
        out.push(Line::default());
        out.push(Line::styled(
            if h.complete(session) {
                format!("Matches {} call{plural} of this session so far:", h.count)
            } else {
                format!(
                    "Matches {} call{plural} among the latest {} of {} (looking…)",
                    h.count,
                    h.looked_at(),
                    session.ledger.len()
                )
            },
            theme.dim,
        ));
        for t in &h.latest {
            out.push(Line::from(format!("  {t}")));
        }
        if h.count > h.latest.len() {
            out.push(Line::styled(
                format!("  … +{} more", h.count - h.latest.len()),
                theme.dim,
            ));
        }
        out.push(Line::default());
        out.push(Line::styled(
            "Enter save and answer · Tab field · ←/→ scope · Esc back to the question",
            theme.dim,
        ));
        out
    }
}

/// The Settings menu's cursor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SettingsState {
    pub page: usize,
    pub row: usize,
    /// Choice under the cursor of the current row (not applied until Enter).
    pub choice: Option<usize>,
}

/// What a key in Settings asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingsKey {
    None,
    Close,
    Apply(RowTarget, String),
}

impl SettingsState {
    pub fn key(&mut self, key: KeyEvent, pages: &[SettingsPage]) -> SettingsKey {
        if pages.is_empty() {
            return SettingsKey::Close;
        }
        self.page = self.page.min(pages.len() - 1);
        let rows = &pages[self.page].rows;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return SettingsKey::Close,
            KeyCode::Tab => {
                self.page = (self.page + 1) % pages.len();
                self.row = 0;
                self.choice = None;
            }
            KeyCode::BackTab => {
                self.page = (self.page + pages.len() - 1) % pages.len();
                self.row = 0;
                self.choice = None;
            }
            KeyCode::Down | KeyCode::Char('j') if !rows.is_empty() => {
                self.row = (self.row + 1).min(rows.len() - 1);
                self.choice = None;
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.row = self.row.saturating_sub(1);
                self.choice = None;
            }
            KeyCode::Left | KeyCode::Right | KeyCode::Char('h') | KeyCode::Char('l') => {
                if let Some(r) = rows.get(self.row) {
                    let n = r.choices.len();
                    let cur = self.choice.unwrap_or(r.current);
                    let next = if matches!(key.code, KeyCode::Left | KeyCode::Char('h')) {
                        (cur + n - 1) % n
                    } else {
                        (cur + 1) % n
                    };
                    self.choice = Some(next);
                }
            }
            KeyCode::Enter => {
                if let Some(r) = rows.get(self.row) {
                    let c = self.choice.unwrap_or(r.current);
                    self.choice = None;
                    if let Some((id, _)) = r.choices.get(c) {
                        return SettingsKey::Apply(r.target.clone(), id.clone());
                    }
                }
            }
            _ => {}
        }
        SettingsKey::None
    }

    /// The menu's lines: page tabs, then one line per row: name, then choices with the
    /// current one marked ●; the choice under the cursor (not yet applied) is reversed.
    pub fn lines(&self, pages: &[SettingsPage], width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let mut tabs = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            let st = if i == self.page {
                theme.selected
            } else {
                theme.dim
            };
            tabs.push(Span::styled(format!(" {} ", p.title), st));
            tabs.push(Span::raw(" "));
        }
        out.push(Line::from(tabs));
        out.push(Line::default());
        let Some(page) = pages.get(self.page) else {
            out.push(Line::styled("Nothing to set yet.", theme.dim));
            return out;
        };
        if page.rows.is_empty() {
            out.push(Line::styled("No rows on this page.", theme.dim));
        }
        let name_w = page
            .rows
            .iter()
            .map(|r| trellis_text::display_width(&r.label))
            .max()
            .unwrap_or(0)
            .min(24);
        let mut detail: Option<String> = None;
        for (i, r) in page.rows.iter().enumerate() {
            let on_row = i == self.row;
            let mut spans = vec![Span::styled(
                format!("{} ", if on_row { "›" } else { " " }),
                theme.title,
            )];
            let label = trellis_text::clip(&r.label, name_w).into_owned();
            let pad = name_w.saturating_sub(trellis_text::display_width(&label));
            spans.push(Span::styled(
                format!("{label}{}  ", " ".repeat(pad)),
                if on_row { theme.title } else { theme.text },
            ));
            let cursor = if on_row { self.choice } else { None };
            // Every choice stays on screen: when they do not fit, each gets an equal
            // share and the full text of the one under the cursor is shown below.
            let avail = width.saturating_sub(name_w + 4);
            let natural: usize = r
                .choices
                .iter()
                .map(|(_, c)| trellis_text::display_width(c) + 4)
                .sum();
            let share = match r.choices.len() {
                n if n > 0 && natural > avail => (avail / n).saturating_sub(4).max(6),
                _ => usize::MAX,
            };
            for (j, (_, c)) in r.choices.iter().enumerate() {
                let mark = if j == r.current { "●" } else { "○" };
                let st = if cursor == Some(j) {
                    theme.selected
                } else if j == r.current {
                    theme.ok
                } else {
                    theme.dim
                };
                let shown = trellis_text::clip(c, share);
                if on_row && shown.len() < c.len() {
                    detail = Some(c.clone());
                }
                spans.push(Span::styled(format!("{mark} {shown}"), st));
                spans.push(Span::raw("  "));
            }
            let line = Line::from(spans);
            out.push(Line::from(trellis_view::card::clip_spans(line, width)));
        }
        if let Some(d) = detail {
            out.push(Line::default());
            out.extend(trellis_text::wrap::wrap_line(
                &Line::styled(d, theme.dim),
                width,
            ));
        }
        out.push(Line::default());
        out.push(Line::styled(
            "↑/↓ row · ←/→ choice · Enter apply · Tab page · Esc close",
            theme.dim,
        ));
        out
    }
}

/// A host-owned overlay.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Settings(SettingsState),
    Status {
        scroll: usize,
    },
    /// The help screen (`?`, F1).
    Help {
        scroll: usize,
    },
    Rule(RuleEdit),
    /// The sessions picker.
    Sessions(crate::history::Picker),
    /// The agent's options (model, mode, …).
    Options(crate::agent_options::Picker),
    /// A reject's reason being written (`r` in the permission dialog).
    Reason(crate::reason::ReasonInput),
    /// The session's turns, to go back to before one (Esc Esc, `/rewind`).
    Rewind(crate::rewind::RewindList),
}
