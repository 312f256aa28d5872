//! What the index keeps of a session log, read one record at a time.
//!
//! The extractor is a small state machine over the log's records: it follows turns
//! (a `session/prompt` request and its response), joins message chunks into messages,
//! merges tool call updates and attaches terminal output to its call. It holds only what
//! is still open — the current message, calls not finished yet, terminals not claimed —
//! so a log of any length is read in bounded memory; a finished call is handed to the
//! sink at once. At every turn end nothing is open, and the extractor reports a
//! checkpoint: indexing can later resume from there with a fresh extractor.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::content::{
    Json, OpenCall, Unclaimed, at, block_text, field, finished, floor, merge, push_capped, str_of,
    without_escapes,
};
pub use crate::doc::{CallRow, Doc, DocKind, Facts, OUTPUT_CAP, Sink, TEXT_CAP};

/// The state machine; see the module documentation.
#[derive(Default)]
pub struct Extractor {
    pub facts: Facts,
    /// The title of the last title document handed over (before the resume point, when
    /// resuming): a title sent again is not indexed again.
    pub last_title: Option<String>,
    turn: u32,
    prompt_ids: Vec<String>,
    message: Option<Doc>,
    calls: HashMap<String, OpenCall>,
    terminals: HashMap<String, Unclaimed>,
    /// The offset just after the line being read.
    next: u64,
    new_session_ids: Vec<String>,
    /// The agent was dialed (the header says where it runs), not started here.
    remote: bool,
    /// A `session/load` is unanswered: what the agent sends meanwhile is the history it
    /// replays, indexed already with the log it came from.
    load_id: Option<String>,
}

impl Extractor {
    /// An extractor resuming after `turn` finished turns (at a checkpoint).
    pub fn resuming(turn: u32) -> Extractor {
        Extractor {
            turn,
            ..Extractor::default()
        }
    }

    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Reads one complete line (without its newline) that starts at `offset`; `next` is
    /// the offset just after it.
    pub fn feed(&mut self, line: &[u8], offset: u64, next: u64, sink: &mut dyn Sink) {
        self.next = next;
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // A record: `{"t": seconds, "dir": …, "msg": …}`; anything else is a bad line.
        let rec = serde_json::from_slice::<Json<'_>>(line);
        let Some((t, dir, msg)) = rec.as_ref().ok().and_then(record) else {
            self.facts.bad_lines += 1;
            return;
        };
        if t.is_finite() && t > self.facts.last_t {
            self.facts.last_t = t;
        }
        let (Some(dir), Some(msg)) = (dir, msg) else {
            return;
        };
        match dir {
            "client" => self.client(msg, offset),
            "client_to_agent" => self.outgoing(msg, offset, sink),
            "agent_to_client" => self.incoming(msg, offset, next, sink),
            _ => {}
        }
    }

    /// The end of what there is to read: whatever is open is handed over as it stands
    /// (no checkpoint: it may still change).
    pub fn finish(&mut self, sink: &mut dyn Sink) {
        self.close_message(sink);
        let mut open: Vec<OpenCall> = self.calls.drain().map(|(_, c)| c).collect();
        open.sort_by_key(|c| c.row.offset);
        for c in open {
            self.emit_call(c, sink);
        }
    }

    fn client(&mut self, msg: &Json<'_>, offset: u64) {
        let f = &mut self.facts;
        match str_of(msg, "type") {
            Some("session_log") => {
                f.agent = str_of(msg, "agent").map(str::to_string);
                f.cwd = str_of(msg, "cwd").map(str::to_string);
                f.started = field(msg, "started").and_then(Json::as_f64);
                f.command = str_of(msg, "command").map(str::to_string);
                f.continues = str_of(msg, "continues").map(str::to_string);
                f.continues_at = field(msg, "continues_at").and_then(Json::as_i64);
                f.handed_over = field(msg, "handed_over").and_then(Json::as_bool) == Some(true);
                f.launched_in = str_of(msg, "launched_in").map(str::to_string);
                self.remote = field(msg, "remote").is_some_and(|r| !r.is_null());
                f.worktree = field(msg, "worktree")
                    .and_then(|w| str_of(w, "label"))
                    .map(str::to_string);
            }
            Some("session_ended") => f.end_reason = str_of(msg, "reason").map(str::to_string),
            Some("agent_exited") if f.end_reason.is_none() => {
                // An agent elsewhere did not exit: its connection ended.
                let message = str_of(msg, "message").unwrap_or("");
                f.end_reason = Some(if self.remote {
                    trellis_core::session::connection_ended(message)
                } else {
                    format!("agent exited: {message}")
                });
            }
            Some("terminal_output") => {
                let (Some(tid), Some(data)) = (str_of(msg, "terminal_id"), str_of(msg, "data"))
                else {
                    return;
                };
                let owner = self
                    .calls
                    .values_mut()
                    .find(|c| c.terminals.iter().any(|t| t == tid));
                match owner {
                    Some(c) => push_capped(&mut c.output, data, OUTPUT_CAP),
                    None => {
                        let u =
                            self.terminals
                                .entry(tid.to_string())
                                .or_insert_with(|| Unclaimed {
                                    text: String::new(),
                                    from: offset,
                                });
                        push_capped(&mut u.text, data, OUTPUT_CAP);
                    }
                }
            }
            _ => {}
        }
    }

    fn outgoing(&mut self, msg: &Json<'_>, offset: u64, sink: &mut dyn Sink) {
        match str_of(msg, "method") {
            Some("session/prompt") => {
                self.close_message(sink);
                if let Some(id) = id_of(msg) {
                    self.prompt_ids.push(id);
                }
                self.turn += 1;
                let mut text = String::new();
                if let Some(blocks) = at(msg, &["params", "prompt"]).and_then(Json::as_array) {
                    for b in blocks {
                        block_text(b, &mut text);
                    }
                }
                if !text.is_empty() {
                    text.truncate(floor(&text, TEXT_CAP));
                    sink.doc(Doc {
                        kind: DocKind::Prompt,
                        turn: self.turn,
                        call_id: None,
                        offset,
                        from: offset,
                        to: self.next,
                        text,
                        head: String::new(),
                    });
                }
            }
            Some("session/load") => {
                if let Some(id) = at(msg, &["params", "sessionId"]).and_then(Json::as_str) {
                    self.facts.acp_id = Some(id.to_string());
                }
                self.load_id = id_of(msg);
            }
            Some("session/new") => {
                if let Some(id) = id_of(msg) {
                    self.new_session_ids.push(id);
                }
            }
            _ => {}
        }
    }

    fn incoming(&mut self, msg: &Json<'_>, offset: u64, next: u64, sink: &mut dyn Sink) {
        if field(msg, "method").is_none() {
            // A response.
            let Some(id) = id_of(msg) else { return };
            if self.load_id.as_ref() == Some(&id) {
                self.load_id = None;
            } else if let Some(i) = self.prompt_ids.iter().position(|p| *p == id) {
                self.prompt_ids.swap_remove(i);
                self.end_turn(msg, sink);
                if self.prompt_ids.is_empty() {
                    sink.checkpoint(next, self.turn);
                }
            } else if let Some(i) = self.new_session_ids.iter().position(|p| *p == id) {
                self.new_session_ids.swap_remove(i);
                if let Some(s) = at(msg, &["result", "sessionId"]).and_then(Json::as_str) {
                    self.facts.acp_id = Some(s.to_string());
                }
            } else if let Some(info) = at(msg, &["result", "agentInfo"]) {
                self.facts.agent_title = str_of(info, "title")
                    .or_else(|| str_of(info, "name"))
                    .map(str::to_string);
                self.facts.agent_name = str_of(info, "name").map(str::to_string);
            }
            return;
        }
        if self.load_id.is_some() {
            return;
        }
        match str_of(msg, "method") {
            Some("session/update") => {}
            // The call a permission is asked for, as the request shows it (an edit's
            // diff, often there only: a rejected edit has no other).
            Some("session/request_permission") => {
                if let Some(call) = at(msg, &["params", "toolCall"]) {
                    self.announced(call, offset, sink);
                }
                return;
            }
            _ => return,
        }
        let Some(update) = at(msg, &["params", "update"]) else {
            return;
        };
        match str_of(update, "sessionUpdate") {
            Some(kind @ ("agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk")) => {
                let kind = match kind {
                    "agent_message_chunk" => DocKind::Message,
                    "agent_thought_chunk" => DocKind::Thought,
                    _ => DocKind::Prompt,
                };
                if self.message.as_ref().is_some_and(|m| m.kind != kind) {
                    self.close_message(sink);
                }
                let m = self.message.get_or_insert_with(|| Doc {
                    kind,
                    turn: self.turn,
                    call_id: None,
                    offset,
                    from: offset,
                    to: offset,
                    text: String::new(),
                    head: String::new(),
                });
                if let Some(c) = field(update, "content") {
                    let mut text = String::new();
                    block_text(c, &mut text);
                    push_capped(&mut m.text, &text, TEXT_CAP);
                }
            }
            Some("tool_call") => self.announced(update, offset, sink),
            Some("tool_call_update") => {
                self.close_message(sink);
                let Some(id) = str_of(update, "toolCallId") else {
                    return;
                };
                // An update of a call already handed over (late content) is not indexed.
                let Some(call) = self.calls.get_mut(id) else {
                    return;
                };
                merge(call, update, &mut self.terminals);
                if finished(&call.row.status) {
                    self.finish_call(id, sink);
                }
            }
            Some("session_info_update") => {
                // Searchable once per distinct title (agents re-send it every turn).
                if let Some(title) = str_of(update, "title")
                    && self.last_title.as_deref() != Some(title)
                {
                    self.facts.title = Some(title.to_string());
                    self.last_title = Some(title.to_string());
                    sink.doc(Doc {
                        kind: DocKind::Title,
                        turn: self.turn,
                        call_id: None,
                        offset,
                        from: offset,
                        to: self.next,
                        text: title.to_string(),
                        head: String::new(),
                    });
                }
            }
            Some("usage_update") => {
                let f = &mut self.facts;
                f.tokens_used = field(update, "used")
                    .and_then(Json::as_i64)
                    .or(f.tokens_used);
                f.tokens_size = field(update, "size")
                    .and_then(Json::as_i64)
                    .or(f.tokens_size);
                if let Some(c) = field(update, "cost") {
                    f.cost = field(c, "amount").and_then(Json::as_f64).or(f.cost);
                    f.currency = str_of(c, "currency")
                        .map(str::to_string)
                        .or(f.currency.take());
                }
            }
            _ => self.close_message(sink),
        }
    }

    fn end_turn(&mut self, response: &Json<'_>, sink: &mut dyn Sink) {
        self.close_message(sink);
        // Token totals some agents put on the prompt response.
        if let Some(total) =
            at(response, &["result", "usage", "totalTokens"]).and_then(Json::as_i64)
        {
            self.facts.tokens_used = Some(self.facts.tokens_used.unwrap_or(0).max(total));
        }
        if self.prompt_ids.is_empty() {
            let mut open: Vec<OpenCall> = self.calls.drain().map(|(_, c)| c).collect();
            open.sort_by_key(|c| c.row.offset);
            for c in open {
                self.emit_call(c, sink);
            }
            self.terminals.clear();
        }
    }

    fn close_message(&mut self, sink: &mut dyn Sink) {
        if let Some(mut m) = self.message.take().filter(|m| !m.text.trim().is_empty()) {
            m.to = self.next;
            if let Cow::Owned(t) = without_escapes(&m.text) {
                m.text = t;
            }
            sink.doc(m);
        }
    }

    /// A `tool_call`, or the call of a permission request: a call announced, or, when it
    /// is open already, an update of it.
    fn announced(&mut self, update: &Json<'_>, offset: u64, sink: &mut dyn Sink) {
        self.close_message(sink);
        let Some(id) = str_of(update, "toolCallId") else {
            return;
        };
        let call = self
            .calls
            .entry(id.to_string())
            .or_insert_with(|| OpenCall {
                row: CallRow {
                    call_id: id.to_string(),
                    turn: self.turn,
                    status: "pending".into(),
                    kind: "other".into(),
                    offset,
                    ..CallRow::default()
                },
                from: offset,
                ..OpenCall::default()
            });
        merge(call, update, &mut self.terminals);
        if finished(&call.row.status) {
            self.finish_call(id, sink);
        }
    }

    fn finish_call(&mut self, id: &str, sink: &mut dyn Sink) {
        if let Some(c) = self.calls.remove(id) {
            self.emit_call(c, sink);
        }
    }

    fn emit_call(&mut self, mut c: OpenCall, sink: &mut dyn Sink) {
        for t in &c.terminals {
            if let Some(out) = self.terminals.remove(t) {
                push_capped(&mut c.output, &out.text, OUTPUT_CAP);
                c.from = c.from.min(out.from);
            }
        }
        if let Cow::Owned(t) = without_escapes(&c.output) {
            c.output = t;
        }
        let mut head = c.row.title.clone();
        if let Some(cmd) = &c.row.command {
            head.push('\n');
            head.push_str(cmd);
        }
        for p in &c.row.paths {
            head.push('\n');
            head.push_str(p);
        }
        let (turn, offset, from, to) = (c.row.turn, c.row.offset, c.from, self.next);
        sink.doc(Doc {
            kind: DocKind::Call,
            turn,
            call_id: Some(c.row.call_id.clone()),
            offset,
            from,
            to,
            text: c.output,
            head,
        });
        sink.call(c.row);
    }
}

/// A record's time, direction and message, when its fields have their types (a missing
/// one is 0, none and none).
fn record<'v>(rec: &'v Json<'_>) -> Option<(f64, Option<&'v str>, Option<&'v Json<'v>>)> {
    let rec = rec.as_object()?;
    let t = match rec.get("t") {
        None => 0.0,
        Some(t) => t.as_f64()?,
    };
    let dir = match rec.get("dir") {
        None | Some(Json::Null) => None,
        Some(d) => Some(d.as_str()?),
    };
    let msg = rec.get("msg").filter(|m| !m.is_null());
    Some((t, dir, msg))
}

fn id_of(msg: &Json<'_>) -> Option<String> {
    let id = field(msg, "id")?;
    trellis_core::wire::canonical_id(&serde_json::to_string(id).ok()?)
        .ok()
        .flatten()
}
