//! The tool inspector's views of one call: Result (per-kind renderers) and Call (the
//! arguments as sorted, pretty JSON in a fence; an execute call's command in a neutral
//! fence with the rest under "Other arguments"). A fence is always longer than any
//! backtick run inside it. A call with no result says why.

use ratatui_core::text::Line;
use serde_json::Value;
use trellis_core::enrich::{card_title, command_of};
use trellis_core::tool_call::ToolContent;
use trellis_core::{Session, ToolCall, ToolKind, ToolStatus};

use crate::card::output_text;
use crate::theme::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InspectorView {
    Result,
    Call,
    Diff,
    Permissions,
    Raw,
}

impl InspectorView {
    /// `K`: Result ⇄ Call (from any other view, to Call).
    pub fn toggled(self) -> InspectorView {
        match self {
            InspectorView::Call => InspectorView::Result,
            _ => InspectorView::Call,
        }
    }
}

/// `Tool Result: <title> [i/n]` or `Tool Call: <title> [i/n]`.
pub fn inspector_title(call: &ToolCall, view: InspectorView, i: usize, n: usize) -> String {
    let what = match view {
        InspectorView::Result => "Tool Result",
        InspectorView::Call => "Tool Call",
        InspectorView::Diff => "Tool Diff",
        InspectorView::Permissions => "Tool Permissions",
        InspectorView::Raw => "Tool Frames",
    };
    format!("{what}: {} [{i}/{n}]", card_title(call))
}

/// A fence longer than the longest backtick run in `body` (at least three).
pub fn fence_for(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Sorts object keys recursively.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), sorted(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(&sorted(v)).unwrap_or_else(|_| v.to_string())
}

/// One block of a call's arguments: code in a language (`""`: none), under a heading.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgBlock {
    pub heading: Option<&'static str>,
    pub lang: &'static str,
    pub body: String,
}

/// A call's arguments as the Call view and the permission dialog show them: an execute
/// call's command first (no language), the rest as sorted, pretty JSON. `None` when the
/// agent sent no arguments.
pub fn call_args(call: &ToolCall) -> Option<Vec<ArgBlock>> {
    let input: Value = call
        .raw_input
        .as_ref()
        .and_then(|r| serde_json::from_str(r.get()).ok())?;
    let mut out = Vec::new();
    match command_of(call) {
        Some(cmd) if call.kind == ToolKind::Execute => {
            out.push(ArgBlock {
                heading: None,
                lang: "",
                body: cmd,
            });
            let mut rest = input.as_object().cloned().unwrap_or_default();
            rest.remove("command");
            rest.remove("args");
            if !rest.is_empty() {
                out.push(ArgBlock {
                    heading: Some("Other arguments"),
                    lang: "json",
                    body: pretty(&Value::Object(rest)),
                });
            }
        }
        _ => out.push(ArgBlock {
            heading: None,
            lang: "json",
            body: pretty(&input),
        }),
    }
    Some(out)
}

/// What a call without arguments shows instead.
pub const NO_ARGS: &str = "(the agent sent no arguments for this call)";

/// The Call view as Markdown (what is copied): each block in a fence longer than any
/// backtick run inside it.
pub fn call_view_text(call: &ToolCall) -> String {
    let Some(blocks) = call_args(call) else {
        return format!("{NO_ARGS}\n");
    };
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if let Some(h) = b.heading {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(h);
            out.push('\n');
        }
        let f = fence_for(&b.body);
        out.push_str(&format!("{f}{}\n{}\n{f}\n", b.lang, b.body));
    }
    out
}

/// A block's code lines, highlighted when its language has a grammar.
pub fn arg_code_lines(b: &ArgBlock, theme: &Theme) -> Vec<Line<'static>> {
    let highlighted = if b.lang.is_empty() {
        None
    } else {
        trellis_text::highlight::highlight(&b.body, b.lang)
    };
    highlighted.unwrap_or_else(|| {
        b.body
            .lines()
            .map(|l| Line::styled(l.to_string(), theme.text))
            .collect()
    })
}

/// Why a call has no result to show, if it has none.
pub fn no_result_reason(call: &ToolCall, session: &Session) -> Option<&'static str> {
    if !output_text(call, session).trim().is_empty() || call.raw_output.is_some() {
        return None;
    }
    Some(match call.status {
        ToolStatus::Pending | ToolStatus::InProgress => "Still running: no output yet.",
        ToolStatus::Failed => "The call failed without output.",
        ToolStatus::Cancelled => "The call was cancelled before it produced output.",
        ToolStatus::Unfinished => "The turn ended before the call finished.",
        ToolStatus::Completed => "The call completed with no content.",
    })
}

/// Lines of the Result view, per kind.
pub fn result_lines(
    call: &ToolCall,
    session: &Session,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    result_lines_with(call, session, width, theme, None)
}

/// The Result view with display transforms applied (`decor`), or the original (`None`).
pub fn result_lines_with(
    call: &ToolCall,
    session: &Session,
    width: usize,
    theme: &Theme,
    decor: Option<&dyn crate::transcript::Decor>,
) -> Vec<Line<'static>> {
    // A call that started a subagent: the child's story, then the call's own output.
    let child = session
        .subagents
        .for_call(call)
        .and_then(|c| session.subagents.position(&c.session_id));
    if let Some(child) = child {
        let mut out = crate::subagent::inspector_lines(session, child, width, theme);
        if no_result_reason(call, session).is_none() {
            out.push(Line::default());
            out.push(Line::styled("Result", theme.title));
            out.extend(own_result_lines(call, session, width, theme, decor));
        }
        return out;
    }
    if let Some(reason) = no_result_reason(call, session) {
        return vec![Line::styled(reason, theme.dim)];
    }
    own_result_lines(call, session, width, theme, decor)
}

fn own_result_lines(
    call: &ToolCall,
    session: &Session,
    width: usize,
    theme: &Theme,
    decor: Option<&dyn crate::transcript::Decor>,
) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let head = |s: String| Line::styled(s, theme.title);
    match call.kind {
        ToolKind::Execute => {
            if let Some(cmd) = command_of(call) {
                out.push(head(format!("$ {cmd}")));
            }
            if let Some(s) = crate::card::exit_summary(call, session) {
                out.push(Line::styled(s, theme.meta));
            }
        }
        ToolKind::Read => {
            if let Some(l) = call.locations.first() {
                let at = l.line.map(|n| format!(":{n}")).unwrap_or_default();
                out.push(head(format!("{}{at}", l.path)));
            }
        }
        ToolKind::Fetch | ToolKind::Search => {
            let input: Option<Value> = call
                .raw_input
                .as_ref()
                .and_then(|r| serde_json::from_str(r.get()).ok());
            let field = |k: &str| {
                input
                    .as_ref()
                    .and_then(|v| v.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let where_ = field("url")
                .or_else(|| field("uri"))
                .or_else(|| trellis_core::enrich::paths_of(call).first().cloned());
            match (call.kind, field("pattern").or_else(|| field("query"))) {
                (ToolKind::Search, Some(p)) => out.push(head(match where_ {
                    Some(w) => format!("search {p:?} in {w}"),
                    None => format!("search {p:?}"),
                })),
                _ => out.extend(where_.map(head)),
            }
        }
        _ => {}
    }
    if call
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Diff { .. }))
    {
        out.extend(diff_lines(call, width, theme));
    }
    let mut text = output_text_without_diffs(call, session);
    if let Some(t) = decor.and_then(|d| d.transform(call, &text)) {
        text = t;
    }
    // A read's content is highlighted by its file's language; all other output keeps its
    // own ANSI colours and is never guessed to be Markdown.
    let highlighted = match (call.kind, call.locations.first(), theme.md.syntax) {
        (ToolKind::Read, Some(loc), true) => trellis_text::highlight::highlight(&text, &loc.path),
        _ => None,
    };
    let body = highlighted.unwrap_or_else(|| trellis_text::ansi::ansi_lines(&text));
    for l in body {
        out.extend(trellis_text::wrap::wrap_line(&l, width));
    }
    let has_diff = call
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Diff { .. }));
    if text.trim().is_empty()
        && !has_diff
        && let Some(raw) = &call.raw_output
    {
        let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        for l in pretty(&v).lines() {
            out.push(Line::styled(l.to_string(), theme.dim));
        }
    }
    out
}

fn output_text_without_diffs(call: &ToolCall, session: &Session) -> String {
    let mut c = call.clone();
    c.content.retain(|x| !matches!(x, ToolContent::Diff { .. }));
    output_text(&c, session)
}

/// Lines of the Call view: the Markdown of [`call_view_text`], fences kept (what is
/// copied is the same text) but dim, code highlighted.
pub fn call_lines(call: &ToolCall, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut push = |line: Line<'static>| out.extend(trellis_text::wrap::wrap_line(&line, width));
    let Some(blocks) = call_args(call) else {
        push(Line::styled(NO_ARGS, theme.text));
        return out;
    };
    for (i, b) in blocks.iter().enumerate() {
        if let Some(h) = b.heading {
            if i > 0 {
                push(Line::default());
            }
            push(Line::styled(h, theme.meta));
        }
        let f = fence_for(&b.body);
        push(Line::styled(format!("{f}{}", b.lang), theme.dim));
        for l in arg_code_lines(b, theme) {
            push(l);
        }
        push(Line::styled(f, theme.dim));
    }
    out
}

/// The lines of the call's frames, by frame number (line of the session log).
pub type FrameLines = std::collections::BTreeMap<u64, String>;

/// The lines of `view` for `call`; `log` holds the call's frames (for the Raw view;
/// `None`: the session log is not available).
pub fn view_lines(
    call: &ToolCall,
    session: &Session,
    view: InspectorView,
    width: usize,
    theme: &Theme,
    log: Option<&FrameLines>,
) -> Vec<Line<'static>> {
    view_lines_with(call, session, view, width, theme, log, None)
}

/// [`view_lines`] with display transforms applied to the Result view.
pub fn view_lines_with(
    call: &ToolCall,
    session: &Session,
    view: InspectorView,
    width: usize,
    theme: &Theme,
    log: Option<&FrameLines>,
    decor: Option<&dyn crate::transcript::Decor>,
) -> Vec<Line<'static>> {
    match view {
        InspectorView::Result => result_lines_with(call, session, width, theme, decor),
        InspectorView::Call => call_lines(call, width, theme),
        InspectorView::Diff => diff_lines(call, width, theme),
        InspectorView::Permissions => permission_lines(call, theme),
        InspectorView::Raw => {
            let frames = session
                .position_of(call)
                .map(|i| session.ledger.frames(i))
                .unwrap_or_default();
            raw_lines(&frames, log, width, theme)
        }
    }
}

/// The Diff view: every diff the call carries, with line numbers; side by side when
/// `width` has room for it.
pub fn diff_lines(call: &ToolCall, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for c in &call.content {
        if let ToolContent::Diff {
            path,
            old_text,
            new_text,
        } = c
        {
            out.push(Line::styled(format!("diff {path}"), theme.title));
            if old_text.is_none() {
                out.push(Line::styled("(new file)", theme.dim));
            }
            out.extend(crate::diff::render(
                old_text.as_deref().unwrap_or(""),
                new_text,
                width,
                theme,
            ));
            out.push(Line::default());
        }
    }
    if out.is_empty() {
        out.push(Line::styled("This call carries no diff.", theme.dim));
    }
    out
}

/// The Permission history view: every request about the call, its options, the outcome,
/// who decided and when (session seconds).
pub fn permission_lines(call: &ToolCall, theme: &Theme) -> Vec<Line<'static>> {
    if call.permissions.is_empty() {
        return vec![Line::styled(
            "No permission was asked for this call.",
            theme.dim,
        )];
    }
    let mut out = Vec::new();
    for (i, p) in call.permissions.iter().enumerate() {
        out.push(Line::styled(
            format!(
                "Request {} (id {}) at {:.1}s",
                i + 1,
                p.request_id,
                p.asked_at
            ),
            theme.title,
        ));
        for o in &p.options {
            let chosen = matches!(&p.outcome, Some(trellis_core::Outcome::Selected { option_id, .. }) if *option_id == o.option_id);
            let mark = if chosen { "●" } else { "○" };
            let kind = match o.kind {
                trellis_core::permission::OptionKind::AllowOnce => "allow once",
                trellis_core::permission::OptionKind::AllowAlways => "allow always",
                trellis_core::permission::OptionKind::RejectOnce => "reject once",
                trellis_core::permission::OptionKind::RejectAlways => "reject always",
                trellis_core::permission::OptionKind::Unknown => "other",
            };
            out.push(Line::from(format!(
                "  {mark} {} ({kind}, id {})",
                o.name, o.option_id
            )));
        }
        let outcome = match (&p.outcome, &p.decider, p.decided_at) {
            (Some(o), Some(d), Some(t)) => format!("  → {} by {d} at {t:.1}s", o.label()),
            (Some(o), _, _) => format!("  → {}", o.label()),
            (None, _, _) => "  → still waiting".to_string(),
        };
        out.push(Line::styled(outcome, theme.meta));
        // Why, in the decider's words.
        if let Some(r) = p.reason.as_deref().filter(|r| !r.is_empty()) {
            out.push(Line::styled(
                format!("    because: {}", trellis_text::one_line(r)),
                theme.meta,
            ));
        }
        out.push(Line::default());
    }
    out
}

/// The Raw view: the ACP frames that touched the call, given their lines
/// (a frame's sequence number is its 1-based line number in the log).
pub fn raw_lines(
    frames: &[u64],
    log: Option<&FrameLines>,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let Some(log) = log else {
        let why = Line::styled(
            "The session log is not available, so the raw frames cannot be shown.",
            theme.dim,
        );
        return trellis_text::wrap::wrap_line(&why, width);
    };
    let mut out = Vec::new();
    for &seq in frames {
        let Some(line) = log.get(&seq) else {
            continue;
        };
        let pretty = serde_json::from_str::<Value>(line)
            .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
            .unwrap_or_else(|_| line.to_string());
        out.push(Line::styled(format!("── frame {seq} ──"), theme.meta));
        for l in pretty.lines() {
            out.extend(trellis_text::wrap::wrap_line(
                &Line::from(l.to_string()),
                width,
            ));
        }
    }
    if out.is_empty() {
        out.push(Line::styled("No frames recorded for this call.", theme.dim));
    }
    out
}
