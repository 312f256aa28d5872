//! What the extractor finds in a log: documents (the searchable pieces of a session),
//! calls, and facts about the whole session, and the sink they go to.

/// Tool output kept per call for search (the log keeps all of it).
pub const OUTPUT_CAP: usize = 256 << 10;
/// Text kept per message or prompt.
pub const TEXT_CAP: usize = 1 << 20;

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    Prompt,
    Message,
    Thought,
    /// A tool call: its output (text content, terminal output, raw output, diff text) as
    /// the document's text, its title, command and paths as its head. One document per
    /// call, not two: the index of a long turn is mostly its calls, and each row costs an
    /// entry, a size record and a row id in every word's list.
    Call,
    /// A title the agent gave the session.
    Title,
}

impl DocKind {
    /// The word a hit of this kind is reported with (a call's hit says which part of the
    /// call matched: `tool` or `output`, see [`crate::Hit::kind`]).
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Prompt => "prompt",
            DocKind::Message => "message",
            DocKind::Thought => "thought",
            DocKind::Call => "call",
            DocKind::Title => "title",
        }
    }

    /// The small number the `entries` table keeps (a word per row was 4% of the index;
    /// 0, the most frequent, takes no byte at all).
    pub(crate) fn code(self) -> i64 {
        match self {
            DocKind::Call => 0,
            DocKind::Prompt => 1,
            DocKind::Message => 2,
            DocKind::Thought => 3,
            DocKind::Title => 4,
        }
    }

    pub(crate) fn of_code(code: i64) -> Option<DocKind> {
        [
            DocKind::Prompt,
            DocKind::Message,
            DocKind::Thought,
            DocKind::Call,
            DocKind::Title,
        ]
        .into_iter()
        .find(|k| k.code() == code)
    }
}

/// One searchable piece of a session, with its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub kind: DocKind,
    pub turn: u32,
    pub call_id: Option<String>,
    /// Byte offset of the log line it starts at.
    pub offset: u64,
    /// The stretch of log `[from, to)` its text is read from again (a call's terminal
    /// output may come before the call): the index keeps no copy of the text, and a
    /// search's snippet is made by reading that stretch again (`reread.rs`).
    pub from: u64,
    pub to: u64,
    pub text: String,
    /// A call's title, command and paths, one per line (empty for other kinds).
    pub head: String,
}

/// A tool call as the index keeps it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallRow {
    pub call_id: String,
    pub turn: u32,
    pub title: String,
    pub kind: String,
    pub status: String,
    pub command: Option<String>,
    pub paths: Vec<String>,
    pub offset: u64,
}

/// Facts about the whole session; later records overwrite earlier ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub acp_id: Option<String>,
    pub agent: Option<String>,
    pub agent_title: Option<String>,
    /// The name the agent gives itself (`agentInfo.name`).
    pub agent_name: Option<String>,
    /// The label of the worktree of Trellis's it ran in.
    pub worktree: Option<String>,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub started: Option<f64>,
    /// Session time (`t`) of the last record.
    pub last_t: f64,
    pub end_reason: Option<String>,
    pub title: Option<String>,
    pub tokens_used: Option<i64>,
    pub tokens_size: Option<i64>,
    pub cost: Option<f64>,
    pub currency: Option<String>,
    pub continues: Option<String>,
    /// A fork: the turn of `continues` it was forked before (its history is the turns
    /// before that one).
    pub continues_at: Option<i64>,
    /// A hand-off of `continues` to another agent (a brief, no transcript).
    pub handed_over: bool,
    /// The directory Trellis was started in, when the session ran elsewhere.
    pub launched_in: Option<String>,
    /// Lines that were not records (cut short, not JSON).
    pub bad_lines: u64,
}

/// Where the extractor's findings go.
pub trait Sink {
    fn doc(&mut self, doc: Doc);
    fn call(&mut self, call: CallRow);
    /// Everything before `offset` is indexed; `turn` turns have ended.
    fn checkpoint(&mut self, offset: u64, turn: u32);
}
