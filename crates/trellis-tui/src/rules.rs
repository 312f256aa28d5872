//! Rules saved from "always" answers: in the session only, or in Trellis's own store
//! for this project or everywhere (`rules` = `{"global": [...], "projects": {cwd: [...]}}`).
//! Listed in Settings → Rules, where each can be deleted.
//!
//! Invariant: the store is rewritten only for the lists this session owns (global and
//! this project's); other projects' rules are kept as they are.

use serde_json::{Value, json};
use trellis_core::permission::{Policy, Rule, Verdict};
use trellis_ext_host::ExtHost;

use crate::extui::Scope;

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
