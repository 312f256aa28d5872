//! Span ids derived from the trace id and what a span is (a turn's number, a call's id
//! and turn), never drawn: a live export and one made later from the log name the same
//! spans.

use crate::span::{SpanId, TraceId, span_id};

/// The span id of turn `n` of a trace (what `_meta.traceparent` on that turn's prompt
/// names).
pub fn turn_span(trace: &TraceId, n: u32) -> SpanId {
    span_id(trace, &[b"turn", &n.to_be_bytes()])
}

/// The span id of the whole session (what the agent's `TRACEPARENT` names).
pub fn session_span(trace: &TraceId) -> SpanId {
    span_id(trace, &[b"session"])
}

/// A call's span: agents may use a call id again in a later turn, so the turn is in it.
pub(super) fn call_span(trace: &TraceId, subagent: Option<&str>, id: &str, turn: u32) -> SpanId {
    span_id(
        trace,
        &[
            b"call",
            subagent.unwrap_or("").as_bytes(),
            id.as_bytes(),
            &turn.to_be_bytes(),
        ],
    )
}
