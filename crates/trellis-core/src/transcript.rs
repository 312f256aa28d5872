//! What a transcript holds: messages by role, tool calls by ledger position, notices,
//! compactions, subagents. The session's own transcript and each subagent's are lists of
//! these [`Entry`]s.

use serde::Serialize;

/// Who wrote a message chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Agent,
    Thought,
}

/// One block of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// Consecutive chunks of one role and one message id, joined. (Boxed, like every
    /// large variant: a session of a million calls holds a million entries.)
    Message(Box<MessageBlock>),
    /// A tool call, by its position in the ledger.
    ToolCall { index: usize },
    /// A client-side note (agent exit, bad input…), shown in the transcript.
    Notice { text: Box<String> },
    /// A notice from the agent (`notice`): live information for the user.
    AgentNotice(Box<AgentNotice>),
    /// The agent compacting its context (`compaction_update`,
    /// `compaction_summary_chunk`), updated in place.
    Compaction(Box<Compaction>),
    /// A subagent, by its position in `Session::subagents`, where it was announced (its
    /// parent's call shows it instead once one names it).
    Subagent { index: usize },
}

/// A notice from the agent (`notice`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentNotice {
    /// `info`, `warning`, `error`, or the agent's own word.
    pub severity: String,
    pub title: String,
    pub description: Option<String>,
}

/// One compaction of the agent's context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Compaction {
    pub id: String,
    /// `in_progress`, `completed`, `failed`, `cancelled`, or the agent's own word.
    pub status: String,
    /// The summary the agent gave (text of its content blocks).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Compaction {
    /// A compaction in one line: what happened (the summary is shown apart).
    pub fn line(&self) -> String {
        match self.status.as_str() {
            "in_progress" => "compacting the context…".into(),
            "completed" => "context compacted".into(),
            "failed" => match &self.error {
                Some(e) => format!("context compaction failed: {e}"),
                None => "context compaction failed".into(),
            },
            "cancelled" => "context compaction cancelled".into(),
            other => format!("context compaction: {other}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageBlock {
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub text: String,
    pub turn: u32,
}
