//! The plans above the prompt: the legacy whole plan and the plans the agent keeps by
//! id (checklists, Markdown, a file), updated in place.

use ratatui::text::{Line, Span};

use crate::app::App;

/// Lines of a checklist: one per entry, its mark by status (the agent's text on one line,
/// made harmless).
fn checklist(
    entries: &[trellis_core::wire::PlanEntry],
    theme: &trellis_view::Theme,
) -> Vec<Line<'static>> {
    entries
        .iter()
        .map(|e| {
            let (mark, style) = match e.status.as_str() {
                "completed" => ("☑", theme.ok),
                "in_progress" => ("◐", theme.running),
                _ => ("☐", theme.dim),
            };
            Line::from(vec![
                Span::styled(format!(" {mark} "), style),
                Span::raw(trellis_text::one_line(&e.content).into_owned()),
            ])
        })
        .collect()
}

/// Lines of a Markdown plan shown above the prompt, at most this many.
const PLAN_TEXT_LINES: usize = 3;

/// The plans, updated in place above the prompt: the legacy plan and each plan the agent
/// keeps by id. A checklist shows while it has entries not completed or the turn runs; a
/// Markdown or file plan (its first lines) while the turn runs. Checklists come last:
/// when the area is too small, its end shows.
pub(crate) fn plan_lines(app: &App) -> Vec<Line<'static>> {
    let s = &app.driver.session;
    let theme = &app.theme;
    let live = |entries: &[trellis_core::wire::PlanEntry]| {
        !entries.is_empty() && (s.turn_open || entries.iter().any(|e| e.status != "completed"))
    };
    let (mut docs, mut lists) = (Vec::new(), Vec::new());
    for p in &s.plans {
        let id = trellis_text::one_line(&p.id).into_owned();
        match &p.body {
            trellis_core::plans::PlanBody::Items { entries } if live(entries) => {
                let (done, total) = p.progress();
                lists.push(Line::styled(
                    format!(" Plan {id} {done}/{total}"),
                    theme.title,
                ));
                lists.extend(checklist(entries, theme));
            }
            trellis_core::plans::PlanBody::Markdown { content } if s.turn_open => {
                let text = trellis_text::for_display(content);
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                let more = lines.len().saturating_sub(PLAN_TEXT_LINES);
                let head = if more > 0 {
                    format!(" Plan {id} (+{more} lines)")
                } else {
                    format!(" Plan {id}")
                };
                docs.push(Line::styled(head, theme.title));
                for l in lines.iter().take(PLAN_TEXT_LINES) {
                    docs.push(Line::raw(format!("   {l}")));
                }
            }
            trellis_core::plans::PlanBody::File { uri } if s.turn_open => {
                docs.push(Line::from(vec![
                    Span::styled(format!(" Plan {id}: "), theme.title),
                    Span::raw(trellis_text::one_line(uri).into_owned()),
                ]));
            }
            _ => {}
        }
    }
    if live(&s.plan) {
        let done = s.plan.iter().filter(|e| e.status == "completed").count();
        lists.push(Line::styled(
            format!(" Plan {done}/{}", s.plan.len()),
            theme.title,
        ));
        lists.extend(checklist(&s.plan, theme));
    }
    docs.extend(lists);
    docs
}
