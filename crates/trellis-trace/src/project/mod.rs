//! A session's spans, made from its events — the same events whether they come live
//! from the driver or from its log read again, so a live export and an export of the log
//! made later are the same spans (ids included: they are derived, not drawn).
//!
//! The tree: `session {agent}` (the whole session), `invoke_agent {agent}` per turn (GenAI
//! semantic conventions: conversation id, agent name and version, model, finish reason),
//! `execute_tool {tool}` per tool call under its turn — or under the call that started its
//! subagent — and `permission {tool}` under its call for each wait on a permission, with
//! who decided. Arguments, outputs and prompts are recorded only when asked
//! ([`TraceInfo::content`]).
//!
//! Memory: what is kept between events is one entry per open call, per open permission
//! request and per subagent; finished spans go out through [`Tracer::take`].

use std::sync::Arc;

use rustc_hash::FxHashMap;
use trellis_core::event::{Event, EventBody};
use trellis_core::tool_call::{ToolCall, ToolStatus};
use trellis_core::wire::Usage;

use crate::span::{Kind, Span, SpanId, Status, TraceId, Value, span_id};

mod bounds;
mod ids;
mod terminals;
use bounds::{ATTRIBUTE_LIMIT, ATTRIBUTES, NAME_LIMIT, bounded, clip, clip_to, ms, nanos};
use ids::call_span;
pub use ids::{session_span, turn_span};
use terminals::Exited;
pub use terminals::terminal_span;

/// What a session's trace is made from besides its events.
#[derive(Debug, Clone)]
pub struct TraceInfo {
    pub trace_id: TraceId,
    /// Wall-clock start of the session (the log's first record), Unix seconds.
    pub started: f64,
    /// The agent as the user named it (a preset, `demo`, a command line's program).
    pub agent: String,
    /// Record tool arguments, outputs and prompts (off unless the user opts in).
    pub content: bool,
    /// Where the agent runs, when it is dialed (`server.address`, `server.port`).
    pub server: Option<(String, u16)>,
}

/// The calls still open, (start, turn) by call id: the session's own by id alone (looked
/// up without making a key: this is every call's path), a subagent's by (subagent, id).
/// An open call: its subagent (none: the session's), its id, (start, turn).
type OpenCall = (Option<Arc<str>>, String, (f64, u32));

#[derive(Debug, Default)]
struct OpenCalls {
    own: FxHashMap<String, (f64, u32)>,
    sub: FxHashMap<(Arc<str>, String), (f64, u32)>,
}

impl OpenCalls {
    fn insert(&mut self, subagent: Option<&Arc<str>>, id: &str, open: (f64, u32)) {
        match subagent {
            None => self.own.insert(id.to_string(), open),
            Some(s) => self.sub.insert((s.clone(), id.to_string()), open),
        };
    }

    fn remove(&mut self, subagent: Option<&Arc<str>>, id: &str) -> Option<(f64, u32)> {
        match subagent {
            None => self.own.remove(id),
            Some(s) => self.sub.remove(&(s.clone(), id.to_string())),
        }
    }

    /// The turn of an open call.
    fn turn_of(&self, subagent: Option<&str>, id: &str) -> Option<u32> {
        match subagent {
            None => self.own.get(id).map(|c| c.1),
            Some(s) => self
                .sub
                .iter()
                .find(|((x, i), _)| &**x == s && i == id)
                .map(|(_, c)| c.1),
        }
    }

    /// Every open call, those that started first first.
    fn drain(&mut self) -> Vec<OpenCall> {
        let mut open: Vec<_> = self
            .own
            .drain()
            .map(|(id, c)| (None, id, c))
            .chain(self.sub.drain().map(|((s, id), c)| (Some(s), id, c)))
            .collect();
        open.sort_by(|a, b| a.2.0.total_cmp(&b.2.0).then_with(|| a.1.cmp(&b.1)));
        open
    }
}

#[derive(Debug)]
struct Turn {
    n: u32,
    /// Its span's id (made once: every call of the turn names it).
    span: SpanId,
    start: f64,
    prompt: String,
    calls: u32,
}

/// Makes spans from a session's events.
#[derive(Debug)]
pub struct Tracer {
    info: TraceInfo,
    session_span: SpanId,
    agent_name: Option<String>,
    agent_version: Option<String>,
    conversation: Option<Arc<str>>,
    model: Option<String>,
    turn: Option<Turn>,
    turns: u32,
    calls: OpenCalls,
    /// Open permission requests: id → (asked at, the call's span, the tool's name).
    asks: FxHashMap<String, (f64, SpanId, String)>,
    /// The span of the call that started each subagent.
    subagents: FxHashMap<Arc<str>, SpanId>,
    usage: Option<Usage>,
    /// Commands that ended before any call named their terminal (a quick command beats
    /// the agent's update that shows it): their spans wait for that call, or the turn's end.
    exited: Vec<Exited>,
    last_t: f64,
    /// Why the session ended (its `session_ended` event).
    ended: Option<String>,
    out: Vec<Span>,
    finished: bool,
}

/// The tool's name for a call: the agent's own name for it, else its kind.
fn tool_name(call: &ToolCall) -> String {
    call.name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| call.kind.as_str().to_string())
}

impl Tracer {
    pub fn new(info: TraceInfo) -> Tracer {
        Tracer {
            session_span: session_span(&info.trace_id),
            info,
            agent_name: None,
            agent_version: None,
            conversation: None,
            model: None,
            turn: None,
            turns: 0,
            calls: OpenCalls::default(),
            asks: FxHashMap::default(),
            subagents: FxHashMap::default(),
            usage: None,
            exited: Vec::new(),
            last_t: 0.0,
            ended: None,
            out: Vec::new(),
            finished: false,
        }
    }

    pub fn trace_id(&self) -> TraceId {
        self.info.trace_id
    }

    /// The spans finished since the last call.
    pub fn take(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.out)
    }

    /// How many finished spans wait to be taken.
    pub fn ready(&self) -> usize {
        self.out.len()
    }

    fn span(
        &self,
        (span_id, parent): (SpanId, Option<SpanId>),
        (name, kind): (String, Kind),
        (start, end): (f64, f64),
        attributes: Vec<(&'static str, Value)>,
        status: Status,
    ) -> Span {
        // Every span is made here: every text in it is bounded here, whatever the agent
        // sent.
        let name = if name.len() > NAME_LIMIT {
            clip_to(&name, NAME_LIMIT)
        } else {
            name
        };
        let status = match status {
            Status::Error(m) if m.len() > ATTRIBUTE_LIMIT => {
                Status::Error(clip_to(&m, ATTRIBUTE_LIMIT))
            }
            s => s,
        };
        Span {
            trace_id: self.info.trace_id,
            span_id,
            parent,
            name,
            kind,
            start: nanos(self.info.started, start),
            end: nanos(self.info.started, end.max(start)),
            attributes: attributes
                .into_iter()
                .take(ATTRIBUTES)
                .map(|(k, v)| (k, bounded(v)))
                .collect(),
            status,
        }
    }

    /// Takes one event of the session.
    pub fn on_event(&mut self, ev: &Event) {
        if self.finished {
            return;
        }
        // Times as the log keeps them (milliseconds), so a live export and one made from
        // the log later agree to the nanosecond.
        let t = ms(ev.t);
        self.last_t = self.last_t.max(t);
        if let Some(id) = &ev.session
            && self.conversation.is_none()
        {
            self.conversation = Some(id.clone());
        }
        if !self.exited.is_empty()
            && let EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } =
                &ev.body
        {
            self.terminals_shown(call);
        }
        match &ev.body {
            EventBody::SessionStarted { agent, .. } => {
                self.agent_name = Some(agent.name.clone()).filter(|n| !n.is_empty());
                self.agent_version = Some(agent.version.clone()).filter(|v| !v.is_empty());
            }
            EventBody::ConfigChanged { options } => {
                if let Some(m) = options
                    .iter()
                    .find(|o| o.category.as_deref() == Some("model"))
                {
                    self.model = Some(m.value.to_string());
                }
            }
            EventBody::Usage { usage } => self.usage = Some(usage.clone()),
            EventBody::TurnStarted { turn, prompt } => {
                self.end_turn(t, "unended");
                self.turn = Some(Turn {
                    n: *turn,
                    span: turn_span(&self.info.trace_id, *turn),
                    start: t,
                    prompt: prompt.clone(),
                    calls: 0,
                });
            }
            EventBody::TurnEnded {
                turn, stop_reason, ..
            } if self.turn.as_ref().is_some_and(|t| t.n == *turn) => {
                self.end_turn(t, stop_reason);
            }
            EventBody::ToolCallCreated { call } => {
                let start = call.status_history.first().map_or(t, |s| ms(s.t));
                if call.status.is_terminal() {
                    self.end_call(call, start, t);
                } else {
                    self.calls
                        .insert(call.subagent.as_ref(), &call.id, (start, call.turn));
                    if let Some(t) = self.turn.as_mut() {
                        t.calls += 1;
                    }
                }
            }
            EventBody::ToolCallUpdated {
                previous_status,
                status,
                call,
            } if status.is_terminal() && !previous_status.is_some_and(ToolStatus::is_terminal) => {
                let start = self
                    .calls
                    .remove(call.subagent.as_ref(), &call.id)
                    .map_or_else(
                        || call.status_history.first().map_or(t, |s| ms(s.t)),
                        |c| c.0,
                    );
                self.end_call(call, start, t);
            }
            EventBody::PermissionRequested {
                request_id,
                call_id,
                kind,
                subagent,
                ..
            } => {
                let turn = self.open_turn_of(subagent.as_deref(), call_id);
                let parent = call_span(&self.info.trace_id, subagent.as_deref(), call_id, turn);
                let tool = kind.as_str().to_string();
                self.asks.insert(request_id.clone(), (t, parent, tool));
            }
            EventBody::PermissionResolved {
                request_id,
                outcome,
                decider,
                ..
            } => self.end_ask(request_id, outcome, decider, t),
            EventBody::Subagent { subagent } => {
                if let Some(call) = &subagent.call_id {
                    let turn = self.open_turn_of(subagent.parent.as_deref(), call);
                    let span =
                        call_span(&self.info.trace_id, subagent.parent.as_deref(), call, turn);
                    self.subagents.insert(subagent.session_id.clone(), span);
                }
            }
            EventBody::TerminalExited {
                terminal_id,
                call_id,
                started: Some(started),
                status,
            } => self.end_terminal(terminal_id, call_id.as_deref(), (ms(*started), t), status),
            // Requests answered and calls closed by the ending come after it: the
            // session's span waits for the last event ([`Tracer::finish`]).
            EventBody::SessionEnded { reason } => self.ended = Some(reason.clone()),
            _ => {}
        }
    }

    /// A permission request was answered: the wait's span, under its call.
    fn end_ask(
        &mut self,
        request_id: &str,
        outcome: &trellis_core::permission::Outcome,
        decider: &trellis_core::permission::Decider,
        t: f64,
    ) {
        if let Some((asked, parent, tool)) = self.asks.remove(request_id) {
            let id = span_id(
                &self.info.trace_id,
                &[
                    b"permission",
                    request_id.as_bytes(),
                    &asked.to_bits().to_be_bytes(),
                ],
            );
            let attributes = vec![
                (
                    "trellis.permission.request_id",
                    Value::Str(request_id.to_string()),
                ),
                ("trellis.permission.outcome", Value::Str(outcome.label())),
                (
                    "trellis.permission.decider",
                    Value::Str(decider.to_string()),
                ),
            ];
            let span = self.span(
                (id, Some(parent)),
                (format!("permission {tool}"), Kind::Internal),
                (asked, t),
                attributes,
                Status::Unset,
            );
            self.out.push(span);
        }
    }

    /// The turn a call named by a request belongs to: its own while it is open, else the
    /// turn now running.
    fn open_turn_of(&self, subagent: Option<&str>, call_id: &str) -> u32 {
        self.calls
            .turn_of(subagent, call_id)
            .or_else(|| self.turn.as_ref().map(|t| t.n))
            .unwrap_or(0)
    }

    fn end_call(&mut self, call: &ToolCall, start: f64, end: f64) {
        let trace = self.info.trace_id;
        let parent = match &call.subagent {
            Some(s) => self.subagents.get(s).copied(),
            None => None,
        }
        .or_else(|| {
            self.turn
                .as_ref()
                .filter(|t| t.n == call.turn)
                .map(|t| t.span)
        })
        .or_else(|| (call.turn > 0).then(|| turn_span(&trace, call.turn)))
        .unwrap_or(self.session_span);
        let tool = tool_name(call);
        let name = format!("execute_tool {tool}");
        let mut attributes = vec![
            ("gen_ai.operation.name", Value::Static("execute_tool")),
            ("gen_ai.tool.name", Value::Str(tool)),
            ("gen_ai.tool.call.id", Value::Str(call.id.clone())),
            ("gen_ai.tool.type", Value::Static("function")),
            ("trellis.tool.kind", Value::Static(call.kind.as_str())),
            ("trellis.tool.status", Value::Static(call.status.as_str())),
            ("trellis.tool.title", Value::Str(call.display_title())),
        ];
        if let Some(code) = trellis_core::enrich::exit_code_of(call) {
            attributes.push(("trellis.tool.exit_code", Value::Int(code)));
        }
        if !call.anomalies.is_empty() {
            attributes.push(("trellis.anomalies", Value::StrList(call.anomalies.clone())));
        }
        if let Some(s) = &call.subagent {
            attributes.push(("trellis.subagent", Value::Str(s.to_string())));
        }
        if self.info.content {
            if let Some(raw) = &call.raw_input {
                attributes.push(("gen_ai.tool.call.arguments", Value::Str(clip(raw.get()))));
            }
            if let Some(raw) = &call.raw_output {
                attributes.push(("gen_ai.tool.call.result", Value::Str(clip(raw.get()))));
            }
        }
        let status = match call.status {
            ToolStatus::Failed => Status::Error("failed".into()),
            _ => Status::Unset,
        };
        if call.status == ToolStatus::Failed {
            attributes.push(("error.type", Value::Static("tool_failed")));
        }
        let id = call_span(&trace, call.subagent.as_deref(), &call.id, call.turn);
        let span = self.span(
            (id, Some(parent)),
            (name, Kind::Internal),
            (start, end),
            attributes,
            status,
        );
        self.out.push(span);
    }

    /// Where a dialed agent runs (OpenTelemetry's `server.*`).
    fn server_attributes(&self, attributes: &mut Vec<(&'static str, Value)>) {
        if let Some((host, port)) = &self.info.server {
            attributes.push(("server.address", Value::Str(host.clone())));
            attributes.push(("server.port", Value::Int(i64::from(*port))));
        }
    }

    fn end_turn(&mut self, end: f64, stop_reason: &str) {
        self.terminals_unclaimed();
        let Some(turn) = self.turn.take() else {
            return;
        };
        self.turns += 1;
        let agent = self.info.agent.clone();
        let mut attributes = vec![
            ("gen_ai.operation.name", Value::Static("invoke_agent")),
            (
                "gen_ai.provider.name",
                Value::Str(self.agent_name.clone().unwrap_or_else(|| agent.clone())),
            ),
            ("gen_ai.agent.name", Value::Str(agent.clone())),
            (
                "gen_ai.response.finish_reasons",
                Value::StrList(vec![stop_reason.to_string()]),
            ),
            ("trellis.turn", Value::Int(i64::from(turn.n))),
            ("trellis.tool_calls", Value::Int(i64::from(turn.calls))),
        ];
        if let Some(v) = &self.agent_version {
            attributes.push(("gen_ai.agent.version", Value::Str(v.clone())));
        }
        self.server_attributes(&mut attributes);
        if let Some(c) = &self.conversation {
            attributes.push(("gen_ai.conversation.id", Value::Str(c.to_string())));
        }
        if let Some(m) = &self.model {
            attributes.push(("gen_ai.request.model", Value::Str(m.clone())));
        }
        if let Some(u) = &self.usage {
            attributes.push(("trellis.context.used", Value::Int(u.used as i64)));
            attributes.push(("trellis.context.size", Value::Int(u.size as i64)));
            if let Some(c) = &u.cost {
                attributes.push(("trellis.cost.amount", Value::Float(c.amount)));
                attributes.push(("trellis.cost.currency", Value::Str(c.currency.clone())));
            }
        }
        if self.info.content {
            attributes.push(("trellis.prompt", Value::Str(clip(&turn.prompt))));
        }
        let failed = !matches!(stop_reason, "end_turn" | "cancelled");
        if stop_reason != "end_turn" {
            attributes.push(("error.type", Value::Str(stop_reason.to_string())));
        }
        let span = self.span(
            (turn.span, Some(self.session_span)),
            (format!("invoke_agent {agent}"), Kind::Client),
            (turn.start, end),
            attributes,
            if failed {
                Status::Error(stop_reason.to_string())
            } else {
                Status::Unset
            },
        );
        self.out.push(span);
    }

    /// The session ended at `t` for `reason`: what is still open ends there, and the
    /// session's own span closes the trace.
    pub fn finish_at(&mut self, t: f64, reason: &str) {
        if self.finished {
            return;
        }
        // Calls still open end with the session.
        for (subagent, id, (start, turn)) in self.calls.drain() {
            let trace = self.info.trace_id;
            let parent = subagent
                .as_ref()
                .and_then(|s| self.subagents.get(s).copied())
                .or_else(|| self.turn.as_ref().map(|tu| turn_span(&trace, tu.n)))
                .unwrap_or(self.session_span);
            let span = self.span(
                (
                    call_span(&trace, subagent.as_deref(), &id, turn),
                    Some(parent),
                ),
                ("execute_tool unfinished".into(), Kind::Internal),
                (start, t),
                vec![
                    ("gen_ai.operation.name", Value::Static("execute_tool")),
                    ("gen_ai.tool.call.id", Value::Str(id.clone())),
                    ("trellis.tool.status", Value::Static("unfinished")),
                ],
                Status::Unset,
            );
            self.out.push(span);
        }
        self.end_turn(t, "unended");
        let agent = self.info.agent.clone();
        let mut attributes = vec![
            ("gen_ai.agent.name", Value::Str(agent.clone())),
            ("trellis.turns", Value::Int(i64::from(self.turns))),
            ("trellis.end_reason", Value::Str(reason.to_string())),
        ];
        self.server_attributes(&mut attributes);
        if let Some(c) = &self.conversation {
            attributes.push(("gen_ai.conversation.id", Value::Str(c.to_string())));
        }
        let span = self.span(
            (self.session_span, None),
            (format!("session {agent}"), Kind::Internal),
            (0.0, t),
            attributes,
            Status::Unset,
        );
        self.out.push(span);
        self.finished = true;
    }

    /// The session is over (its driver closed, its log read to the end): what is still
    /// open ends at the last event, and the session's span closes the trace.
    pub fn finish(&mut self) {
        let t = self.last_t;
        let reason = self.ended.clone().unwrap_or_else(|| "log ended".into());
        self.finish_at(t, &reason);
    }
}
