//! The reducer: `update(state, action) -> effects`.
//!
//! Invariants:
//! - State changes come only from frames and local records, never from user intents, so the
//!   log alone rebuilds a session. Intents (`Cancel`, `Decide`) only produce effects; their
//!   consequences come back as frames.
//! - A permission request gets at most one `Effect::Answer`: `answering` is set when the
//!   answer is issued, and further decisions for it are refused.

use crate::event::{Event, EventBody, SCHEMA_VERSION};
use crate::permission::{Decider, Outcome, Verdict, choose_option};
use crate::session::{AgentRequest, Entry, LocalRecord, Session};
use crate::tool_call::ToolStatus;
use crate::wire::{Dir, Message};

/// Everything that can happen to a session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Action {
    /// A JSON-RPC message on the agent's stdio. `seq` numbers frames in log order.
    Frame {
        seq: u64,
        t: f64,
        dir: Dir,
        msg: Message,
    },
    /// A line that was not JSON-RPC (it is kept verbatim in the log).
    InvalidLine {
        t: f64,
        dir: Dir,
        len: usize,
        error: String,
    },
    /// A client-side record (also written to the log).
    Local { t: f64, record: LocalRecord },
    /// The user (or an extension) answers an open permission request.
    Decide {
        t: f64,
        request_id: String,
        choice: Choice,
        decider: Decider,
    },
    /// The user wants the running turn cancelled.
    Cancel { t: f64 },
    /// The user wants a subagent's work cancelled (only one that lets the client).
    CancelSubagent { t: f64, session_id: String },
    /// The user (or an extension, or a headless answer file) answers an open elicitation.
    Elicit {
        t: f64,
        request_id: String,
        answer: crate::elicitation::ElicitAnswer,
        decider: Decider,
    },
}

/// An answer to a permission request.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// A specific option id.
    Option(String),
    /// The narrowest option for a verdict.
    Verdict(Verdict),
    Cancelled,
}

/// What the edges must do.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Effect {
    /// Deliver a normalized event (headless output, UI, extensions).
    Emit(Event),
    /// Answer the agent's permission request `request_id`, recording `decider` first.
    Answer {
        request_id: String,
        outcome: Outcome,
        decider: Decider,
    },
    /// Answer the agent's elicitation `request_id`, recording `decider` first.
    Elicit {
        request_id: String,
        answer: crate::elicitation::ElicitAnswer,
        decider: Decider,
    },
    /// Send `session/cancel` for the session.
    SendCancel,
    /// Send `session/cancel` for a subagent (child session id).
    CancelSubagent { session_id: String },
    /// Ask for the next page of the agent's sessions (`session/list` with `cursor`).
    ListSessions { cwd: Option<String>, cursor: String },
    /// Make the log durable (end of a turn).
    Sync,
}

/// Why a decision was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecideError {
    #[error("no open permission request {0}")]
    NotOpen(String),
    #[error("permission request {0} was already answered")]
    AlreadyAnswered(String),
    #[error("option {option} was not offered for request {request}")]
    InvalidOption { request: String, option: String },
}

pub(crate) struct Ctx<'a> {
    pub s: &'a mut Session,
    pub fx: Vec<Effect>,
    pub t: f64,
    /// The verbatim line of the frame being applied, attached to its events.
    pub acp: Option<std::sync::Arc<str>>,
}

impl Ctx<'_> {
    pub fn emit(&mut self, body: EventBody) {
        self.fx.push(Effect::Emit(Event {
            schema: SCHEMA_VERSION,
            t: self.t,
            session: self.s.id.clone(),
            body,
            acp: self.acp.clone(),
            wire: Default::default(),
        }));
    }

    /// A warning event, once per `key` per session.
    pub fn warn_once(&mut self, key: String, message: String) {
        if self.s.warned.insert(key) {
            self.emit(EventBody::Warning { message });
        }
    }

    /// Counts a message that could not be decoded (under `key`) and warns about it.
    pub fn malformed(&mut self, key: &str, message: String) {
        *self
            .s
            .counters
            .malformed
            .entry(key.to_string())
            .or_default() += 1;
        self.emit(EventBody::Warning { message });
    }

    pub fn notice(&mut self, text: String) {
        self.s.transcript.push(Entry::Notice {
            text: Box::new(text),
        });
    }
}

/// Applies `action` to `state` and returns the effects the edges must perform.
pub fn update(state: &mut Session, action: Action) -> Vec<Effect> {
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
        fx: Vec::new(),
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
        Action::Local { record, .. } => crate::local::apply(&mut cx, record),
        Action::Decide {
            request_id,
            choice,
            decider,
            ..
        } => {
            if let Err(e) = decide(&mut cx, &request_id, choice, decider) {
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
            if let Err(e) = crate::subagents::may_cancel(&cx, &session_id) {
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
            if let Err(e) = crate::elicit_requests::answer(&mut cx, &request_id, answer, decider) {
                cx.emit(EventBody::Warning { message: e });
            }
        }
    }
    cx.fx
}

/// Issues the answer to an open permission request.
pub(crate) fn decide(
    cx: &mut Ctx<'_>,
    request_id: &str,
    choice: Choice,
    decider: Decider,
) -> Result<(), DecideError> {
    let Some(AgentRequest::Permission {
        options, answering, ..
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
    cx.fx.push(Effect::Answer {
        request_id: request_id.to_string(),
        outcome,
        decider,
    });
    Ok(())
}

fn frame(cx: &mut Ctx<'_>, seq: u64, dir: Dir, msg: Message) {
    match (dir, msg.method.is_some(), msg.id.is_some()) {
        (Dir::AgentToClient, true, true) => crate::requests::agent_request(cx, seq, msg),
        (Dir::AgentToClient, true, false) => match msg.method.as_deref() {
            Some("session/update") => crate::session_update::apply(cx, seq, &msg),
            Some("$/cancel_request") => crate::requests::agent_cancelled(cx, &msg),
            Some("elicitation/complete") => crate::elicit_requests::completed(cx, &msg),
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
        (Dir::AgentToClient, false, _) => crate::requests::agent_response(cx, msg),
        (Dir::ClientToAgent, true, true) => crate::requests::client_request(cx, msg),
        (Dir::ClientToAgent, true, false) => {
            if msg.method.as_deref() == Some("session/cancel") {
                // A subagent's cancel stops only the child's work.
                match crate::subagents::cancelled_child(cx, &msg) {
                    Some(child) => crate::subagents::cancel_seen(cx, child),
                    None => cancel_seen(cx),
                }
            }
        }
        (Dir::ClientToAgent, false, _) => crate::requests::client_response(cx, seq, msg),
    }
}

/// The client sent `session/cancel`: open calls of the turn are marked cancelled at once and
/// every open permission request is answered `cancelled`. Updates are still accepted.
fn cancel_seen(cx: &mut Ctx<'_>) {
    mark_open_calls(cx, ToolStatus::Cancelled);
    for (request_id, _) in cx.s.open_permissions() {
        // Already-answered requests are refused inside `decide`; that is expected here.
        let _ = decide(cx, &request_id, Choice::Cancelled, Decider::Cancel);
    }
    crate::elicit_requests::cancel_pending(cx, Decider::Cancel);
}

/// Marks every still-open call with `status` as the turn ends; returns their ids.
pub(crate) fn mark_open_calls(cx: &mut Ctx<'_>, status: ToolStatus) -> Vec<String> {
    mark_open_calls_of(cx, status, |_| true)
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
        cx.emit(EventBody::ToolCallUpdated {
            previous_status: prev,
            status,
            call,
        });
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
