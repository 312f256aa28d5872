//! Facts derived from a call's `rawInput` when the agent's own fields are thin: the command
//! of an execute call, the paths a call touches, a better title. Pure, computed on demand.

use serde_json::Value;

use crate::tool_call::{ToolCall, ToolContent, ToolKind};

fn raw_input(call: &ToolCall) -> Option<Value> {
    serde_json::from_str(call.raw_input.as_ref()?.get()).ok()
}

/// The shell line of an execute call: `rawInput.command` (string, or array joined), followed
/// by `rawInput.args` when present.
pub fn command_of(call: &ToolCall) -> Option<String> {
    let input = raw_input(call)?;
    let mut parts: Vec<String> = match input.get("command")? {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(value_word).collect(),
        _ => return None,
    };
    if let Some(Value::Array(args)) = input.get("args") {
        parts.extend(args.iter().map(value_word));
    }
    let line = parts.join(" ");
    (!line.trim().is_empty()).then_some(line)
}

fn value_word(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

const PATH_KEYS: [&str; 6] = [
    "path",
    "file_path",
    "filePath",
    "abs_path",
    "notebook_path",
    "uri",
];

/// Every path the call names: locations, diff paths, and common `rawInput` path keys.
pub fn paths_of(call: &ToolCall) -> Vec<String> {
    let mut out: Vec<String> = call.locations.iter().map(|l| l.path.clone()).collect();
    for c in &call.content {
        if let ToolContent::Diff { path, .. } = c {
            out.push(path.clone());
        }
    }
    if let Some(input) = raw_input(call) {
        for key in PATH_KEYS {
            if let Some(Value::String(p)) = input.get(key) {
                out.push(p.clone());
            }
        }
    }
    out.dedup();
    out
}

/// The title to show on a card: the agent's title unless it is thin, in which case one
/// built from `rawInput` (`$ ls -la` for a command, the path for a read or edit).
pub fn card_title(call: &ToolCall) -> String {
    let thin = call.title.trim().is_empty()
        || matches!(
            call.title.trim().to_ascii_lowercase().as_str(),
            "terminal"
                | "bash"
                | "shell"
                | "run command"
                | "execute"
                | "read"
                | "read file"
                | "edit"
                | "write"
                | "edit file"
                | "write file"
                | "search"
                | "fetch"
        );
    if !thin {
        return call.title.clone();
    }
    if call.kind == ToolKind::Execute
        && let Some(cmd) = command_of(call)
    {
        return format!("$ {cmd}");
    }
    if let Some(path) = paths_of(call).into_iter().next() {
        let verb = match call.kind {
            ToolKind::Read => "Read",
            ToolKind::Edit => "Edit",
            ToolKind::Delete => "Delete",
            ToolKind::Move => "Move",
            _ => "",
        };
        let line = call.locations.first().and_then(|l| l.line);
        let loc = match line {
            Some(l) => format!("{path}:{l}"),
            None => path,
        };
        return if verb.is_empty() {
            loc
        } else {
            format!("{verb} {loc}")
        };
    }
    call.display_title()
}

/// `+added −removed` line counts over the call's diffs, if it has any.
pub fn diff_stat(call: &ToolCall) -> Option<(usize, usize)> {
    let mut any = false;
    let (mut add, mut del) = (0, 0);
    for c in &call.content {
        if let ToolContent::Diff {
            old_text, new_text, ..
        } = c
        {
            any = true;
            let (a, d) = lines_changed(old_text.as_deref().unwrap_or(""), new_text);
            add += a;
            del += d;
        }
    }
    any.then_some((add, del))
}

/// Lines added and removed between `old` and `new` (see [`crate::diff`]).
pub use crate::diff::lines_changed;

/// The exit code an execute call reported in its `rawOutput` (`exit_code`, `exitCode`,
/// `code` or `returncode`, at the top or under `metadata`), if any.
pub fn exit_code_of(call: &ToolCall) -> Option<i64> {
    let out: Value = serde_json::from_str(call.raw_output.as_ref()?.get()).ok()?;
    let find = |v: &Value| {
        ["exit_code", "exitCode", "code", "returncode"]
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_i64))
    };
    find(&out).or_else(|| out.get("metadata").and_then(find))
}

/// Seconds from the call's first status to its end; `None` while it runs.
pub fn duration_of(call: &ToolCall) -> Option<f64> {
    let start = call.status_history.first()?.t;
    let end = call
        .status_history
        .iter()
        .rev()
        .find(|s| s.status.is_terminal())?
        .t;
    Some((end - start).max(0.0))
}
