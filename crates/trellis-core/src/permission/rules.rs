//! The user's rules and the headless policies: which verdict a call gets before anyone is
//! asked.

use serde::{Deserialize, Serialize};

use globset::GlobMatcher;

use super::record::{Decider, Verdict};
use crate::glob::{GlobKind, compile};
use crate::tool_call::{ToolCall, ToolKind};

/// A user rule: the first rule whose every given matcher matches decides.
///
/// Paths: an `allow` rule matches only when *every* path the call touches matches its
/// glob; a `reject` or `ask` rule when *one* does (so a call touching a permitted and a
/// forbidden path is never allowed by the permitted one). An `allow` command glob never
/// matches a command line that chains or redirects (`;`, `&&`, `|`, `` ` ``, `$(`, `>`, …)
/// unless the glob itself contains that operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub action: Verdict,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_kind"
    )]
    pub kind: Option<String>,
    /// Glob over the call title.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_text_glob"
    )]
    pub title: Option<String>,
    /// Glob over the command of an execute call (`rawInput.command` joined with its args).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_text_glob"
    )]
    pub command: Option<String>,
    /// Glob over the paths the call touches (locations, diff paths, `rawInput` paths);
    /// relative globs are relative to the session cwd (see [`crate::glob`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_path_glob"
    )]
    pub path: Option<String>,
    /// The globs, compiled on first use.
    #[serde(skip)]
    compiled: Compiled,
}

/// Compiled globs of a rule (equal whatever they hold: they follow from the rule's text).
#[derive(Debug, Clone, Default)]
struct Compiled(std::sync::OnceLock<Globs>);

impl PartialEq for Compiled {
    fn eq(&self, _: &Compiled) -> bool {
        true
    }
}

#[derive(Debug, Clone)]
struct Globs {
    title: Option<Option<GlobMatcher>>,
    command: Option<Option<GlobMatcher>>,
    path: Option<Option<GlobMatcher>>,
}

fn de_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let kind = Option::<String>::deserialize(d)?;
    if let Some(k) = &kind
        && !ToolKind::ALL.iter().any(|t| t.as_str() == k)
    {
        let known: Vec<_> = ToolKind::ALL.iter().map(|t| t.as_str()).collect();
        return Err(serde::de::Error::custom(format!(
            "unknown tool kind `{k}` (one of: {})",
            known.join(", ")
        )));
    }
    Ok(kind)
}

fn de_glob<'de, D: serde::Deserializer<'de>>(
    d: D,
    kind: GlobKind,
) -> Result<Option<String>, D::Error> {
    let glob = Option::<String>::deserialize(d)?;
    if let Some(g) = &glob {
        compile(g, kind).map_err(|e| serde::de::Error::custom(format!("bad glob `{g}`: {e}")))?;
    }
    Ok(glob)
}

fn de_text_glob<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    de_glob(d, GlobKind::Text)
}

fn de_path_glob<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    de_glob(d, GlobKind::Path)
}

/// Shell operators that make one command line run more than the command it starts with.
const CHAINING: [&str; 9] = [";", "&&", "||", "|", "`", "$(", ">", "<", "\n"];

impl Rule {
    /// A rule with the given action and matchers.
    pub fn new(
        action: Verdict,
        kind: Option<String>,
        title: Option<String>,
        command: Option<String>,
        path: Option<String>,
    ) -> Rule {
        Rule {
            action,
            kind,
            title,
            command,
            path,
            compiled: Compiled::default(),
        }
    }

    /// The first problem with this rule's kind or globs (rules from files are checked as
    /// they are read; this serves rules built elsewhere).
    pub fn problem(&self) -> Option<String> {
        if let Some(k) = &self.kind
            && !ToolKind::ALL.iter().any(|t| t.as_str() == k)
        {
            return Some(format!("unknown tool kind `{k}`"));
        }
        [
            (&self.title, GlobKind::Text),
            (&self.command, GlobKind::Text),
            (&self.path, GlobKind::Path),
        ]
        .into_iter()
        .find_map(|(g, kind)| {
            let g = g.as_ref()?;
            compile(g, kind)
                .err()
                .map(|e| format!("bad glob `{g}`: {e}"))
        })
    }

    fn globs(&self) -> &Globs {
        self.compiled.0.get_or_init(|| Globs {
            title: self.title.as_ref().map(|g| compile(g, GlobKind::Text).ok()),
            command: self
                .command
                .as_ref()
                .map(|g| compile(g, GlobKind::Text).ok()),
            path: self.path.as_ref().map(|g| compile(g, GlobKind::Path).ok()),
        })
    }

    /// True when every matcher of the rule matches `call` (paths taken relative to `cwd`,
    /// the session's working directory). A glob that does not compile matches nothing.
    pub fn matches(&self, call: &ToolCall, cwd: Option<&str>) -> bool {
        if let Some(kind) = &self.kind
            && kind != call.kind.as_str()
        {
            return false;
        }
        let globs = self.globs();
        if let Some(g) = &globs.title {
            match g {
                Some(g) if g.is_match(&call.title) => {}
                _ => return false,
            }
        }
        if let (Some(g), Some(pattern)) = (&globs.command, &self.command) {
            let Some(cmd) = crate::enrich::command_of(call) else {
                return false;
            };
            let chained = self.action == Verdict::Allow
                && CHAINING
                    .iter()
                    .any(|op| cmd.contains(op) && !pattern.contains(op));
            match g {
                Some(g) if g.is_match(&cmd) && !chained => {}
                _ => return false,
            }
        }
        if let (Some(g), Some(pattern)) = (&globs.path, &self.path) {
            let Some(g) = g else { return false };
            let paths = crate::enrich::paths_of(call);
            let hit =
                |p: &String| crate::glob::subject(pattern, p, cwd).is_some_and(|s| g.is_match(&s));
            let ok = match self.action {
                Verdict::Allow => !paths.is_empty() && paths.iter().all(hit),
                Verdict::Reject | Verdict::Ask => paths.iter().any(hit),
            };
            if !ok {
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

    /// The policy in a few words, as `trellis ls` shows it: `ask`, `allow-once`,
    /// `allow-reads`, `reject`, or `3 rules, else ask`.
    pub fn describe(&self) -> String {
        match self {
            Policy::Rules { rules, fallback } => {
                let n = rules.len();
                let rules = if n == 1 {
                    "1 rule".to_string()
                } else {
                    format!("{n} rules")
                };
                let then = match fallback {
                    Verdict::Allow => "allow",
                    Verdict::Reject => "reject",
                    Verdict::Ask => "ask",
                };
                format!("{rules}, else {then}")
            }
            other => other.name().to_string(),
        }
    }

    /// The verdict for `call` and the decider to record. `Ask` means "leave it open".
    pub fn decide(&self, call: &ToolCall, cwd: Option<&str>) -> (Verdict, Decider) {
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
            Policy::Rules { rules, fallback } => {
                match rules.iter().find(|r| r.matches(call, cwd)) {
                    Some(rule) if rule.action != Verdict::Ask => {
                        (rule.action, Decider::Rule(rule.describe()))
                    }
                    _ => (*fallback, me),
                }
            }
            Policy::Ask => (Verdict::Ask, Decider::User),
        }
    }
}
