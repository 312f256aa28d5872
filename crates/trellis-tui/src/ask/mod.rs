//! The agent's questions (`elicitation/create`) in the UI: a form of typed fields, or a link
//! to visit. The oldest open question shows, once no permission request is waiting.
//!
//! Invariants: the dialog draws from the session's question and the user's entries only
//! (no extension code, nothing computed per frame but the lines); every text the agent
//! sent is sanitized before it is drawn; a form is sent only when [`Form::check`] accepts
//! it (the reducer checks again) — otherwise every problem shows under its field; one key
//! answers at most once. Trellis starts no browser for a link (a browser must outlive the
//! client that opened it, and nothing Trellis starts may): the link is shown in full, its
//! site named, tricks in it pointed out, and Enter copies it (OSC 52) and accepts.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use serde_json::{Map, Value};
use trellis_core::elicitation::{ElicitMode, Field, FieldKind, Form, Problem, from_input};
use trellis_core::{ElicitAnswer, Elicitation};
use trellis_text::sanitize::one_line;
use trellis_view::Theme;

use crate::intent::Intent;

mod link;
pub use link::Link;
use link::link_lines;
pub use link::openable;

/// What the user entered so far in the question `request_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Asking {
    pub request_id: String,
    /// The field with focus.
    pub field: usize,
    pub entries: Vec<Entry>,
    /// What the last Enter found wrong, by field name.
    pub problems: Vec<Problem>,
    pub scroll: usize,
}

/// One field's entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// Text and numbers: the text typed and the cursor (in characters).
    Text {
        text: String,
        cursor: usize,
    },
    Bool(Option<bool>),
    /// The chosen option.
    Choice(Option<usize>),
    /// The options picked, and the one the cursor is on.
    Multi {
        picked: Vec<bool>,
        at: usize,
    },
    /// A field this client cannot edit.
    Fixed,
}

impl Asking {
    /// A fresh entry for question `e`: each field at its default.
    pub fn new(e: &Elicitation) -> Asking {
        let entries = match &e.mode {
            ElicitMode::Form(f) => f.fields.iter().map(entry).collect(),
            ElicitMode::Url { .. } => Vec::new(),
        };
        Asking {
            request_id: e.request_id.clone(),
            field: 0,
            entries,
            problems: Vec::new(),
            scroll: 0,
        }
    }

    /// The content the entries make, checked against the form.
    pub fn content(&self, form: &Form) -> Result<Map<String, Value>, Vec<Problem>> {
        let mut out = Map::new();
        let mut problems = Vec::new();
        for (f, e) in form.fields.iter().zip(&self.entries) {
            let v = match (e, &f.kind) {
                (Entry::Text { text, .. }, _) => match from_input(f, text) {
                    Ok(v) => v,
                    Err(p) => {
                        problems.push((f.name.clone(), p));
                        continue;
                    }
                },
                (Entry::Bool(b), _) => b.map(Value::Bool),
                (Entry::Choice(i), FieldKind::Choice { options, .. }) => i
                    .and_then(|i| options.get(i))
                    .map(|o| o.value.clone().into()),
                (Entry::Multi { picked, .. }, FieldKind::Multi { options, .. }) => {
                    let vals: Vec<Value> = options
                        .iter()
                        .zip(picked)
                        .filter(|(_, p)| **p)
                        .map(|(o, _)| o.value.clone().into())
                        .collect();
                    (!vals.is_empty() || f.required).then_some(Value::Array(vals))
                }
                _ => None,
            };
            if let Some(v) = v {
                out.insert(f.name.clone(), v);
            }
        }
        match form.check(&out) {
            Ok(c) if problems.is_empty() => Ok(c),
            Ok(_) => Err(problems),
            Err(more) => {
                // In field order, one problem per field (the typing one first).
                for p in more {
                    if !problems.iter().any(|q| q.0 == p.0) {
                        problems.push(p);
                    }
                }
                let order = |name: &str| form.fields.iter().position(|f| f.name == name);
                problems.sort_by_key(|p| order(&p.0));
                Err(problems)
            }
        }
    }

    /// Handles a key for question `e`: the answer when the key gives one.
    pub fn key(&mut self, e: &Elicitation, key: KeyEvent) -> Option<Intent> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let answer = |answer| {
            Some(Intent::Elicit {
                request_id: e.request_id.clone(),
                answer,
            })
        };
        match key.code {
            KeyCode::Esc => return answer(ElicitAnswer::Cancel),
            KeyCode::Char('d') if ctrl => return answer(ElicitAnswer::Decline),
            KeyCode::PageDown => self.scroll += 5,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(5),
            _ => {}
        }
        let form = match &e.mode {
            ElicitMode::Url { url, .. } => {
                return match key.code {
                    KeyCode::Enter if openable(url) => Some(Intent::Visit {
                        request_id: e.request_id.clone(),
                        url: url.clone(),
                    }),
                    KeyCode::Char('c') => Some(Intent::Copy(url.clone())),
                    KeyCode::Char('y') => answer(ElicitAnswer::Accept(Map::new())),
                    KeyCode::Char('d') => answer(ElicitAnswer::Decline),
                    _ => None,
                };
            }
            ElicitMode::Form(f) => f,
        };
        let n = form.fields.len();
        match key.code {
            KeyCode::Enter => {
                return match self.content(form) {
                    Ok(c) => answer(ElicitAnswer::Accept(c)),
                    Err(p) => {
                        self.field = form
                            .fields
                            .iter()
                            .position(|f| p.iter().any(|q| q.0 == f.name))
                            .unwrap_or(self.field);
                        self.problems = p;
                        None
                    }
                };
            }
            KeyCode::Tab | KeyCode::Down if n > 0 => self.field = (self.field + 1) % n,
            KeyCode::BackTab | KeyCode::Up if n > 0 => self.field = (self.field + n - 1) % n,
            _ => {
                if let (Some(f), Some(entry)) = (
                    form.fields.get(self.field),
                    self.entries.get_mut(self.field),
                ) {
                    edit(f, entry, key);
                    let name = &f.name;
                    self.problems.retain(|p| p.0 != *name);
                }
            }
        }
        None
    }

    /// The dialog's title, its body (the question, the fields) and its key line, `width`
    /// columns wide; the body line of the field with focus.
    pub fn lines(&self, e: &Elicitation, width: usize, theme: &Theme) -> Shown {
        let mut body = Vec::new();
        for l in trellis_text::sanitize::for_display(&e.message).lines() {
            body.extend(wrapped(l, width, theme.text));
        }
        match &e.mode {
            ElicitMode::Url { url, .. } => {
                let (title, keys, rows) = link_lines(url, width, theme, &mut body);
                let link = openable(url).then(|| (rows, url.clone()));
                Shown {
                    title,
                    body,
                    keys,
                    focus: 0,
                    link,
                }
            }
            ElicitMode::Form(form) => {
                if let Some(d) = &form.description {
                    body.extend(wrapped(&one_line(d), width, theme.dim));
                }
                body.push(Line::default());
                let label_w = form
                    .fields
                    .iter()
                    .map(|f| trellis_text::display_width(&one_line(f.label())) + 2)
                    .max()
                    .unwrap_or(0)
                    .min(width / 3)
                    .max(4);
                let mut focus_line = 0;
                for (i, (f, entry)) in form.fields.iter().zip(&self.entries).enumerate() {
                    let focused = i == self.field;
                    if focused {
                        focus_line = body.len();
                    }
                    let mark = if focused { "› " } else { "  " };
                    let req = if f.required { "*" } else { "" };
                    let label = format!("{}{req}", one_line(f.label()));
                    let label = trellis_text::clip(&label, label_w.saturating_sub(1)).into_owned();
                    let pad = label_w.saturating_sub(trellis_text::display_width(&label));
                    let mut spans = vec![
                        Span::styled(mark, theme.selected),
                        Span::styled(format!("{label}{}", " ".repeat(pad)), theme.title),
                    ];
                    spans.extend(entry_spans(f, entry, focused, theme));
                    let indent = label_w + 2;
                    body.extend(hang(Line::from(spans), indent, width));
                    let hint = hint(f);
                    if focused && !hint.is_empty() {
                        body.extend(hang(Line::styled(hint, theme.dim), indent, width));
                    }
                    let prefix = format!("{}: ", f.label());
                    for p in self.problems.iter().filter(|p| p.0 == f.name) {
                        let msg = p.1.strip_prefix(&prefix).unwrap_or(&p.1);
                        let line = Line::styled(format!("✗ {}", one_line(msg)), theme.failed);
                        body.extend(hang(line, indent, width));
                    }
                }
                let title = match &form.title {
                    Some(t) => format!("The agent asks · {}", one_line(t)),
                    None => "The agent asks".to_string(),
                };
                let keys = wrapped(
                    "Enter send · Tab/↑↓ field · Space/←→ choose · Ctrl-D decline · Esc dismiss",
                    width,
                    theme.dim,
                );
                Shown {
                    title,
                    body,
                    keys,
                    focus: focus_line,
                    link: None,
                }
            }
        }
    }
}

/// The dialog's state for question `e` in `slot`: the one there when it is `e`'s, else
/// a fresh one (a new question starts at its defaults).
pub(crate) fn state_for<'a>(slot: &'a mut Option<Asking>, e: &Elicitation) -> &'a mut Asking {
    match slot.take() {
        Some(a) if a.request_id == e.request_id => slot.insert(a),
        _ => slot.insert(Asking::new(e)),
    }
}

/// What the dialog shows: its title, the lines of its body (they scroll), the key lines
/// under them, the body line of the field with focus, and the body lines that hold a link
/// safe to make a hyperlink of (with its address).
pub struct Shown {
    pub title: String,
    pub body: Vec<Line<'static>>,
    pub keys: Vec<Line<'static>>,
    pub focus: usize,
    pub link: Option<(std::ops::Range<usize>, String)>,
}

/// A field's entry at its default.
fn entry(f: &Field) -> Entry {
    match &f.kind {
        FieldKind::Text { default, .. } => {
            let text = default.clone().unwrap_or_default();
            Entry::Text {
                cursor: text.chars().count(),
                text,
            }
        }
        FieldKind::Number { default, .. } => {
            let text = default.map(|d| d.to_string()).unwrap_or_default();
            Entry::Text {
                cursor: text.chars().count(),
                text,
            }
        }
        FieldKind::Boolean { default } => Entry::Bool(*default),
        FieldKind::Choice { options, default } => Entry::Choice(
            default
                .as_ref()
                .and_then(|d| options.iter().position(|o| o.value == *d)),
        ),
        FieldKind::Multi {
            options, default, ..
        } => Entry::Multi {
            picked: options.iter().map(|o| default.contains(&o.value)).collect(),
            at: 0,
        },
        FieldKind::Unsupported { .. } => Entry::Fixed,
    }
}

/// What a key does to the entry with focus.
fn edit(f: &Field, entry: &mut Entry, key: KeyEvent) {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match entry {
        Entry::Text { text, cursor } => {
            let byte = |t: &str, c: usize| t.char_indices().nth(c).map_or(t.len(), |(b, _)| b);
            let len = text.chars().count();
            match key.code {
                KeyCode::Char('u') if ctrl => {
                    text.clear();
                    *cursor = 0;
                }
                KeyCode::Char(c) if !ctrl && !c.is_control() => {
                    text.insert(byte(text, *cursor), c);
                    *cursor += 1;
                }
                KeyCode::Backspace if *cursor > 0 => {
                    *cursor -= 1;
                    text.remove(byte(text, *cursor));
                }
                KeyCode::Delete if *cursor < len => {
                    text.remove(byte(text, *cursor));
                }
                KeyCode::Left => *cursor = cursor.saturating_sub(1),
                KeyCode::Right => *cursor = (*cursor + 1).min(len),
                KeyCode::Home => *cursor = 0,
                KeyCode::End => *cursor = len,
                _ => {}
            }
        }
        Entry::Bool(b) => match key.code {
            KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right => *b = Some(!b.unwrap_or(false)),
            KeyCode::Char('y') => *b = Some(true),
            KeyCode::Char('n') => *b = Some(false),
            _ => {}
        },
        Entry::Choice(sel) => {
            let n = match &f.kind {
                FieldKind::Choice { options, .. } => options.len(),
                _ => 0,
            };
            if n == 0 {
                return;
            }
            match key.code {
                KeyCode::Char(' ') | KeyCode::Right => *sel = Some(sel.map_or(0, |i| (i + 1) % n)),
                KeyCode::Left => *sel = Some(sel.map_or(n - 1, |i| (i + n - 1) % n)),
                _ => {}
            }
        }
        Entry::Multi { picked, at } => {
            let n = picked.len();
            match key.code {
                KeyCode::Right if n > 0 => *at = (*at + 1) % n,
                KeyCode::Left if n > 0 => *at = (*at + n - 1) % n,
                KeyCode::Char(' ') => {
                    if let Some(p) = picked.get_mut(*at) {
                        *p = !*p;
                    }
                }
                _ => {}
            }
        }
        Entry::Fixed => {}
    }
}

/// How an entry shows.
fn entry_spans(f: &Field, entry: &Entry, focused: bool, theme: &Theme) -> Vec<Span<'static>> {
    let on = |s: String, chosen: bool| {
        if chosen {
            Span::styled(s, theme.selected)
        } else {
            Span::styled(s, theme.text)
        }
    };
    match (entry, &f.kind) {
        (Entry::Text { text, cursor }, _) => {
            let clean = one_line(text).into_owned();
            if !focused {
                return vec![Span::styled(format!("[{clean}]"), theme.text)];
            }
            let (before, after): (String, String) = {
                let b = clean
                    .char_indices()
                    .nth(*cursor)
                    .map_or(clean.len(), |(b, _)| b);
                (clean[..b].to_string(), clean[b..].to_string())
            };
            vec![
                Span::styled(format!("[{before}"), theme.text),
                Span::styled("▏", theme.selected),
                Span::styled(format!("{after}]"), theme.text),
            ]
        }
        (Entry::Bool(b), _) => vec![on(
            match b {
                Some(true) => "[x] yes".into(),
                Some(false) => "[ ] no".into(),
                None => "[ ] (not set)".into(),
            },
            focused,
        )],
        (Entry::Choice(sel), FieldKind::Choice { options, .. }) => {
            let mut spans = Vec::new();
            for (i, o) in options.iter().enumerate() {
                let chosen = *sel == Some(i);
                let t = one_line(&o.title);
                spans.push(on(
                    if chosen {
                        format!("(•) {t}")
                    } else {
                        format!("( ) {t}")
                    },
                    chosen && focused,
                ));
                spans.push(Span::raw("  "));
            }
            spans
        }
        (Entry::Multi { picked, at }, FieldKind::Multi { options, .. }) => {
            let mut spans = Vec::new();
            for (i, (o, p)) in options.iter().zip(picked).enumerate() {
                let t = one_line(&o.title);
                let mark = if *p { "[x]" } else { "[ ]" };
                spans.push(on(format!("{mark} {t}"), focused && i == *at));
                spans.push(Span::raw("  "));
            }
            spans
        }
        (_, FieldKind::Unsupported { schema_type }) => vec![Span::styled(
            format!(
                "({} fields cannot be filled in here)",
                one_line(schema_type)
            ),
            theme.dim,
        )],
        _ => Vec::new(),
    }
}

/// The field's description and bounds, for the field with focus.
fn hint(f: &Field) -> String {
    let mut parts = Vec::new();
    if let Some(d) = &f.description {
        parts.push(one_line(d).into_owned());
    }
    match &f.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
            ..
        } => {
            match (min_length, max_length) {
                (Some(a), Some(b)) => parts.push(format!("{a}–{b} characters")),
                (Some(a), None) => parts.push(format!("at least {a} characters")),
                (None, Some(b)) => parts.push(format!("at most {b} characters")),
                _ => {}
            }
            if let Some(fmt) = format {
                parts.push(one_line(fmt).into_owned());
            }
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
            ..
        } => {
            let what = if *integer {
                "a whole number"
            } else {
                "a number"
            };
            parts.push(match (minimum, maximum) {
                (Some(a), Some(b)) => format!("{what} from {a} to {b}"),
                (Some(a), None) => format!("{what} ≥ {a}"),
                (None, Some(b)) => format!("{what} ≤ {b}"),
                _ => what.to_string(),
            });
        }
        FieldKind::Multi {
            min_items,
            max_items,
            ..
        } => {
            parts.push("←→ move · Space picks".into());
            match (min_items, max_items) {
                (Some(a), Some(b)) => parts.push(format!("pick {a}–{b}")),
                (Some(a), None) => parts.push(format!("pick at least {a}")),
                (None, Some(b)) => parts.push(format!("pick at most {b}")),
                _ => {}
            }
        }
        _ => {}
    }
    parts.join(" · ")
}

/// `line` wrapped to `width` columns, its continuation lines (and, for a line that does
/// not start with the field's label, its first line too) indented `indent` columns.
fn hang(line: Line<'static>, indent: usize, width: usize) -> Vec<Line<'static>> {
    let starts_with_label = line.spans.len() > 1;
    let inner = width.saturating_sub(indent).max(8);
    let (first, rest) = if starts_with_label {
        // The label and mark are `indent` wide already.
        let mut w = trellis_text::wrap::wrap_line(&line, width.max(8));
        if w.len() <= 1 {
            return w;
        }
        let first = w.remove(0);
        let tail: Vec<Span<'static>> = w.into_iter().flat_map(|l| l.spans).collect();
        (
            Some(first),
            trellis_text::wrap::wrap_line(&Line::from(tail), inner),
        )
    } else {
        (None, trellis_text::wrap::wrap_line(&line, inner))
    };
    let pad = " ".repeat(indent);
    first
        .into_iter()
        .chain(rest.into_iter().map(|mut l| {
            l.spans.insert(0, Span::raw(pad.clone()));
            l
        }))
        .collect()
}

/// `text` wrapped to `width` columns in `style`.
pub(super) fn wrapped(
    text: &str,
    width: usize,
    style: ratatui::style::Style,
) -> Vec<Line<'static>> {
    trellis_text::wrap::wrap_line(&Line::styled(text.to_string(), style), width.max(8))
}
