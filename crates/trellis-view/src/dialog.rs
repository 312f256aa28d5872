//! The permission dialog: what is asked (title, kind, arguments, a diff preview for
//! edits), the options the agent offered with their keys, and the queue position.

use ratatui_core::text::{Line, Span};
use trellis_core::permission::{OptionKind, PermissionOption};
use trellis_core::tool_call::ToolContent;
use trellis_core::{Session, ToolCall};

use crate::inspector::call_view_text;
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

/// The dialog's title and body lines for request `index` of `total`.
pub fn permission_dialog(
    call: &ToolCall,
    _session: &Session,
    options: &[PermissionOption],
    index: usize,
    total: usize,
    width: usize,
    theme: &Theme,
) -> (String, Vec<Line<'static>>) {
    let title = if total > 1 {
        format!("Permission {index} of {total}")
    } else {
        "Permission".to_string()
    };
    let mut out = vec![
        Line::styled(trellis_core::enrich::card_title(call), theme.title),
        Line::styled(format!("kind: {}", call.kind.as_str()), theme.meta),
        Line::default(),
    ];
    let args_text = call_view_text(call);
    let args: Vec<&str> = args_text.lines().collect();
    const MAX_ARGS: usize = 12;
    for l in args.iter().take(MAX_ARGS) {
        out.push(Line::from(trellis_text::clip(l, width).into_owned()));
    }
    if args.len() > MAX_ARGS {
        out.push(Line::styled(
            format!(
                "… {} more lines (K in the inspector shows all)",
                args.len() - MAX_ARGS
            ),
            theme.dim,
        ));
    }
    if call
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Diff { .. }))
    {
        const MAX_DIFF: usize = 18;
        out.push(Line::default());
        let mut diff = crate::inspector::diff_lines(call, theme);
        while diff.last().is_some_and(|l| l.width() == 0) {
            diff.pop();
        }
        let n = diff.len();
        out.extend(diff.into_iter().take(MAX_DIFF));
        if n > MAX_DIFF {
            out.push(Line::styled(
                format!(
                    "… {} more diff lines (D in the inspector shows all)",
                    n - MAX_DIFF
                ),
                theme.dim,
            ));
        }
    }
    out.push(Line::default());
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
    keys.push(Span::styled("[Esc] cancel the turn", theme.dim));
    out.extend(trellis_text::wrap::wrap_line(&Line::from(keys), width));
    (title, out)
}
