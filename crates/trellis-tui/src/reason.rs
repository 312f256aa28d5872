//! Rejecting a permission request with a reason (`r` in the dialog): one line of text,
//! sent with the agent's one-time reject and told to the agent as the session's next
//! message once its turn ends (the reducer queues it; the call's record keeps it).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use trellis_core::permission::REASON_LIMIT;

use trellis_view::Theme;

use crate::prompt::Prompt;

/// A reason being written for rejecting request `request_id` with `option_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReasonInput {
    pub request_id: String,
    /// The agent's one-time reject.
    pub option_id: String,
    /// What is rejected: the call's card title.
    pub subject: String,
    pub text: Prompt,
}

/// What a key did to the reason.
#[derive(Debug, PartialEq)]
pub enum ReasonKey {
    /// Still writing.
    Stay,
    /// Back to the dialog, nothing answered.
    Back,
    /// Reject, with this reason.
    Send(String),
}

impl ReasonInput {
    pub fn new(request_id: String, option_id: String, subject: String) -> ReasonInput {
        ReasonInput {
            request_id,
            option_id,
            subject,
            text: Prompt::default(),
        }
    }

    /// Edits the line: characters, Backspace, Delete, arrows, Home/End, Ctrl-U; Enter
    /// sends what is written (nothing: stays), Esc goes back.
    pub fn key(&mut self, key: KeyEvent) -> ReasonKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let t = &mut self.text;
        match key.code {
            KeyCode::Esc => return ReasonKey::Back,
            KeyCode::Enter => {
                let said = t.text.trim();
                if !said.is_empty() {
                    return ReasonKey::Send(said.to_string());
                }
            }
            KeyCode::Char('u') if ctrl => {
                t.text.clear();
                t.cursor = 0;
            }
            // One line, at most what the agent is told.
            KeyCode::Char(c)
                if !ctrl && !c.is_control() && t.text.chars().count() < REASON_LIMIT =>
            {
                t.insert(c.encode_utf8(&mut [0; 4]));
            }
            KeyCode::Backspace => t.backspace(),
            KeyCode::Delete => t.delete(),
            KeyCode::Left => t.left(),
            KeyCode::Right => t.right(),
            KeyCode::Home => t.cursor = 0,
            KeyCode::End => t.cursor = t.text.len(),
            _ => {}
        }
        ReasonKey::Stay
    }

    /// The overlay's lines, `width` columns wide: what is rejected, the line being
    /// written with its cursor, and what Enter does.
    pub fn lines(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let wrap = |l: Line<'static>| -> Vec<Line<'static>> {
            trellis_text::wrap::wrap_line(&l, width.max(1))
        };
        let mut out = Vec::new();
        out.extend(wrap(Line::from(vec![
            Span::styled("Reject: ", theme.failed),
            Span::styled(
                trellis_text::one_line(&self.subject).into_owned(),
                theme.title,
            ),
        ])));
        out.push(Line::default());
        out.extend(wrap(Line::styled(
            "Why? The agent reads this as your next message, once its turn ends.",
            theme.meta,
        )));
        let (before, after) = self.text.text.split_at(self.text.cursor);
        let mut rest = after.chars();
        let at = rest.next().map_or(" ".to_string(), String::from);
        out.extend(wrap(Line::from(vec![
            Span::raw("> "),
            Span::raw(before.to_string()),
            Span::styled(at, theme.title.add_modifier(Modifier::REVERSED)),
            Span::raw(rest.as_str().to_string()),
        ])));
        out.push(Line::default());
        out.extend(wrap(Line::styled(
            format!(
                "Enter rejects and sends it · Esc goes back to the question · {}/{REASON_LIMIT} characters",
                self.text.text.chars().count()
            ),
            theme.dim,
        )));
        out
    }
}
