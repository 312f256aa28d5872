//! The user's own commands (`!cmd` at the prompt): a card on the record beside the
//! agent's calls, marked as the user's by its id ([`USER_CALL`] and the terminal's id),
//! its output the terminal's, its end the terminal's exit. A turn's end leaves it running,
//! and an agent cannot claim its id.

use super::ctx::Ctx;
use crate::event::EventBody;
use crate::tool_call::{ToolCallPatch, ToolContent, ToolKind, ToolStatus};

use crate::tool_call::USER_CALL;

pub(crate) fn started(cx: &mut Ctx<'_>, terminal_id: String, command: String, cwd: String) {
    let input = serde_json::json!({"command": command, "cwd": cwd}).to_string();
    let mut patch = ToolCallPatch {
        tool_call_id: format!("{USER_CALL}{terminal_id}").into(),
        title: Some(format!("! {command}")),
        kind: Some(ToolKind::Execute),
        status: Some(ToolStatus::InProgress),
        content: Some(vec![ToolContent::Terminal {
            terminal_id: terminal_id.clone(),
        }]),
        raw_input: crate::raw_json::RawJson::from_string(input).ok(),
        name: Some("user command".into()),
        ..ToolCallPatch::default()
    };
    let applied = super::subagents::apply_call(cx, None, &mut patch, true);
    let term = cx.s.terminals.entry(terminal_id.clone()).or_default();
    term.call = Some(applied.index);
    if term.command.is_empty() {
        term.command = command;
    }
    if term.started.is_none() {
        term.started = Some(cx.t);
    }
    // A command that ended before its record was read (its exit came first).
    let done = term.exit.as_ref().map(|e| e.exit_code == Some(0));
    let call = cx.s.ledger.snapshot(applied.index);
    cx.emit_about(applied.index, EventBody::ToolCallCreated { call });
    if let Some(ok) = done {
        ended(cx, &terminal_id, ok);
    }
}

/// What the user's commands printed, for the next prompt (`!!cmd`): the newest call of
/// `command`, as [`terminal_output_for_agent`] gives it.
pub fn output_for_agent(session: &crate::Session, command: &str, limit: usize) -> Option<String> {
    terminal_output_for_agent(session, newest_run(session, command)?, limit)
}

/// The terminal of the newest of the user's calls of `command`.
pub fn newest_run<'a>(session: &'a crate::Session, command: &str) -> Option<&'a str> {
    session
        .terminals
        .iter()
        .filter(|(id, t)| {
            t.command == command
                && session
                    .ledger
                    .position(&format!("{USER_CALL}{id}"))
                    .is_some()
        })
        .max_by(|a, b| {
            a.1.started
                .partial_cmp(&b.1.started)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|(id, _)| id.as_str())
}

/// What the user's command in terminal `terminal_id` printed, for the next prompt (`s` on
/// its card, or `!!cmd`): its output cut to `limit` bytes from the front (and said), and
/// its exit; `None` when that terminal is not a user's command.
pub fn terminal_output_for_agent(
    session: &crate::Session,
    terminal_id: &str,
    limit: usize,
) -> Option<String> {
    session
        .ledger
        .position(&format!("{USER_CALL}{terminal_id}"))?;
    let term = session.terminals.get(terminal_id)?;
    let command = &term.command;
    let out = &term.output;
    let mut cut = out.len().saturating_sub(limit);
    while !out.is_char_boundary(cut) {
        cut += 1;
    }
    // From the start of a line.
    if cut > 0
        && let Some(nl) = out[cut..].find('\n')
    {
        cut += nl + 1;
    }
    let end = match &term.exit {
        Some(e) => match (e.exit_code, &e.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by {s}"),
            (None, None) => "ended".to_string(),
        },
        None => "still running".to_string(),
    };
    let dropped = term.dropped + cut;
    let head = if dropped > 0 {
        format!("[… {dropped} bytes left out …]\n")
    } else {
        String::new()
    };
    let text = out[cut..].trim_end();
    // A fence longer than any run of backticks in it: the output cannot close it.
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    Some(format!(
        "Output of my command `{command}` ({end}):\n{fence}\n{head}{text}\n{fence}"
    ))
}

/// The terminal `terminal_id` exited: its user's call, if it has one, ends with it.
pub(crate) fn ended(cx: &mut Ctx<'_>, terminal_id: &str, ok: bool) {
    let id = format!("{USER_CALL}{terminal_id}");
    if cx.s.ledger.position(&id).is_none() {
        return;
    }
    let status = if ok {
        ToolStatus::Completed
    } else {
        ToolStatus::Failed
    };
    let mut patch = ToolCallPatch {
        tool_call_id: id.into(),
        status: Some(status),
        ..ToolCallPatch::default()
    };
    let applied = super::subagents::apply_call(cx, None, &mut patch, true);
    let call = cx.s.ledger.snapshot(applied.index);
    cx.emit_about(
        applied.index,
        EventBody::ToolCallUpdated {
            previous_status: applied.previous_status,
            status,
            call,
        },
    );
}
