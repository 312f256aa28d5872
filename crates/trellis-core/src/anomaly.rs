//! Anomaly detectors: a tool call that ran in a way its permission history says it
//! should not have. Each finding is kept on the call (`ToolCall::anomalies`), marked on
//! its card, announced as an `anomaly` event and counted in the closing summary. They
//! explain the permission bugs users report about agents; each rule is checked when a
//! call starts running (its status becomes `in_progress` or `completed`):
//!
//! - `ran_while_asking`: the call ran while its permission request was still open (not
//!   yet answered on the wire).
//! - `ran_after_refusal`: the call ran after its last permission request was answered
//!   with a refusal (a reject option, or cancelled).
//! - `ran_unasked`: a call of a kind that changes things (edit, delete, move, execute)
//!   ran without any request although the agent had asked for a call of that kind before
//!   in this session, no "always allow" answer was given for that kind, the mode and
//!   config options have not changed since that request, and the client's policy would
//!   not have allowed it by itself. "Ran without asking" alone is not enough: agents
//!   legitimately skip asking after an "always allow" answer or in a mode that allows
//!   (`acceptEdits`, `bypassPermissions`, a "yolo" mode…), and on recorded Claude sessions
//!   that plain rule flagged calls the user had allowed; an agent that asks for a kind and
//!   then, with nothing changed, stops asking is the inconsistency users report.

use crate::event::EventBody;
use crate::permission::{OptionKind, Outcome, Verdict};
use crate::session::AgentRequest;
use crate::tool_call::{ToolKind, ToolStatus};
use crate::update::Ctx;

/// The rules, with what a finding says (the docs and `/status` use these words).
pub const RULES: &[(&str, &str)] = &[
    (
        "ran_while_asking",
        "ran while its permission request was still open",
    ),
    (
        "ran_after_refusal",
        "ran after its permission request was refused",
    ),
    (
        "ran_unasked",
        "ran without asking, though the agent asks for calls of its kind and nothing changed since",
    ),
];

/// A rule as the card and the summaries name it (`ran while asking`…).
pub fn label(rule: &str) -> String {
    rule.replace('_', " ")
}

fn says(rule: &str) -> &'static str {
    RULES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or("", |(_, s)| s)
}

/// Checks ledger call `index`, whose status was `before` (`None`: just created).
pub(crate) fn check(cx: &mut Ctx<'_>, index: usize, before: Option<ToolStatus>) {
    let call = cx.s.ledger.at(index);
    let now = call.status;
    let running = |s: ToolStatus| matches!(s, ToolStatus::InProgress | ToolStatus::Completed);
    if !running(now) || before.is_some_and(running) {
        return;
    }
    let id = call.id.clone();
    let mut found: Vec<&'static str> = Vec::new();
    // Open until the answer is on the wire: an answer decided but not yet sent had not
    // reached the agent either.
    let open =
        cx.s.agent_requests
            .values()
            .any(|r| matches!(r, AgentRequest::Permission { call, .. } if *call == index));
    if open {
        found.push("ran_while_asking");
    } else if let Some(last) = call.permissions.iter().rev().find(|p| p.outcome.is_some()) {
        let refused = match &last.outcome {
            Some(Outcome::Selected { kind, .. }) => matches!(
                kind,
                Some(OptionKind::RejectOnce | OptionKind::RejectAlways)
            ),
            Some(Outcome::Cancelled | Outcome::Error { .. }) => true,
            None => false,
        };
        if refused {
            found.push("ran_after_refusal");
        }
    } else if call.permissions.is_empty()
        && matches!(
            call.kind,
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute
        )
        && cx
            .s
            .asks_by_kind
            .get(&call.kind)
            .is_some_and(|&(asked, always)| !always && asked >= cx.s.settings_changed_at)
        && cx.s.policy.decide(&call, cx.s.cwd.as_deref()).0 != Verdict::Allow
    {
        found.push("ran_unasked");
    }
    for rule in found {
        let call = cx.s.ledger.at_mut(index);
        if call.anomalies.iter().any(|a| a == rule) {
            continue;
        }
        call.anomalies.push(rule.to_string());
        cx.s.counters.anomalies += 1;
        cx.emit(EventBody::Anomaly {
            call_id: id.clone(),
            rule: rule.to_string(),
            message: says(rule).to_string(),
        });
    }
}
