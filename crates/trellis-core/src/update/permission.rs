//! Permission requests on the wire: one asked (recorded on its call, decided by the
//! policy or left to the user), one resolved (the outcome on the record, once), and every
//! one still open closed when the agent is gone.

use crate::action::Choice;
use crate::event::EventBody;
use crate::permission::{Decider, OptionKind, Outcome, PermissionRecord, Verdict};
use crate::session::AgentRequest;
use crate::tool_call::ToolCallPatch;

use super::ctx::Ctx;
use super::turn::decide;
use crate::wire;

pub(super) fn permission_asked(
    cx: &mut Ctx<'_>,
    seq: u64,
    id: &str,
    p: wire::PermissionParams,
) -> AgentRequest {
    let options: Vec<_> = p.options.into_iter().filter_map(|o| o.0).collect();
    // A request for another session (or none) is not this session's to decide: the client
    // answers it with an error, and it never reaches the rules, extensions or the dialog.
    // A subagent's is this session's, attributed to the child.
    let owner = p
        .session_id
        .as_deref()
        .and_then(|theirs| super::subagents::route(cx, theirs));
    let Some(owner) = owner else {
        let named = p.session_id.as_deref().unwrap_or("no session");
        cx.emit(EventBody::Warning {
            message: format!(
                "refused permission request {id} for {named}: it is not this session's"
            ),
        });
        return AgentRequest::Other;
    };
    let subagent = owner.map(|c| cx.s.subagents.list[c].session_id.clone());
    let mut patch: ToolCallPatch = p.tool_call;
    let call_id = patch.tool_call_id.to_string();
    let t = cx.t;
    let applied = super::subagents::apply_call(cx, owner, &mut patch, false);
    if applied.created {
        cx.s.counters.unannounced_calls += 1;
    }
    cx.s.ledger.push_frame(applied.index, seq);
    let call = cx.s.ledger.at_mut(applied.index);
    let kind = call.kind;
    cx.s.asks_by_kind.entry(kind).or_default().0 = t;
    let call = cx.s.ledger.at_mut(applied.index);
    call.permissions.push(PermissionRecord {
        request_id: id.to_string(),
        options: options.clone(),
        asked_at: t,
        outcome: None,
        decider: None,
        decided_at: None,
        reason: None,
    });
    let call = cx.s.ledger.snapshot(applied.index);
    if applied.created {
        cx.emit_about(
            applied.index,
            EventBody::ToolCallCreated { call: call.clone() },
        );
    }
    cx.emit_about(
        applied.index,
        EventBody::PermissionRequested {
            request_id: id.to_string(),
            call_id: call_id.clone(),
            title: crate::enrich::card_title(&call),
            kind: call.kind,
            options: options.clone(),
            subagent,
        },
    );
    let usable = options.iter().any(|o| o.kind != OptionKind::Unknown);
    let (verdict, decider) = if usable {
        cx.s.policy.decide(&call, cx.s.cwd.as_deref())
    } else {
        cx.emit(EventBody::Warning {
            message: format!(
                "permission request {id} offers no option of a known kind ({} offered); answered cancelled",
                options.len()
            ),
        });
        (Verdict::Reject, Decider::Client("no usable options".into()))
    };
    cx.s.agent_requests.insert(
        id.to_string(),
        AgentRequest::Permission {
            call: applied.index,
            options: options.clone(),
            answering: false,
        },
    );
    if !usable {
        let _ = decide(cx, id, Choice::Cancelled, decider, None);
    } else if super::limit::refuse(cx, id, applied.index) {
        // Past `--max-tool-calls`: refused before any rule, extension or human.
    } else if verdict != Verdict::Ask {
        // Cannot fail: the request was inserted just above and is not answering.
        let _ = decide(cx, id, Choice::Verdict(verdict), decider, None);
    }
    let answering = matches!(
        cx.s.agent_requests.get(id),
        Some(AgentRequest::Permission {
            answering: true,
            ..
        })
    );
    AgentRequest::Permission {
        call: applied.index,
        options,
        answering,
    }
}

/// Records how permission request `id` (for the call at ledger position `index`) ended,
/// on the call and as an event.
pub(crate) fn permission_resolved(
    cx: &mut Ctx<'_>,
    id: &str,
    index: usize,
    outcome: Outcome,
    decider: Decider,
) {
    let t = cx.t;
    if let Outcome::Selected {
        kind: Some(OptionKind::AllowAlways),
        ..
    } = &outcome
    {
        let kind = cx.s.ledger.at(index).kind;
        cx.s.asks_by_kind.entry(kind).or_default().1 = true;
    }
    let reason = cx.s.reasons.remove(id);
    let call = cx.s.ledger.at_mut(index);
    if let Some(rec) = call
        .permissions
        .iter_mut()
        .rev()
        .find(|r| r.request_id == id)
    {
        rec.outcome = Some(outcome.clone());
        rec.decider = Some(decider.clone());
        rec.decided_at = Some(t);
        rec.reason = reason.clone();
    }
    let (call_id, subagent) = (call.id.clone(), call.subagent.clone());
    cx.emit_about(
        index,
        EventBody::PermissionResolved {
            request_id: id.to_string(),
            call_id,
            outcome,
            decider,
            reason,
            subagent,
        },
    );
}

/// The agent is gone: every permission request still open is closed as `cancelled`, decided
/// by what the client recorded or `why` (nobody is left to answer it; the log, ledger and
/// events say so).
pub(crate) fn close_open_permissions(cx: &mut Ctx<'_>, why: &str) {
    let mut open: Vec<(String, usize)> =
        cx.s.agent_requests
            .iter()
            .filter_map(|(id, r)| match r {
                AgentRequest::Permission { call, .. } => Some((id.clone(), *call)),
                _ => None,
            })
            .collect();
    open.sort();
    for (id, call) in open {
        cx.s.agent_requests.remove(&id);
        let decider =
            cx.s.deciders
                .remove(&id)
                .unwrap_or_else(|| Decider::Client(why.into()));
        permission_resolved(cx, &id, call, Outcome::Cancelled, decider);
    }
}
