//! Configurable key bindings for the transcript and the inspector.
//!
//! A binding is a sequence of keys written like Vim: `gT`, `K`, `]f`, `<Tab>`, `<S-Tab>`,
//! `<C-t>`, `<Esc>`, `<Down>`. `false` in the config disables an action. Multi-key
//! bindings wait for the next key while what was typed is a prefix of some binding.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a binding does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyAction {
    /// Open the inspector on the card at the cursor; inside it, close and jump to the card.
    Inspect,
    ToggleCall,
    NextCall,
    PrevCall,
    NextFailed,
    PrevFailed,
    Close,
    DiffView,
    PermissionView,
    RawView,
    Copy,
    Pager,
    FoldThoughts,
    Down,
    Up,
    Bottom,
    /// Open the Settings menu (anywhere but the prompt's text).
    Settings,
    /// Show or hide the sidebar.
    Sidebar,
    /// In the inspector: show output without display transforms (and back).
    Original,
    /// The help screen: every key, as bound now.
    Help,
    /// The sessions picker: past sessions, search, open, resume.
    Sessions,
    Options,
    /// In the inspector: into the subagent the call started (its first call).
    StepIn,
    /// In the inspector: back to the call that started this call's subagent.
    StepOut,
    /// In the inspector: cancel the work of the subagent the call started (or belongs to).
    CancelSubagent,
    /// On the card of one of the user's own commands (`!cmd`): its output goes with the
    /// next prompt (again: it does not).
    SendOutput,
}

impl KeyAction {
    pub const ALL: [(KeyAction, &'static str, &'static str); 26] = [
        (KeyAction::Inspect, "inspect", "gT"),
        (KeyAction::ToggleCall, "toggle_call", "K"),
        (KeyAction::NextCall, "next_call", "<Tab>"),
        (KeyAction::PrevCall, "prev_call", "<S-Tab>"),
        (KeyAction::NextFailed, "next_failed", "]f"),
        (KeyAction::PrevFailed, "prev_failed", "[f"),
        (KeyAction::Close, "close", "q"),
        (KeyAction::DiffView, "diff_view", "D"),
        (KeyAction::PermissionView, "permission_view", "P"),
        (KeyAction::RawView, "raw_view", "R"),
        (KeyAction::Copy, "copy", "y"),
        (KeyAction::Pager, "pager", "o"),
        (KeyAction::FoldThoughts, "fold_thoughts", "z"),
        (KeyAction::Down, "down", "j"),
        (KeyAction::Up, "up", "k"),
        (KeyAction::Bottom, "bottom", "G"),
        (KeyAction::Settings, "settings", "<F2>"),
        (KeyAction::Sidebar, "sidebar", "S"),
        (KeyAction::Original, "original", "O"),
        (KeyAction::Help, "help", "?"),
        (KeyAction::Sessions, "sessions", "H"),
        (KeyAction::Options, "agent_options", "M"),
        (KeyAction::StepIn, "step_in", "]s"),
        (KeyAction::StepOut, "step_out", "[s"),
        (KeyAction::CancelSubagent, "cancel_subagent", "X"),
        (KeyAction::SendOutput, "send_output", "s"),
    ];

    /// What the action does, for the help screen.
    pub fn describe(self) -> &'static str {
        match self {
            KeyAction::Inspect => {
                "inspect the call at the cursor (in the inspector: jump to its card)"
            }
            KeyAction::ToggleCall => "call arguments ⇄ result",
            KeyAction::NextCall => "next call",
            KeyAction::PrevCall => "previous call",
            KeyAction::NextFailed => "next failed call",
            KeyAction::PrevFailed => "previous failed call",
            KeyAction::Close => "close (in a replay: quit)",
            KeyAction::DiffView => "diff view",
            KeyAction::PermissionView => "permission history",
            KeyAction::RawView => "raw ACP frames",
            KeyAction::Copy => "copy the view (OSC 52)",
            KeyAction::Pager => "open the view in $PAGER",
            KeyAction::FoldThoughts => "fold or unfold thoughts",
            KeyAction::Down => "down",
            KeyAction::Up => "up",
            KeyAction::Bottom => "to the end",
            KeyAction::Settings => "settings",
            KeyAction::Sidebar => "show or hide the sidebar",
            KeyAction::Original => "output without display transforms",
            KeyAction::Help => "this help",
            KeyAction::Sessions => "past sessions: search, open, resume",
            KeyAction::Options => "the agent's model, mode and other options (/config)",
            KeyAction::StepIn => "into the subagent the call started",
            KeyAction::StepOut => "back to the call that started the subagent",
            KeyAction::CancelSubagent => "cancel the subagent's work (when the agent allows it)",
            KeyAction::SendOutput => {
                "on your command's card (!cmd): its output goes with your next prompt (again: not)"
            }
        }
    }

    pub fn name(self) -> &'static str {
        KeyAction::ALL
            .iter()
            .find(|(a, ..)| *a == self)
            .map(|(_, n, _)| *n)
            .unwrap_or("?")
    }
}

/// One key as a binding sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(e: &KeyEvent) -> Key {
        // Shifted letters arrive as uppercase characters; SHIFT itself is not part of a key.
        let code = match e.code {
            KeyCode::Tab if e.modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            c => c,
        };
        Key {
            code,
            ctrl: e.modifiers.contains(KeyModifiers::CONTROL),
            alt: e.modifiers.contains(KeyModifiers::ALT),
        }
    }
}

/// Why a key spec could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpecError(pub String);

/// Parses `gT`, `<Tab>`, `<C-t>`, `]f` … into keys.
pub fn parse_keys(spec: &str) -> Result<Vec<Key>, KeySpecError> {
    let mut keys = Vec::new();
    let mut rest = spec;
    while let Some(c) = rest.chars().next() {
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            {
                let name = &rest[1..end];
                rest = &rest[end + 1..];
                let (ctrl, alt, shift, base) = match name.split_once('-') {
                    Some((m, b)) if !b.is_empty() && matches!(m, "C" | "A" | "M" | "S") => {
                        (m == "C", m == "A" || m == "M", m == "S", b)
                    }
                    _ => (false, false, false, name),
                };
                let code = match base {
                    "Tab" if shift => KeyCode::BackTab,
                    "Tab" => KeyCode::Tab,
                    "Esc" => KeyCode::Esc,
                    "CR" | "Enter" => KeyCode::Enter,
                    "Space" => KeyCode::Char(' '),
                    "Up" => KeyCode::Up,
                    "Down" => KeyCode::Down,
                    "Left" => KeyCode::Left,
                    "Right" => KeyCode::Right,
                    "PageUp" => KeyCode::PageUp,
                    "PageDown" => KeyCode::PageDown,
                    "Home" => KeyCode::Home,
                    "End" => KeyCode::End,
                    f if f.len() >= 2
                        && f.starts_with('F')
                        && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
                    {
                        KeyCode::F(f[1..].parse().unwrap_or(1))
                    }
                    b if b.chars().count() == 1 => KeyCode::Char(b.chars().next().unwrap_or(' ')),
                    other => {
                        return Err(KeySpecError(format!("unknown key <{other}> in {spec:?}")));
                    }
                };
                keys.push(Key { code, ctrl, alt });
                continue;
            }
        }
        rest = &rest[c.len_utf8()..];
        keys.push(Key {
            code: KeyCode::Char(c),
            ctrl: false,
            alt: false,
        });
    }
    if keys.is_empty() {
        return Err(KeySpecError("empty key binding".into()));
    }
    Ok(keys)
}

/// The bindings in force.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Vec<Key>, KeyAction, String)>,
    pending: Vec<Key>,
}

/// What a key did to the keymap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    Action(KeyAction),
    /// A prefix of a binding: wait for more.
    Pending,
    /// Not bound here.
    Unbound,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::new(&BTreeMap::new()).unwrap_or(Keymap {
            bindings: Vec::new(),
            pending: Vec::new(),
        })
    }
}

impl Keymap {
    /// Defaults overridden by `config` (action name → spec, or `None` to disable).
    pub fn new(config: &BTreeMap<String, Option<String>>) -> Result<Keymap, KeySpecError> {
        for name in config.keys() {
            if !KeyAction::ALL.iter().any(|(_, n, _)| n == name) {
                let known: Vec<&str> = KeyAction::ALL.iter().map(|(_, n, _)| *n).collect();
                return Err(KeySpecError(format!(
                    "unknown key action {name:?} (known: {})",
                    known.join(", ")
                )));
            }
        }
        let mut bindings = Vec::new();
        for (action, name, default) in KeyAction::ALL {
            let spec = match config.get(name) {
                Some(None) => continue,
                Some(Some(s)) => s.clone(),
                None => default.to_string(),
            };
            bindings.push((parse_keys(&spec)?, action, spec));
        }
        Ok(Keymap {
            bindings,
            pending: Vec::new(),
        })
    }

    /// The spec bound to `action`, for hints.
    pub fn spec(&self, action: KeyAction) -> Option<&str> {
        self.bindings
            .iter()
            .find(|(_, a, _)| *a == action)
            .map(|(_, _, s)| s.as_str())
    }

    /// The action a whole key sequence is bound to, or that it begins, if any.
    pub fn claims(&self, keys: &[Key]) -> Option<KeyAction> {
        self.bindings
            .iter()
            .find(|(k, ..)| k.starts_with(keys) || keys.starts_with(k))
            .map(|(_, a, _)| *a)
    }

    /// Feeds a key.
    pub fn feed(&mut self, key: Key) -> Resolved {
        self.pending.push(key);
        if let Some((_, a, _)) = self.bindings.iter().find(|(k, ..)| *k == self.pending) {
            let a = *a;
            self.pending.clear();
            return Resolved::Action(a);
        }
        if self
            .bindings
            .iter()
            .any(|(k, ..)| k.starts_with(&self.pending))
        {
            return Resolved::Pending;
        }
        let multi = self.pending.len() > 1;
        self.pending.clear();
        if multi {
            // The earlier keys led nowhere: try this one on its own.
            return self.feed(key);
        }
        Resolved::Unbound
    }

    pub fn reset(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_resolves_sequences() {
        assert_eq!(parse_keys("<S-Tab>").unwrap()[0].code, KeyCode::BackTab);
        assert!(parse_keys("<C-t>").unwrap()[0].ctrl);
        assert!(parse_keys("<Nope>").is_err());
        let mut cfg = BTreeMap::new();
        cfg.insert("inspect".to_string(), Some("<C-o>".to_string()));
        cfg.insert("copy".to_string(), None);
        let mut k = Keymap::new(&cfg).unwrap();
        assert_eq!(k.spec(KeyAction::Copy), None, "false disables");
        let key = |c| Key {
            code: KeyCode::Char(c),
            ctrl: false,
            alt: false,
        };
        assert_eq!(k.feed(key('y')), Resolved::Unbound);
        assert_eq!(
            k.feed(Key {
                code: KeyCode::Char('o'),
                ctrl: true,
                alt: false
            }),
            Resolved::Action(KeyAction::Inspect)
        );
        assert_eq!(k.feed(key(']')), Resolved::Pending);
        assert_eq!(k.feed(key('f')), Resolved::Action(KeyAction::NextFailed));
        assert_eq!(k.feed(key(']')), Resolved::Pending);
        assert_eq!(
            k.feed(key('K')),
            Resolved::Action(KeyAction::ToggleCall),
            "a dead prefix retries the key"
        );
        cfg.insert("bogus".to_string(), None);
        assert!(Keymap::new(&cfg).is_err());
    }
}
