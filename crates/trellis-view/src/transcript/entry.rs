//! One entry drawn "width in, lines out": the key of what it shows (a change of key lays
//! it out again) and its lines at the view's width, native or by a card design.

use ratatui_core::text::{Line, Span};
use trellis_core::event::Role;
use trellis_core::session::Entry;
use trellis_core::{Session, ToolStatus};

use super::TranscriptView;
use crate::card::{CardCtx, OutputPolicy, output_text, preview_of_text};
use crate::theme::Theme;

/// Result lines of a design shown for a call whose kind shows no output.
const DESIGN_RESULT_LINES: usize = 10;

/// The subagent the call started (its position in `Session::subagents`), if any.
pub(super) fn child_of(session: &Session, call: &trellis_core::ToolCall) -> Option<usize> {
    if session.subagents.is_empty() {
        return None;
    }
    let child = session.subagents.for_call(call)?;
    session.subagents.position(&child.session_id)
}

fn mix(parts: &[u64]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    for &p in parts {
        h.write_u64(p);
    }
    h.finish()
}

impl TranscriptView {
    pub(super) fn key(&self, session: &Session, entry: &Entry) -> u64 {
        let w = self.width as u64;
        match entry {
            Entry::Message(m) => mix(&[
                1,
                m.role as u64,
                m.text.len() as u64,
                w,
                self.thoughts_folded as u64,
            ]),
            Entry::ToolCall { index } => {
                let c = session.ledger.at(*index);
                // Terminal output grows outside the call: count it in.
                let term: usize = c
                    .content
                    .iter()
                    .filter_map(|x| match x {
                        trellis_core::tool_call::ToolContent::Terminal { terminal_id } => session
                            .terminals
                            .get(terminal_id)
                            .map(|t| t.output.len() + t.exit.is_some() as usize),
                        _ => None,
                    })
                    .sum();
                let tree =
                    child_of(session, &c).map_or(0, |ch| crate::subagent::tree_key(session, ch));
                mix(&[2, c.rev as u64, term as u64, w, tree])
            }
            Entry::Subagent { index } => {
                let linked = session.subagents.list[*index].call_id.is_some();
                mix(&[
                    6,
                    linked as u64,
                    crate::subagent::tree_key(session, *index),
                    w,
                ])
            }
            Entry::Notice { text } => mix(&[3, text.len() as u64, w]),
            Entry::AgentNotice(n) => mix(&[
                4,
                n.title.len() as u64,
                n.description.as_ref().map_or(0, |d| d.len() as u64 + 1),
                w,
            ]),
            Entry::Compaction(c) => mix(&[
                5,
                c.status
                    .bytes()
                    .fold(0u64, |h, b| h.wrapping_mul(31) ^ u64::from(b)),
                c.summary.len() as u64,
                c.error.as_ref().map_or(0, |e| e.len() as u64 + 1),
                w,
            ]),
        }
    }

    /// Entry `i` at the view's width: its height, its lines (for a native card those
    /// under its first line), and whether a card design drew it.
    pub(super) fn layout(
        &self,
        session: &Session,
        i: usize,
        theme: &Theme,
    ) -> (usize, Vec<Line<'static>>, bool) {
        let entry = &session.transcript[i];
        let mut designed = false;
        let (height, lines) = match entry {
            Entry::ToolCall { index } => {
                let call = session.ledger.at(*index);
                let tree = |cx: &CardCtx<'_>| {
                    child_of(session, &call)
                        .map(|ch| crate::subagent::tree_lines(session, ch, cx, 0))
                        .unwrap_or_default()
                };
                let mut policy = self.policies.for_call(&call);
                let cx = CardCtx {
                    theme,
                    width: self.width,
                    now: 0.0,
                    frame: 0,
                    selected: false,
                    highlighted: false,
                };
                let text = || {
                    let raw = output_text(&call, session);
                    match self.decor.as_ref().and_then(|d| d.transform(&call, &raw)) {
                        Some(t) => t,
                        None => raw,
                    }
                };
                match self
                    .decor
                    .as_ref()
                    .and_then(|d| d.card(&call, self.width, theme))
                {
                    Some(card) => {
                        designed = true;
                        if call.status == ToolStatus::Failed && policy == OutputPolicy::Hidden {
                            policy = OutputPolicy::Preview(self.policies.failed_preview);
                        }
                        let mut lines = card.call;
                        // A design decides the call part; the call's status mark and its
                        // duration stay (unless the design draws the whole line), and who
                        // decided its permission is always shown with it.
                        if let Some(first) = lines.first_mut() {
                            let mut meta = Vec::new();
                            if !card.bare {
                                first.spans.insert(
                                    0,
                                    ratatui_core::text::Span::styled(
                                        format!(
                                            "{} ",
                                            trellis_core::summary::status_glyph(call.status)
                                        ),
                                        theme.status(call.status),
                                    ),
                                );
                                if let Some(d) = call.duration() {
                                    meta.push(format!("{d:.1}s"));
                                }
                            }
                            if let Some(p) = trellis_core::summary::permission_summary(&call)
                                && !first.spans.iter().any(|s| s.content.contains(p.as_str()))
                            {
                                meta.push(p);
                            }
                            if !meta.is_empty() {
                                first.spans.push(ratatui_core::text::Span::styled(
                                    format!("  · {}", meta.join(" · ")),
                                    theme.meta,
                                ));
                            }
                            *first = ratatui_core::text::Line::from(crate::card::clip_spans(
                                std::mem::take(first),
                                self.width,
                            ));
                        }
                        let limit = match policy {
                            // The design chose its result lines: shown, within a bound.
                            OutputPolicy::Hidden => DESIGN_RESULT_LINES,
                            OutputPolicy::Preview(n) => n,
                            OutputPolicy::Full => usize::MAX,
                        };
                        if card.result.is_empty() && call.status == ToolStatus::Failed {
                            // The design shows no result: a failure's output still shows.
                            lines.extend(preview_of_text(&text(), &cx, policy));
                        } else {
                            lines.extend(card.result.into_iter().take(limit));
                        }
                        lines.extend(tree(&cx));
                        (lines.len(), lines)
                    }
                    None => {
                        let mut lines = if policy == OutputPolicy::Hidden {
                            Vec::new()
                        } else {
                            preview_of_text(&text(), &cx, policy)
                        };
                        lines.extend(tree(&cx));
                        (lines.len() + 1, lines)
                    }
                }
            }
            _ => {
                let lines = self.render_entry(session, entry, theme);
                (lines.len(), lines)
            }
        };
        (height, lines, designed)
    }

    fn render_entry(&self, session: &Session, entry: &Entry, theme: &Theme) -> Vec<Line<'static>> {
        let w = self.width;
        if let Entry::Subagent { index } = entry {
            // Under the call that started it, once one names it.
            if session.subagents.list[*index].call_id.is_some() {
                return Vec::new();
            }
            let cx = CardCtx {
                theme,
                width: w,
                now: 0.0,
                frame: 0,
                selected: false,
                highlighted: false,
            };
            let mut out = crate::subagent::tree_lines(session, *index, &cx, 0);
            // Not under a card: the head starts the line.
            if let Some(first) = out.first_mut() {
                *first = crate::subagent::head_line(&session.subagents.list[*index], "", w, theme);
            }
            out.push(Line::default());
            return out;
        }
        // Text from the agent (or a log) is drawn with its control characters visible:
        // nothing it holds can move the cursor or break the layout's measure.
        let mut out = match entry {
            Entry::Message(m) => match m.role {
                Role::User => {
                    // Each line of a prompt of several keeps its own line; the rows a
                    // long one wraps onto stay under its text, behind the lead.
                    let text = trellis_text::for_display(&m.text);
                    let mut out = Vec::new();
                    for (i, l) in text.split('\n').enumerate() {
                        let line = Line::styled(l.to_string(), theme.user);
                        let rows = trellis_text::wrap::wrap_line(&line, w.saturating_sub(2).max(1));
                        for (j, mut row) in rows.into_iter().enumerate() {
                            let lead = if i == 0 && j == 0 { "› " } else { "  " };
                            row.spans.insert(0, Span::styled(lead, theme.user));
                            out.push(row);
                        }
                    }
                    out
                }
                Role::Agent => {
                    trellis_text::markdown::render(&trellis_text::for_display(&m.text), w, theme.md)
                }
                Role::Thought => {
                    let text = trellis_text::for_display(&m.text);
                    if self.thoughts_folded {
                        let first = text.lines().next().unwrap_or("").to_string();
                        let more = text.lines().count() > 1 || text.len() > first.len();
                        let text = format!("∴ {first}{}", if more { " …" } else { "" });
                        vec![Line::styled(
                            trellis_text::clip(&text, w).into_owned(),
                            theme.thought,
                        )]
                    } else {
                        trellis_text::wrap::wrap_line(
                            &Line::styled(format!("∴ {text}"), theme.thought),
                            w,
                        )
                    }
                }
            },
            Entry::Notice { text } => {
                let text = trellis_text::for_display(text);
                trellis_text::wrap::wrap_line(&Line::styled(format!("! {text}"), theme.notice), w)
            }
            Entry::AgentNotice(n) => {
                let (severity, title, description) = (&n.severity, &n.title, &n.description);
                let (glyph, style) = match severity.as_str() {
                    "warning" => ("⚠", theme.cancelled),
                    "error" => ("✗", theme.failed),
                    _ => ("ⓘ", theme.notice),
                };
                let title = trellis_text::one_line(title);
                let mut out = trellis_text::wrap::wrap_line(
                    &Line::styled(format!("{glyph} {title}"), style),
                    w,
                );
                if let Some(d) = description {
                    for l in trellis_text::for_display(d).lines() {
                        out.extend(trellis_text::wrap::wrap_line(
                            &Line::styled(format!("  {l}"), theme.dim),
                            w,
                        ));
                    }
                }
                out
            }
            Entry::Compaction(c) => {
                let (glyph, style) = match c.status.as_str() {
                    "in_progress" => ("⟳", theme.running),
                    "failed" => ("✗", theme.failed),
                    "cancelled" => ("–", theme.cancelled),
                    _ => ("✓", theme.notice),
                };
                let head = trellis_text::one_line(&c.line()).into_owned();
                let mut out = trellis_text::wrap::wrap_line(
                    &Line::styled(format!("{glyph} {head}"), style),
                    w,
                );
                // The summary, its first lines (the whole of it is in the log and exports).
                const SHOWN: usize = 6;
                let summary = trellis_text::for_display(&c.summary);
                let mut lines: Vec<Line<'static>> = Vec::new();
                for l in summary.lines().filter(|l| !l.trim().is_empty()) {
                    lines.extend(trellis_text::wrap::wrap_line(
                        &Line::styled(format!("  │ {l}"), theme.dim),
                        w,
                    ));
                }
                let more = lines.len().saturating_sub(SHOWN);
                lines.truncate(SHOWN);
                out.extend(lines);
                if more > 0 {
                    out.push(Line::styled(
                        format!("  │ … {more} more lines of the summary"),
                        theme.dim,
                    ));
                }
                out
            }
            Entry::ToolCall { .. } | Entry::Subagent { .. } => Vec::new(),
        };
        out.push(Line::default());
        out
    }
}
