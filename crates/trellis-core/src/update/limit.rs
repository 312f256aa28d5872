//! `--max-tool-calls`: the limit is checked on every update, not once per batch of them.
//! The first call past it cancels the turn (`session/cancel`, whose frame answers what is
//! open as a cancel does); after that, no call past the limit completes on Trellis's side:
//! its permission request is refused on the record, and a terminal started for it (or
//! after the limit was passed) is killed.

use super::ctx::Ctx;
use super::turn::decide;
use crate::action::{Choice, Effect};
use crate::permission::Decider;

fn decider(max: usize) -> Decider {
    Decider::Policy(format!("--max-tool-calls {max}"))
}

/// After each update: the call that passes the limit cancels the turn, once.
pub(super) fn check(cx: &mut Ctx<'_>) {
    let Some(max) = cx.s.call_limit else {
        return;
    };
    let started = cx.s.ledger.len();
    if started <= max || cx.s.limit_hit.is_some() {
        return;
    }
    cx.s.limit_hit = Some(started);
    if cx.s.turn_open {
        cx.fx.push(Effect::SendCancel);
    }
}

/// Whether the call at ledger position `index` is past the limit.
pub(super) fn past(cx: &Ctx<'_>, index: usize) -> bool {
    cx.s.call_limit.is_some_and(|max| index >= max)
}

/// A permission request for a call past the limit: refused, on the record. True when it
/// was (the request is answered).
pub(super) fn refuse(cx: &mut Ctx<'_>, request_id: &str, index: usize) -> bool {
    let Some(max) = cx.s.call_limit.filter(|&max| index >= max) else {
        return false;
    };
    // Cannot fail: the caller inserted the request and has not answered it.
    let _ = decide(cx, request_id, Choice::Cancelled, decider(max), None);
    true
}

/// A terminal that started for a call past the limit, or after the limit was passed:
/// killed.
pub(super) fn terminal(cx: &mut Ctx<'_>, terminal_id: &str, call: Option<usize>) {
    let over = cx.s.limit_hit.is_some() || call.is_some_and(|c| past(cx, c));
    let running =
        cx.s.terminals
            .get(terminal_id)
            .is_some_and(|t| t.exit.is_none());
    if over && running {
        cx.fx.push(Effect::KillTerminal {
            terminal_id: terminal_id.to_string(),
        });
    }
}
