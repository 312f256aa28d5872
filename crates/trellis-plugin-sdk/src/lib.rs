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

use serde::Serialize;
pub use serde_json::{Value, json};
pub use trellis_plugin_protocol::wire::{self, CallFacts, method};
use trellis_plugin_protocol::wire::{
    CallId, CardRequest, IdParam, Incoming, InitializeResult, KeyParam, OfferResult, PatchSection,
    PathParam, PutCallState, ReportParams, RespondParams, SetSection, SetSettings, SetStatusItem,
    SetTransform, StorePut, TextParam, TransformRequest, TransformResult,
};
pub use trellis_plugin_protocol::{
    CardLines, CommandDecl, DesignDecl, DriveAction, KeyDecl, PermissionOption, Registration,
    Rewrite, SectionBody, SectionDecl, SectionPatch, SectionRow, SettingsRow, StatusDecl,
    StyledLine, StyledSpan, Tone, ToolMatch, TransformDecl,
};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Error code of a host function that needs a capability the user did not grant.
pub const NOT_GRANTED: i64 = wire::code::NOT_GRANTED;

/// What Trellis says when it starts the plugin: `name` (it namespaces the plugin's store
/// and call state), the capabilities `granted`, `[extensions.NAME.options]` as `options`,
/// and how often the process was `restarts`ed after a crash in this session.
pub type Init = wire::InitializeParams;

/// A permission request offered to the plugin (`call` as in events, `facts` what Trellis
/// derived from it).
pub type Offer = wire::PermissionOffer;

/// A question of the agent's (`elicitation/create`) offered to the plugin; answer it by
/// [`QuestionOffer::request_id`].
pub type QuestionOffer = wire::QuestionOffer;

/// Something the user did to one of the plugin's contributions (the host's own type: a
/// new kind of action may come, so a `match` needs a `_` arm).
pub use trellis_plugin_protocol::UiAction as Action;

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
        _facts: &CallFacts,
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
    pending: VecDeque<Incoming>,
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

    fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.output.write_all(line)?;
        self.output.flush()
    }

    /// The next message from Trellis (`None` when it closed the connection).
    fn read(&mut self) -> std::io::Result<Option<Incoming>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            if self.input.read_until(b'\n', &mut line)? == 0 {
                return Ok(None);
            }
            if !line.trim_ascii().is_empty() {
                return wire::parse_line(&line)
                    .map(Some)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
    }

    /// Calls any host function by its protocol name ([`method`]).
    pub fn call(&mut self, method: &str, params: impl Serialize) -> Result<Value, HostError> {
        let id = self.next_id;
        self.next_id += 1;
        let io = |e: std::io::Error| HostError {
            code: 0,
            message: e.to_string(),
        };
        self.send(&wire::request(id, method, &params)).map_err(io)?;
        loop {
            match self.read().map_err(io)? {
                None => {
                    return Err(HostError {
                        code: 0,
                        message: "Trellis closed the connection".into(),
                    });
                }
                Some(Incoming::Response { id: got, result }) if got == id => {
                    return result.map_err(|e| HostError {
                        code: e.code,
                        message: e.message,
                    });
                }
                // A stale answer is dropped; a call from Trellis is handled after this one.
                Some(Incoming::Response { .. }) => {}
                Some(call) => self.pending.push_back(call),
            }
        }
    }

    fn unit(&mut self, method: &str, params: impl Serialize) -> Result<(), HostError> {
        self.call(method, params).map(|_| ())
    }

    pub fn session(&mut self) -> Result<Value, HostError> {
        self.call(method::HOST_SESSION, json!({}))
    }
    pub fn calls(&mut self) -> Result<Vec<Value>, HostError> {
        let v = self.call(method::HOST_CALLS, json!({}))?;
        Ok(v.as_array().cloned().unwrap_or_default())
    }
    pub fn get_call(&mut self, call_id: &str) -> Result<Option<Value>, HostError> {
        let v = self.call(method::HOST_CALL, call_id_param(call_id))?;
        Ok((!v.is_null()).then_some(v))
    }
    pub fn call_state(&mut self, call_id: &str) -> Result<Value, HostError> {
        self.call(method::HOST_CALL_STATE, call_id_param(call_id))
    }
    pub fn put_call_state(
        &mut self,
        call_id: &str,
        value: Value,
        merge: bool,
    ) -> Result<(), HostError> {
        let p = PutCallState {
            call_id: call_id.into(),
            value,
            merge,
        };
        self.unit(method::HOST_PUT_CALL_STATE, p)
    }
    pub fn resolve_path(&mut self, path: &str) -> Result<String, HostError> {
        let p = PathParam { path: path.into() };
        let v = self.call(method::HOST_RESOLVE_PATH, p)?;
        Ok(v.as_str().unwrap_or(path).to_string())
    }
    pub fn options(&mut self) -> Result<Value, HostError> {
        self.call(method::HOST_OPTIONS, json!({}))
    }
    pub fn report(&mut self, what: &str, message: &str) -> Result<(), HostError> {
        let p = ReportParams {
            what: what.into(),
            message: message.into(),
        };
        self.unit(method::HOST_REPORT, p)
    }
    pub fn notify(&mut self, text: &str) -> Result<(), HostError> {
        self.unit(method::HOST_NOTIFY, TextParam { text: text.into() })
    }
    pub fn open_inspector(&mut self, call_id: &str) -> Result<(), HostError> {
        self.unit(method::HOST_OPEN_INSPECTOR, call_id_param(call_id))
    }
    pub fn section_shown(&mut self, id: &str) -> Result<bool, HostError> {
        let v = self.call(method::UI_SECTION_SHOWN, IdParam { id: id.into() })?;
        Ok(v.as_bool() == Some(true))
    }
    pub fn set_section(&mut self, id: &str, body: &SectionBody) -> Result<(), HostError> {
        let p = SetSection {
            id: id.into(),
            body: body.clone(),
        };
        self.unit(method::UI_SET_SECTION, p)
    }
    pub fn patch_section(&mut self, id: &str, patch: &[SectionPatch]) -> Result<(), HostError> {
        let p = PatchSection {
            id: id.into(),
            patch: patch.to_vec(),
        };
        self.unit(method::UI_PATCH_SECTION, p)
    }
    pub fn set_status_item(
        &mut self,
        id: &str,
        line: Option<&StyledLine>,
    ) -> Result<(), HostError> {
        let p = SetStatusItem {
            id: id.into(),
            line: line.cloned(),
        };
        self.unit(method::UI_SET_STATUS_ITEM, p)
    }
    pub fn set_settings(&mut self, rows: &[SettingsRow]) -> Result<(), HostError> {
        let p = SetSettings {
            rows: rows.to_vec(),
        };
        self.unit(method::UI_SET_SETTINGS, p)
    }
    pub fn set_transform(&mut self, id: &str, rewrites: &[Rewrite]) -> Result<(), HostError> {
        let p = SetTransform {
            id: id.into(),
            rewrites: rewrites.to_vec(),
        };
        self.unit(method::UI_SET_TRANSFORM, p)
    }
    pub fn respond_permission(
        &mut self,
        request_id: &str,
        option_id: &str,
    ) -> Result<(), HostError> {
        self.respond_permission_because(request_id, option_id, "")
    }
    /// [`Self::respond_permission`], saying why: kept on the record, shown on the call's
    /// card and in the inspector.
    pub fn respond_permission_because(
        &mut self,
        request_id: &str,
        option_id: &str,
        reason: &str,
    ) -> Result<(), HostError> {
        let p = RespondParams {
            request_id: request_id.into(),
            option_id: option_id.into(),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
        };
        self.unit(method::PERMISSION_RESPOND, p)
    }
    /// Answers a claimed question: `action` is `accept` (with `content`, a form's values),
    /// `decline` or `cancel`.
    pub fn respond_question(
        &mut self,
        request_id: &str,
        action: &str,
        content: Option<serde_json::Map<String, Value>>,
    ) -> Result<(), HostError> {
        let p = wire::QuestionRespondParams {
            request_id: request_id.into(),
            action: action.into(),
            content,
        };
        self.unit(method::QUESTION_RESPOND, p)
    }
    pub fn store_get(&mut self, key: &str) -> Result<Value, HostError> {
        self.call(method::STORE_GET, KeyParam { key: key.into() })
    }
    pub fn store_put(&mut self, key: &str, value: Value) -> Result<(), HostError> {
        let p = StorePut {
            key: key.into(),
            value: Some(value),
        };
        self.unit(method::STORE_PUT, p)
    }
    pub fn drive(&mut self, action: &DriveAction) -> Result<(), HostError> {
        self.unit(method::SESSION_DRIVE, action)
    }
}

fn call_id_param(call_id: &str) -> CallId {
    CallId {
        call_id: call_id.into(),
    }
}

fn params<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
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
        // An answer nobody waits for any more (its call failed on our side): dropped.
        let Incoming::Call {
            id,
            method,
            params: p,
        } = msg
        else {
            continue;
        };
        if method == method::SHUTDOWN {
            plugin.on_shutdown();
            break;
        }
        let result = serve(&mut plugin, &method, p, &mut host);
        // After `initialize` is answered: the plugin's own start.
        let started = method == method::INITIALIZE && result.is_ok();
        match (id, result) {
            (Some(id), Ok(r)) => host.send(&wire::response(&id, Ok(r)))?,
            (Some(id), Err(e)) => {
                eprintln!("{method}: {e}");
                let e = wire::RpcError::new(-32000, e);
                host.send(&wire::response(&id, Err(e)))?
            }
            (None, Ok(_)) => {}
            (None, Err(e)) => eprintln!("{method}: {e}"),
        }
        if started && let Err(e) = plugin.on_start(&mut host) {
            eprintln!("start: {e}");
        }
    }
    Ok(())
}

/// One call from Trellis, answered by the plugin.
fn serve(plugin: &mut impl Plugin, name: &str, p: Value, host: &mut Host) -> Result<Value, String> {
    match name {
        method::INITIALIZE => {
            let init: Init = params(p)?;
            if !init.versions.contains(&PROTOCOL_VERSION) {
                return Err("this plugin speaks trellis-plugin v1 only".into());
            }
            let registration = plugin.registration(&init);
            json(&InitializeResult {
                version: PROTOCOL_VERSION,
                registration,
            })
        }
        method::EVENT => plugin.on_event(&p, host).map(|_| Value::Null),
        method::IDLE => plugin.on_idle(host).map(|_| Value::Null),
        method::ACTION => plugin
            .on_action(&params::<Action>(p)?, host)
            .map(|_| Value::Null),
        method::PERMISSION_OFFER => {
            let claim = plugin.on_permission(&params::<Offer>(p)?, host)?;
            json(&OfferResult { claim })
        }
        method::QUESTION_OFFER => {
            let claim = plugin.on_question(&params::<QuestionOffer>(p)?, host)?;
            json(&OfferResult { claim })
        }
        method::RENDER_CARD => {
            let r: CardRequest = params(p)?;
            let lines = plugin.card(&r.design, &r.call, &r.facts, r.width, host)?;
            json(&lines)
        }
        method::RENDER_TRANSFORM => {
            let r: TransformRequest = params(p)?;
            let text = plugin.transform(&r.id, &r.call, &r.text, host)?;
            json(&TransformResult { text })
        }
        method::SYNC => Ok(json!({})),
        other => Err(format!("unknown method {other}")),
    }
}

fn json(v: &impl Serialize) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| e.to_string())
}
