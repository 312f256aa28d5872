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

use crate::raw_json::RawJson;
use crate::tool_content::de_content;
pub use crate::tool_content::{
    LenientItem, LenientList, ToolContent, count_lines, parse_content, text_in_record,
};

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

/// Lines of tool output as the user would count them (see [`crate::bulk::output_lines`]).
pub use crate::bulk::output_lines;

/// Parses a `locations` array, skipping malformed items.
pub fn parse_locations(raw: &str) -> Result<Vec<Location>, serde_json::Error> {
    let items: Vec<LenientItem<Location>> = serde_json::from_str(raw)?;
    Ok(items.into_iter().filter_map(|i| i.0).collect())
}

fn de_locations<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Location>>, D::Error> {
    let items = Option::<Vec<LenientItem<Location>>>::deserialize(d)?;
    Ok(items.map(|v| v.into_iter().filter_map(|i| i.0).collect()))
}

/// Optional verbatim JSON: `null` is absent.
fn de_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RawJson>, D::Error> {
    let raw = Option::<Box<RawValue>>::deserialize(d)?;
    Ok(raw.filter(|r| r.get() != "null").map(RawJson::from))
}

fn de_kind<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ToolKind>, D::Error> {
    let s = Option::<std::borrow::Cow<'de, str>>::deserialize(d)?;
    Ok(s.map(|s| ToolKind::parse(&s)))
}

/// What one message says about a call. `None` means "not said".
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
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
    pub raw_input: Option<RawJson>,
    #[serde(default, deserialize_with = "de_raw")]
    pub raw_output: Option<RawJson>,
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
    pub raw_input: Option<RawJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub raw_output: Option<RawJson>,
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
            && self.raw_input == o.raw_input
            && self.raw_output == o.raw_output
            && self.name == o.name
    }
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
    /// (The patch's fields are taken, not the patch moved: it is a few hundred bytes, and
    /// on its way from the reader it was copied at each call.)
    pub fn apply(&mut self, patch: &mut ToolCallPatch, t: f64) -> Option<ToolStatus> {
        if let Some(title) = patch.title.take() {
            self.title = title;
        }
        if let Some(kind) = patch.kind.take() {
            self.kind = kind;
        }
        if let Some(content) = patch.content.take() {
            self.content = content;
        }
        if let Some(locations) = patch.locations.take() {
            self.locations = locations;
        }
        if let Some(raw) = patch.raw_input.take() {
            self.raw_input = Some(raw);
        }
        if let Some(raw) = patch.raw_output.take() {
            self.raw_output = Some(raw);
        }
        if let Some(name) = patch.name.take() {
            self.name = Some(name);
        }
        match patch.status.take() {
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
