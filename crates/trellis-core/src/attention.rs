//! What a session needs from its human, derived from its state on every change (never
//! kept beside it): the rail, the jump key, notifications and `trellis ls` all read this.
//!
//! Order of attention: Blocked > Error > Done > Working (and Starting) > Idle > Exited.
//! A state is always shown with a mark and a word, never by colour alone; every mark has
//! an ASCII fallback.

use crate::Session;

/// Why a session waits for its human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Blocked {
    /// A permission request reached the end of the chain (no rule or extension decided).
    Permission,
    /// The agent asked a question (`elicitation/create`).
    Question,
    /// The agent asks for a login in the terminal.
    Login,
}

/// A session's state, as its human sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attention {
    /// The agent is being started and set up.
    Starting,
    /// A turn is running.
    Working,
    /// Waiting for the human (permission, question, login).
    Blocked(Blocked),
    /// The agent died or could not be set up.
    Error,
    /// A turn ended and the human has not looked since.
    Done,
    /// Nothing running, nothing unseen.
    Idle,
    /// Closed on purpose.
    Exited,
}

/// What the driver knows beside the session state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    /// The agent finished setting up (and the connection is open).
    pub ready: bool,
    /// The connection closed (or there never was one).
    pub closed: bool,
    /// A terminal login is waiting to be run.
    pub login: bool,
    /// The last turn the human saw end (turns are numbered from 1).
    pub seen_turn: u32,
}

impl Attention {
    /// The state of `s` now.
    pub fn of(s: &Session, f: &Facts) -> Attention {
        if s.ended.is_some() {
            return Attention::Exited;
        }
        if s.agent_exited.is_some() {
            // An agent elsewhere whose connection is still being dialed again is being
            // set up, not failed: the human is wanted only if that gives up (closed).
            if s.remote.is_some() && !f.closed {
                return Attention::Starting;
            }
            return Attention::Error;
        }
        if f.login {
            return Attention::Blocked(Blocked::Login);
        }
        if !s.pending_permissions().is_empty() {
            return Attention::Blocked(Blocked::Permission);
        }
        if s.pending_elicitations().next().is_some() {
            return Attention::Blocked(Blocked::Question);
        }
        if f.closed {
            // Closed without a record of why: the connection went.
            return if s.turn > 0 || f.ready {
                Attention::Error
            } else {
                Attention::Exited
            };
        }
        if !f.ready {
            return Attention::Starting;
        }
        if s.turn_open {
            return Attention::Working;
        }
        if s.turn > f.seen_turn {
            return Attention::Done;
        }
        Attention::Idle
    }

    /// Lower comes first when looking for what needs the human.
    pub fn rank(self) -> u8 {
        match self {
            Attention::Blocked(_) => 0,
            Attention::Error => 1,
            Attention::Done => 2,
            Attention::Working | Attention::Starting => 3,
            Attention::Idle => 4,
            Attention::Exited => 5,
        }
    }

    /// Whether the human is wanted (Blocked, Error, Done).
    pub fn wants_human(self) -> bool {
        self.rank() <= 2
    }

    /// The state's mark: Unicode, or ASCII for terminals without it.
    pub fn mark(self, ascii: bool) -> &'static str {
        match (self, ascii) {
            (Attention::Blocked(_), false) => "◆",
            (Attention::Blocked(_), true) => "!",
            (Attention::Error, false) => "✗",
            (Attention::Error, true) => "x",
            (Attention::Done, false) => "✓",
            (Attention::Done, true) => "+",
            (Attention::Working, false) => "◐",
            (Attention::Working, true) => "~",
            (Attention::Starting, false) => "◌",
            (Attention::Starting, true) => ".",
            (Attention::Idle, false) => "·",
            (Attention::Idle, true) => "-",
            (Attention::Exited, false) => "■",
            (Attention::Exited, true) => "_",
        }
    }

    /// The state in a word or two.
    pub fn word(self) -> &'static str {
        match self {
            Attention::Blocked(Blocked::Permission) => "permission",
            Attention::Blocked(Blocked::Question) => "question",
            Attention::Blocked(Blocked::Login) => "login",
            Attention::Error => "error",
            Attention::Done => "done",
            Attention::Working => "working",
            Attention::Starting => "starting",
            Attention::Idle => "idle",
            Attention::Exited => "exited",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Policy;
    use crate::{Action, update};

    fn frame(s: &mut Session, dir: crate::wire::Dir, msg: serde_json::Value) {
        let msg = crate::wire::Message::parse(&msg.to_string()).unwrap();
        let seq = s.counters.frames + 1;
        let _ = update(
            s,
            Action::Frame {
                seq,
                t: seq as f64,
                dir,
                msg,
            },
        );
    }

    #[test]
    fn states_follow_the_session() {
        use crate::wire::Dir;
        let mut s = Session::new(Policy::Ask);
        let mut f = Facts::default();
        assert_eq!(Attention::of(&s, &f), Attention::Starting);
        f.ready = true;
        assert_eq!(Attention::of(&s, &f), Attention::Idle);
        frame(
            &mut s,
            Dir::ClientToAgent,
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"session/prompt",
                "params":{"sessionId":"s","prompt":[]}}),
        );
        assert_eq!(Attention::of(&s, &f), Attention::Working);
        frame(
            &mut s,
            Dir::AgentToClient,
            serde_json::json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission",
                "params":{"sessionId":"s","toolCall":{"toolCallId":"c1","title":"rm"},
                "options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}),
        );
        assert_eq!(
            Attention::of(&s, &f),
            Attention::Blocked(Blocked::Permission)
        );
        f.login = true;
        assert_eq!(Attention::of(&s, &f), Attention::Blocked(Blocked::Login));
        f.login = false;
        frame(
            &mut s,
            Dir::ClientToAgent,
            serde_json::json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"y"}}}),
        );
        assert_eq!(Attention::of(&s, &f), Attention::Working);
        frame(
            &mut s,
            Dir::AgentToClient,
            serde_json::json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        );
        assert_eq!(Attention::of(&s, &f), Attention::Done);
        f.seen_turn = s.turn;
        assert_eq!(Attention::of(&s, &f), Attention::Idle);
        s.agent_exited = Some("killed".into());
        assert_eq!(Attention::of(&s, &f), Attention::Error);
        // An agent elsewhere being dialed again is starting; once that gives up, an error.
        s.remote = Some("box:9000".into());
        assert_eq!(Attention::of(&s, &f), Attention::Starting);
        let gave_up = Facts { closed: true, ..f };
        assert_eq!(Attention::of(&s, &gave_up), Attention::Error);
        s.ended = Some("user quit".into());
        assert_eq!(Attention::of(&s, &f), Attention::Exited);
    }

    #[test]
    fn order_marks_and_words() {
        let all = [
            Attention::Idle,
            Attention::Working,
            Attention::Done,
            Attention::Error,
            Attention::Blocked(Blocked::Question),
            Attention::Exited,
            Attention::Starting,
        ];
        let mut sorted = all;
        sorted.sort_by_key(|a| a.rank());
        assert_eq!(sorted[0], Attention::Blocked(Blocked::Question));
        assert_eq!(sorted[1], Attention::Error);
        assert_eq!(sorted[2], Attention::Done);
        for a in all {
            assert!(a.mark(true).is_ascii());
            assert!(!a.word().is_empty());
            assert_ne!(a.mark(true), a.mark(false));
        }
        let ascii: std::collections::HashSet<_> = all.iter().map(|a| a.mark(true)).collect();
        assert_eq!(ascii.len(), all.len(), "every state has its own mark");
    }
}
