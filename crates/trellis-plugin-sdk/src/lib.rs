//! Trellis plugins in Rust. A plugin is a process Trellis starts; this crate speaks the
//! `trellis-plugin` v1 protocol (JSON-RPC 2.0, one object per line on stdin/stdout) for
//! you, with the very types Trellis uses for contributions (`Registration`,
//! `SectionBody`, `CardLines`, `StyledLine`…, from `trellis-core`).
//!
//! ```no_run
//! use trellis_plugin_sdk::{Host, Init, Plugin, Registration, Value, run};
//!
//! struct Count(usize);
//!
//! impl Plugin for Count {
//!     fn registration(&mut self, _init: &Init) -> Registration {
//!         Registration { subscriptions: Some(vec!["tool_call_created".into()]), ..Registration::default() }
//!     }
//!     fn on_event(&mut self, _event: &Value, host: &mut Host) -> Result<(), String> {
//!         self.0 += 1;
//!         host.notify(&format!("{} calls", self.0)).map_err(|e| e.to_string())
//!     }
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     run(Count(0))
//! }
//! ```
//!
//! Host functions are synchronous. Log to stderr (`eprintln!`), never to stdout: stdout
//! carries the protocol, and a line on it that is not protocol disconnects the plugin.
#![deny(clippy::print_stdout)]

use std::collections::VecDeque;
use std::io::{BufRead, Write};

use serde::Deserialize;
pub use serde_json::{Value, json};
pub use trellis_core::ext::{
    CardLines, CommandDecl, DesignDecl, DriveAction, KeyDecl, Registration, Rewrite, SectionBody,
    SectionDecl, SectionPatch, SectionRow, SettingsRow, StatusDecl, StyledLine, StyledSpan, Tone,
    ToolMatch, TransformDecl,
};
pub use trellis_core::permission::PermissionOption;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Error code of a host function that needs a capability the user did not grant.
pub const NOT_GRANTED: i64 = -32001;

/// What Trellis says when it starts the plugin.
#[derive(Debug, Clone, Deserialize)]
pub struct Init {
    /// The plugin's name (it namespaces its store and call state).
    pub name: String,
    /// Capabilities the user granted.
    #[serde(default)]
    pub granted: Vec<String>,
    /// `[extensions.NAME.options]` from the user's config.
    #[serde(default)]
    pub options: Value,
    /// How often the process was restarted after a crash in this session.
    #[serde(default)]
    pub restarts: u32,
}

/// A permission request offered to the plugin.
#[derive(Debug, Clone, Deserialize)]
pub struct Offer {
    pub request_id: String,
    #[serde(default)]
    pub session: Option<String>,
    /// The call, as in events.
    pub call: Value,
    /// What Trellis derived from the call: title, command, paths, duration, exit_code.
    pub facts: Value,
    pub options: Vec<PermissionOption>,
    pub deadline_ms: u64,
}

/// A question of the agent's (`elicitation/create`) offered to the plugin.
#[derive(Debug, Clone, Deserialize)]
pub struct QuestionOffer {
    #[serde(default)]
    pub session: Option<String>,
    /// The question, as the `elicitation_requested` event gives it: `request_id`,
    /// `message`, `mode` (`form` with its typed `fields`, or `url`).
    pub question: Value,
    pub deadline_ms: u64,
}

impl QuestionOffer {
    /// The id to answer with [`Host::respond_question`].
    pub fn request_id(&self) -> &str {
        self.question["request_id"].as_str().unwrap_or_default()
    }
}

/// Something the user did to one of the plugin's contributions (the host's own type: a
/// new kind of action may come, so a `match` needs a `_` arm).
pub use trellis_core::ext::UiAction as Action;

/// A host function failed.
#[derive(Debug, Clone, PartialEq)]
pub struct HostError {
    pub code: i64,
    pub message: String,
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for HostError {}

/// A plugin: every method has a default; implement what you use.
pub trait Plugin {
    /// What the plugin contributes and which events it wants.
    fn registration(&mut self, init: &Init) -> Registration;
    /// Once the connection is set up.
    fn on_start(&mut self, _host: &mut Host) -> Result<(), String> {
        Ok(())
    }
    /// An event (`docs/events.md`): `event["type"]` says which.
    fn on_event(&mut self, _event: &Value, _host: &mut Host) -> Result<(), String> {
        Ok(())
    }
    /// Trellis has no more events for now: push what changed.
    fn on_idle(&mut self, _host: &mut Host) -> Result<(), String> {
        Ok(())
    }
    /// `true` claims the request (then answer it with `Host::respond_permission`).
    fn on_permission(&mut self, _offer: &Offer, _host: &mut Host) -> Result<bool, String> {
        Ok(false)
    }
    /// `true` claims the question (then answer it with `Host::respond_question`); needs
    /// `answer-questions`.
    fn on_question(&mut self, _offer: &QuestionOffer, _host: &mut Host) -> Result<bool, String> {
        Ok(false)
    }
    fn on_action(&mut self, _action: &Action, _host: &mut Host) -> Result<(), String> {
        Ok(())
    }
    /// A card in one of the plugin's designs.
    fn card(
        &mut self,
        _design: &str,
        _call: &Value,
        _facts: &Value,
        _width: u16,
        _host: &mut Host,
    ) -> Result<CardLines, String> {
        Ok(CardLines::default())
    }
    /// A per-call transform: the text to display, or `None` to leave it.
    fn transform(
        &mut self,
        _id: &str,
        _call: &Value,
        _text: &str,
        _host: &mut Host,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }
    /// The session is over.
    fn on_shutdown(&mut self) {}
}

/// The host's functions, answered by Trellis.
pub struct Host {
    input: Box<dyn BufRead>,
    output: Box<dyn Write>,
    next_id: u64,
    /// Messages that arrived while waiting for an answer: handled next.
    pending: VecDeque<Value>,
}

impl Host {
    fn new(input: Box<dyn BufRead>, output: Box<dyn Write>) -> Host {
        Host {
            input,
            output,
            next_id: 1,
            pending: VecDeque::new(),
        }
    }

    fn send(&mut self, mut msg: Value) -> std::io::Result<()> {
        msg["jsonrpc"] = json!("2.0");
        let mut line = serde_json::to_vec(&msg)?;
        line.push(b'\n');
        self.output.write_all(&line)?;
        self.output.flush()
    }

    fn read(&mut self) -> std::io::Result<Option<Value>> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.input.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            if !line.trim().is_empty() {
                return serde_json::from_str(&line)
                    .map(Some)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
    }

    /// Calls any host function by its protocol name.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, HostError> {
        let id = self.next_id;
        self.next_id += 1;
        let io = |e: std::io::Error| HostError {
            code: 0,
            message: e.to_string(),
        };
        self.send(json!({"id": id, "method": method, "params": params}))
            .map_err(io)?;
        loop {
            let Some(msg) = self.read().map_err(io)? else {
                return Err(HostError {
                    code: 0,
                    message: "Trellis closed the connection".into(),
                });
            };
            if msg.get("method").is_none() && msg.get("id") == Some(&json!(id)) {
                if let Some(e) = msg.get("error") {
                    return Err(HostError {
                        code: e["code"].as_i64().unwrap_or(0),
                        message: e["message"].as_str().unwrap_or_default().to_string(),
                    });
                }
                return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
            }
            self.pending.push_back(msg);
        }
    }

    fn unit(&mut self, method: &str, params: Value) -> Result<(), HostError> {
        self.call(method, params).map(|_| ())
    }

    pub fn session(&mut self) -> Result<Value, HostError> {
        self.call("host/session", json!({}))
    }
    pub fn calls(&mut self) -> Result<Vec<Value>, HostError> {
        let v = self.call("host/calls", json!({}))?;
        Ok(v.as_array().cloned().unwrap_or_default())
    }
    pub fn get_call(&mut self, call_id: &str) -> Result<Option<Value>, HostError> {
        let v = self.call("host/call", json!({"call_id": call_id}))?;
        Ok((!v.is_null()).then_some(v))
    }
    pub fn call_state(&mut self, call_id: &str) -> Result<Value, HostError> {
        self.call("host/call_state", json!({"call_id": call_id}))
    }
    pub fn put_call_state(
        &mut self,
        call_id: &str,
        value: Value,
        merge: bool,
    ) -> Result<(), HostError> {
        self.unit(
            "host/put_call_state",
            json!({"call_id": call_id, "value": value, "merge": merge}),
        )
    }
    pub fn resolve_path(&mut self, path: &str) -> Result<String, HostError> {
        let v = self.call("host/resolve_path", json!({"path": path}))?;
        Ok(v.as_str().unwrap_or(path).to_string())
    }
    pub fn options(&mut self) -> Result<Value, HostError> {
        self.call("host/options", json!({}))
    }
    pub fn report(&mut self, what: &str, message: &str) -> Result<(), HostError> {
        self.unit("host/report", json!({"what": what, "message": message}))
    }
    pub fn notify(&mut self, text: &str) -> Result<(), HostError> {
        self.unit("host/notify", json!({"text": text}))
    }
    pub fn open_inspector(&mut self, call_id: &str) -> Result<(), HostError> {
        self.unit("host/open_inspector", json!({"call_id": call_id}))
    }
    pub fn section_shown(&mut self, id: &str) -> Result<bool, HostError> {
        Ok(self.call("ui/section_shown", json!({"id": id}))?.as_bool() == Some(true))
    }
    pub fn set_section(&mut self, id: &str, body: &SectionBody) -> Result<(), HostError> {
        self.unit("ui/set_section", json!({"id": id, "body": body}))
    }
    pub fn patch_section(&mut self, id: &str, patch: &[SectionPatch]) -> Result<(), HostError> {
        self.unit("ui/patch_section", json!({"id": id, "patch": patch}))
    }
    pub fn set_status_item(
        &mut self,
        id: &str,
        line: Option<&StyledLine>,
    ) -> Result<(), HostError> {
        self.unit("ui/set_status_item", json!({"id": id, "line": line}))
    }
    pub fn set_settings(&mut self, rows: &[SettingsRow]) -> Result<(), HostError> {
        self.unit("ui/set_settings", json!({"rows": rows}))
    }
    pub fn set_transform(&mut self, id: &str, rewrites: &[Rewrite]) -> Result<(), HostError> {
        self.unit("ui/set_transform", json!({"id": id, "rewrites": rewrites}))
    }
    pub fn respond_permission(
        &mut self,
        request_id: &str,
        option_id: &str,
    ) -> Result<(), HostError> {
        self.unit(
            "permission/respond",
            json!({"request_id": request_id, "option_id": option_id}),
        )
    }
    /// Answers a claimed question: `action` is `accept` (with `content`, a form's values),
    /// `decline` or `cancel`.
    pub fn respond_question(
        &mut self,
        request_id: &str,
        action: &str,
        content: Option<serde_json::Map<String, Value>>,
    ) -> Result<(), HostError> {
        let mut p = json!({"request_id": request_id, "action": action});
        if let Some(c) = content {
            p["content"] = Value::Object(c);
        }
        self.unit("question/respond", p)
    }
    pub fn store_get(&mut self, key: &str) -> Result<Value, HostError> {
        self.call("store/get", json!({"key": key}))
    }
    pub fn store_put(&mut self, key: &str, value: Value) -> Result<(), HostError> {
        self.unit("store/put", json!({"key": key, "value": value}))
    }
    pub fn drive(&mut self, action: &DriveAction) -> Result<(), HostError> {
        self.unit(
            "session/drive",
            serde_json::to_value(action).unwrap_or_default(),
        )
    }
}

fn params<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| e.to_string())
}

/// Serves Trellis on stdin/stdout until it closes the connection.
pub fn run(plugin: impl Plugin) -> std::io::Result<()> {
    run_on(
        plugin,
        Box::new(std::io::BufReader::new(std::io::stdin())),
        Box::new(std::io::stdout()),
    )
}

/// [`run`] on any pair of streams (tests).
pub fn run_on(
    mut plugin: impl Plugin,
    input: Box<dyn BufRead>,
    output: Box<dyn Write>,
) -> std::io::Result<()> {
    let mut host = Host::new(input, output);
    loop {
        let msg = match host.pending.pop_front() {
            Some(m) => m,
            None => match host.read()? {
                Some(m) => m,
                None => break,
            },
        };
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        let id = msg.get("id").cloned();
        let p = msg.get("params").cloned().unwrap_or(Value::Null);
        let result: Result<Value, String> = match method.as_str() {
            "initialize" => {
                let versions: Vec<u32> = params(&p["versions"]).unwrap_or_default();
                if !versions.contains(&PROTOCOL_VERSION) {
                    Err("this plugin speaks trellis-plugin v1 only".into())
                } else {
                    params::<Init>(&p).map(|init| {
                        let reg = plugin.registration(&init);
                        json!({"version": PROTOCOL_VERSION, "registration": reg})
                    })
                }
            }
            "event" => plugin.on_event(&p, &mut host).map(|_| Value::Null),
            "idle" => plugin.on_idle(&mut host).map(|_| Value::Null),
            "action" => params::<Action>(&p)
                .and_then(|a| plugin.on_action(&a, &mut host))
                .map(|_| Value::Null),
            "permission/offer" => params::<Offer>(&p)
                .and_then(|o| plugin.on_permission(&o, &mut host))
                .map(|claim| json!({"claim": claim})),
            "question/offer" => params::<QuestionOffer>(&p)
                .and_then(|o| plugin.on_question(&o, &mut host))
                .map(|claim| json!({"claim": claim})),
            "render/card" => plugin
                .card(
                    p["design"].as_str().unwrap_or_default(),
                    &p["call"],
                    &p["facts"],
                    p["width"].as_u64().unwrap_or(80).min(u64::from(u16::MAX)) as u16,
                    &mut host,
                )
                .and_then(|c| serde_json::to_value(c).map_err(|e| e.to_string())),
            "render/transform" => plugin
                .transform(
                    p["id"].as_str().unwrap_or_default(),
                    &p["call"],
                    p["text"].as_str().unwrap_or_default(),
                    &mut host,
                )
                .map(|t| json!({"text": t})),
            "sync" => Ok(json!({})),
            "shutdown" => {
                plugin.on_shutdown();
                break;
            }
            other => Err(format!("unknown method {other}")),
        };
        // After `initialize` is answered: the plugin's own start.
        let started = method == "initialize" && result.is_ok();
        if let Some(id) = id {
            match result {
                Ok(r) => host.send(json!({"id": id, "result": r}))?,
                Err(e) => {
                    eprintln!("{method}: {e}");
                    host.send(json!({"id": id, "error": {"code": -32000, "message": e}}))?
                }
            }
        } else if let Err(e) = result {
            eprintln!("{method}: {e}");
        }
        if started && let Err(e) = plugin.on_start(&mut host) {
            eprintln!("start: {e}");
        }
    }
    Ok(())
}
