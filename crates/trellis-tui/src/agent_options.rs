//! The agent's options (`M`, `/config`, `/model`, `/mode`): its config options (model,
//! thinking level, switches…) and legacy modes, each with its current value; Enter opens
//! a selector's choices (a switch flips at once); the chosen value goes to the agent,
//! and the row shows it once the agent has answered.
//!
//! The picker holds only where the user is; every frame reads the options from the
//! session (the agent may change them at any time).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};
use trellis_core::Session;
use trellis_core::session_config::{ConfigChoice, ConfigValue};
use trellis_driver::Setting;
use trellis_view::Theme;

/// One row of the first page: a config option, or the legacy modes.
#[derive(Debug, Clone, PartialEq)]
enum Row {
    Option(String),
    Modes,
}

/// The options picker.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Picker {
    cursor: usize,
    /// The option whose choices are open (`None`: the list of options).
    open: Option<Row>,
    choice: usize,
    /// Opened on one option (`/model`): Esc and a choice close the picker.
    direct: bool,
}

/// What a key asks for.
pub enum PickerKey {
    Stay,
    Close,
    /// Ask the agent for this (the picker stays or closes as `close` says).
    Set {
        setting: Setting,
        close: bool,
    },
}

fn rows(s: &Session) -> Vec<Row> {
    let mut rows: Vec<Row> = s.config.iter().map(|o| Row::Option(o.id.clone())).collect();
    let has_mode_option = s
        .config
        .iter()
        .any(|o| o.category.as_deref() == Some("mode"));
    if !s.modes.is_empty() && !has_mode_option {
        rows.push(Row::Modes);
    }
    rows
}

/// A row's name, current value (as shown) and choices.
fn describe(s: &Session, row: &Row) -> Option<(String, String, Vec<ConfigChoice>, bool)> {
    match row {
        Row::Option(id) => s.config.iter().find(|o| &o.id == id).map(|o| {
            (
                o.name.clone(),
                o.shown_value(),
                o.choices.clone(),
                o.is_boolean(),
            )
        }),
        Row::Modes => Some((
            "Mode".into(),
            s.mode_name().unwrap_or_default().to_string(),
            s.modes.clone(),
            false,
        )),
    }
}

fn current(s: &Session, row: &Row) -> Option<String> {
    match row {
        Row::Option(id) => s
            .config
            .iter()
            .find(|o| &o.id == id)
            .and_then(|o| match &o.value {
                ConfigValue::Id(v) => Some(v.clone()),
                ConfigValue::Bool(_) => None,
            }),
        Row::Modes => s.mode.clone(),
    }
}

impl Picker {
    /// The list of options.
    pub fn new() -> Picker {
        Picker::default()
    }

    /// Opened on the option the user means by `key` (`model`, `mode`, an id or a name):
    /// its choices at once. `None` when the agent offers no such option.
    pub fn on(s: &Session, key: &str) -> Option<Picker> {
        let row = match trellis_core::session_config::find(&s.config, key) {
            Some(o) => Row::Option(o.id.clone()),
            None if key.eq_ignore_ascii_case("mode") && rows(s).contains(&Row::Modes) => Row::Modes,
            None => return None,
        };
        let cursor = rows(s).iter().position(|r| *r == row).unwrap_or(0);
        let mut p = Picker {
            cursor,
            direct: true,
            ..Picker::default()
        };
        p.open_row(s, row);
        Some(p)
    }

    fn open_row(&mut self, s: &Session, row: Row) {
        let choices = describe(s, &row).map(|d| d.2).unwrap_or_default();
        let cur = current(s, &row);
        self.choice = choices
            .iter()
            .position(|c| Some(&c.value) == cur.as_ref())
            .unwrap_or(0);
        self.open = Some(row);
    }

    pub fn key(&mut self, key: &KeyEvent, s: &Session) -> PickerKey {
        let rows = rows(s);
        if let Some(row) = self.open.clone() {
            let Some((_, _, choices, _)) = describe(s, &row) else {
                // The agent withdrew the option.
                self.open = None;
                return PickerKey::Stay;
            };
            match key.code {
                KeyCode::Esc | KeyCode::Left if self.direct => return PickerKey::Close,
                KeyCode::Esc | KeyCode::Left => self.open = None,
                KeyCode::Down | KeyCode::Char('j') => {
                    self.choice = (self.choice + 1).min(choices.len().saturating_sub(1))
                }
                KeyCode::Up | KeyCode::Char('k') => self.choice = self.choice.saturating_sub(1),
                KeyCode::Enter => {
                    let Some(c) = choices.get(self.choice) else {
                        return PickerKey::Stay;
                    };
                    let setting = match &row {
                        Row::Option(id) => Setting::Option {
                            id: id.clone(),
                            name: describe(s, &row).map(|d| d.0).unwrap_or_default(),
                            value: ConfigValue::Id(c.value.clone()),
                        },
                        Row::Modes => Setting::Mode(c.value.clone()),
                    };
                    let close = self.direct;
                    self.open = None;
                    return PickerKey::Set { setting, close };
                }
                _ => {}
            }
            return PickerKey::Stay;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PickerKey::Close,
            KeyCode::Down | KeyCode::Char('j') => {
                self.cursor = (self.cursor + 1).min(rows.len().saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char(' ') => {
                let Some(row) = rows.get(self.cursor).cloned() else {
                    return PickerKey::Stay;
                };
                if let Row::Option(id) = &row
                    && let Some(o) = s.config.iter().find(|o| &o.id == id)
                    && let ConfigValue::Bool(b) = o.value
                {
                    return PickerKey::Set {
                        setting: Setting::Option {
                            id: id.clone(),
                            name: o.name.clone(),
                            value: ConfigValue::Bool(!b),
                        },
                        close: false,
                    };
                }
                self.open_row(s, row);
            }
            _ => {}
        }
        PickerKey::Stay
    }

    /// The title of the overlay.
    pub fn title(&self, s: &Session) -> String {
        match self.open.as_ref().and_then(|r| describe(s, r)) {
            Some((name, ..)) => format!(" {} ", trellis_text::one_line(&name)),
            None => " Agent options ".into(),
        }
    }

    /// The picker's lines at `width`, and the line the cursor is on.
    pub fn lines(&self, s: &Session, width: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
        let clip =
            |t: &str, w: usize| trellis_text::clip(&trellis_text::one_line(t), w).into_owned();
        let rows = rows(s);
        if let Some(row) = &self.open
            && let Some((_, shown, choices, _)) = describe(s, row)
        {
            let mut out = vec![
                Line::styled(
                    clip(
                        "↑↓ choose · Enter set · Esc back (the agent confirms the change)",
                        width,
                    ),
                    theme.dim,
                ),
                Line::raw(""),
            ];
            if let Row::Option(id) = row
                && let Some(d) = s
                    .config
                    .iter()
                    .find(|o| &o.id == id)
                    .and_then(|o| o.description.as_deref())
            {
                out.insert(1, Line::styled(clip(d, width), theme.dim));
            }
            let cur = current(s, row);
            let mut at = 0;
            let mut group: Option<&str> = None;
            for (i, c) in choices.iter().enumerate() {
                if c.group.as_deref() != group {
                    group = c.group.as_deref();
                    if let Some(g) = group {
                        out.push(Line::styled(clip(g, width), theme.title));
                    }
                }
                let mark = if i == self.choice { "▸ " } else { "  " };
                let now = if Some(&c.value) == cur.as_ref() {
                    "● "
                } else {
                    "○ "
                };
                let head = format!("{mark}{now}{}", trellis_text::one_line(&c.name));
                let style = if i == self.choice {
                    theme.text.patch(theme.selected)
                } else {
                    theme.text
                };
                if i == self.choice {
                    at = out.len();
                }
                let mut spans = vec![Span::styled(clip(&head, width), style)];
                let used = trellis_text::display_width(&head);
                if let Some(d) = &c.description
                    && used + 5 < width
                {
                    spans.push(Span::styled(
                        clip(&format!("  {d}"), width - used),
                        theme.dim,
                    ));
                }
                out.push(Line::from(spans));
            }
            if choices.is_empty() {
                out.push(Line::styled(format!("  {shown} (no choices)"), theme.dim));
            }
            return (out, at);
        }
        let mut out = vec![
            Line::styled(
                clip(
                    "↑↓ choose · Enter open (a switch flips) · Esc close · /model /mode /config",
                    width,
                ),
                theme.dim,
            ),
            Line::raw(""),
        ];
        if rows.is_empty() {
            out.push(Line::styled(
                "the agent offers no options to set",
                theme.dim,
            ));
            return (out, 0);
        }
        let names: Vec<(String, String, bool)> = rows
            .iter()
            .filter_map(|r| describe(s, r))
            .map(|(n, v, _, b)| {
                (
                    trellis_text::one_line(&n).into_owned(),
                    trellis_text::one_line(&v).into_owned(),
                    b,
                )
            })
            .collect();
        let name_w = names
            .iter()
            .map(|(n, ..)| trellis_text::display_width(n))
            .max()
            .unwrap_or(0)
            .min(width / 2);
        let mut at = 0;
        for (i, (name, value, boolean)) in names.iter().enumerate() {
            let mark = if i == self.cursor { "▸ " } else { "  " };
            let name = trellis_text::clip(name, name_w);
            let pad = name_w.saturating_sub(trellis_text::display_width(&name));
            let head = format!("{mark}{name}{}  ", " ".repeat(pad));
            let style = if i == self.cursor {
                theme.title.patch(theme.selected)
            } else {
                theme.title
            };
            if i == self.cursor {
                at = out.len();
            }
            let room = width.saturating_sub(trellis_text::display_width(&head));
            let value = if *boolean {
                format!("[{value}]")
            } else {
                format!("{value} ›")
            };
            out.push(Line::from(vec![
                Span::styled(head, style),
                Span::styled(clip(&value, room), theme.text),
            ]));
        }
        (out, at)
    }
}
