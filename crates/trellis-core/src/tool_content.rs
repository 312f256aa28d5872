//! What a tool call shows: its `content` items (text output, other blocks kept verbatim,
//! diffs, terminals, a subagent's session), read from the wire leniently — a malformed
//! item is skipped, never the update — and on a fast path for the common items.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

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
    /// output counts the lines of output, see [`crate::bulk::output_lines`]).
    pub fn text_size(&self) -> (usize, usize) {
        match self {
            ToolContent::Text { text } => (text.len(), text.output_lines()),
            ToolContent::Diff { new_text, .. } => (new_text.len(), count_lines(new_text)),
            _ => (0, 0),
        }
    }
}

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
    /// The text's measure, when the reader took it as it found the string's end (the hot
    /// reader does; serde's does not).
    #[serde(skip)]
    pub(crate) measured: Option<crate::bulk::escaped::Measured>,
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
                    measured,
                }),
            ) if ty == "text" => ToolContent::Text {
                // Kept as written where the events and the spill would write it so.
                text: match measured.map_or_else(
                    || crate::bulk::Text::escaped(text.0),
                    |m| crate::bulk::Text::measured(text.0, m),
                ) {
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

pub(crate) fn de_content<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<ToolContent>>, D::Error> {
    let items = Option::<Vec<LenientItem<WireContent<'de>>>>::deserialize(d)?;
    Ok(items.map(|v| {
        v.into_iter()
            .filter_map(|i| i.0.and_then(ToolContent::from_wire))
            .collect()
    }))
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
    use super::text_in_record;
    use crate::bulk::output_lines;

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
