//! The reducer: `update(state, action) -> effects`.
//!
//! Invariants:
//! - State changes come only from frames and local records, never from user intents, so the
//!   log alone rebuilds a session. Intents (`Cancel`, `Decide`) only produce effects; their
//!   consequences come back as frames.
//! - A permission request gets at most one `Effect::Answer`: `answering` is set when the
//!   answer is issued, and further decisions for it are refused.

//!
//! The reducer owns no types: what it changes is the model ([`crate::session`] and the
//! types it holds), what it takes and gives is [`crate::action`]. Each file here handles
//! one part of the protocol; [`ctx::Ctx`] is what they all work in and [`turn`] the steps
//! they share.

mod agent_notes;
mod anomaly;
mod ctx;
mod elicit;
mod limit;
mod local;
mod permission;
mod plans;
mod requests;
mod session_update;
mod subagents;
mod terminal_meta;
mod turn;
pub mod user_command;

pub use crate::action::{Action, Choice, DecideError, Effect};

use crate::event::EventBody;
use crate::permission::Decider;
use crate::session::Session;
use crate::tool_call::ToolStatus;
use crate::wire::{Dir, Message};

use ctx::Ctx;
use turn::{decide, mark_open_calls};

/// Applies `action` to `state` and returns the effects the edges must perform.
pub fn update(state: &mut Session, action: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    update_into(state, action, &mut fx);
    fx
}

/// [`update`] appending the effects to `fx`: a caller that performs them and keeps the
/// emptied vector does not allocate one per action (a streaming agent's every line).
pub fn update_into(state: &mut Session, action: Action, fx: &mut Vec<Effect>) {
    let t = match &action {
        Action::Frame { t, .. }
        | Action::InvalidLine { t, .. }
        | Action::Local { t, .. }
        | Action::Decide { t, .. }
        | Action::Cancel { t }
        | Action::CancelSubagent { t, .. }
        | Action::Elicit { t, .. } => *t,
    };
    let acp = match &action {
        Action::Frame { msg, .. } => msg.raw.clone(),
        _ => None,
    };
    let mut cx = Ctx {
        s: state,
        fx: std::mem::take(fx),
        t,
        acp,
    };
    match action {
        Action::Frame { seq, dir, msg, .. } => {
            cx.s.counters.frames += 1;
            frame(&mut cx, seq, dir, msg);
        }
        Action::InvalidLine {
            dir, len, error, ..
        } => {
            cx.s.counters.invalid_lines += 1;
            let who = match dir {
                Dir::AgentToClient => "agent",
                Dir::ClientToAgent => "client",
            };
            cx.emit(EventBody::Warning {
                message: format!("skipped an invalid line from the {who} ({len} bytes): {error}"),
            });
        }
        Action::Local { record, .. } => local::apply(&mut cx, *record),
        Action::Decide {
            request_id,
            choice,
            decider,
            reason,
            ..
        } => {
            if let Err(e) = decide(&mut cx, &request_id, choice, decider, reason) {
                cx.emit(EventBody::Warning {
                    message: e.to_string(),
                });
            }
        }
        Action::Cancel { .. } => {
            if cx.s.turn_open {
                cx.fx.push(Effect::SendCancel);
            }
        }
        Action::CancelSubagent { session_id, .. } => {
            if let Err(e) = subagents::may_cancel(&cx, &session_id) {
                cx.emit(EventBody::Warning { message: e });
            } else {
                cx.fx.push(Effect::CancelSubagent { session_id });
            }
        }
        Action::Elicit {
            request_id,
            answer,
            decider,
            ..
        } => {
            if let Err(e) = elicit::answer(&mut cx, &request_id, answer, decider) {
                cx.emit(EventBody::Warning { message: e });
            }
        }
    }
    limit::check(&mut cx);
    *fx = cx.fx;
}

fn frame(cx: &mut Ctx<'_>, seq: u64, dir: Dir, mut msg: Message) {
    match (dir, msg.method.is_some(), msg.id.is_some()) {
        (Dir::AgentToClient, true, true) => requests::agent_request(cx, seq, msg),
        (Dir::AgentToClient, true, false) => match msg.method.as_deref() {
            Some("session/update") => session_update::apply(cx, seq, &mut msg),
            Some("$/cancel_request") => requests::agent_cancelled(cx, &msg),
            Some("elicitation/complete") => elicit::completed(cx, &msg),
            Some(other) => {
                let other = other.to_string();
                *cx.s
                    .counters
                    .unknown_notifications
                    .entry(other.clone())
                    .or_default() += 1;
                cx.warn_once(
                    format!("notif:{other}"),
                    format!("ignored unknown notification {other}"),
                );
            }
            None => {}
        },
        (Dir::AgentToClient, false, _) => requests::agent_response(cx, msg),
        (Dir::ClientToAgent, true, true) => requests::client_request(cx, msg),
        (Dir::ClientToAgent, true, false) => {
            if msg.method.as_deref() == Some("session/cancel") {
                // A subagent's cancel stops only the child's work.
                match subagents::cancelled_child(cx, &msg) {
                    Some(child) => subagents::cancel_seen(cx, child),
                    None => cancel_seen(cx),
                }
            }
        }
        (Dir::ClientToAgent, false, _) => requests::client_response(cx, seq, msg),
    }
}

/// The client sent `session/cancel`: open calls of the turn are marked cancelled at once and
/// every open permission request is answered `cancelled`. Updates are still accepted.
fn cancel_seen(cx: &mut Ctx<'_>) {
    mark_open_calls(cx, ToolStatus::Cancelled);
    for (request_id, _) in cx.s.open_permissions() {
        // Already-answered requests are refused inside `decide`; that is expected here.
        let _ = decide(cx, &request_id, Choice::Cancelled, Decider::Cancel, None);
    }
    elicit::cancel_pending(cx, Decider::Cancel);
}
