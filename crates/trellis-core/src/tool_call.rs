//! One tool call and the ACP v1 merge rule.
//!
//! Invariants:
//! - A [`ToolCallPatch`] is what one `tool_call` / `tool_call_update` (or the `toolCall` of a
//!   permission request) says about a call. A field that is absent *or* JSON `null` is `None`
//!   and never changes the stored value (ACP v1).
//! - Present fields replace the stored value; `content` and `locations` are replaced whole.
//! - Patches compose: `apply(apply(c, a), b) == apply(c, a.then(b))`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

pub use trellis_plugin_protocol::ToolKind;

/// What the id of a user's own call (`!cmd` at the prompt) starts with; the terminal's id
/// follows.
pub const USER_CALL: &str = "!user/";

/// Whether the call with this id is the user's own command, not the agent's.
pub fn is_users(call_id: &str) -> bool {
    call_id.starts_with(USER_CALL)
}

/// Lifecycle of a call. `Cancelled` and `Unfinished` are client-side marks for calls still
/// open when a turn ends (cancelled turn, or a turn that ended without closing them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, PartialOrd, Ord)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    Failed,
    Cancelled,
    Unfinished,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::InProgress => "in_progress",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::Unfinished => "unfinished",
        }
    }

    /// The status [`ToolStatus::as_str`] names (client marks too: not for the wire).
    pub fn parse(s: &str) -> Option<ToolStatus> {
        [
            ToolStatus::Pending,
            ToolStatus::InProgress,
            ToolStatus::Completed,
            ToolStatus::Failed,
            ToolStatus::Cancelled,
            ToolStatus::Unfinished,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// The four statuses an agent may send. Client marks are never parsed from the wire.
    pub fn parse_wire(s: &str) -> Option<ToolStatus> {
        match s {
            "pending" => Some(ToolStatus::Pending),
            "in_progress" => Some(ToolStatus::InProgress),
            "completed" => Some(ToolStatus::Completed),
            "failed" => Some(ToolStatus::Failed),
            _ => None,
        }
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, ToolStatus::Pending | ToolStatus::InProgress)
    }
}

/// A status a patch may carry: an unknown string is treated as absent rather than failing
/// the whole update.
fn de_status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ToolStatus>, D::Error> {
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
    Ok(s.and_then(|s| ToolStatus::parse_wire(&s)))
}

/// A location the call touches (absolute path, optional 1-based line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Location {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// One item of a call's `content`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    /// A text content block (the common case: tool output). Shared, so snapshots of a
    /// call (events, views) do not copy the output; a finished call's may be kept only in
    /// the session log, and is read back when asked for.
    Text {
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        text: crate::bulk::Text,
    },
    /// Any other content block (image, resource, link…), kept verbatim.
    Block {
        #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
        block: Box<RawValue>,
    },
    /// A file change.
    Diff {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        new_text: String,
    },
    /// Live output of a client terminal.
    Terminal { terminal_id: String },
    /// A reference to another session (a subagent the call delegated to).
    Session { session_id: String },
}

/// Wire shape of one content item: every field optional so that one malformed item is
/// skipped instead of failing the update (lenient, like the reference SDK).
#[derive(Deserialize)]
struct WireContent<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    path: Option<String>,
    #[serde(rename = "oldText")]
    old_text: Option<String>,
    #[serde(rename = "newText")]
    new_text: Option<String>,
    #[serde(rename = "terminalId")]
    terminal_id: Option<String>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct WireTextBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    text: Option<String>,
}

impl PartialEq for ToolContent {
    fn eq(&self, other: &Self) -> bool {
        use ToolContent::*;
        match (self, other) {
            (Text { text: a }, Text { text: b }) => a == b,
            (Block { block: a }, Block { block: b }) => a.get() == b.get(),
            (
                Diff {
                    path: p1,
                    old_text: o1,
                    new_text: n1,
                },
                Diff {
                    path: p2,
                    old_text: o2,
                    new_text: n2,
                },
            ) => p1 == p2 && o1 == o2 && n1 == n2,
            (Terminal { terminal_id: a }, Terminal { terminal_id: b }) => a == b,
            (Session { session_id: a }, Session { session_id: b }) => a == b,
            _ => false,
        }
    }
}

impl ToolContent {
    fn from_wire(w: WireContent<'_>) -> Option<ToolContent> {
        match w.ty.as_deref()? {
            "content" => {
                let raw = w.content?;
                match serde_json::from_str::<WireTextBlock>(raw.get()) {
                    Ok(WireTextBlock {
                        ty,
                        text: Some(text),
                    }) if ty == "text" => Some(ToolContent::Text { text: text.into() }),
                    Ok(_) => Some(ToolContent::Block {
                        block: raw.to_owned(),
                    }),
                    Err(_) => None,
                }
            }
            "diff" => Some(ToolContent::Diff {
                path: w.path?,
                old_text: w.old_text,
                new_text: w.new_text?,
            }),
            "terminal" => Some(ToolContent::Terminal {
                terminal_id: w.terminal_id?,
            }),
            "session" => Some(ToolContent::Session {
                session_id: w.session_id?,
            }),
            _ => None,
        }
    }

    /// Bytes of displayable text in this item (diffs count the new text).
    pub fn text_size_bytes(&self) -> usize {
        match self {
            ToolContent::Text { text } => text.len(),
            ToolContent::Diff { new_text, .. } => new_text.len(),
            _ => 0,
        }
    }

    /// Bytes and lines of displayable text in this item (diffs count the new text; tool
    /// output counts the lines of output, see [`output_lines`]).
    pub fn text_size(&self) -> (usize, usize) {
        match self {
            ToolContent::Text { text } => (text.len(), text.output_lines()),
            ToolContent::Diff { new_text, .. } => (new_text.len(), count_lines(new_text)),
            _ => (0, 0),
        }
    }
}

/// Lines of tool output as the user would count them (see [`crate::bulk::output_lines`]).
pub use crate::bulk::output_lines;

/// Number of lines as a user counts them: a trailing newline does not open a new line.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let n = memchr_count(text.as_bytes(), b'\n');
    if text.ends_with('\n') { n } else { n + 1 }
}

fn memchr_count(hay: &[u8], needle: u8) -> usize {
    hay.iter().filter(|b| **b == needle).count()
}

/// Wire shape of a content item on the fast path: text blocks only, strict types.
#[derive(Deserialize)]
pub(crate) struct FastItem<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) ty: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) content: Option<FastBlock<'a>>,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default, rename = "oldText")]
    pub(crate) old_text: Option<String>,
    #[serde(default, rename = "newText")]
    pub(crate) new_text: Option<String>,
    #[serde(default, rename = "terminalId")]
    pub(crate) terminal_id: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct FastBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) ty: std::borrow::Cow<'a, str>,
    /// The text as it is on the line: unescaped once, into one allocation
    /// ([`crate::json_literal::unescape`]), rather than through a scratch buffer grown per line.
    #[serde(default, borrow)]
    pub(crate) text: Option<crate::json_literal::Raw<'a>>,
}

/// Parses a `content` array. The fast path reads text, diff and terminal items in one pass;
/// anything else (another block type, a malformed item) falls back to the lenient path,
/// which keeps non-text blocks verbatim and skips malformed items.
pub fn parse_content(raw: &str) -> Result<Vec<ToolContent>, serde_json::Error> {
    if let Some(out) = serde_json::from_str::<Vec<FastItem>>(raw)
        .ok()
        .and_then(fast_content)
    {
        return Ok(out);
    }
    let items: Vec<LenientItem<WireContent>> = serde_json::from_str(raw)?;
    Ok(items
        .into_iter()
        .filter_map(|i| i.0.and_then(ToolContent::from_wire))
        .collect())
}

/// Content items read on the fast path's terms, if every one of them is a text, diff or
/// terminal item the fast path knows whole (none: the lenient path decides).
pub(crate) fn fast_content(items: Vec<FastItem>) -> Option<Vec<ToolContent>> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        out.push(match (it.ty.as_ref(), it.content) {
            (
                "content",
                Some(FastBlock {
                    ty,
                    text: Some(text),
                }),
            ) if ty == "text" => ToolContent::Text {
                // Kept as written where the events and the spill would write it so.
                text: match crate::bulk::Text::escaped(text.0) {
                    Some(t) => t,
                    None => crate::json_literal::unescape(text.0)?.into(),
                },
            },
            ("diff", _) => ToolContent::Diff {
                path: it.path?,
                old_text: it.old_text,
                new_text: it.new_text?,
            },
            ("terminal", _) => ToolContent::Terminal {
                terminal_id: it.terminal_id?,
            },
            _ => return None,
        });
    }
    Some(out)
}

/// Parses a `locations` array, skipping malformed items.
pub fn parse_locations(raw: &str) -> Result<Vec<Location>, serde_json::Error> {
    let items: Vec<LenientItem<Location>> = serde_json::from_str(raw)?;
    Ok(items.into_iter().filter_map(|i| i.0).collect())
}

fn de_content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<ToolContent>>, D::Error> {
    let items = Option::<Vec<LenientItem<WireContent<'de>>>>::deserialize(d)?;
    Ok(items.map(|v| {
        v.into_iter()
            .filter_map(|i| i.0.and_then(ToolContent::from_wire))
            .collect()
    }))
}

fn de_locations<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Location>>, D::Error> {
    let items = Option::<Vec<LenientItem<Location>>>::deserialize(d)?;
    Ok(items.map(|v| v.into_iter().filter_map(|i| i.0).collect()))
}

/// Deserializes `T` or swallows the item (as `None`) when it does not fit.
pub struct LenientItem<T>(pub Option<T>);

/// Element type for lists where one malformed item must not sink the rest.
pub type LenientList<T> = LenientItem<T>;

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LenientItem<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        Ok(LenientItem(serde_json::from_str(raw.get()).ok()))
    }
}

/// Optional verbatim JSON: `null` is absent.
fn de_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    let raw = Option::<Box<RawValue>>::deserialize(d)?;
    Ok(raw.filter(|r| r.get() != "null"))
}

fn de_kind<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ToolKind>, D::Error> {
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
    Ok(s.map(|s| ToolKind::parse(&s)))
}

/// What one message says about a call. `None` means "not said".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallPatch {
    /// (Held in place: most updates name a call only to find it.)
    #[serde(default)]
    pub tool_call_id: crate::short_id::ShortId,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "de_kind")]
    pub kind: Option<ToolKind>,
    #[serde(default, deserialize_with = "de_status")]
    pub status: Option<ToolStatus>,
    #[serde(default, deserialize_with = "de_content")]
    pub content: Option<Vec<ToolContent>>,
    #[serde(default, deserialize_with = "de_locations")]
    pub locations: Option<Vec<Location>>,
    #[serde(default, deserialize_with = "de_raw")]
    pub raw_input: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "de_raw")]
    pub raw_output: Option<Box<RawValue>>,
    #[serde(default)]
    pub name: Option<String>,
}

impl ToolCallPatch {
    /// True when the patch says nothing but the id (e.g. a `_meta`-only update).
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.kind.is_none()
            && self.status.is_none()
            && self.content.is_none()
            && self.locations.is_none()
            && self.raw_input.is_none()
            && self.raw_output.is_none()
            && self.name.is_none()
    }

    /// The single patch equivalent to applying `self` then `later`.
    pub fn then(mut self, later: ToolCallPatch) -> ToolCallPatch {
        macro_rules! take {
            ($($f:ident),*) => { $( if later.$f.is_some() { self.$f = later.$f; } )* };
        }
        take!(
            title, kind, status, content, locations, raw_input, raw_output, name
        );
        self
    }
}

/// A call as the ledger holds it after merging every message about it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCall {
    pub id: String,
    /// Empty until a message carries a title (a placeholder for an unannounced call).
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    pub content: Vec<ToolContent>,
    pub locations: Vec<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub raw_input: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub raw_output: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// False while the call exists only because an update or permission request named it.
    pub announced: bool,
    /// Every status the call went through, with the session time it was entered.
    pub status_history: Vec<StatusChange>,
    /// Permission requests about this call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<crate::permission::record::PermissionRecord>,
    /// Turn in which the call was first seen.
    pub turn: u32,
    /// Rules this call broke (see `crate::anomaly`): it ran without asking, while
    /// asking, or after a refusal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<String>,
    /// The subagent (child session id) that made this call; none: the session itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub subagent: Option<std::sync::Arc<str>>,
    /// Bumped on every change, so views can cache what they drew.
    #[serde(skip)]
    pub rev: u32,
    /// Its place in the session's ledger (see [`crate::Ledger::at`]).
    #[serde(skip)]
    pub position: usize,
}

/// One entry of a call's status history.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatusChange {
    pub status: ToolStatus,
    /// Seconds since the session started.
    pub t: f64,
}

impl PartialEq for ToolCall {
    fn eq(&self, o: &Self) -> bool {
        self.id == o.id
            && self.title == o.title
            && self.kind == o.kind
            && self.status == o.status
            && self.content == o.content
            && self.locations == o.locations
            && raw_eq(&self.raw_input, &o.raw_input)
            && raw_eq(&self.raw_output, &o.raw_output)
            && self.name == o.name
    }
}

impl PartialEq for ToolCallPatch {
    fn eq(&self, o: &Self) -> bool {
        self.tool_call_id == o.tool_call_id
            && self.title == o.title
            && self.kind == o.kind
            && self.status == o.status
            && self.content == o.content
            && self.locations == o.locations
            && raw_eq(&self.raw_input, &o.raw_input)
            && raw_eq(&self.raw_output, &o.raw_output)
            && self.name == o.name
    }
}

pub(crate) fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    a.as_ref().map(|r| r.get()) == b.as_ref().map(|r| r.get())
}

impl ToolCall {
    /// A call known only by id.
    pub fn placeholder(id: String, t: f64, turn: u32) -> ToolCall {
        ToolCall {
            id,
            title: String::new(),
            kind: ToolKind::Other,
            status: ToolStatus::Pending,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: None,
            raw_output: None,
            name: None,
            announced: false,
            status_history: {
                // Room for the usual life (pending, running, finished) and one more: the
                // list is not grown again as the call runs.
                let mut h = Vec::with_capacity(4);
                h.push(StatusChange {
                    status: ToolStatus::Pending,
                    t,
                });
                h
            },
            permissions: Vec::new(),
            turn,
            anomalies: Vec::new(),
            subagent: None,
            rev: 0,
            position: 0,
        }
    }

    /// Applies the merge rule. Returns the previous status when the status changed.
    pub fn apply(&mut self, patch: ToolCallPatch, t: f64) -> Option<ToolStatus> {
        if let Some(title) = patch.title {
            self.title = title;
        }
        if let Some(kind) = patch.kind {
            self.kind = kind;
        }
        if let Some(content) = patch.content {
            self.content = content;
        }
        if let Some(locations) = patch.locations {
            self.locations = locations;
        }
        if let Some(raw) = patch.raw_input {
            self.raw_input = Some(raw);
        }
        if let Some(raw) = patch.raw_output {
            self.raw_output = Some(raw);
        }
        if let Some(name) = patch.name {
            self.name = Some(name);
        }
        match patch.status {
            Some(status) => self.set_status(status, t),
            None => None,
        }
    }

    /// Moves to `status`, recording it. Returns the previous status if it changed.
    pub fn set_status(&mut self, status: ToolStatus, t: f64) -> Option<ToolStatus> {
        if status == self.status {
            return None;
        }
        let prev = self.status;
        self.status = status;
        self.status_history.push(StatusChange { status, t });
        Some(prev)
    }

    /// Seconds between the first and the last recorded status.
    pub fn duration(&self) -> Option<f64> {
        let first = self.status_history.first()?;
        let last = self.status_history.last()?;
        self.status
            .is_terminal()
            .then(|| (last.t - first.t).max(0.0))
    }

    /// Bytes and lines of displayable output held for this call.
    pub fn output_size(&self) -> (usize, usize) {
        self.content.iter().fold((0, 0), |(b, l), c| {
            let (cb, cl) = c.text_size();
            (b + cb, l + cl)
        })
    }

    /// Title to show: the agent's, or a placeholder naming the id.
    pub fn display_title(&self) -> String {
        if self.title.is_empty() {
            format!("(unannounced call {})", self.id)
        } else {
            self.title.clone()
        }
    }
}

/// The text of content item `item` (as [`parse_content`] numbers them)
/// of the call a session-log record describes: a `tool_call` / `tool_call_update`, or the
/// `toolCall` of a permission request. `None` when the record holds no such text.
pub fn text_in_record(record: &str, item: usize) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(record).ok()?;
    let params = v.get("msg")?.get("params")?;
    let content = params
        .get("update")
        .or_else(|| params.get("toolCall"))?
        .get("content")?;
    let items = parse_content(&content.to_string()).ok()?;
    match items.into_iter().nth(item)? {
        ToolContent::Text { text } => Some((*text.load()).clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{output_lines, text_in_record};

    #[test]
    fn fences_notes_and_numbering_are_not_output() {
        assert_eq!(output_lines("```console\nhello.txt\n```"), 1);
        assert_eq!(
            output_lines(
                "```\n     1→hello world\n     2→second line\n     3→\n\n<system-reminder>\nWhenever you read a file…\n</system-reminder>\n```"
            ),
            2
        );
        assert_eq!(output_lines("a\nb\n"), 2);
        assert_eq!(output_lines(""), 0);
        assert_eq!(output_lines("```\n```"), 0);
        // A listing whose numbers are content stays as it is.
        assert_eq!(output_lines("1→x\nplain"), 2);
    }

    #[test]
    fn a_records_text_is_found_by_the_item_the_parser_gives_it() {
        let rec = r#"{"t":1,"dir":"agent_to_client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"bogus"},{"type":"diff","path":"a","newText":"x"},{"type":"content","content":{"type":"text","text":"out\n"}}]}}}}"#;
        // The malformed first item is skipped by the parser: the text is item 1.
        assert_eq!(text_in_record(rec, 1).as_deref(), Some("out\n"));
        assert_eq!(text_in_record(rec, 0), None, "a diff is not text");
        let ask = r#"{"t":1,"dir":"agent_to_client","msg":{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"why"}}]},"options":[]}}}"#;
        assert_eq!(text_in_record(ask, 0).as_deref(), Some("why"));
        assert_eq!(text_in_record("not json", 0), None);
    }
}
