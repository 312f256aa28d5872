//! Subagents on screen: the tree under the card of the call that started a child (its
//! state, its latest calls, what it said last), and the child's whole story in the
//! inspector's Result view of that call.
//!
//! Invariant: everything here reads the session only; a child's text is drawn with
//! control characters visible, like any agent text.

use ratatui_core::text::{Line, Span};
use trellis_core::Session;
use trellis_core::event::Role;
use trellis_core::session::Entry;
use trellis_core::subagents::{MAX_DEPTH, Subagent};

use crate::card::{CardCtx, card_line};
use crate::theme::Theme;

/// Calls of a child listed under its parent's card (the latest; the rest are counted).
pub const TREE_CALLS: usize = 5;

fn state_style(s: &Subagent, theme: &Theme) -> ratatui_core::style::Style {
    match (s.state.as_deref(), s.stop_reason.as_deref()) {
        (Some("running"), _) => theme.running,
        (Some("requires_action"), _) => theme.highlight,
        (Some("idle"), Some("error")) => theme.failed,
        (Some("idle"), Some("cancelled")) => theme.cancelled,
        (Some("idle"), _) => theme.ok,
        _ => theme.dim,
    }
}

/// The child's head line: `⤷ Explorer · running · 3 calls`.
pub fn head_line(s: &Subagent, indent: &str, width: usize, theme: &Theme) -> Line<'static> {
    let text = trellis_text::one_line(&trellis_core::summary::subagent_line(s)).into_owned();
    let text = trellis_text::clip(&text, width.saturating_sub(indent.len())).into_owned();
    Line::from(vec![
        Span::styled(indent.to_string(), theme.dim),
        Span::styled(text, state_style(s, theme)),
    ])
}

/// A part of the cache key of a card whose call started `child`: changes whenever the
/// tree under it would draw differently.
pub fn tree_key(session: &Session, child: usize) -> u64 {
    use std::hash::Hasher;
    let s = &session.subagents.list[child];
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(s.calls);
    h.write_usize(s.entries.len());
    for b in s.state.iter().chain(&s.stop_reason).chain(&s.title) {
        h.write_usize(b.len());
        h.write(b.as_bytes());
    }
    if let Some(Entry::Message(m)) = s.entries.last() {
        h.write_usize(m.text.len());
    }
    for i in s
        .call_indices()
        .collect::<Vec<_>>()
        .iter()
        .rev()
        .take(TREE_CALLS)
    {
        h.write_u64(session.ledger.at(*i).rev as u64);
    }
    h.finish()
}

/// Lines under the card of the call that started `child`: its head, its latest calls
/// (as one-line cards), and its last message; nested children as their head lines.
pub fn tree_lines(
    session: &Session,
    child: usize,
    cx: &CardCtx<'_>,
    depth: usize,
) -> Vec<Line<'static>> {
    let s = &session.subagents.list[child];
    let pad = "  ".repeat(depth + 1);
    let mut out = vec![head_line(s, &format!("{pad}└ "), cx.width, cx.theme)];
    let inner = format!("{pad}   ");
    let calls: Vec<usize> = s.call_indices().collect();
    let hidden = calls.len().saturating_sub(TREE_CALLS);
    if hidden > 0 {
        out.push(Line::styled(
            format!(
                "{inner}… {hidden} earlier call{}",
                if hidden == 1 { "" } else { "s" }
            ),
            cx.theme.dim,
        ));
    }
    let sub = CardCtx {
        width: cx.width.saturating_sub(inner.len()),
        selected: false,
        highlighted: false,
        ..*cx
    };
    for &i in &calls[hidden..] {
        let call = session.ledger.at(i);
        let mut line = card_line(&call, session, &sub);
        line.spans.insert(0, Span::raw(inner.clone()));
        out.push(line);
        if depth + 1 < MAX_DEPTH
            && let Some(g) = session
                .subagents
                .for_call(&call)
                .and_then(|g| session.subagents.position(&g.session_id))
        {
            let g = &session.subagents.list[g];
            out.push(head_line(g, &format!("{inner}  └ "), cx.width, cx.theme));
        }
    }
    if let Some(said) = s.last_message() {
        let first = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let text = trellis_text::one_line(first);
        let room = cx.width.saturating_sub(inner.len() + 2);
        out.push(Line::styled(
            format!("{inner}“{}”", trellis_text::clip(&text, room)),
            cx.theme.dim,
        ));
    }
    out
}

/// The child's story for the inspector: head, description, where it works, the messages
/// between it and other sessions, its transcript (messages, thoughts, calls), and the
/// key that steps into its calls.
pub fn inspector_lines(
    session: &Session,
    child: usize,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let s = &session.subagents.list[child];
    let mut out = vec![
        Line::styled("Subagent", theme.title),
        head_line(s, "", width, theme),
    ];
    let wrap = |text: &str, style, out: &mut Vec<Line<'static>>| {
        for l in trellis_text::for_display(text).lines() {
            out.extend(trellis_text::wrap::wrap_line(
                &Line::styled(format!("  {l}"), style),
                width,
            ));
        }
    };
    if let Some(d) = &s.description {
        wrap(d, theme.dim, &mut out);
    }
    out.push(Line::styled(
        format!(
            "  session {}{}",
            trellis_text::one_line(&s.session_id),
            s.cwd
                .as_deref()
                .map(|c| format!(" · in {}", trellis_text::one_line(c)))
                .unwrap_or_default()
        ),
        theme.dim,
    ));
    for m in session.subagents.messages_of(&s.session_id) {
        let dir = if m.recipient.as_deref() == Some(&*s.session_id) {
            "→ to it"
        } else {
            "← from it"
        };
        out.push(Line::styled(format!("  {dir}:"), theme.meta));
        wrap(&m.text, theme.text, &mut out);
    }
    out.push(Line::default());
    let cx = CardCtx {
        theme,
        width: width.saturating_sub(2),
        now: 0.0,
        frame: 0,
        selected: false,
        highlighted: false,
    };
    for e in &s.entries {
        match e {
            Entry::Message(m) => {
                let style = match m.role {
                    Role::Thought => theme.thought,
                    Role::User => theme.user,
                    Role::Agent => theme.text,
                };
                wrap(&m.text, style, &mut out);
            }
            Entry::ToolCall { index } => {
                let mut line = card_line(&session.ledger.at(*index), session, &cx);
                line.spans.insert(0, Span::raw("  "));
                out.push(line);
            }
            Entry::Subagent { index } => {
                out.push(head_line(
                    &session.subagents.list[*index],
                    "  ",
                    width,
                    theme,
                ));
            }
            _ => {}
        }
    }
    if s.calls > 0 {
        out.push(Line::default());
        out.push(Line::styled(
            "]s steps into its calls, [s back to this one",
            theme.dim,
        ));
    }
    out
}
