//! Commands the agent ran through Trellis (`terminal/create`): a span each, under the
//! call that shows the terminal — also when the command ended before the agent's update
//! named it (it waits for that call, or the turn's end).

use trellis_core::tool_call::ToolCall;

use super::{Tracer, call_span};
use crate::span::{Kind, SpanId, Status, TraceId, Value, span_id};

/// A command that ended: its terminal, (start, end), and how it ended.
pub(super) type Exited = (String, (f64, f64), trellis_core::wire::ExitStatus);

/// The span of terminal `terminal_id` (what its command's `TRACEPARENT` names).
pub fn terminal_span(trace: &TraceId, terminal_id: &str) -> SpanId {
    span_id(trace, &[b"terminal", terminal_id.as_bytes()])
}

impl Tracer {
    /// A command the agent ran through Trellis ended: its span, under its call — later,
    /// when no call named its terminal yet.
    pub(super) fn end_terminal(
        &mut self,
        terminal_id: &str,
        call_id: Option<&str>,
        (start, t): (f64, f64),
        status: &trellis_core::wire::ExitStatus,
    ) {
        let Some(c) = call_id else {
            self.exited
                .push((terminal_id.to_string(), (start, t), status.clone()));
            return;
        };
        let turn = self.open_turn_of(None, c);
        let parent = call_span(&self.info.trace_id, None, c, turn);
        self.terminal(terminal_id, parent, (start, t), status);
    }

    /// Commands that ended before `call` named their terminal: their spans, under it.
    pub(super) fn terminals_shown(&mut self, call: &ToolCall) {
        for content in &call.content {
            let trellis_core::tool_call::ToolContent::Terminal { terminal_id } = content else {
                continue;
            };
            if let Some(i) = self.exited.iter().position(|e| e.0 == *terminal_id) {
                let (id, times, status) = self.exited.remove(i);
                let parent = call_span(
                    &self.info.trace_id,
                    call.subagent.as_deref(),
                    &call.id,
                    call.turn,
                );
                self.terminal(&id, parent, times, &status);
            }
        }
    }

    /// Commands no call named: under the turn (or the session) they ran in.
    pub(super) fn terminals_unclaimed(&mut self) {
        let parent = self
            .turn
            .as_ref()
            .map(|t| t.span)
            .unwrap_or(self.session_span);
        for (id, times, status) in std::mem::take(&mut self.exited) {
            self.terminal(&id, parent, times, &status);
        }
    }

    /// A command's span.
    fn terminal(
        &mut self,
        terminal_id: &str,
        parent: SpanId,
        (start, t): (f64, f64),
        status: &trellis_core::wire::ExitStatus,
    ) {
        let trace = self.info.trace_id;
        let mut attributes = vec![("trellis.terminal.id", Value::Str(terminal_id.to_string()))];
        if let Some(code) = status.exit_code {
            attributes.push(("trellis.terminal.exit_code", Value::Int(code)));
        }
        if let Some(sig) = &status.signal {
            attributes.push(("trellis.terminal.signal", Value::Str(sig.clone())));
        }
        let failed = status.exit_code.is_some_and(|c| c != 0) || status.signal.is_some();
        let span = self.span(
            (terminal_span(&trace, terminal_id), Some(parent)),
            ("terminal".into(), Kind::Internal),
            (start, t),
            attributes,
            if failed {
                Status::Error("the command failed".into())
            } else {
                Status::Unset
            },
        );
        self.out.push(span);
    }
}
