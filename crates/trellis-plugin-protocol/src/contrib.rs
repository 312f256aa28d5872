//! Declarative UI contributions: data the host renders, never code that draws.
//!
//! Text in spans may carry ANSI SGR and OSC 8 sequences; the host measures every line in
//! terminal columns and clips it to the room it has, closing what the clip cut open.

use serde::{Deserialize, Serialize};

use crate::kinds::ToolKind;

/// A colour role; the host maps it onto its theme so contributions match the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    #[default]
    Normal,
    Dim,
    Accent,
    Good,
    Warn,
    Bad,
    /// Added or changed lines (diffs, follow highlights).
    Added,
    Removed,
}

/// A run of text with one style. In JSON a span is `{"text", "tone", "bold"}`, or just a
/// string (normal tone).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StyledSpan {
    pub text: String,
    #[serde(default)]
    pub tone: Tone,
    #[serde(default)]
    pub bold: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SpanForm {
    Text(String),
    Full {
        text: String,
        #[serde(default)]
        tone: Tone,
        #[serde(default)]
        bold: bool,
    },
}

impl<'de> Deserialize<'de> for StyledSpan {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StyledSpan, D::Error> {
        Ok(match SpanForm::deserialize(d)? {
            SpanForm::Text(text) => StyledSpan {
                text,
                ..StyledSpan::default()
            },
            SpanForm::Full { text, tone, bold } => StyledSpan { text, tone, bold },
        })
    }
}

impl StyledSpan {
    pub fn new(text: impl Into<String>, tone: Tone) -> StyledSpan {
        StyledSpan {
            text: text.into(),
            tone,
            bold: false,
        }
    }

    pub fn bold(mut self) -> StyledSpan {
        self.bold = true;
        self
    }
}

/// One line of styled spans. In JSON an array of spans, one span, or just a string.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StyledLine(pub Vec<StyledSpan>);

#[derive(Deserialize)]
#[serde(untagged)]
enum LineForm {
    Text(String),
    Spans(Vec<StyledSpan>),
    Span(StyledSpan),
}

impl<'de> Deserialize<'de> for StyledLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StyledLine, D::Error> {
        Ok(match LineForm::deserialize(d)? {
            LineForm::Text(t) => StyledLine::plain(t),
            LineForm::Spans(s) => StyledLine(s),
            LineForm::Span(s) => StyledLine(vec![s]),
        })
    }
}

impl StyledLine {
    pub fn plain(text: impl Into<String>) -> StyledLine {
        StyledLine(vec![StyledSpan::new(text, Tone::Normal)])
    }

    pub fn tone(text: impl Into<String>, tone: Tone) -> StyledLine {
        StyledLine(vec![StyledSpan::new(text, tone)])
    }

    pub fn push(&mut self, text: impl Into<String>, tone: Tone) -> &mut Self {
        self.0.push(StyledSpan::new(text, tone));
        self
    }

    /// The text without styles.
    pub fn text(&self) -> String {
        self.0.iter().map(|s| s.text.as_str()).collect()
    }
}

impl From<&str> for StyledLine {
    fn from(s: &str) -> StyledLine {
        StyledLine::plain(s)
    }
}

impl From<String> for StyledLine {
    fn from(s: String) -> StyledLine {
        StyledLine::plain(s)
    }
}

/// One row of the Settings menu: a named line with choices, the current one marked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SettingsRow {
    /// Page the row belongs to (a label: one to three plain words).
    pub page: String,
    /// Id handed back in [`crate::UiAction::Setting`]; never shown.
    pub id: String,
    /// The row's name (a label).
    pub label: String,
    /// (choice id, choice label).
    pub choices: Vec<(String, String)>,
    /// Id of the current choice.
    pub current: String,
}

/// A sidebar section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SectionDecl {
    pub id: String,
    /// Title (a label).
    pub title: String,
    /// Most rows shown before `… +N more` (the host caps it at its own limit).
    #[serde(default = "default_rows")]
    pub max_rows: usize,
    /// Collapsed until the user expands it (the user's choice then persists).
    #[serde(default)]
    pub collapsed: bool,
}

fn default_rows() -> usize {
    10
}

/// The body of a section, built only when it is shown and expanded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SectionBody {
    #[serde(default)]
    pub rows: Vec<SectionRow>,
    /// Shown beside the title (e.g. number of items), if any.
    #[serde(default)]
    pub count: Option<usize>,
}

/// A row of a section. In JSON `{"line", "id"}`, or just a line (a string or spans).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SectionRow {
    pub line: StyledLine,
    /// Set for clickable rows: handed back in [`crate::UiAction::RowClick`].
    pub id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RowForm {
    Full {
        line: StyledLine,
        #[serde(default)]
        id: Option<String>,
    },
    Line(StyledLine),
}

impl<'de> Deserialize<'de> for SectionRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SectionRow, D::Error> {
        Ok(match RowForm::deserialize(d)? {
            RowForm::Full { line, id } => SectionRow { line, id },
            RowForm::Line(line) => SectionRow { line, id: None },
        })
    }
}

impl SectionRow {
    pub fn new(line: impl Into<StyledLine>) -> SectionRow {
        SectionRow {
            line: line.into(),
            id: None,
        }
    }

    pub fn clickable(line: impl Into<StyledLine>, id: impl Into<String>) -> SectionRow {
        SectionRow {
            line: line.into(),
            id: Some(id.into()),
        }
    }
}

/// Which calls a card design applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolMatch {
    /// The agent's tool name (e.g. Claude Code's `Bash`, from the call's `_meta`).
    Name(String),
    /// Every call of a kind.
    Kind(ToolKind),
}

impl ToolMatch {
    /// Whether a call of kind `kind`, named `name` by its agent, is one of these.
    pub fn matches(&self, kind: ToolKind, name: Option<&str>) -> bool {
        match self {
            ToolMatch::Kind(k) => kind == *k,
            ToolMatch::Name(n) => name == Some(n.as_str()),
        }
    }

    /// The key a user's choice is stored under.
    pub fn key(&self) -> String {
        match self {
            ToolMatch::Kind(k) => format!("kind:{}", k.as_str()),
            ToolMatch::Name(n) => format!("name:{n}"),
        }
    }

    /// The readable words of the tool (at most two, keeping the tail), for `Card <words>`.
    pub fn words(&self) -> String {
        let raw = match self {
            ToolMatch::Kind(k) => k.as_str().to_string(),
            ToolMatch::Name(n) => n.clone(),
        };
        let mut words: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut prev_lower = false;
        for c in raw.chars() {
            if !c.is_alphanumeric() {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                prev_lower = false;
                continue;
            }
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        }
        if !cur.is_empty() {
            words.push(cur);
        }
        let n = words.len();
        if n == 0 {
            return "tool".into();
        }
        words[n.saturating_sub(2)..].join(" ")
    }
}

/// A card design: draws calls matching `applies_to` when the user picks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DesignDecl {
    pub id: String,
    /// The design's name in the `Cards` page (a label).
    pub label: String,
    pub applies_to: ToolMatch,
}

/// A designed card: the call part (its first line is the card's line, after the call's
/// status mark and before its duration and who decided its permission, which Trellis
/// keeps) and the result part (shown under it: up to 10 lines when the call's kind shows
/// no output, else as its output policy says).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CardLines {
    pub call: Vec<StyledLine>,
    #[serde(default)]
    pub result: Vec<StyledLine>,
    /// The design draws the whole first line: Trellis adds no status mark and no duration.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

/// A display transform over tool output (display only: the ledger keeps the original).
///
/// Two kinds: **declarative** (`rewrites` set: regular-expression rewrites the host
/// applies itself at frame time; the extension may replace them later with
/// `Host::set_transform` of the extension API) or **per call** (`rewrites` absent: the host asks
/// the extension, on its own worker, for the text of each call revision, caches the answer
/// and shows the text unchanged until it arrives).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TransformDecl {
    pub id: String,
    pub label: String,
    #[serde(default)]
    pub rewrites: Option<Vec<Rewrite>>,
}

/// One rewrite of a declarative transform: every match of `pattern` (Rust `regex`
/// syntax, linear time) is replaced by `replace`, where `$1`, `${name}` insert groups
/// (a group that did not take part inserts nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rewrite {
    pub pattern: String,
    pub replace: String,
}

impl Rewrite {
    pub fn new(pattern: impl Into<String>, replace: impl Into<String>) -> Rewrite {
        Rewrite {
            pattern: pattern.into(),
            replace: replace.into(),
        }
    }
}

/// A change to a section's body the extension pushed earlier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SectionPatch {
    /// Sets (or with `null` removes) the count beside the title.
    Count { count: Option<usize> },
    /// Like `Array.prototype.splice`: removes `delete` rows from `start` and inserts
    /// `insert` there (`start` past the end appends).
    Splice {
        start: usize,
        #[serde(default)]
        delete: usize,
        #[serde(default)]
        insert: Vec<SectionRow>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatusDecl {
    pub id: String,
    pub label: String,
}

/// `/name` at the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommandDecl {
    /// The command word (lowercase letters, digits, `-`).
    pub name: String,
    /// One line shown in completion.
    pub description: String,
}

/// A key in the transcript (Vim-style spec, e.g. `F` or `<C-f>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KeyDecl {
    pub id: String,
    pub keys: String,
    pub label: String,
}

/// What an extension contributes, declared once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Registration {
    /// Event types wanted (names as in `EVENT_KINDS`); `None`: every event.
    pub subscriptions: Option<Vec<String>>,
    /// Receive the verbatim ACP message with each event (`Event::acp`). Off by default:
    /// keeping it costs a copy of every line the agent sends.
    #[serde(default)]
    pub acp_payloads: bool,
    /// `tool_call_created` / `tool_call_updated` only for calls of these kinds (`None`:
    /// every call). Saves the extension, and the stream, the calls it ignores anyway.
    #[serde(default)]
    pub call_kinds: Option<Vec<ToolKind>>,
    #[serde(default)]
    pub sections: Vec<SectionDecl>,
    #[serde(default)]
    pub designs: Vec<DesignDecl>,
    #[serde(default)]
    pub transforms: Vec<TransformDecl>,
    #[serde(default)]
    pub status_items: Vec<StatusDecl>,
    #[serde(default)]
    pub commands: Vec<CommandDecl>,
    #[serde(default)]
    pub keys: Vec<KeyDecl>,
}

#[cfg(feature = "schema")]
mod schema {
    //! The lenient JSON forms of spans, lines and rows, as JSON Schema.
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::{StyledLine, StyledSpan, Tone};

    impl JsonSchema for StyledSpan {
        fn schema_name() -> Cow<'static, str> {
            "StyledSpan".into()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            let tone = g.subschema_for::<Tone>();
            json_schema!({
                "description": "A run of text with one style, or just a string (normal tone). Text may carry ANSI SGR and OSC 8; other control characters are removed.",
                "anyOf": [
                    {"type": "string"},
                    {"type": "object", "required": ["text"], "properties": {
                        "text": {"type": "string"}, "tone": tone, "bold": {"type": "boolean"}
                    }}
                ]
            })
        }
    }

    impl JsonSchema for StyledLine {
        fn schema_name() -> Cow<'static, str> {
            "StyledLine".into()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            let span = g.subschema_for::<StyledSpan>();
            json_schema!({
                "description": "One line: a string, one span, or an array of spans.",
                "anyOf": [{"type": "string"}, span.clone(), {"type": "array", "items": span}]
            })
        }
    }

    impl JsonSchema for super::SectionRow {
        fn schema_name() -> Cow<'static, str> {
            "SectionRow".into()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            let line = g.subschema_for::<StyledLine>();
            json_schema!({
                "description": "A row: a line, or {line, id} (a row with an id is clickable).",
                "anyOf": [line.clone(), {"type": "object", "required": ["line"], "properties": {
                    "line": line, "id": {"type": ["string", "null"]}
                }}]
            })
        }
    }
}
