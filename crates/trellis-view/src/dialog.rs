//! The permission dialog: what is asked (title, kind, arguments, a diff preview for
//! edits), the options the agent offered with their keys, and the queue position.

use ratatui_core::text::{Line, Span};
use trellis_core::permission::{OptionKind, PermissionOption};
use trellis_core::tool_call::ToolContent;
use trellis_core::{Session, ToolCall};

use crate::inspector::{NO_ARGS, arg_code_lines, call_args};
use crate::theme::Theme;

/// The key that chooses an option of `kind`.
pub fn key_for(kind: OptionKind) -> Option<char> {
    match kind {
        OptionKind::AllowOnce => Some('y'),
        OptionKind::AllowAlways => Some('a'),
        OptionKind::RejectOnce => Some('n'),
        OptionKind::RejectAlways => Some('N'),
        OptionKind::Unknown => None,
    }
}

/// The option a key chooses, among those offered.
pub fn option_for_key(options: &[PermissionOption], key: char) -> Option<&PermissionOption> {
    options.iter().find(|o| key_for(o.kind) == Some(key))
}

/// A permission dialog: the question (title, arguments, diff), which may be taller than
/// the screen and scrolls, and the answer keys, which are always shown.
#[derive(Debug, Clone, Default)]
pub struct Dialog {
    pub title: String,
    pub body: Vec<Line<'static>>,
    pub keys: Vec<Line<'static>>,
}

/// The most diff lines the dialog shows (the inspector's Diff view shows all).
const MAX_DIFF: usize = 2000;

/// The dialog for request `index` of `total`, `width` columns wide.
pub fn permission_dialog(
    call: &ToolCall,
    session: &Session,
    options: &[PermissionOption],
    index: usize,
    total: usize,
    width: usize,
    theme: &Theme,
) -> Dialog {
    let title = if total > 1 {
        format!("Permission {index} of {total}")
    } else {
        "Permission".to_string()
    };
    let mut body = vec![
        // A newline in it (from the agent) is a space, not two words run together.
        Line::styled(
            trellis_text::one_line(&trellis_core::enrich::card_title(call)).into_owned(),
            theme.title,
        ),
        Line::styled(format!("kind: {}", call.kind.as_str()), theme.meta),
    ];
    // A subagent's request says whose it is: the child and the call that started it.
    if let Some(child) = call.subagent.as_deref() {
        let label = session
            .subagents
            .get(child)
            .map_or(child.to_string(), |s| s.label().to_string());
        let mut who = format!("asked by subagent {}", trellis_text::one_line(&label));
        if let Some(by) = session
            .subagents
            .position(child)
            .and_then(|i| session.call_of_subagent(i))
        {
            let started = trellis_core::enrich::card_title(&session.ledger.at(by));
            who.push_str(&format!(
                " (started by {})",
                trellis_text::one_line(&started)
            ));
        }
        body.extend(trellis_text::wrap::wrap_line(
            &Line::styled(who, theme.notice),
            width,
        ));
    }
    body.push(Line::default());
    let mut push = |line: Line<'static>| body.extend(trellis_text::wrap::wrap_line(&line, width));
    // The arguments, highlighted, without the fences the Call view keeps for copying.
    match call_args(call) {
        None => push(Line::styled(NO_ARGS, theme.dim)),
        Some(blocks) => {
            for (i, b) in blocks.iter().enumerate() {
                if let Some(h) = b.heading {
                    if i > 0 {
                        push(Line::default());
                    }
                    push(Line::styled(h, theme.meta));
                }
                for l in arg_code_lines(b, theme) {
                    push(l);
                }
            }
        }
    }
    if call
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Diff { .. }))
    {
        body.push(Line::default());
        let mut diff = crate::inspector::diff_lines(call, width, theme);
        while diff.last().is_some_and(|l| l.width() == 0) {
            diff.pop();
        }
        let n = diff.len();
        body.extend(diff.into_iter().take(MAX_DIFF));
        if n > MAX_DIFF {
            body.push(Line::styled(
                format!(
                    "… {} more diff lines (D in the inspector shows all)",
                    n - MAX_DIFF
                ),
                theme.dim,
            ));
        }
    }
    let mut keys: Vec<Span<'static>> = Vec::new();
    for o in options {
        if let Some(k) = key_for(o.kind) {
            let style = if o.kind.is_allow() {
                theme.ok
            } else {
                theme.failed
            };
            keys.push(Span::styled(format!("[{k}] "), style));
            keys.push(Span::raw(format!("{}   ", o.name)));
        }
    }
    if options.iter().any(|o| o.kind == OptionKind::RejectOnce) {
        keys.push(Span::styled("[r] ", theme.failed));
        keys.push(Span::raw("reject with a reason   "));
    }
    keys.push(Span::styled("[Esc] cancel the turn", theme.dim));
    Dialog {
        title,
        body,
        keys: trellis_text::wrap::wrap_line(&Line::from(keys), width),
    }
}
