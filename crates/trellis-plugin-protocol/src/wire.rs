//! The `trellis-plugin` protocol, version 1: JSON-RPC 2.0, one object per line on the
//! plugin's stdin (host → plugin) and stdout (plugin → host); stderr is the plugin's log.
//! `docs/plugin-protocol.md` documents every message with an example.
//!
//! Host → plugin: `initialize` (request), `event`, `idle`, `action`, `shutdown`
//! (notifications), `permission/offer`, `question/offer`, `render/card`, `render/transform`, `sync`
//! (requests).
//! Plugin → host: the host functions (`host/*`, `store/*`, `ui/*`, `permission/respond`, `question/respond`,
//! `session/drive`), as requests (answered) or notifications (errors then go to
//! `/status`).
//!
//! Compatibility rule: v1 is frozen. Fields may be added to what the host sends (plugins
//! ignore what they do not know); nothing is removed or changes meaning. A plugin names
//! the version it speaks in its answer to `initialize`; a host that speaks several
//! versions talks to each plugin in the one it chose.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contrib::{
    CardLines, Registration, Rewrite, SectionBody, SectionPatch, SettingsRow, StyledLine,
};
use crate::kinds::PermissionOption;

/// The protocol's name, sent in `initialize`.
pub const PROTOCOL: &str = "trellis-plugin";
/// Versions this host speaks, oldest first.
pub const VERSIONS: &[u32] = &[1];

/// JSON-RPC error codes of the protocol (beside the standard -32700…-32603).
pub mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// A host function needs a capability the user did not grant (`data.capability`).
    pub const NOT_GRANTED: i64 = -32001;
    /// The host refused the call's arguments (an undeclared id, a bad pattern…).
    pub const INVALID: i64 = -32002;
    /// The plugin's store could not be written.
    pub const STORE: i64 = -32003;
}

/// `initialize` params (host → plugin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InitializeParams {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// Versions the host speaks; the plugin picks one.
    pub versions: Vec<u32>,
    pub host: HostInfo,
    /// The plugin's name as the host knows it (namespaces its store and call state).
    pub name: String,
    /// Capabilities the user granted (a subset of what the package asked for).
    pub granted: Vec<String>,
    /// `[extensions.NAME.options]` from the user's config (`null` if none).
    pub options: Value,
    /// How many times the process was restarted after a crash in this session (0 at first).
    pub restarts: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HostInfo {
    pub name: String,
    pub version: String,
}

/// `initialize` result (plugin → host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InitializeResult {
    /// The version chosen from `versions`.
    pub version: u32,
    /// Event subscriptions and UI contributions (as `Registration` in the Rust API).
    #[serde(default)]
    pub registration: Registration,
}

/// What the host derives from a call, sent beside it so plugins need not dig in
/// agent-specific raw input (the same facts the native cards use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CallFacts {
    /// The card title (a better title than the agent's when it gave a thin one).
    pub title: String,
    /// The shell line of an execute call.
    pub command: Option<String>,
    /// Every path the call names.
    pub paths: Vec<String>,
    /// Seconds from its first status to its end (`null` while it runs).
    pub duration: Option<f64>,
    /// The exit code it reported, if any.
    pub exit_code: Option<i64>,
    /// Lines its diffs add and remove (`null` for a call with no diff).
    #[serde(default)]
    pub added: Option<usize>,
    #[serde(default)]
    pub removed: Option<usize>,
}

/// `permission/offer` params: a permission request nobody's rules decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PermissionOffer {
    pub request_id: String,
    #[serde(default)]
    pub session: Option<String>,
    /// The call, as in events (`docs/events.md`).
    pub call: Value,
    pub facts: CallFacts,
    pub options: Vec<PermissionOption>,
    /// Milliseconds a claimant has to answer with `permission/respond` before the
    /// request is handed on.
    pub deadline_ms: u64,
    /// The verbatim ACP request, when the plugin asked for ACP payloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp: Option<String>,
}

/// `permission/offer` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OfferResult {
    /// `true`: "mine, I will answer"; `false`: pass to the next step of the chain.
    pub claim: bool,
}

/// `question/offer` params: a question of the agent's (`elicitation/create`: a form or
/// a link) nobody answered yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuestionOffer {
    #[serde(default)]
    pub session: Option<String>,
    /// The question as the `elicitation_requested` event gives it (`request_id`, `mode`,
    /// the form's typed `fields` or the link).
    pub question: Value,
    /// Milliseconds a claimant has to answer with `question/respond` before the question
    /// is handed on.
    pub deadline_ms: u64,
    /// The verbatim ACP request, when the plugin asked for ACP payloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp: Option<String>,
}

impl QuestionOffer {
    /// The id to answer with (`question/respond`).
    pub fn request_id(&self) -> &str {
        self.question["request_id"].as_str().unwrap_or_default()
    }
}

/// `render/card` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CardRequest {
    pub design: String,
    /// The call, as in events.
    pub call: Value,
    pub facts: CallFacts,
    pub width: u16,
}

/// `render/card` result is a [`CardLines`]: `{"call": [line…], "result": [line…]}`.
pub type CardResult = CardLines;

/// `render/transform` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TransformRequest {
    pub id: String,
    /// The call, as in events.
    pub call: Value,
    pub facts: CallFacts,
    pub text: String,
}

/// `render/transform` result: the new text, or `null` to leave it unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TransformResult {
    pub text: Option<String>,
}

/// `action` params: what the user did to a contribution (the extension API's type).
pub type ActionParams = crate::UiAction;

// ---- plugin → host: host functions ----

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CallId {
    pub call_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PutCallState {
    pub call_id: String,
    pub value: Value,
    #[serde(default)]
    pub merge: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PathParam {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TextParam {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReportParams {
    pub what: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RespondParams {
    pub request_id: String,
    pub option_id: String,
    /// Why, in the plugin's words: kept on the record, shown on the call's card and in
    /// the inspector (at most 300 characters are kept; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `question/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuestionRespondParams {
    pub request_id: String,
    /// `accept` (with `content`: a form's values; for a link, that the user agreed),
    /// `decline` or `cancel`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KeyParam {
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StorePut {
    pub key: String,
    /// `null` deletes the key.
    #[serde(default)]
    pub value: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IdParam {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetSection {
    pub id: String,
    pub body: SectionBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PatchSection {
    pub id: String,
    pub patch: Vec<SectionPatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetStatusItem {
    pub id: String,
    /// `null` hides the item.
    #[serde(default)]
    pub line: Option<StyledLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetSettings {
    pub rows: Vec<SettingsRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetTransform {
    pub id: String,
    pub rewrites: Vec<Rewrite>,
}

/// The protocol's method names.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const EVENT: &str = "event";
    pub const IDLE: &str = "idle";
    pub const ACTION: &str = "action";
    pub const SHUTDOWN: &str = "shutdown";
    pub const SYNC: &str = "sync";
    pub const PERMISSION_OFFER: &str = "permission/offer";
    pub const QUESTION_OFFER: &str = "question/offer";
    pub const RENDER_CARD: &str = "render/card";
    pub const RENDER_TRANSFORM: &str = "render/transform";
    pub const HOST_SESSION: &str = "host/session";
    pub const HOST_CALLS: &str = "host/calls";
    pub const HOST_CALL: &str = "host/call";
    pub const HOST_CALL_STATE: &str = "host/call_state";
    pub const HOST_PUT_CALL_STATE: &str = "host/put_call_state";
    pub const HOST_RESOLVE_PATH: &str = "host/resolve_path";
    pub const HOST_NOTIFY: &str = "host/notify";
    pub const HOST_OPEN_INSPECTOR: &str = "host/open_inspector";
    pub const HOST_OPTIONS: &str = "host/options";
    pub const HOST_REPORT: &str = "host/report";
    pub const HOST_FAILED: &str = "host/failed";
    pub const HOST_REPAINT: &str = "host/repaint";
    pub const PERMISSION_RESPOND: &str = "permission/respond";
    pub const QUESTION_RESPOND: &str = "question/respond";
    pub const STORE_GET: &str = "store/get";
    pub const STORE_PUT: &str = "store/put";
    pub const UI_SECTION_SHOWN: &str = "ui/section_shown";
    pub const UI_SET_SECTION: &str = "ui/set_section";
    pub const UI_PATCH_SECTION: &str = "ui/patch_section";
    pub const UI_SET_STATUS_ITEM: &str = "ui/set_status_item";
    pub const UI_SET_SETTINGS: &str = "ui/set_settings";
    pub const UI_SET_TRANSFORM: &str = "ui/set_transform";
    pub const SESSION_DRIVE: &str = "session/drive";
}

/// Every method of the protocol, with its direction and kind (documentation and the
/// check that `docs/plugin-protocol.md` lists each one).
pub const METHODS: &[(&str, &str)] = &[
    (method::INITIALIZE, "host → plugin request"),
    (method::EVENT, "host → plugin notification"),
    (method::IDLE, "host → plugin notification"),
    (method::ACTION, "host → plugin notification"),
    (method::SHUTDOWN, "host → plugin notification"),
    (method::SYNC, "host → plugin request"),
    (method::PERMISSION_OFFER, "host → plugin request"),
    (method::QUESTION_OFFER, "host → plugin request"),
    (method::RENDER_CARD, "host → plugin request"),
    (method::RENDER_TRANSFORM, "host → plugin request"),
    (method::HOST_SESSION, "plugin → host"),
    (method::HOST_CALLS, "plugin → host"),
    (method::HOST_CALL, "plugin → host"),
    (method::HOST_CALL_STATE, "plugin → host"),
    (method::HOST_PUT_CALL_STATE, "plugin → host"),
    (method::HOST_RESOLVE_PATH, "plugin → host"),
    (method::HOST_NOTIFY, "plugin → host"),
    (method::HOST_OPEN_INSPECTOR, "plugin → host"),
    (method::HOST_OPTIONS, "plugin → host"),
    (method::HOST_REPORT, "plugin → host"),
    (method::HOST_FAILED, "plugin → host"),
    (method::HOST_REPAINT, "plugin → host"),
    (method::PERMISSION_RESPOND, "plugin → host"),
    (method::QUESTION_RESPOND, "plugin → host"),
    (method::STORE_GET, "plugin → host"),
    (method::STORE_PUT, "plugin → host"),
    (method::UI_SECTION_SHOWN, "plugin → host"),
    (method::UI_SET_SECTION, "plugin → host"),
    (method::UI_PATCH_SECTION, "plugin → host"),
    (method::UI_SET_STATUS_ITEM, "plugin → host"),
    (method::UI_SET_SETTINGS, "plugin → host"),
    (method::UI_SET_TRANSFORM, "plugin → host"),
    (method::SESSION_DRIVE, "plugin → host"),
];

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// One message as read from a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request (with an id) or a notification (without) from the plugin.
    Call {
        id: Option<Value>,
        method: String,
        params: Value,
    },
    /// The answer to one of the host's requests.
    Response {
        id: u64,
        result: Result<Value, RpcError>,
    },
}

/// Why a line is not a protocol message (the plugin is disconnected for it).
#[derive(Debug, Clone, PartialEq)]
pub enum LineError {
    NotJson(String),
    NotRpc(&'static str),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::NotJson(e) => write!(f, "not JSON: {e}"),
            LineError::NotRpc(e) => write!(f, "not a JSON-RPC 2.0 message: {e}"),
        }
    }
}

impl std::error::Error for LineError {}

/// Parses one line from the plugin's stdout.
pub fn parse_line(line: &[u8]) -> Result<Incoming, LineError> {
    let v: Value = serde_json::from_slice(line).map_err(|e| LineError::NotJson(e.to_string()))?;
    let Value::Object(mut o) = v else {
        return Err(LineError::NotRpc("not an object"));
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(LineError::NotRpc("\"jsonrpc\" is not \"2.0\""));
    }
    if let Some(m) = o.remove("method") {
        let Value::String(method) = m else {
            return Err(LineError::NotRpc("\"method\" is not a string"));
        };
        let id = o.remove("id");
        if let Some(id) = &id
            && !(id.is_string() || id.is_i64() || id.is_u64())
        {
            return Err(LineError::NotRpc("an id must be a string or an integer"));
        }
        let params = o.remove("params").unwrap_or(Value::Null);
        return Ok(Incoming::Call { id, method, params });
    }
    let Some(id) = o.get("id").and_then(Value::as_u64) else {
        return Err(LineError::NotRpc(
            "a response to the host needs the integer id of its request",
        ));
    };
    if let Some(e) = o.remove("error") {
        let e: RpcError = serde_json::from_value(e)
            .map_err(|_| LineError::NotRpc("\"error\" is not a JSON-RPC error object"))?;
        return Ok(Incoming::Response { id, result: Err(e) });
    }
    match o.remove("result") {
        Some(r) => Ok(Incoming::Response { id, result: Ok(r) }),
        None => Err(LineError::NotRpc("neither method, result nor error")),
    }
}

/// A request line (host → plugin).
pub fn request(id: u64, method: &str, params: &impl Serialize) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification line (host → plugin).
pub fn notification(method: &str, params: &impl Serialize) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// A response line to one of the plugin's requests.
pub fn response(id: &Value, result: Result<Value, RpcError>) -> Vec<u8> {
    match result {
        Ok(r) => line(&serde_json::json!({"jsonrpc": "2.0", "id": id, "result": r})),
        Err(e) => line(&serde_json::json!({"jsonrpc": "2.0", "id": id, "error": e})),
    }
}

fn line(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_calls_responses_or_refused() {
        assert_eq!(
            parse_line(br#"{"jsonrpc":"2.0","id":3,"method":"host/calls"}"#).unwrap(),
            Incoming::Call {
                id: Some(serde_json::json!(3)),
                method: "host/calls".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            parse_line(br#"{"jsonrpc":"2.0","id":7,"result":{"claim":true}}"#).unwrap(),
            Incoming::Response {
                id: 7,
                result: Ok(serde_json::json!({"claim": true}))
            }
        );
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#),
            Ok(Incoming::Response { result: Err(_), .. })
        ));
        for bad in [
            &b"hello"[..],
            br#"[1]"#,
            br#"{"id":1,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":"x","result":1}"#,
            br#"{"jsonrpc":"2.0"}"#,
        ] {
            assert!(parse_line(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn registrations_and_lines_take_the_short_forms() {
        let r: InitializeResult = serde_json::from_value(serde_json::json!({
            "version": 1,
            "registration": {"subscriptions": ["turn_ended"],
                "sections": [{"id": "s", "title": "Tests"}]}
        }))
        .unwrap();
        assert_eq!(r.registration.sections[0].max_rows, 10);
        let b: SectionBody = serde_json::from_value(serde_json::json!({
            "rows": ["plain", [{"text": "ok", "tone": "good"}, " tail"], {"line": "x", "id": "c1"},
                     {"text": "one span", "tone": "dim"}]
        }))
        .unwrap();
        assert_eq!(b.rows[0].line.text(), "plain");
        assert_eq!(b.rows[1].line.0[0].tone, crate::Tone::Good);
        assert_eq!(b.rows[1].line.text(), "ok tail");
        assert_eq!(b.rows[2].id.as_deref(), Some("c1"));
        assert_eq!(b.rows[3].line.0[0].tone, crate::Tone::Dim);
        assert_eq!(b.rows[3].line.text(), "one span");
    }
}
