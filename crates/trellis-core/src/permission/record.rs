//! What a permission request offers and how it ended: options, outcomes, who decided,
//! the record kept on the call.

use serde::{Deserialize, Serialize};

pub use trellis_plugin_protocol::{OptionKind, PermissionOption};

/// Who answered a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "by", content = "name", rename_all = "snake_case")]
pub enum Decider {
    /// The person at the keyboard, in the session's own dialog (or its card).
    User,
    /// The person at the keyboard, in the inbox of a UI with several sessions.
    Inbox,
    /// A headless policy (`reject`, `allow-once`, `allow-reads`, `rules`).
    Policy(String),
    /// A user rule, named by its description.
    Rule(String),
    /// An extension, by its name.
    Extension(String),
    /// The turn was cancelled (or the client shut down) while the request was open.
    Cancel,
    /// The recording does not say (e.g. a session recorded by another client).
    Unrecorded,
    /// Trellis closed the request itself, for the reason given (`agent exited`, `no
    /// usable options`): nobody could answer it.
    Client(String),
    /// Someone through the hub's socket (`trellis approve` in another pane, a script), by
    /// the name the client gave and its process.
    Attached(String),
}

impl std::fmt::Display for Decider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decider::User => f.write_str("user"),
            Decider::Inbox => f.write_str("user in the inbox"),
            Decider::Policy(p) => write!(f, "policy {p}"),
            Decider::Rule(r) => write!(f, "rule {r}"),
            Decider::Extension(e) => write!(f, "extension {e}"),
            Decider::Cancel => f.write_str("cancel"),
            Decider::Unrecorded => f.write_str("unrecorded"),
            Decider::Client(why) => f.write_str(why),
            Decider::Attached(who) => write!(f, "{who} (attached)"),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Selected {
        option_id: String,
        /// Kind of the chosen option, if it was one of those offered.
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<OptionKind>,
    },
    Cancelled,
    /// The client answered with a JSON-RPC error (e.g. shutdown) — recorded, never allowed.
    Error {
        message: String,
    },
}

impl Outcome {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Outcome::Selected { kind: Some(k), .. } if k.is_allow())
    }

    pub fn label(&self) -> String {
        match self {
            Outcome::Selected { kind: Some(k), .. } => match k {
                OptionKind::AllowOnce => "allowed once".into(),
                OptionKind::AllowAlways => "allowed always".into(),
                OptionKind::RejectOnce => "rejected once".into(),
                OptionKind::RejectAlways => "rejected always".into(),
                OptionKind::Unknown => "answered".into(),
            },
            Outcome::Selected {
                option_id,
                kind: None,
            } => format!("chose {option_id}"),
            Outcome::Cancelled => "cancelled".into(),
            Outcome::Error { .. } => "errored".into(),
        }
    }
}

/// One permission request about a call, as kept in the call's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PermissionRecord {
    /// JSON-RPC id of the agent's request (canonical JSON text).
    pub request_id: String,
    pub options: Vec<PermissionOption>,
    /// Session time the request arrived.
    pub asked_at: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decider: Option<Decider>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<f64>,
    /// Why, in the decider's words (a hook's stderr, a plugin's reason), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The longest reason passed on to an agent, in characters; a longer one is cut, and
/// says so.
pub const REASON_LIMIT: usize = 2000;

/// What the agent is told when `decider` answered the call titled `title` with `outcome`
/// and said why: the session's next message. Only a reject carries its reason on, and
/// only a person's or an extension's (a policy's or a rule's words are Trellis's own,
/// and a cancel is nobody's no).
pub fn reason_for_agent(
    outcome: &Outcome,
    decider: &Decider,
    title: &str,
    reason: Option<&str>,
) -> Option<String> {
    let rejected = matches!(
        outcome,
        Outcome::Selected {
            kind: Some(OptionKind::RejectOnce | OptionKind::RejectAlways),
            ..
        }
    );
    let reason = reason.map(str::trim).filter(|r| !r.is_empty())?;
    if !rejected {
        return None;
    }
    let who = match decider {
        Decider::User | Decider::Inbox | Decider::Attached(_) => "I".to_string(),
        Decider::Extension(name) => format!("The client's check `{name}`"),
        _ => return None,
    };
    let mut said: String = reason.chars().take(REASON_LIMIT).collect();
    if said.len() < reason.len() {
        said.push_str(" […cut]");
    }
    Some(format!(
        "{who} rejected the tool call \"{title}\". Reason: {said}"
    ))
}

/// What a policy or rule wants done with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    Reject,
    Ask,
}

/// Picks the option that carries out `verdict`, preferring the narrowest ("once") kind.
/// Returns `None` when the agent offered no such option.
pub fn choose_option(options: &[PermissionOption], verdict: Verdict) -> Option<&PermissionOption> {
    let order: &[OptionKind] = match verdict {
        Verdict::Allow => &[OptionKind::AllowOnce, OptionKind::AllowAlways],
        Verdict::Reject => &[OptionKind::RejectOnce, OptionKind::RejectAlways],
        Verdict::Ask => &[],
    };
    order
        .iter()
        .find_map(|k| options.iter().find(|o| o.kind == *k))
}
