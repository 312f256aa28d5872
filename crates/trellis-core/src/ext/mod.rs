//! The extension API: one trait for every extension, built-in or (later) an external
//! plugin process behind an adapter. Documented in `docs/extensions.md`.
//!
//! Shape: an extension declares a [`Manifest`]; the host grants it some of the requested
//! [`Capability`]s (the user's config decides) and then calls it with one value per
//! occasion — an [`Event`], a [`PermissionAsk`], a [`UiAction`], or a request to render a
//! contribution. Everything it may do to the session goes through the [`Host`] it is
//! handed; nothing it returns is trusted: labels are checked, lines are measured and
//! clipped, options are validated, panics are caught (see the host crate).
//!
//! This module is pure: types and rules only. The runtime (threads, queues, timing, the
//! store on disk) lives in `trellis-ext-host`.

pub mod arbiter;
pub mod labels;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::event::Event;
use crate::permission::PermissionOption;
use crate::tool_call::ToolCall;
/// The contribution types and actions are the plugin contract's
/// (`trellis-plugin-protocol`): one definition for built-in extensions, plugins and the SDK.
pub use trellis_plugin_protocol::contrib;
pub use trellis_plugin_protocol::{
    CardLines, CommandDecl, DesignDecl, DriveAction, KeyDecl, Registration, Rewrite, SectionBody,
    SectionDecl, SectionPatch, SectionRow, SettingsRow, StatusDecl, StyledLine, StyledSpan, Tone,
    ToolMatch, TransformDecl, UiAction,
};

/// The agent's own name for the tool of a call, when it gives one.
pub fn tool_name(call: &ToolCall) -> Option<&str> {
    call.name.as_deref()
}

/// Whether a design or rule for `m` applies to `call`.
pub fn applies(m: &ToolMatch, call: &ToolCall) -> bool {
    m.matches(call.kind, tool_name(call))
}

/// Version of this API. Bumped only for incompatible changes; fields are only ever added.
pub const API_VERSION: u32 = 1;

/// What an extension may do. Requested in the manifest, granted by the user's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// Receive session events and read state snapshots.
    Observe,
    /// Claim permission requests and answer them.
    InterceptPermissions,
    /// Contribute settings rows, sidebar sections, card designs, transforms, status
    /// items, commands and keys; notify; open the inspector.
    Ui,
    /// A persistent key-value store of its own.
    Store,
    /// Per-call state saved with the session.
    CallState,
    /// Act on the session: send (or queue) a prompt, cancel the turn, set a mode. Every
    /// such action is recorded with the extension as its origin and shown on the
    /// transcript.
    Drive,
    /// Claim the agent's questions (`elicitation/create`) and answer them.
    AnswerQuestions,
}

impl Capability {
    pub const ALL: [Capability; 7] = [
        Capability::Observe,
        Capability::InterceptPermissions,
        Capability::Ui,
        Capability::Store,
        Capability::CallState,
        Capability::Drive,
        Capability::AnswerQuestions,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Observe => "observe",
            Capability::InterceptPermissions => "intercept-permissions",
            Capability::Ui => "ui",
            Capability::Store => "store",
            Capability::CallState => "call-state",
            Capability::Drive => "drive",
            Capability::AnswerQuestions => "answer-questions",
        }
    }

    pub fn parse(s: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Who an extension is and what it asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Unique name: lowercase letters, digits and `-` (it namespaces state and store).
    pub name: String,
    pub version: String,
    pub description: String,
    pub capabilities: Vec<Capability>,
    /// Everything the extension does is UI (sections, designs, transforms…): headless
    /// runs do not start it.
    #[serde(default)]
    pub ui_only: bool,
}

impl Manifest {
    /// Checks the name rule (the Agent Plugins rule for plugin names): 1-64 lowercase
    /// letters, digits, `-` and `.`, starting and ending with a letter or digit, without
    /// `--` or `..`.
    pub fn check(&self) -> Result<(), String> {
        if name_ok(&self.name) {
            Ok(())
        } else {
            Err(format!(
                "extension name {:?} must be 1-64 lowercase letters, digits, '-' or '.', \
                 start and end with a letter or digit, without '--' or '..'",
                self.name
            ))
        }
    }
}

/// Whether `name` follows the naming rule of [`Manifest::check`].
pub fn name_ok(name: &str) -> bool {
    let b = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 64
        && b.iter().all(|c| alnum(c) || *c == b'-' || *c == b'.')
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && !name.contains("--")
        && !name.contains("..")
}

/// An extension's failure, as it reports it (panics are caught and reported alike).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtError {
    #[error("{0}")]
    Failed(String),
    #[error("capability {} was not granted", .0.as_str())]
    NotGranted(Capability),
    /// The extension cannot go on (a plugin process that crashed too often, broke the
    /// protocol or speaks no common version): the host disables it at once, saying why.
    #[error("{0}")]
    Fatal(String),
}

impl ExtError {
    pub fn msg(m: impl Into<String>) -> ExtError {
        ExtError::Failed(m.into())
    }
}

/// Errors of host functions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    #[error("capability {} was not granted", .0.as_str())]
    NotGranted(Capability),
    #[error("{0}")]
    Invalid(String),
    #[error("store: {0}")]
    Store(String),
}

impl From<HostError> for ExtError {
    fn from(e: HostError) -> ExtError {
        match e {
            HostError::NotGranted(c) => ExtError::NotGranted(c),
            other => ExtError::Failed(other.to_string()),
        }
    }
}

/// A permission request offered to an extension holding `intercept-permissions`.
#[derive(Debug, Clone)]
pub struct PermissionAsk {
    pub session: Option<Arc<str>>,
    /// Id to answer with [`Host::respond_permission`].
    pub request_id: String,
    /// The call as it stood when the request arrived.
    pub call: Arc<ToolCall>,
    /// The options the agent offered (only these are valid answers).
    pub options: Vec<PermissionOption>,
    /// The verbatim `session/request_permission` message.
    pub acp: Option<Arc<str>>,
    /// Seconds a claimant has to answer before the request is handed on.
    pub deadline: f64,
}

/// A question of the agent's (`elicitation/create`, a form or a link) offered to an
/// extension holding `answer-questions`, once nobody else answered it.
#[derive(Debug, Clone)]
pub struct QuestionAsk {
    pub session: Option<Arc<str>>,
    /// The question (its `request_id` is what [`Host::respond_question`] answers).
    pub question: Arc<crate::elicitation::Elicitation>,
    /// The verbatim `elicitation/create` message.
    pub acp: Option<Arc<str>>,
    /// Seconds a claimant has to answer before the question is handed on.
    pub deadline: f64,
}

/// Whether an extension takes a permission request (or a question).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// "Mine": the extension will answer with `respond_permission` (before the timeout).
    Claim,
    /// Not mine: the next step of the chain gets it.
    Pass,
}

/// Session facts for [`Host::session`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInfo {
    pub id: Option<Arc<str>>,
    /// The session's name in the hub that holds it (`HUB:KEY`), when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub_session: Option<Arc<str>>,
    pub cwd: Option<String>,
    pub agent: String,
    pub title: Option<String>,
    pub mode: Option<String>,
    pub turn: u32,
    pub turn_open: bool,
    pub usage: Option<crate::wire::Usage>,
    /// Number of tool calls in the ledger.
    pub calls: usize,
}

/// What the host offers an extension. Every function checks the extension's grants;
/// those that change things are applied by the host in order, after the callback returns.
pub trait Host {
    /// The calling extension's name.
    fn me(&self) -> &str;
    /// The capabilities the user granted it.
    fn granted(&self) -> Vec<Capability> {
        Vec::new()
    }
    /// The extension's options from the user's config (`[extensions.NAME.options]`), as
    /// JSON; `Null` when there are none.
    fn options(&self) -> serde_json::Value;
    /// Reports a problem with the extension's own settings or input (e.g. an option that
    /// cannot be used): the first of each `what` is said where the user looks (stderr of a
    /// run, the UI's screen), all are counted in `/status`; the extension goes on.
    fn report(&mut self, what: &str, message: &str);
    /// Records a failure of the extension's own (a plugin's handler that raised): counted
    /// like a failed call, shown in `/status`; enough of them disable the extension.
    fn failed(&mut self, _what: &str, _message: &str) {}
    /// Read-only facts about the session.
    fn session(&self) -> SessionInfo;
    /// Every call so far, in ledger order (shared snapshots; cheap).
    fn calls(&self) -> Vec<Arc<ToolCall>>;
    /// One call by id.
    fn call(&self, call_id: &str) -> Option<Arc<ToolCall>>;
    /// This extension's state for a call.
    fn call_state(&self, call_id: &str) -> Option<serde_json::Value>;
    /// Sets this extension's state for a call; with `merge`, an object value is merged
    /// key by key into the existing one (RFC 7386: `null` deletes a key). Saved in the
    /// session log; restored when the session is replayed.
    fn put_call_state(
        &mut self,
        call_id: &str,
        value: serde_json::Value,
        merge: bool,
    ) -> Result<(), HostError>;
    /// A path as the agent names it, mapped through the configured path mappings.
    fn resolve_path(&self, path: &str) -> String;
    /// A short message on the status line.
    fn notify(&mut self, text: &str) -> Result<(), HostError>;
    /// Opens the inspector on a call.
    fn open_inspector(&mut self, call_id: &str) -> Result<(), HostError>;
    /// Answers a permission request this extension claimed.
    fn respond_permission(&mut self, request_id: &str, option_id: &str) -> Result<(), HostError>;

    /// [`Host::respond_permission`], saying why in the extension's words: the reason is
    /// kept on the record, shown on the call's card and in the inspector, and carried by
    /// the `permission_resolved` event. (An addition to the v1 API: a host that has no
    /// place for it answers without it.)
    fn respond_permission_because(
        &mut self,
        request_id: &str,
        option_id: &str,
        reason: &str,
    ) -> Result<(), HostError> {
        let _ = reason;
        self.respond_permission(request_id, option_id)
    }

    /// Answers a question the extension claimed (needs `answer-questions`): accept with
    /// a form's values (checked against the form: an answer that does not fit is
    /// declined, saying why), decline, or cancel.
    fn respond_question(
        &mut self,
        _request_id: &str,
        _answer: crate::elicitation::ElicitAnswer,
    ) -> Result<(), HostError> {
        Err(HostError::NotGranted(Capability::AnswerQuestions))
    }
    /// Reads a key of this extension's persistent store.
    fn store_get(&self, key: &str) -> Result<Option<serde_json::Value>, HostError>;
    /// Writes a key (`None` deletes it); the store file is replaced atomically.
    fn store_put(&mut self, key: &str, value: Option<serde_json::Value>) -> Result<(), HostError>;
    /// Asks for the extension's UI contributions to be repainted.
    fn repaint(&mut self);

    // ---- UI contributions: data the host keeps and draws from (needs `ui`) ----

    /// Whether section `id` is shown and expanded now. A section that is not need not be
    /// built: the host sends [`UiAction::Visibility`] when it becomes shown.
    fn section_shown(&self, _id: &str) -> bool {
        false
    }
    /// Replaces the body of section `id`.
    fn set_section(&mut self, _id: &str, _body: SectionBody) -> Result<(), HostError> {
        Err(HostError::Invalid("this host keeps no sections".into()))
    }
    /// Changes part of the body of section `id`.
    fn patch_section(&mut self, _id: &str, _patch: Vec<SectionPatch>) -> Result<(), HostError> {
        Err(HostError::Invalid("this host keeps no sections".into()))
    }
    /// Sets status-bar item `id` (`None` hides it).
    fn set_status_item(&mut self, _id: &str, _line: Option<StyledLine>) -> Result<(), HostError> {
        Err(HostError::Invalid("this host keeps no status items".into()))
    }
    /// Replaces every settings row of the extension.
    fn set_settings(&mut self, _rows: Vec<SettingsRow>) -> Result<(), HostError> {
        Err(HostError::Invalid("this host keeps no settings".into()))
    }
    /// Replaces the rewrites of declarative transform `id` (an empty list: it changes
    /// nothing until set again).
    fn set_transform(&mut self, _id: &str, _rewrites: Vec<Rewrite>) -> Result<(), HostError> {
        Err(HostError::Invalid("this host keeps no transforms".into()))
    }

    /// Acts on the session (needs `drive`).
    fn drive(&mut self, _action: DriveAction) -> Result<(), HostError> {
        Err(HostError::Invalid("this host cannot be driven".into()))
    }

    /// Lines about the extension itself for `/status` (a plugin adapter: its process,
    /// restarts, the tail of its stderr), replacing the previous ones.
    fn set_diagnostics(&mut self, _lines: Vec<String>) {}

    /// A handle that wakes the extension from another thread: the host then calls
    /// [`Extension::on_wake`] on its worker (plugin processes use this to serve what the
    /// process sends on its own).
    fn waker(&self) -> Option<Waker> {
        None
    }
}

/// Wakes an extension from any thread (see [`Host::waker`]).
#[derive(Clone)]
pub struct Waker(Arc<dyn Fn() + Send + Sync>);

impl Waker {
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Waker {
        Waker(Arc::new(f))
    }

    pub fn wake(&self) {
        (self.0)()
    }
}

impl std::fmt::Debug for Waker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waker")
    }
}

/// One extension. Every method has a default, so an extension implements only what it
/// uses. Methods are called one at a time (never concurrently) on the extension's own
/// worker thread — never on the UI thread: what it shows it pushes as data (see
/// [`Extension::on_idle`]). A method that panics or fails loses only its own result.
pub trait Extension: Send {
    fn manifest(&self) -> Manifest;

    /// Called once, after grants are known: what the extension contributes and which
    /// event types it wants (`None`: all of them).
    fn register(&mut self, _host: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration::default())
    }

    /// A session event (needs `observe`), in the order events happened.
    fn on_event(&mut self, _event: &Event, _host: &mut dyn Host) -> Result<(), ExtError> {
        Ok(())
    }

    /// [`Extension::on_event`] with the host's shared copy of the event, for an
    /// extension that keeps events after returning (the plugin adapter queues them for
    /// its process): keeping the `Arc` costs nothing, a clone of the event would. The
    /// default calls `on_event`.
    #[doc(hidden)]
    fn on_shared_event(
        &mut self,
        event: &std::sync::Arc<Event>,
        host: &mut dyn Host,
    ) -> Result<(), ExtError> {
        self.on_event(event, host)
    }

    /// Whether the host may hold this extension's events during a storm (thousands of
    /// events a second) and hand them over when it pauses, at least every 400 ms. For an
    /// extension that shows nothing live and whose work happens elsewhere (the plugin
    /// adapter: its process reads them after the storm anyway), this saves a wake-up of
    /// its worker per batch of agent input. Permission offers, actions and the end of a
    /// run still bring every event before them at once.
    #[doc(hidden)]
    fn events_may_wait(&self) -> bool {
        false
    }

    /// A permission request nobody's rules decided (needs `intercept-permissions`).
    fn on_permission(
        &mut self,
        _ask: &PermissionAsk,
        _host: &mut dyn Host,
    ) -> Result<Claim, ExtError> {
        Ok(Claim::Pass)
    }

    /// A question of the agent's nobody else answered (needs `answer-questions`): claim
    /// it and answer with [`Host::respond_question`] before its deadline, or pass.
    fn on_question(&mut self, _ask: &QuestionAsk, _host: &mut dyn Host) -> Result<Claim, ExtError> {
        Ok(Claim::Pass)
    }

    /// The user acted on a contribution.
    fn on_action(&mut self, _action: &UiAction, _host: &mut dyn Host) -> Result<(), ExtError> {
        Ok(())
    }

    /// Called on the worker after a batch of events once the extension has caught up
    /// with the session, after registration, and when a hidden section becomes shown:
    /// the moment to push what changed (sections, status items, settings rows) with the
    /// `set_*` host functions. Frames draw from the host's copy and never wait for this.
    fn on_idle(&mut self, _host: &mut dyn Host) -> Result<(), ExtError> {
        Ok(())
    }

    /// Called on the worker after [`Waker::wake`].
    fn on_wake(&mut self, _host: &mut dyn Host) -> Result<(), ExtError> {
        Ok(())
    }

    /// The host wants the extension to have finished everything it was sent (tests,
    /// replays, the end of a headless run). An extension whose work happens elsewhere —
    /// a plugin process — returns once that work is done and its results are in.
    fn on_sync(&mut self, _host: &mut dyn Host) -> Result<(), ExtError> {
        Ok(())
    }

    /// The session is over (or the host is going away): release what is held. Plugin
    /// adapters stop their process here. Called once, last.
    fn on_shutdown(&mut self) {}

    /// The host disabled the extension (it failed too often, or fatally): stop what runs
    /// for it (a plugin adapter stops its process). It gets no events while disabled; it
    /// may still wake the host ([`Waker::wake`]) to be asked to [`Extension::revive`].
    fn on_disabled(&mut self, _host: &mut dyn Host) {}

    /// Asked when a disabled extension wakes the host: `None` when nothing changed;
    /// `Some(Ok(()))` when it is ready again, under its first registration (a plugin being
    /// tried whose files changed, restarted with its new code); `Some(Err(why))` when it
    /// changed but cannot run again in this session.
    fn revive(&mut self, _host: &mut dyn Host) -> Option<Result<(), String>> {
        None
    }

    /// A card drawn with design `design` for `call` (one revision) at `width` columns.
    /// Called on the extension's worker when the host needs the card; the host caches
    /// the answer by call, revision and width and draws the native card until then.
    fn card(
        &mut self,
        _design: &str,
        _call: &ToolCall,
        _width: u16,
        _host: &mut dyn Host,
    ) -> Result<CardLines, ExtError> {
        Ok(CardLines::default())
    }

    /// Per-call display transform `id` over a call's output text; `None` leaves it
    /// unchanged. Called on the worker; cached by call revision and text.
    fn transform(
        &mut self,
        _id: &str,
        _call: &ToolCall,
        _text: &str,
        _host: &mut dyn Host,
    ) -> Result<Option<String>, ExtError> {
        Ok(None)
    }
}
