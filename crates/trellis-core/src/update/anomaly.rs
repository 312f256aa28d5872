//! The anomaly detectors' checks (the rules are [`crate::anomaly`]).

use crate::anomaly::says;
use crate::event::EventBody;
use crate::permission::{OptionKind, Outcome, Verdict};
use crate::session::AgentRequest;
use crate::tool_call::{ToolKind, ToolStatus};

use super::ctx::Ctx;

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
