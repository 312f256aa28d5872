//! `/fork [TURN] [worktree]` and `/agent NAME` in a session: what the user asked for,
//! carried out by the deck, which opens the new session beside this one
//! (`deck_loop::fork::open`).

/// `/fork` or `/agent` asked for in a session; the deck opens it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForkAsk {
    /// The turn to fork before (none: after the last).
    pub at: Option<u32>,
    /// In a worktree holding that turn's files.
    pub worktree: bool,
    /// Another agent (`/agent NAME`).
    pub agent: Option<String>,
    /// A hand-off: no transcript; the new prompt holds a brief to edit and send.
    pub handoff: bool,
    /// Sent as the fork's first prompt (a past prompt edited and sent again).
    pub prompt: Option<String>,
    /// Said in the fork when it opens (what the code's rewind did, for `b`).
    pub said: Option<String>,
}
