//! Tool cards: one line by default — live status, kind icon, title (enriched from
//! `rawInput` when thin), elapsed time, a size or exit summary and the permission outcome
//! with its decider — and, by per-kind policy, a preview of the output under it. A failed
//! call always previews a few lines so failures are never missed.

use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use trellis_core::enrich::card_title;
use trellis_core::summary::{permission_summary, size_summary};
use trellis_core::tool_call::ToolContent;
use trellis_core::{Session, ToolCall, ToolKind, ToolStatus};

use crate::theme::Theme;

/// How much output a card shows under its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPolicy {
    Hidden,
    Preview(usize),
    Full,
}

/// Lines of output a failed call shows by default: its whole error, up to this.
pub const FAILED_LINES: usize = 20;

/// Output policy per kind (default hidden), and how many lines a failed call shows at
/// least (its error is what the user needs; a failure is never folded away).
#[derive(Debug, Clone)]
pub struct OutputPolicies {
    pub by_kind: Vec<(ToolKind, OutputPolicy)>,
    pub failed_preview: usize,
}

impl Default for OutputPolicies {
    fn default() -> Self {
        OutputPolicies {
            by_kind: Vec::new(),
            failed_preview: FAILED_LINES,
        }
    }
}

impl OutputPolicies {
    pub fn for_call(&self, call: &ToolCall) -> OutputPolicy {
        let p = self
            .by_kind
            .iter()
            .find(|(k, _)| *k == call.kind)
            .map(|(_, p)| *p)
            .unwrap_or(OutputPolicy::Hidden);
        match (call.status, p) {
            (ToolStatus::Failed, OutputPolicy::Hidden) => {
                OutputPolicy::Preview(self.failed_preview)
            }
            (ToolStatus::Failed, OutputPolicy::Preview(n)) if n < self.failed_preview => {
                OutputPolicy::Preview(self.failed_preview)
            }
            _ => p,
        }
    }
}

/// What a card needs besides the call.
#[derive(Debug, Clone, Copy)]
pub struct CardCtx<'a> {
    pub theme: &'a Theme,
    pub width: usize,
    /// Session time now (for the elapsed time of running calls).
    pub now: f64,
    /// Animation frame for the spinner.
    pub frame: usize,
    pub selected: bool,
    /// The call is waiting on the permission dialog.
    pub highlighted: bool,
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn kind_icon(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "≡",
        ToolKind::Edit => "✎",
        ToolKind::Delete => "⌫",
        ToolKind::Move => "⇄",
        ToolKind::Search => "⌕",
        ToolKind::Execute => "»",
        ToolKind::Think => "∴",
        ToolKind::Fetch => "⇣",
        ToolKind::SwitchMode => "⇆",
        ToolKind::Other => "•",
    }
}

fn glyph(call: &ToolCall, frame: usize) -> &'static str {
    match call.status {
        ToolStatus::Pending | ToolStatus::InProgress => SPINNER[frame % SPINNER.len()],
        s => trellis_core::summary::status_glyph(s),
    }
}

fn elapsed(call: &ToolCall, now: f64) -> Option<String> {
    let secs = match call.duration() {
        Some(d) => d,
        None if !call.status.is_terminal() => (now - call.status_history.first()?.t).max(0.0),
        None => return None,
    };
    // The time a human took to answer is not the call's: said apart.
    let asked: f64 = call
        .permissions
        .iter()
        .map(|p| (p.decided_at.unwrap_or(now) - p.asked_at).max(0.0))
        .sum();
    let asked = asked.min(secs);
    let waiting = call.permissions.iter().any(|p| p.decided_at.is_none());
    Some(if asked >= 0.05 {
        let how = if waiting { "waiting" } else { "to answer" };
        format!("{} + {} {how}", seconds(secs - asked), seconds(asked))
    } else {
        seconds(secs)
    })
}

fn seconds(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", (secs / 60.0) as u64, secs as u64 % 60)
    }
}

/// `exit 1` / `killed by SIGKILL` for a call with a finished terminal.
pub fn exit_summary(call: &ToolCall, session: &Session) -> Option<String> {
    call.content.iter().find_map(|c| match c {
        ToolContent::Terminal { terminal_id } => {
            let exit = session.terminals.get(terminal_id)?.exit.as_ref()?;
            Some(match (&exit.exit_code, &exit.signal) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(sig)) => format!("killed by {sig}"),
                _ => "exited".into(),
            })
        }
        _ => None,
    })
}

/// The card's first line, clipped to the width.
pub fn card_line(call: &ToolCall, session: &Session, cx: &CardCtx<'_>) -> Line<'static> {
    let t = cx.theme;
    let mut meta: Vec<String> = Vec::new();
    // A broken permission rule first: it is what the user must not miss.
    for a in &call.anomalies {
        meta.push(format!("⚑ {}", trellis_core::anomaly::label(a)));
    }
    if let Some(e) = elapsed(call, cx.now) {
        meta.push(e);
    }
    if let Some(s) = size_summary(call, session) {
        meta.push(s);
    }
    if let Some(p) = permission_summary(call) {
        meta.push(p);
    }
    if matches!(call.status, ToolStatus::Cancelled | ToolStatus::Unfinished) {
        meta.push(call.status.as_str().into());
    }
    let head = format!("{} {} ", glyph(call, cx.frame), kind_icon(call.kind));
    let meta = if meta.is_empty() {
        String::new()
    } else {
        format!("  {}", meta.join(" · "))
    };
    // What the agent wrote, on one line with nothing that could drive the terminal.
    let title = trellis_text::one_line(&card_title(call)).into_owned();
    let meta = trellis_text::one_line(&meta).into_owned();
    // The title gives way first: meta (status facts) stays visible on narrow screens.
    let room = cx.width.saturating_sub(trellis_text::display_width(&head));
    let meta_w = trellis_text::display_width(&meta);
    let (title, meta) = if meta_w + 8 <= room {
        (trellis_text::clip(&title, room - meta_w).into_owned(), meta)
    } else {
        let title = trellis_text::clip(&title, room).into_owned();
        let left = room.saturating_sub(trellis_text::display_width(&title));
        (title, trellis_text::clip(&meta, left).into_owned())
    };
    let base = if cx.highlighted {
        t.highlight
    } else if cx.selected {
        t.selected
    } else {
        Style::default()
    };
    Line::from(vec![
        Span::styled(head, base.patch(t.status(call.status))),
        Span::styled(title, base.patch(t.title)),
        Span::styled(meta, base.patch(t.meta)),
    ])
}

/// Display text of a call's output (text content, terminal output, diffs as new text).
pub fn output_text(call: &ToolCall, session: &Session) -> String {
    let mut out = String::new();
    for c in &call.content {
        match c {
            ToolContent::Text { text } => out.push_str(&text.load()),
            ToolContent::Terminal { terminal_id } => {
                if let Some(term) = session.terminals.get(terminal_id) {
                    out.push_str(&term.output);
                }
            }
            ToolContent::Diff { path, .. } => out.push_str(&format!("(diff of {path})")),
            // Drawn as the tree under the card (see `crate::subagent`).
            ToolContent::Session { .. } => {}
            ToolContent::Block { block } => {
                // Raw content blocks, verbatim (long base64 payloads shortened).
                let mut v: serde_json::Value =
                    serde_json::from_str(block.get()).unwrap_or_default();
                if let Some(data) = v
                    .get_mut("data")
                    .filter(|d| d.as_str().is_some_and(|s| s.len() > 64))
                {
                    let n = data.as_str().map(str::len).unwrap_or(0);
                    *data = serde_json::Value::String(format!("<{n} bytes of base64>"));
                }
                out.push_str(&v.to_string());
            }
        }
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// The output lines shown under a card (by policy), already indented and clipped.
pub fn preview_lines(
    call: &ToolCall,
    session: &Session,
    cx: &CardCtx<'_>,
    policy: OutputPolicy,
) -> Vec<Line<'static>> {
    if policy == OutputPolicy::Hidden {
        return Vec::new();
    }
    preview_of_text(&output_text(call, session), cx, policy)
}

/// [`preview_lines`] of an output text already at hand (e.g. after display transforms).
pub fn preview_of_text(text: &str, cx: &CardCtx<'_>, policy: OutputPolicy) -> Vec<Line<'static>> {
    let limit = match policy {
        OutputPolicy::Hidden => return Vec::new(),
        OutputPolicy::Preview(n) => n,
        OutputPolicy::Full => usize::MAX,
    };
    let lines = trellis_text::ansi::ansi_lines(text);
    let total = lines.len();
    let gutter = "  │ ";
    let room = cx.width.saturating_sub(trellis_text::display_width(gutter));
    let mut out: Vec<Line<'static>> = lines
        .into_iter()
        .take(limit)
        .map(|l| {
            let mut spans = vec![Span::styled(gutter, cx.theme.dim)];
            spans.extend(clip_spans(l, room));
            Line::from(spans)
        })
        .collect();
    if total > limit {
        let more = total - limit;
        let noun = if more == 1 { "line" } else { "lines" };
        let marker = format!("  └ … {more} more {noun}");
        out.push(Line::styled(
            trellis_text::clip(&marker, cx.width).into_owned(),
            cx.theme.dim,
        ));
    }
    out
}

/// Clips a styled line to `room` columns (plain spans, so `clip` applies per span).
pub fn clip_spans(line: Line<'static>, room: usize) -> Vec<Span<'static>> {
    trellis_text::clip_pieces(
        line.spans,
        room,
        |s| &s.content,
        |s, t| Span::styled(t, s.style),
    )
}

/// Number of lines a card takes (without rendering it).
pub fn card_height(call: &ToolCall, session: &Session, policy: OutputPolicy) -> usize {
    let limit = match policy {
        OutputPolicy::Hidden => return 1,
        OutputPolicy::Preview(n) => n,
        OutputPolicy::Full => usize::MAX,
    };
    let total = output_text(call, session).lines().count();
    1 + total.min(limit) + usize::from(total > limit)
}

/// The whole card.
pub fn card(
    call: &ToolCall,
    session: &Session,
    cx: &CardCtx<'_>,
    policies: &OutputPolicies,
) -> Vec<Line<'static>> {
    let mut lines = vec![card_line(call, session, cx)];
    lines.extend(preview_lines(call, session, cx, policies.for_call(call)));
    lines
}
