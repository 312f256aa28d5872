//! The help screen (`?` in the transcript, F1 anywhere): every key of every place, made
//! from the keymap in force (rebindings and disabled actions included) and from what the
//! extensions registered — never a hand-kept list of the defaults.

use ratatui::text::{Line, Span};
use trellis_view::Theme;

use crate::app::App;
use crate::keymap::{KeyAction, Keymap};

/// Keys handled in code (not rebindable), per place: (keys, what they do).
const PROMPT: &[(&str, &str)] = &[
    ("Enter", "send the prompt (while the agent works: queue it)"),
    (
        "Enter on an empty prompt",
        "send the queued prompts now (cancels the turn first)",
    ),
    (
        "↑ on an empty prompt",
        "take the last queued prompt back to edit",
    ),
    ("Alt-Enter, Shift-Enter", "new line"),
    ("Tab", "complete @path or /command (again: next candidate)"),
    ("Ctrl-A, Home / Ctrl-E, End", "start / end of the line"),
    ("Alt-B, Ctrl-← / Alt-F, Ctrl-→", "word left / right"),
    ("Ctrl-U / Ctrl-K", "delete to the start / end of the line"),
    ("Ctrl-W, Alt-Backspace", "delete the word before the cursor"),
    ("Delete", "delete the character under the cursor"),
    (
        "↑ / ↓",
        "the row above / below; from the first / last row, the history",
    ),
    ("Ctrl-G", "edit the prompt in $VISUAL / $EDITOR"),
    (
        "Esc",
        "cancel the running turn; when idle, to the transcript",
    ),
    (
        "Esc Esc",
        "on an empty prompt: go back to before a turn (also /rewind)",
    ),
    (
        "/fork [TURN] [worktree]",
        "a fork of this session (from before TURN) beside it",
    ),
    (
        "/agent NAME",
        "hand this session to another agent, with a brief",
    ),
    (
        "!cmd, !!cmd",
        "run cmd here (a card of yours); !! also sends its output next (s on its card: later); /stop stops them",
    ),
    ("Ctrl-↑", "to the transcript"),
];

const TRANSCRIPT: &[(&str, &str)] = &[
    ("i, Enter", "back to the prompt"),
    (
        "Esc",
        "cancel the running turn; when idle, back to the prompt",
    ),
    ("↑ / ↓", "previous / next entry"),
    (
        "e",
        "edit the prompt at the cursor; Enter resends it from before its turn",
    ),
    ("PgUp / PgDn, mouse wheel", "scroll"),
    ("End", "to the end"),
    ("click", "inspect a card, collapse a sidebar section"),
];

const DIALOG: &[(&str, &str)] = &[
    (
        "y / a",
        "allow once / always (always previews the rule it saves)",
    ),
    ("n / N", "reject once / always"),
    ("r", "reject with a reason the agent is told next"),
    (
        "↑ / ↓, PgUp / PgDn",
        "scroll a question taller than the screen",
    ),
    ("Esc", "cancel the turn"),
];

const QUESTION: &[(&str, &str)] = &[
    ("Tab / S-Tab, ↑ / ↓", "next / previous field"),
    ("Space, ← / →", "choose, pick (y / n for a switch)"),
    ("Enter", "send (problems show under their fields)"),
    ("Ctrl-D / Esc", "decline / dismiss"),
    (
        "Enter, c, y (a link)",
        "open it in the browser, copy it, go on",
    ),
];

const ANYWHERE: &[(&str, &str)] = &[
    ("F1", "this help"),
    ("Ctrl-T", "inspect the latest call"),
    ("Ctrl-C twice", "quit"),
    ("Ctrl-R", "restart an agent that ended"),
];

/// The bindable actions shown in each place.
const TRANSCRIPT_ACTIONS: &[KeyAction] = &[
    KeyAction::Inspect,
    KeyAction::Down,
    KeyAction::Up,
    KeyAction::NextCall,
    KeyAction::PrevCall,
    KeyAction::Bottom,
    KeyAction::FoldThoughts,
    KeyAction::Sidebar,
    KeyAction::Settings,
    KeyAction::Sessions,
    KeyAction::Options,
    KeyAction::Help,
];

const INSPECTOR_ACTIONS: &[KeyAction] = &[
    KeyAction::ToggleCall,
    KeyAction::DiffView,
    KeyAction::PermissionView,
    KeyAction::RawView,
    KeyAction::NextCall,
    KeyAction::PrevCall,
    KeyAction::NextFailed,
    KeyAction::PrevFailed,
    KeyAction::StepIn,
    KeyAction::StepOut,
    KeyAction::CancelSubagent,
    KeyAction::Down,
    KeyAction::Up,
    KeyAction::Bottom,
    KeyAction::Copy,
    KeyAction::Pager,
    KeyAction::Original,
    KeyAction::Inspect,
    KeyAction::Close,
];

/// The help screen being written.
struct Page<'a> {
    out: Vec<Line<'static>>,
    keys_w: usize,
    width: usize,
    theme: &'a Theme,
}

impl Page<'_> {
    /// One key and what it does; a description wider than the screen goes on below,
    /// under itself (never cut).
    fn row(&mut self, keys: &str, what: &str, dim: bool) {
        let k = trellis_text::clip(keys, self.keys_w.saturating_sub(1)).into_owned();
        let pad = self.keys_w.saturating_sub(trellis_text::display_width(&k));
        let room = self.width.saturating_sub(self.keys_w + 2).max(10);
        let style = if dim { self.theme.dim } else { self.theme.text };
        let wrapped = trellis_text::wrap::wrap_line(&Line::raw(what.to_string()), room);
        for (i, piece) in wrapped.into_iter().enumerate() {
            let lead = if i == 0 {
                format!("  {k}{}", " ".repeat(pad))
            } else {
                " ".repeat(self.keys_w + 2)
            };
            let text = trellis_text::plain_text(&[piece]);
            self.out.push(Line::from(vec![
                Span::styled(lead, self.theme.title),
                Span::styled(text, style),
            ]));
        }
    }

    fn fixed(&mut self, rows: &[(&str, &str)]) {
        for (k, w) in rows {
            self.row(k, w, false);
        }
    }

    fn bound(&mut self, keys: &Keymap, actions: &[KeyAction]) {
        for a in actions {
            match keys.spec(*a) {
                Some(spec) => self.row(&show_spec(spec), a.describe(), false),
                None => self.row("(unbound)", a.describe(), true),
            }
        }
    }

    fn heading(&mut self, text: &str) {
        if !self.out.is_empty() {
            self.out.push(Line::default());
        }
        self.out
            .push(Line::styled(text.to_string(), self.theme.meta));
    }
}

/// The help screen's lines, `width` columns wide.
pub fn help_lines(app: &App, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut p = Page {
        out: Vec::new(),
        keys_w: 30.min(width / 2),
        width,
        theme,
    };
    // What a newcomer needs first: the keys that work anywhere, and those of the
    // sessions (several at once are easy to miss at the end of a long page).
    p.heading("Anywhere");
    p.fixed(ANYWHERE);
    if !app.session_keys.is_empty() {
        p.heading("Sessions (anywhere)");
        for (keys, what) in &app.session_keys {
            p.row(&show_spec(keys), what, false);
        }
    }
    p.heading("Prompt");
    p.fixed(PROMPT);
    p.heading("Transcript (Esc from the prompt)");
    p.bound(&app.keys, TRANSCRIPT_ACTIONS);
    p.fixed(TRANSCRIPT);
    p.heading("Inspector (gT, Ctrl-T)");
    p.bound(&app.keys, INSPECTOR_ACTIONS);
    p.heading("Permission dialog");
    p.fixed(DIALOG);
    p.heading("The agent's questions (forms, links)");
    p.fixed(QUESTION);
    if let Some(h) = &app.driver.host
        && !h.ui.keys.is_empty()
    {
        p.heading("Extensions (in the transcript)");
        for k in &h.ui.keys {
            let owner = h.ui.slot_name(k.slot);
            let what = format!("{} ({owner})", trellis_text::one_line(&k.label));
            p.row(&show_spec(&k.keys), &what, false);
        }
    }
    p.out.push(Line::default());
    for l in trellis_text::wrap::wrap_line(
        &Line::raw(
            "Rebind keys under [ui.keys] in the config (docs/config.md); this screen follows.",
        ),
        width.max(10),
    ) {
        p.out.push(l.style(theme.dim));
    }
    p.out
}

/// A binding as the help shows it: `<Tab>` → `Tab`, `<C-t>` → `Ctrl-t`, `gT` as is.
pub(crate) fn show_spec(spec: &str) -> String {
    let mut out = String::new();
    let mut rest = spec;
    while let Some(c) = rest.chars().next() {
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            let inner = &rest[1..end];
            let shown = inner
                .replace("C-", "Ctrl-")
                .replace("S-", "Shift-")
                .replace("A-", "Alt-")
                .replace("M-", "Alt-");
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&shown);
            rest = &rest[end + 1..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn specs_are_shown_as_keys() {
        assert_eq!(super::show_spec("<Tab>"), "Tab");
        assert_eq!(super::show_spec("<S-Tab>"), "Shift-Tab");
        assert_eq!(super::show_spec("<C-t>"), "Ctrl-t");
        assert_eq!(super::show_spec("gT"), "gT");
        assert_eq!(super::show_spec("]f"), "]f");
        assert_eq!(super::show_spec("<F2>"), "F2");
    }
}
