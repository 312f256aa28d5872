//! The deck's keys: single keys that work in every focus (they type no text), rebindable
//! under `[ui.keys]`, and a leader for terminals that do not send Alt.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};

use super::Deck;
use crate::keymap::{Key, KeySpecError, parse_keys};

/// Keys of the deck, active in every focus (they type no text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeckAction {
    Go(u8),
    Next,
    Prev,
    /// The session that needs the human most: oldest Blocked, then Error, then Done.
    Attention,
    New,
    NewWorktree,
    Close,
    Rail,
    Inbox,
    Compare,
}

impl DeckAction {
    pub const ALL: [(DeckAction, &'static str, &'static str); 18] = [
        (DeckAction::Go(1), "session_1", "<A-1>"),
        (DeckAction::Go(2), "session_2", "<A-2>"),
        (DeckAction::Go(3), "session_3", "<A-3>"),
        (DeckAction::Go(4), "session_4", "<A-4>"),
        (DeckAction::Go(5), "session_5", "<A-5>"),
        (DeckAction::Go(6), "session_6", "<A-6>"),
        (DeckAction::Go(7), "session_7", "<A-7>"),
        (DeckAction::Go(8), "session_8", "<A-8>"),
        (DeckAction::Go(9), "session_9", "<A-9>"),
        (DeckAction::Next, "session_next", "<A-j>"),
        (DeckAction::Prev, "session_prev", "<A-k>"),
        (DeckAction::Attention, "session_attention", "<A-a>"),
        (DeckAction::New, "session_new", "<A-n>"),
        (DeckAction::NewWorktree, "session_new_worktree", "<A-N>"),
        (DeckAction::Close, "session_close", "<A-w>"),
        (DeckAction::Rail, "session_rail", "<A-r>"),
        (DeckAction::Inbox, "inbox", "<A-i>"),
        (DeckAction::Compare, "session_compare", "<A-c>"),
    ];

    pub fn describe(self) -> &'static str {
        match self {
            DeckAction::Go(_) => "go to session 1…9 (the rail's numbers)",
            DeckAction::Next => "next session",
            DeckAction::Prev => "previous session",
            DeckAction::Attention => {
                "the session that needs you: oldest blocked, then error, then done"
            }
            DeckAction::New => "new session (agent and directory of the one in front)",
            DeckAction::NewWorktree => "new session in a new worktree",
            DeckAction::Close => "close the session in front (asks when it works)",
            DeckAction::Rail => "show or hide the sessions rail",
            DeckAction::Inbox => "every session's pending requests, oldest first",
            DeckAction::Compare => {
                "compare the sessions of a fan-out (or all): diffs, tests, cost; keep one"
            }
        }
    }

    /// Whether a name in `[ui.keys]` is one of the deck's.
    pub fn is_name(name: &str) -> bool {
        name == "leader" || DeckAction::ALL.iter().any(|(_, n, _)| *n == name)
    }
}

/// The deck's bindings, and the leader key for terminals that do not send Alt: the key
/// after the leader is read as if Alt were held.
#[derive(Debug, Clone)]
pub struct DeckKeys {
    bindings: Vec<(Key, DeckAction, String)>,
    leader: Option<(Key, String)>,
}

/// The leader's default, `Ctrl-]` (no readline or shell binding uses it).
pub const LEADER: &str = "<C-]>";

impl Default for DeckKeys {
    fn default() -> Self {
        DeckKeys::new(&std::collections::BTreeMap::new()).unwrap_or(DeckKeys {
            bindings: Vec::new(),
            leader: None,
        })
    }
}

impl DeckKeys {
    /// Defaults overridden by `config` (name → spec, `None` disables); names that are not
    /// the deck's are left to the transcript's keymap.
    pub fn new(
        config: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<DeckKeys, KeySpecError> {
        let one = |spec: &str| -> Result<Key, KeySpecError> {
            match parse_keys(spec)?.as_slice() {
                [k] => Ok(*k),
                _ => Err(KeySpecError(format!(
                    "{spec:?}: session keys are single keys (with <A-…> or after the leader)"
                ))),
            }
        };
        let mut bindings = Vec::new();
        for (action, name, default) in DeckAction::ALL {
            let spec = match config.get(name) {
                Some(None) => continue,
                Some(Some(s)) => s.clone(),
                None => default.to_string(),
            };
            bindings.push((one(&spec)?, action, spec));
        }
        let leader = match config.get("leader") {
            Some(None) => None,
            Some(Some(s)) => Some((one(s)?, s.clone())),
            None => Some((one(LEADER)?, LEADER.to_string())),
        };
        Ok(DeckKeys { bindings, leader })
    }

    /// The spec bound to `action` (for the help screen and hints).
    pub fn spec(&self, action: DeckAction) -> Option<&str> {
        self.bindings
            .iter()
            .find(|(_, a, _)| *a == action)
            .map(|(_, _, s)| s.as_str())
    }

    pub fn leader(&self) -> Option<&str> {
        self.leader.as_ref().map(|(_, s)| s.as_str())
    }

    fn action(&self, key: Key) -> Option<DeckAction> {
        self.bindings
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|(_, a, _)| *a)
    }

    fn is_leader(&self, key: Key) -> bool {
        self.leader.as_ref().is_some_and(|(k, _)| *k == key)
    }

    /// Every binding, for the help screen.
    pub fn listed(&self) -> Vec<(String, &'static str)> {
        let mut out: Vec<(String, &'static str)> = Vec::new();
        let go: Vec<&str> = self
            .bindings
            .iter()
            .filter(|(_, a, _)| matches!(a, DeckAction::Go(_)))
            .map(|(_, _, s)| s.as_str())
            .collect();
        if let (Some(first), Some(last)) = (go.first(), go.last()) {
            out.push((format!("{first}…{last}"), DeckAction::Go(1).describe()));
        }
        for (_, a, s) in &self.bindings {
            if !matches!(a, DeckAction::Go(_)) {
                out.push((s.clone(), a.describe()));
            }
        }
        if let Some((_, s)) = &self.leader {
            out.push((
                format!("{s} then a key"),
                "the session key of that key with Alt (for terminals that do not send Alt)",
            ));
        }
        out
    }
}

/// Crossterm reads `Ctrl-]` (0x1d) as `Ctrl-5`: both are the same key here.
fn normalize(key: Key) -> Key {
    match key {
        Key {
            code: KeyCode::Char('5'),
            ctrl: true,
            alt: false,
        } => Key {
            code: KeyCode::Char(']'),
            ctrl: true,
            alt: false,
        },
        k => k,
    }
}

/// What a key is to the deck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeckKey {
    Action(DeckAction),
    /// Taken by the deck, nothing to do (the leader; a key after it that is no session
    /// key; a key release).
    Swallowed,
    /// The session's key.
    Pass,
}

impl Deck {
    /// What a key is to the deck: one of its actions, swallowed (the leader, or a key
    /// after it that is no session key), or the session's.
    pub fn key(&mut self, k: &KeyEvent) -> DeckKey {
        if k.kind == KeyEventKind::Release {
            return DeckKey::Swallowed;
        }
        let key = normalize(Key::from_event(k));
        if std::mem::take(&mut self.leader) {
            let as_alt = Key { alt: true, ..key };
            return match self.keys.action(as_alt) {
                Some(a) => DeckKey::Action(a),
                None => DeckKey::Swallowed,
            };
        }
        if self.keys.is_leader(key) {
            self.leader = true;
            return DeckKey::Swallowed;
        }
        match self.keys.action(key) {
            Some(a) => DeckKey::Action(a),
            None => DeckKey::Pass,
        }
    }

    /// Whether the leader was pressed and the next key is awaited.
    pub fn leading(&self) -> bool {
        self.leader
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(c: char, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), m)
    }

    #[test]
    fn alt_keys_and_the_leader() {
        let mut d = Deck::new(super::super::tests::opened("a"), "demo".into());
        assert_eq!(
            d.key(&key('3', KeyModifiers::ALT)),
            DeckKey::Action(DeckAction::Go(3))
        );
        assert_eq!(d.key(&key('x', KeyModifiers::NONE)), DeckKey::Pass);
        assert_eq!(
            d.key(&key('N', KeyModifiers::ALT | KeyModifiers::SHIFT)),
            DeckKey::Action(DeckAction::NewWorktree)
        );
        // Ctrl-] as crossterm reads it, then a plain `a`: the jump.
        assert_eq!(d.key(&key('5', KeyModifiers::CONTROL)), DeckKey::Swallowed);
        assert!(d.leading());
        assert_eq!(
            d.key(&key('a', KeyModifiers::NONE)),
            DeckKey::Action(DeckAction::Attention)
        );
        // A key after the leader that is no session key is dropped, not typed.
        assert_eq!(d.key(&key(']', KeyModifiers::CONTROL)), DeckKey::Swallowed);
        assert_eq!(d.key(&key('z', KeyModifiers::NONE)), DeckKey::Swallowed);
        assert_eq!(d.key(&key('z', KeyModifiers::NONE)), DeckKey::Pass);
    }

    #[test]
    fn keys_are_rebound_and_checked() {
        let mut cfg = std::collections::BTreeMap::new();
        cfg.insert("session_next".to_string(), Some("<F8>".to_string()));
        cfg.insert("inbox".to_string(), None);
        let k = DeckKeys::new(&cfg).unwrap();
        assert_eq!(k.spec(DeckAction::Next), Some("<F8>"));
        assert_eq!(k.spec(DeckAction::Inbox), None);
        cfg.insert("session_prev".to_string(), Some("gT".to_string()));
        assert!(DeckKeys::new(&cfg).is_err(), "two keys");
        assert!(DeckAction::is_name("leader") && !DeckAction::is_name("inspect"));
    }
}
