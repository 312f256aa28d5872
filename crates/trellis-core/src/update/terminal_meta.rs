//! Command output that arrives in a tool call's `_meta` instead of through
//! `terminal/create` (Codex's adapter): `terminal_output_delta` / `terminal_output`
//! (`{terminal_id, data}`, appended) and `terminal_exit` (`{terminal_id, exit_code}`),
//! the terminal id being the call's own id. It becomes the call's terminal output like a
//! client terminal's: live in the card, in the inspector, with its exit code; the log has
//! it in the agent's frames. Trellis advertises `_meta.terminal_output_delta` so the
//! adapter streams it (else it sends the output once, at the end).

use serde_json::Value;

use super::ctx::Ctx;
use crate::event::EventBody;
use crate::session::TerminalState;
use crate::tool_call::ToolContent;
use crate::wire::ExitStatus;

/// Appends `data` to a terminal's output, dropping the front beyond the cap.
pub(crate) fn append(term: &mut TerminalState, data: &str) {
    term.output.push_str(data);
    if term.output.len() > crate::session::TERMINAL_OUTPUT_CAP {
        let mut cut = term.output.len() - crate::session::TERMINAL_OUTPUT_CAP;
        while !term.output.is_char_boundary(cut) {
            cut += 1;
        }
        term.output.drain(..cut);
        term.dropped += cut;
    }
}

/// The command of a call, from its `rawInput` (`command` as a string or an argv).
fn command_of(raw: Option<&crate::raw_json::RawJson>) -> String {
    let Some(v) = raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok()) else {
        return String::new();
    };
    match v.get("command") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Applies the terminal conventions of `meta` (a call's `_meta`) to ledger call `index`.
/// True when something changed (the call's output or exit).
pub(crate) fn apply(cx: &mut Ctx<'_>, index: usize, meta: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(meta) else {
        return false;
    };
    let id_of = |o: &Value| {
        o.get("terminal_id")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let mut changed = false;
    for key in ["terminal_output", "terminal_output_delta"] {
        let Some(o) = v.get(key) else { continue };
        let (Some(tid), Some(data)) = (id_of(o), o.get("data").and_then(Value::as_str)) else {
            continue;
        };
        let command = command_of(cx.s.ledger.at(index).raw_input.as_ref());
        let t = cx.t;
        let term = cx.s.terminals.entry(tid.clone()).or_default();
        if term.command.is_empty() {
            term.command = command;
        }
        term.started.get_or_insert(t);
        append(term, data);
        attach(cx, index, &tid);
        changed = true;
    }
    if let Some(o) = v.get("terminal_exit")
        && let Some(tid) = id_of(o)
    {
        let status = ExitStatus {
            exit_code: o.get("exit_code").and_then(Value::as_i64),
            signal: o.get("signal").and_then(Value::as_str).map(str::to_string),
        };
        let term = cx.s.terminals.entry(tid.clone()).or_default();
        term.exit = Some(status.clone());
        let started = term.started;
        attach(cx, index, &tid);
        let call_id = Some(cx.s.ledger.at(index).id.clone());
        cx.emit_about(
            index,
            EventBody::TerminalExited {
                terminal_id: tid,
                call_id,
                started,
                status,
            },
        );
        changed = true;
    }
    changed
}

/// The call shows terminal `tid` (as a client terminal embedded in its content would).
fn attach(cx: &mut Ctx<'_>, index: usize, tid: &str) {
    cx.s.terminals.entry(tid.to_string()).or_default().call = Some(index);
    let call = cx.s.ledger.at_mut(index);
    let has = call
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Terminal { terminal_id } if terminal_id == tid));
    if !has {
        call.content.push(ToolContent::Terminal {
            terminal_id: tid.to_string(),
        });
    }
    call.rev = call.rev.wrapping_add(1);
}
