//! Steps several handlers share: answering a permission request (exactly once), marking
//! the calls a turn leaves open, ending a turn.

use crate::action::{Choice, DecideError, Effect};
use crate::event::EventBody;
use crate::permission::{Decider, Outcome, Verdict, choose_option};
use crate::session::AgentRequest;
use crate::tool_call::ToolStatus;

use super::ctx::Ctx;

/// Issues the answer to an open permission request.
pub(crate) fn decide(
    cx: &mut Ctx<'_>,
    request_id: &str,
    choice: Choice,
    decider: Decider,
    reason: Option<String>,
) -> Result<(), DecideError> {
    let Some(AgentRequest::Permission {
        options,
        answering,
        call,
    }) = cx.s.agent_requests.get_mut(request_id)
    else {
        return Err(DecideError::NotOpen(request_id.to_string()));
    };
    if *answering {
        return Err(DecideError::AlreadyAnswered(request_id.to_string()));
    }
    let outcome = match choice {
        Choice::Cancelled => Outcome::Cancelled,
        Choice::Option(id) => match options.iter().find(|o| o.option_id == id) {
            Some(o) => Outcome::Selected {
                option_id: id,
                kind: Some(o.kind),
            },
            None => {
                return Err(DecideError::InvalidOption {
                    request: request_id.to_string(),
                    option: id,
                });
            }
        },
        Choice::Verdict(v) => match choose_option(options, v) {
            Some(o) => Outcome::Selected {
                option_id: o.option_id.clone(),
                kind: Some(o.kind),
            },
            // Nothing to allow with: refuse rather than approve anything else.
            None => match choose_option(options, Verdict::Reject) {
                Some(o) => Outcome::Selected {
                    option_id: o.option_id.clone(),
                    kind: Some(o.kind),
                },
                None => Outcome::Cancelled,
            },
        },
    };
    *answering = true;
    let call = *call;
    // Who answered is known from now on (its record follows through the log and says
    // the same): a second answerer in between is told who won, not "no such request".
    cx.s.deciders
        .insert(request_id.to_string(), decider.clone());
    let told = crate::permission::reason_for_agent(
        &outcome,
        &decider,
        &crate::enrich::card_title(&cx.s.ledger.at(call)),
        reason.as_deref(),
    );
    cx.fx.push(Effect::Answer {
        request_id: request_id.to_string(),
        outcome,
        decider,
        reason,
    });
    // The reason reaches the agent as the next message (after this turn).
    if let Some(text) = told {
        cx.fx.push(Effect::Prompt { text });
    }
    Ok(())
}

/// Marks every still-open call with `status` as the turn ends; returns their ids.
pub(crate) fn mark_open_calls(cx: &mut Ctx<'_>, status: ToolStatus) -> Vec<String> {
    // The user's own commands are not the turn's: they end with their terminal.
    mark_open_calls_of(cx, status, |c| !crate::tool_call::is_users(&c.id))
}

/// [`mark_open_calls`] for the calls `which` picks.
pub(crate) fn mark_open_calls_of(
    cx: &mut Ctx<'_>,
    status: ToolStatus,
    which: impl Fn(&crate::ToolCall) -> bool,
) -> Vec<String> {
    let t = cx.t;
    let mut marked = Vec::new();
    // Open calls are always in memory: only those are looked at.
    for i in cx.s.ledger.open() {
        let call = cx.s.ledger.at(i);
        // Any call still open is abandoned with the turn: normally one of this turn's, but
        // a call re-opened by a later turn (or by a restarted agent reusing an id) too.
        if call.status.is_terminal() || !which(&call) {
            continue;
        }
        let call = cx.s.ledger.at_mut(i);
        let prev = call.set_status(status, t);
        marked.push(call.id.clone());
        let call = cx.s.ledger.snapshot(i);
        cx.emit_about(
            i,
            EventBody::ToolCallUpdated {
                previous_status: prev,
                status,
                call,
            },
        );
    }
    marked
}

/// Ends the open turn with `stop_reason`, marking calls left open.
pub(crate) fn end_turn(cx: &mut Ctx<'_>, stop_reason: String) {
    if !cx.s.turn_open {
        return;
    }
    cx.s.turn_open = false;
    let mark = if stop_reason == "cancelled" {
        ToolStatus::Cancelled
    } else {
        ToolStatus::Unfinished
    };
    let unfinished = mark_open_calls(cx, mark);
    cx.s.last_stop = Some(stop_reason.clone());
    let turn = cx.s.turn;
    cx.emit(EventBody::TurnEnded {
        turn,
        stop_reason,
        unfinished,
    });
    cx.fx.push(Effect::Sync);
}
