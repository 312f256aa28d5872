//! JSON-RPC envelopes and the ACP payloads the session model reads, decoded leniently.
//!
//! Invariants: decoding never fails on unknown fields or unknown enum strings; a request is
//! told from a response by the presence of `method` (agents reuse the client's id numbers).
//! Ids are kept as their canonical JSON text (`0`, `"abc"`), so numbers and strings never
//! collide.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::permission::PermissionOption;
use crate::tool_call::ToolCallPatch;

/// Direction of a frame on the agent's stdio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    ClientToAgent,
    AgentToClient,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct RpcError {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(d) = &self.data {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

/// One JSON-RPC message, with params/result kept verbatim until someone needs them.
/// A hot `session/update` comes already decoded (`decoded`, with `params` left out).
#[derive(Debug, Clone)]
pub struct Message {
    pub id: Option<String>,
    /// (Borrowed for the hot `session/update`: nearly every line, no allocation.)
    pub method: Option<std::borrow::Cow<'static, str>>,
    pub params: Option<Box<RawValue>>,
    pub result: Option<Box<RawValue>>,
    /// (Boxed: rare, and every line's message is moved a few times on its way.)
    pub error: Option<Box<RpcError>>,
    pub decoded: Option<Box<crate::hot::Decoded>>,
    /// The verbatim line, when the reader kept it (given to extensions as the ACP payload).
    pub raw: Option<std::sync::Arc<str>>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Why a line is not a usable JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON-RPC message: it has neither `method` nor `id`")]
    NotJsonRpc,
    #[error("invalid JSON-RPC id {0}: ids are strings or integers")]
    BadId(String),
}

/// The canonical text of a JSON-RPC id, the one form used everywhere (reducer, log,
/// responders): an integer (64-bit signed) in decimal, a string as `serde_json` writes it
/// (so `"p\u0031"` and `"p1"` are one id). `Ok(None)` for `null`; an error for any other
/// value (fractions, integers past 64 bits, booleans, arrays, objects).
pub fn canonical_id(raw: &str) -> Result<Option<String>, DecodeError> {
    let raw = raw.trim();
    let bad = || DecodeError::BadId(raw.chars().take(64).collect());
    match raw.as_bytes().first() {
        Some(b'"') if !raw.contains('\\') => Ok(Some(raw.to_string())),
        Some(b'"') => {
            let s: String = serde_json::from_str(raw).map_err(|_| bad())?;
            serde_json::to_string(&s).map(Some).map_err(|_| bad())
        }
        Some(b'-' | b'0'..=b'9') => raw
            .parse::<i64>()
            .map(|n| Some(n.to_string()))
            .map_err(|_| bad()),
        _ if raw == "null" => Ok(None),
        _ => Err(bad()),
    }
}

impl Message {
    /// Parses one line of the ACP stream.
    pub fn parse(line: &str) -> Result<Message, DecodeError> {
        if let Some(hot) = crate::hot::envelope(line)
            && hot.id.is_none()
            && hot.method.as_deref() == Some("session/update")
            && let Some(decoded) = hot.params.decode()
        {
            return Ok(Message {
                id: None,
                method: Some(std::borrow::Cow::Borrowed("session/update")),
                params: None,
                result: None,
                error: None,
                decoded: Some(Box::new(decoded)),
                raw: None,
            });
        }
        let env: Envelope =
            serde_json::from_str(line).map_err(|e| DecodeError::Json(e.to_string()))?;
        let id = match env.id {
            Some(r) => canonical_id(r.get())?,
            None => None,
        };
        if env.method.is_none() && id.is_none() && env.error.is_none() {
            return Err(DecodeError::NotJsonRpc);
        }
        Ok(Message {
            id,
            method: env.method.map(std::borrow::Cow::Owned),
            params: env.params,
            result: env.result,
            error: env.error.map(Box::new),
            decoded: None,
            raw: None,
        })
    }

    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    pub fn is_notification(&self) -> bool {
        self.method.is_some() && self.id.is_none()
    }

    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// Decodes `params` as `T`.
    pub fn params_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, String> {
        let raw = self.params.as_deref().map(RawValue::get).unwrap_or("{}");
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }

    /// Decodes `result` as `T`.
    pub fn result_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, String> {
        let raw = self.result.as_deref().map(RawValue::get).unwrap_or("null");
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}

/// `session/update` params, with the update tag read first so unknown kinds are counted.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams<'a> {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(borrow)]
    pub update: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTag<'a> {
    #[serde(borrow)]
    pub session_update: std::borrow::Cow<'a, str>,
}

/// A message chunk (`user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkUpdate {
    pub content: Box<RawValue>,
    #[serde(default)]
    pub message_id: Option<String>,
}

pub use crate::hot::TextBlock;

/// One plan entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlanEntry {
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub priority: String,
    #[serde(default)]
    pub status: String,
}

#[derive(Deserialize)]
pub struct PlanUpdate {
    #[serde(default)]
    pub entries: Vec<crate::tool_call::LenientList<PlanEntry>>,
}

/// A slash command the agent offers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AvailableCommand {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandsUpdate {
    #[serde(default)]
    pub available_commands: Vec<crate::tool_call::LenientList<AvailableCommand>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeUpdate {
    #[serde(alias = "modeId")]
    pub current_mode_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoUpdate {
    #[serde(default)]
    pub title: Option<Option<String>>,
}

/// Token usage and cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Usage {
    #[serde(default)]
    pub used: u64,
    #[serde(default)]
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cost {
    #[serde(default)]
    pub amount: f64,
    #[serde(default)]
    pub currency: String,
}

impl Cost {
    /// `12.35 USD`, `0.0027 USD`: at least two decimals, and enough for three
    /// significant digits below one (a small cost never shows as `0.00`).
    pub fn display(&self) -> String {
        let a = self.amount;
        let decimals = if a.abs() >= 1.0 || a == 0.0 || !a.is_finite() {
            2
        } else {
            let lead = (-a.abs().log10()).floor() as usize; // zeros after the point
            (lead + 3).clamp(2, 8)
        };
        let mut s = format!("{a:.decimals$}");
        while s.contains('.') && s.ends_with('0') && s.len() - s.find('.').unwrap_or(0) > 3 {
            s.pop();
        }
        format!("{s} {}", self.currency)
    }
}

#[cfg(test)]
mod cost_tests {
    #[test]
    fn small_costs_keep_their_significant_digits() {
        let c = |a: f64| {
            super::Cost {
                amount: a,
                currency: "USD".into(),
            }
            .display()
        };
        assert_eq!(c(0.0027), "0.0027 USD");
        assert_eq!(c(0.0123), "0.0123 USD");
        assert_eq!(c(0.5), "0.50 USD");
        assert_eq!(c(12.3456), "12.35 USD");
        assert_eq!(c(0.0), "0.00 USD");
        assert_eq!(c(0.000012345), "0.0000123 USD");
    }
}

/// `session/request_permission` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    #[serde(default)]
    pub session_id: Option<String>,
    pub tool_call: ToolCallPatch,
    #[serde(default)]
    pub options: Vec<crate::tool_call::LenientList<PermissionOption>>,
}

/// The outcome of a permission response.
#[derive(Deserialize)]
pub struct PermissionResult {
    pub outcome: WireOutcome,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireOutcome {
    pub outcome: String,
    #[serde(default)]
    pub option_id: Option<String>,
}

/// `initialize` result, the parts Trellis uses.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    #[serde(default)]
    pub protocol_version: Option<serde_json::Value>,
    #[serde(default)]
    pub agent_capabilities: Option<serde_json::Value>,
    #[serde(default)]
    pub agent_info: Option<AgentInfo>,
    #[serde(default)]
    pub auth_methods: Vec<serde_json::Value>,
}

/// Name and version an agent reports.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentInfo {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub version: String,
}

/// `session/new` / `session/load` result.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResult {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub modes: Option<Modes>,
    /// `configOptions`, read leniently by [`crate::session_config::parse_options`].
    #[serde(default)]
    pub config_options: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOptionsResult {
    #[serde(default)]
    pub config_options: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    #[serde(default)]
    pub mode_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Modes {
    #[serde(default)]
    pub current_mode_id: String,
    #[serde(default)]
    pub available_modes: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    #[serde(default)]
    pub prompt: Vec<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    #[serde(default)]
    pub stop_reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    #[serde(default)]
    pub cwd: Option<String>,
    /// `session/load` only.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteParams {
    pub path: String,
    #[serde(default)]
    pub content: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCreateParams {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalIdParams {
    pub terminal_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalIdResult {
    pub terminal_id: String,
}

/// How a terminal command ended (snake_case in events and logs; camelCase accepted from
/// the wire).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExitStatus {
    #[serde(default, alias = "exitCode")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub signal: Option<String>,
}

/// Just the `_meta` of an update (read apart from the rest).
#[derive(Debug, Default, Deserialize)]
pub struct MetaOnly {
    #[serde(default, rename = "_meta")]
    pub meta: Option<Box<RawValue>>,
}
