//! Rules saved from "always" answers: the rule an answer would save (previewed with what
//! it matches before anything is saved), and where it is kept — in the session only, or
//! in Trellis's own store for this project or everywhere (`rules` =
//! `{"global": [...], "projects": {cwd: [...]}}`). Any front end saves them the same way:
//! the UI's dialog, an attached client of a hub.
//!
//! Invariant: the store is rewritten only for the lists this session owns (global and
//! this project's); other projects' rules are kept as they are.

use serde_json::{Value, json};
use trellis_core::permission::{OptionKind, Policy, Rule, Verdict};
use trellis_core::{Session, ToolCall, ToolKind};
use trellis_ext_host::ExtHost;

use crate::Driver;

/// Where a rule is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Session,
    Project,
    Global,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Session, Scope::Project, Scope::Global];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }

    /// The scope called `name` (`session`, `project`, `global`).
    pub fn named(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// An "always" answer's rule, before it is saved: what it would match, and where it
/// would go.
#[derive(Debug, Clone, PartialEq)]
pub struct RulePreview {
    pub request_id: String,
    pub option_id: String,
    pub verdict: Verdict,
    pub kind: ToolKind,
    /// Which matcher the pattern is: `command`, `path` or `title`.
    pub matcher: &'static str,
    pub pattern: String,
    pub scope: Scope,
    /// What the pattern matches so far (see [`RulePreview::advance`]).
    pub hits: Hits,
}

/// Calls of the session a rule matches, counted from the newest down a budget at a time
/// (a session of a million calls is not read back in one frame): calls `low..top` were
/// looked at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hits {
    low: usize,
    top: usize,
    pub count: usize,
    /// The newest matches' card titles (at most [`Hits::SHOWN`]), newest first.
    pub latest: Vec<String>,
}

impl Hits {
    pub const SHOWN: usize = 4;
    /// Calls looked at per frame.
    pub const BUDGET: usize = 8192;

    /// Whether every call of the session has been looked at.
    pub fn complete(&self, session: &Session) -> bool {
        self.low == 0 && self.top >= session.ledger.len()
    }

    /// How many calls were looked at so far.
    pub fn looked_at(&self) -> usize {
        self.top - self.low
    }
}

impl RulePreview {
    /// The preview for answering `call`'s request with an "always" option.
    pub fn new(
        request_id: String,
        option_id: String,
        kind: OptionKind,
        call: &ToolCall,
    ) -> RulePreview {
        let verdict = if kind.is_allow() {
            Verdict::Allow
        } else {
            Verdict::Reject
        };
        let (matcher, pattern) = if let Some(cmd) = trellis_core::enrich::command_of(call) {
            ("command", cmd)
        } else if let Some(p) = trellis_core::enrich::paths_of(call).into_iter().next() {
            ("path", p)
        } else {
            ("title", call.title.clone())
        };
        RulePreview {
            request_id,
            option_id,
            verdict,
            kind: call.kind,
            matcher,
            pattern,
            scope: Scope::Session,
            hits: Hits::default(),
        }
    }

    pub fn rule(&self) -> Rule {
        let mut r = Rule::new(
            self.verdict,
            Some(self.kind.as_str().to_string()),
            None,
            None,
            None,
        );
        let p = Some(self.pattern.clone()).filter(|p| !p.trim().is_empty());
        match self.matcher {
            "command" => r.command = p,
            "path" => r.path = p,
            _ => r.title = p,
        }
        r
    }

    /// Looks at up to `budget` more calls for [`RulePreview::hits`]: those that arrived
    /// since first (the newest), then older ones.
    pub fn advance(&mut self, session: &Session, budget: usize) {
        let n = session.ledger.len();
        if self.hits.top == 0 && self.hits.low == 0 {
            (self.hits.low, self.hits.top) = (n, n);
        }
        let rule = self.rule();
        let cwd = session.cwd.as_deref();
        let mut left = budget;
        let h = &mut self.hits;
        let mut newer = Vec::new();
        while h.top < n && left > 0 {
            let c = session.ledger.at(h.top);
            if rule.matches(&c, cwd) {
                h.count += 1;
                newer.push(trellis_core::enrich::card_title(&c));
            }
            h.top += 1;
            left -= 1;
        }
        if !newer.is_empty() {
            newer.reverse();
            newer.append(&mut h.latest);
            newer.truncate(Hits::SHOWN);
            h.latest = newer;
        }
        while h.low > 0 && left > 0 {
            h.low -= 1;
            let c = session.ledger.at(h.low);
            if rule.matches(&c, cwd) {
                h.count += 1;
                if h.latest.len() < Hits::SHOWN {
                    h.latest.push(trellis_core::enrich::card_title(&c));
                }
            }
            left -= 1;
        }
    }

    /// The pattern was edited: what it matches is counted again.
    pub fn edited(&mut self) {
        self.hits = Hits::default();
    }

    /// What the rule would cover, said plainly (one line of a narrow dialog).
    pub fn reach(&self) -> String {
        let wild = self.pattern.contains(['*', '?', '[']);
        let what = match (self.matcher, wild) {
            ("path", false) => "this one file (add * to widen)",
            ("command", false) => "this exact command (add * to widen)",
            (_, false) => "this exact title (add * to widen)",
            ("path", true) => "every file the glob matches",
            ("command", true) => "every command the glob matches",
            (_, true) => "every title the glob matches",
        };
        format!(
            "Reach    {what}; other {} calls still ask",
            self.kind.as_str()
        )
    }
}

/// A rule the user saved, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedRule {
    pub scope: Scope,
    pub rule: Rule,
}

/// The rules saved for this project and globally (project first: the narrower wins).
pub fn load(host: &ExtHost, cwd: &str) -> Vec<SavedRule> {
    let Some(all) = host.host_store_get("rules") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (scope, list) in [
        (Scope::Project, &all["projects"][cwd]),
        (Scope::Global, &all["global"]),
    ] {
        for v in list.as_array().into_iter().flatten() {
            if let Ok(rule) = serde_json::from_value(v.clone()) {
                out.push(SavedRule { scope, rule });
            }
        }
    }
    out
}

/// Writes the global and this project's lists from `saved` (session rules stay out).
pub fn store(host: &ExtHost, cwd: &str, saved: &[SavedRule]) -> Result<(), String> {
    let mut all = host.host_store_get("rules").unwrap_or_else(|| json!({}));
    if !all.is_object() {
        all = json!({});
    }
    let list = |scope: Scope| -> Value {
        Value::Array(
            saved
                .iter()
                .filter(|r| r.scope == scope)
                .filter_map(|r| serde_json::to_value(&r.rule).ok())
                .collect(),
        )
    };
    all["global"] = list(Scope::Global);
    if !all["projects"].is_object() {
        all["projects"] = json!({});
    }
    all["projects"][cwd] = list(Scope::Project);
    host.host_store_put("rules", all)
}

/// Puts `rule` first among the rules in force.
pub fn enforce(policy: &mut Policy, rule: Rule) {
    match policy {
        Policy::Rules { rules, .. } => rules.insert(0, rule),
        other => {
            *other = Policy::Rules {
                rules: vec![rule],
                fallback: Verdict::Ask,
            }
        }
    }
}

/// Takes `rule` out of the rules in force (its first occurrence).
pub fn retract(policy: &mut Policy, rule: &Rule) {
    if let Policy::Rules { rules, .. } = policy
        && let Some(i) = rules.iter().position(|r| r == rule)
    {
        rules.remove(i);
    }
}

impl Driver {
    /// Saves the previewed rule in its scope and adds it to the rules in force; the
    /// scope's name, or why it could not be stored (then nothing changed).
    pub fn save_rule(&mut self, p: &RulePreview) -> Result<String, String> {
        let rule = p.rule();
        self.saved_rules.insert(
            0,
            SavedRule {
                scope: p.scope,
                rule: rule.clone(),
            },
        );
        if p.scope != Scope::Session {
            let stored = match &self.host {
                Some(host) => {
                    let cwd = self.session.cwd.clone().unwrap_or_default();
                    store(host, &cwd, &self.saved_rules)
                }
                None => Err("no store in this session (only session rules)".into()),
            };
            if let Err(e) = stored {
                self.saved_rules.remove(0);
                return Err(e);
            }
        }
        enforce(&mut self.session.policy, rule);
        Ok(p.scope.name().to_string())
    }

    /// Deletes saved rule `i`: out of force, and out of the store. What to tell the
    /// user (none: there is no rule `i`).
    pub fn delete_rule(&mut self, i: usize) -> Option<String> {
        if i >= self.saved_rules.len() {
            return None;
        }
        let gone = self.saved_rules.remove(i);
        retract(&mut self.session.policy, &gone.rule);
        let mut msg = format!("rule deleted: {}", gone.rule.describe());
        if gone.scope != Scope::Session
            && let Some(host) = &self.host
        {
            let cwd = self.session.cwd.clone().unwrap_or_default();
            if let Err(e) = store(host, &cwd, &self.saved_rules) {
                msg = format!("rule no longer applies, but the store was not updated: {e}");
            }
        }
        Some(msg)
    }
}
