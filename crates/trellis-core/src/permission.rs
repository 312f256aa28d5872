//! Permission requests, their outcomes and who decided them, plus headless policies.
//!
//! Invariant: every request is answered exactly once. The reducer tracks open requests;
//! an answer for a request that is not open is refused (see `update`).

use serde::{Deserialize, Serialize};

use crate::glob::{glob_match, glob_match_text};
use crate::tool_call::{ToolCall, ToolKind};

/// The hint an agent attaches to an option; choose by kind, never by position or name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    #[serde(other)]
    Unknown,
}

impl OptionKind {
    pub fn is_allow(self) -> bool {
        matches!(self, OptionKind::AllowOnce | OptionKind::AllowAlways)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    #[serde(default)]
    pub name: String,
    pub kind: OptionKind,
}

/// Who answered a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", content = "name", rename_all = "snake_case")]
pub enum Decider {
    /// The person at the keyboard.
    User,
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
}

impl std::fmt::Display for Decider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decider::User => f.write_str("user"),
            Decider::Policy(p) => write!(f, "policy {p}"),
            Decider::Rule(r) => write!(f, "rule {r}"),
            Decider::Extension(e) => write!(f, "extension {e}"),
            Decider::Cancel => f.write_str("cancel"),
            Decider::Unrecorded => f.write_str("unrecorded"),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// A user rule: the first rule whose every given matcher matches decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub action: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Glob over the call title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Glob over the command of an execute call (`rawInput.command` joined with its args).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Glob over any path the call touches (locations, diff paths, `rawInput` paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Rule {
    pub fn matches(&self, call: &ToolCall) -> bool {
        if let Some(kind) = &self.kind
            && kind != call.kind.as_str()
        {
            return false;
        }
        if let Some(g) = &self.title
            && !glob_match_text(g, &call.title)
        {
            return false;
        }
        if let Some(g) = &self.command {
            match crate::enrich::command_of(call) {
                Some(cmd) if glob_match_text(g, &cmd) => {}
                _ => return false,
            }
        }
        if let Some(g) = &self.path {
            let paths = crate::enrich::paths_of(call);
            if !paths.iter().any(|p| glob_match(g, p)) {
                return false;
            }
        }
        true
    }

    /// Short human description, used as the decider name.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{:?}", self.action).to_lowercase()];
        for (k, v) in [
            ("kind", &self.kind),
            ("title", &self.title),
            ("command", &self.command),
            ("path", &self.path),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}={v}"));
            }
        }
        parts.join(" ")
    }
}

/// How requests are answered when nobody is at the keyboard.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Policy {
    /// Reject everything (the default of headless runs).
    #[default]
    Reject,
    /// Allow every request once.
    AllowOnce,
    /// Allow read-only kinds (read, search, think, fetch), reject the rest.
    AllowReads,
    /// Rules in order; `fallback` when none matches or the match says `ask`.
    Rules { rules: Vec<Rule>, fallback: Verdict },
    /// Leave every request to the user (the interactive UI).
    Ask,
}

impl Policy {
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Reject => "reject",
            Policy::AllowOnce => "allow-once",
            Policy::AllowReads => "allow-reads",
            Policy::Rules { .. } => "rules",
            Policy::Ask => "ask",
        }
    }

    /// The verdict for `call` and the decider to record. `Ask` means "leave it open".
    pub fn decide(&self, call: &ToolCall) -> (Verdict, Decider) {
        let me = Decider::Policy(self.name().to_string());
        match self {
            Policy::Reject => (Verdict::Reject, me),
            Policy::AllowOnce => (Verdict::Allow, me),
            Policy::AllowReads => {
                let read_only = matches!(
                    call.kind,
                    ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch
                );
                (
                    if read_only {
                        Verdict::Allow
                    } else {
                        Verdict::Reject
                    },
                    me,
                )
            }
            Policy::Rules { rules, fallback } => match rules.iter().find(|r| r.matches(call)) {
                Some(rule) if rule.action != Verdict::Ask => {
                    (rule.action, Decider::Rule(rule.describe()))
                }
                _ => (*fallback, me),
            },
            Policy::Ask => (Verdict::Ask, Decider::User),
        }
    }
}
