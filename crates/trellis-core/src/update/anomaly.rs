//! The anomaly detectors' checks (the rules are [`crate::anomaly`]).

use crate::anomaly::says;
use crate::event::EventBody;
use crate::permission::{OptionKind, Outcome, Verdict};
use crate::session::AgentRequest;
use crate::tool_call::{ToolKind, ToolStatus};

use super::ctx::Ctx;

/// Checks ledger call `index`, whose status was `before` (`None`: just created): when it
/// starts running, whether its request was open or refused; when it ends, whether it ran
/// unasked. "Unasked" is known only then: agents announce a call running and ask for it
/// in either order (opencode marks a write `in_progress` and sends its request in the same
/// millisecond), so a request may still come after the call started.
pub(crate) fn check(cx: &mut Ctx<'_>, index: usize, before: Option<ToolStatus>) {
    let call = cx.s.ledger.at(index);
    let now = call.status;
    let running = |s: ToolStatus| matches!(s, ToolStatus::InProgress | ToolStatus::Completed);
    let ended = |s: ToolStatus| matches!(s, ToolStatus::Completed | ToolStatus::Failed);
    let started = running(now) && !before.is_some_and(running);
    let finished = ended(now) && !before.is_some_and(ended);
    if !started && !finished {
        return;
    }
    let mut found: Vec<&'static str> = Vec::new();
    if started {
        // Open until the answer is on the wire: an answer decided but not yet sent had
        // not reached the agent either.
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
        }
    }
    // Ended having run (completed, or failed after running) without any request for it,
    // while the agent's last request for its kind came before the call started, after the
    // last change of settings. (Only the last request per kind is kept: a later one hides
    // whether there was an earlier one, so the call is given the benefit of the doubt.)
    let started_at = call
        .status_history
        .iter()
        .find(|c| running(c.status))
        .map(|c| c.t);
    let ran = started_at.is_some() || now == ToolStatus::Completed;
    let started_at = started_at.unwrap_or(cx.t);
    if finished
        && ran
        && call.permissions.is_empty()
        && matches!(
            call.kind,
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute
        )
        && cx
            .s
            .asks_by_kind
            .get(&call.kind)
            .is_some_and(|&(asked, always)| {
                !always && asked >= cx.s.settings_changed_at && asked <= started_at
            })
        && cx.s.policy.decide(&call, cx.s.cwd.as_deref()).0 != Verdict::Allow
    {
        found.push("ran_unasked");
    }
    if found.is_empty() {
        return;
    }
    let id = call.id.clone();
    // The snapshot let go first: changing the call would otherwise copy it.
    drop(call);
    for rule in found {
        let call = cx.s.ledger.at_mut(index);
        if call.anomalies.iter().any(|a| a == rule) {
            continue;
        }
        call.anomalies.push(rule.to_string());
        cx.s.counters.anomalies += 1;
        cx.emit_about(
            index,
            EventBody::Anomaly {
                call_id: id.clone(),
                rule: rule.to_string(),
                message: says(rule).to_string(),
            },
        );
    }
}
