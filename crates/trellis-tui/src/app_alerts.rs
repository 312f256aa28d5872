//! Reaching a user who is elsewhere: when a permission request or a question of the agent
//! reaches the dialog while the terminal has no focus, a bell, a mark in the terminal's
//! title and a desktop notification (OSC 9), as configured; the mark goes once nothing is
//! pending. Every text put into a sequence is made one plain line first: an agent's name
//! or a call's title holding `ESC` or `BEL` must not end the sequence and write its own.

use crate::app::{Alert, App};

impl App {
    /// The terminal sequences that tell a user who is elsewhere about a permission request
    /// or a question of the agent (bell, title mark, OSC 9 notification, as configured), or
    /// that clear the title mark once nothing is pending.
    pub fn alert(&mut self, alert: &Alert) -> Option<String> {
        let (need, text) = match alert {
            Alert::Permission { title } => ("permission needed", title.as_str()),
            Alert::Question { message } => ("input needed", message.as_str()),
            Alert::Answered
                if self.title_marked
                    && self.driver.session.pending_permissions().is_empty()
                    && self.driver.session.pending_elicitations().next().is_none() =>
            {
                self.title_marked = false;
                return Some(format!("\x1b]2;trellis — {}\x07", self.agent_in_title()));
            }
            _ => return None,
        };
        if self.focused {
            return None;
        }
        let mut seq = String::new();
        if self.alerts.bell {
            seq.push('\x07');
        }
        if self.alerts.title {
            let agent = self.agent_in_title();
            seq.push_str(&format!("\x1b]2;● trellis — {need} ({agent})\x07"));
            self.title_marked = true;
        }
        if self.alerts.notify {
            let text = trellis_text::clip(&trellis_text::sanitize::one_line(text), 120).to_string();
            seq.push_str(&format!("\x1b]9;Trellis: {need}: {text}\x07"));
        }
        (!seq.is_empty()).then_some(seq)
    }

    /// The agent's name as the title shows it (one line, no control character).
    fn agent_in_title(&self) -> std::borrow::Cow<'_, str> {
        trellis_text::sanitize::one_line(&self.agent)
    }
}
