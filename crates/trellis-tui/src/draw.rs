//! Drawing a frame: transcript, prompt, status bar, and the floating permission dialog or
//! inspector. Only visible lines are rendered (see `TranscriptView`).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use trellis_view::status::{StatusExtras, status_line_with};

use crate::app::{App, Focus};
use crate::layout::centered;

/// Session time for elapsed times and the spinner frame.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: f64,
    pub frame: usize,
}

pub fn draw(f: &mut Frame<'_>, app: &mut App, clock: Clock) {
    draw_in(f, app, f.area(), clock);
}

/// A session's screen in `area` (the rest of the terminal holds the sessions rail).
pub fn draw_in(f: &mut Frame<'_>, app: &mut App, area: Rect, clock: Clock) {
    // The prompt's rows as they wrap at this width (without side borders, the width is
    // the area's): at most half of what the status bar and the prompt's borders leave, a
    // quarter while a question to answer is open (its keys must show above it).
    let asking = app.dialog().is_some() || app.question().is_some();
    let left = area.height.saturating_sub(3);
    let rows_cap = usize::from(if asking { left / 4 } else { left / 2 });
    app.prompt_drawn_width = area.width;
    let prompt_view = (!app.replay).then(|| {
        app.prompt_layout.layout(
            &app.prompt.text,
            app.prompt.cursor,
            area.width as usize,
            rows_cap,
        )
    });
    let prompt_lines = prompt_view.as_ref().map_or(0, |v| v.rows.len() as u16 + 2);
    let mut plan = crate::plans::plan_lines(app);
    plan.extend(queue_lines(app, area.width as usize));
    // A message too long for the status bar is shown whole above the prompt instead.
    let long = long_message(app, area.width as usize);
    let message_above = !long.is_empty();
    plan.extend(long);
    // The plan gives way to the prompt and the status bar (a row of transcript stays).
    let plan_h = (plan.len() as u16)
        .min(area.height / 4)
        .min(area.height.saturating_sub(prompt_lines + 2));
    let [main, plan_area, prompt, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(plan_h),
        Constraint::Length(prompt_lines),
        Constraint::Length(1),
    ])
    .areas(area);
    if plan_h > 0 {
        // When it does not fit, the end shows (the queued prompts are the last lines).
        let skip = (plan.len() as u16).saturating_sub(plan_h);
        f.render_widget(Paragraph::new(plan).scroll((skip, 0)), plan_area);
    }

    let main = draw_sidebar(f, app, main, area);
    draw_transcript(f, app, main, clock);
    if let Some(view) = prompt_view {
        draw_prompt(f, app, prompt, view);
    }
    if app.focus == Focus::Prompt
        && app.inspector.is_none()
        && app.overlay.is_none()
        && let Some((cands, sel)) = &app.prompt.popup
    {
        completion_popup(f, cands, *sel, prompt, main, &app.theme);
    }

    draw_status(f, app, status, message_above);
    draw_floating(f, app, main, area);
}

/// Lines a message gets above the prompt at most.
const MESSAGE_LINES: usize = 5;

/// The message, wrapped to `width`, when it would not fit the status bar beside the
/// agent's name (a plugin's failure with its file and line, say); none when it fits.
fn long_message(app: &App, width: usize) -> Vec<Line<'static>> {
    let Some(message) = &app.message else {
        return Vec::new();
    };
    let room = width.saturating_sub(trellis_text::display_width(&app.agent) + 8);
    if trellis_text::display_width(message) <= room || width < 20 {
        return Vec::new();
    }
    let text = format!(" {message}");
    let mut lines = trellis_text::wrap::wrap_line(&Line::raw(text), width.saturating_sub(1));
    if lines.len() > MESSAGE_LINES {
        lines.truncate(MESSAGE_LINES);
        if let Some(last) = lines.last_mut() {
            let t: String = last.spans.iter().map(|s| s.content.as_ref()).collect();
            *last = Line::raw(format!(
                "{}…",
                trellis_text::clip(&t, width.saturating_sub(2))
            ));
        }
    }
    lines
        .into_iter()
        .map(|l| {
            let t: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            Line::styled(t, app.theme.notice)
        })
        .collect()
}

/// Below this width the sidebar gives way to an open question (dialog or form).
const DIALOG_ROOM: u16 = 120;

/// The extensions' sections on the right when there is room; returns what is left for
/// the transcript.
fn draw_sidebar(f: &mut Frame<'_>, app: &mut App, main: Rect, area: Rect) -> Rect {
    // A question that waits for the human gets the width: below 120 columns the sidebar
    // gives way while a permission dialog or a form is open.
    let asking = area.width < DIALOG_ROOM
        && app.overlay.is_none()
        && app.inspector.is_none()
        && (app.dialog().is_some() || app.question().is_some());
    let sections = match &app.driver.host {
        Some(h)
            if app.sidebar
                && !asking
                && area.width >= crate::sidebar::WIDTH + 40
                && area.width >= crate::sidebar::MIN_TERMINAL =>
        {
            h.ui.sections()
        }
        _ => Vec::new(),
    };
    if sections.is_empty() {
        app.sidebar_hits.clear();
        main
    } else {
        let [left, side] = Layout::horizontal([
            Constraint::Min(20),
            Constraint::Length(crate::sidebar::WIDTH),
        ])
        .areas(main);
        let inner = Rect {
            x: side.x + 2,
            width: side.width.saturating_sub(2),
            ..side
        };
        let (lines, hits) = crate::sidebar::lines(&sections, inner, app.hover, &app.theme);
        app.sidebar_hits = hits;
        let block = Block::default()
            .borders(Borders::LEFT)
            .border_style(app.theme.dim);
        f.render_widget(block, side);
        f.render_widget(Paragraph::new(lines), inner);
        left
    }
}

/// The transcript from the top line shown (the end unless scrolled), with the cursor and
/// the card a question is about; a first-run hint when it is empty.
fn draw_transcript(f: &mut Frame<'_>, app: &mut App, main: Rect, clock: Clock) {
    let width = main.width as usize;
    let theme = app.theme.clone();
    app.view.sync(&app.driver.session, width, &theme);
    app.page = main.height as usize;
    let total = app.view.total_height();
    let max_top = total.saturating_sub(app.page);
    let top = app.top.map(|t| t.min(max_top)).unwrap_or(max_top);
    let highlight = app
        .dialog()
        .and_then(|(_, call, ..)| app.entry_of_call(call));
    let cursor = if app.focus == Focus::Transcript {
        app.cursor
    } else {
        None
    };
    let lines = app.view.render(
        &app.driver.session,
        top,
        app.page,
        &theme,
        clock.now,
        clock.frame,
        cursor,
        highlight,
    );
    app.transcript_area = (main.y, main.height);
    app.shown_top = top;
    f.render_widget(Paragraph::new(lines), main);
    if app.driver.session.transcript.is_empty() && !app.replay && main.height > 0 {
        // The first run: where to start, and where every key is listed.
        let hint = "Type a prompt and press Enter. F1 (or ? in the transcript) lists every key.";
        f.render_widget(
            Paragraph::new(Line::styled(
                trellis_text::clip(hint, main.width as usize).into_owned(),
                theme.dim,
            )),
            Rect { height: 1, ..main },
        );
    }
}

/// The prompt editor, its title saying what the keys do now, and the cursor in it.
fn draw_prompt(f: &mut Frame<'_>, app: &App, prompt: Rect, view: crate::prompt_view::PromptView) {
    let theme = &app.theme;
    let title = match app.focus {
        Focus::Prompt if app.driver.session.turn_open => " working… Esc cancels ",
        Focus::Prompt => " prompt · Enter send · Alt-Enter newline · Esc transcript ",
        Focus::Transcript => " transcript · j/k move · Tab next card · gT inspect · i prompt ",
    };
    let mut block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(title)
        .border_style(theme.dim);
    if !app.attach_output.is_empty() {
        let what: Vec<String> = app
            .attach_output
            .iter()
            .map(|a| {
                format!(
                    "`{}`",
                    trellis_text::clip(&trellis_text::one_line(a.command()), 30)
                )
            })
            .collect();
        block = block.title_bottom(Line::styled(
            format!(" with your next prompt, the output of {} ", what.join(", ")),
            theme.notice,
        ));
    }
    // Rows out of sight are said on the borders, as other panels say them.
    if view.above > 0 {
        block = block
            .title(Line::styled(format!(" ↑ {} more ", view.above), theme.dim).right_aligned());
    }
    if view.below > 0 {
        block = block.title_bottom(
            Line::styled(format!(" ↓ {} more ", view.below), theme.dim).right_aligned(),
        );
    }
    let (row, col) = view.cursor;
    let text: Vec<Line<'static>> = view.rows.into_iter().map(Line::from).collect();
    f.render_widget(Paragraph::new(text).block(block), prompt);
    // (A terminal too short for the prompt's rows: no cursor outside it.)
    if app.focus == Focus::Prompt && app.inspector.is_none() && 1 + (row as u16) < prompt.height {
        f.set_cursor_position((prompt.x + col as u16, prompt.y + 1 + row as u16));
    }
}

/// The status bar: a message (or the connection's state) has priority over everything
/// but the agent's name; extension items and the key hint show when they fit.
fn draw_status(f: &mut Frame<'_>, app: &App, status: Rect, message_above: bool) {
    let theme = &app.theme;
    let items: Vec<String> = app
        .driver
        .host
        .as_ref()
        .map(|h| {
            h.ui.status_line_items(24)
                .iter()
                .map(|l| l.text())
                .collect()
        })
        .unwrap_or_default();
    let state = if let Some(done) = app.driver.loading() {
        let what = if app.driver.resuming() {
            "the earlier session"
        } else {
            "the recording"
        };
        Some(format!(
            "reading {what}… {:.0} % (what is shown is complete up to here)",
            done * 100.0
        ))
    } else if app.replay {
        None
    } else if app.driver.session.agent_exited.is_some() {
        Some(if app.driver.session.remote.is_some() {
            "the connection to the agent ended · Ctrl-R dials again".to_string()
        } else {
            "agent ended · Ctrl-R restarts it".to_string()
        })
    } else if app.driver.connection().is_some() && !app.driver.ready() && !app.driver.closed() {
        Some(format!("connecting to {}…", app.agent))
    } else {
        None
    };
    let message = app.message.clone().filter(|_| !message_above).or(state);
    let hint = if app.replay {
        "replay · j/k move · gT inspect · q quit"
    } else {
        "Ctrl-T inspect · F2 settings · Ctrl-C twice quits"
    };
    let room = (status.width as usize / 4).max(12);
    // A session in a worktree of Trellis's is named by its source and label, not by the
    // tree's long path under the data directory.
    let cwd = match &app.driver.session.worktree {
        Some(w) => Some(format!(
            "{} [worktree {}]",
            trellis_view::status::short_path(&w.source, app.home.as_deref(), room),
            w.label
        )),
        None => app
            .driver
            .session
            .cwd
            .as_deref()
            .map(|c| trellis_view::status::short_path(c, app.home.as_deref(), room)),
    };
    f.render_widget(
        Paragraph::new(status_line_with(
            &app.driver.session,
            // A recording names its agent once its setup is read.
            match &app.driver.session.agent.name {
                n if app.replay && !n.is_empty() => n,
                _ => &app.agent,
            },
            hint,
            StatusExtras {
                cwd: cwd.as_deref(),
                message: message.as_deref(),
                items: &items,
            },
            status.width as usize,
            theme,
        )),
        status,
    );
}

/// What floats over the transcript, one at a time: an overlay, the inspector, the
/// permission dialog, a question.
fn draw_floating(f: &mut Frame<'_>, app: &mut App, main: Rect, area: Rect) {
    if let Some(crate::extui::Overlay::Rule(p)) = app.overlay.as_mut() {
        // What the rule matches, a budget of calls per frame.
        p.preview
            .advance(&app.driver.session, crate::extui::Hits::BUDGET);
    }
    if let Some(ov) = app.overlay.clone() {
        crate::draw_overlay::draw_overlay(f, app, &ov, area);
    } else if let Some(ins) = app.inspector {
        crate::draw_inspector::draw_inspector(f, app, ins, main);
    } else if let Some((req, call, options, i, n)) = app.dialog() {
        // When this question first showed: keys typed just before stay the prompt's.
        if app.dialog_shown.as_ref().is_none_or(|(r, _)| *r != req) {
            app.dialog_shown = Some((req.clone(), std::time::Instant::now()));
        }
        draw_dialog(f, app, (req, call, options, i, n), main);
    } else if let Some(e) = app.question() {
        crate::ask_draw::draw(f, app, &e, main);
    }
}

/// The completion candidates in a popup above the prompt, the one in the prompt marked.
fn completion_popup(
    f: &mut Frame<'_>,
    cands: &[String],
    sel: Option<usize>,
    prompt: Rect,
    main: Rect,
    theme: &trellis_view::Theme,
) {
    const ROWS: usize = 8;
    let n = cands.len();
    let rows = n.min(ROWS).min(main.height.saturating_sub(2) as usize);
    if rows == 0 {
        return;
    }
    // A window of candidates that holds the selected one.
    let first = match sel {
        Some(i) if i >= rows => i + 1 - rows,
        _ => 0,
    };
    let widest = cands
        .iter()
        .map(|c| trellis_text::display_width(c))
        .max()
        .unwrap_or(0);
    let title = if n > rows {
        format!(
            " {n} matches · Tab cycles · {}–{} ",
            first + 1,
            first + rows
        )
    } else {
        format!(" {n} matches · Tab cycles ")
    };
    let w = (widest + 5)
        .max(trellis_text::display_width(&title) + 2)
        .min(prompt.width.saturating_sub(2) as usize) as u16;
    let h = rows as u16 + 2;
    let r = Rect {
        x: prompt.x + 1,
        y: prompt.y.saturating_sub(h).max(main.y),
        width: w,
        height: h.min(prompt.y.saturating_sub(main.y)),
    };
    if r.height < 3 {
        return;
    }
    let lines: Vec<Line<'static>> = cands
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, c)| {
            let c = trellis_text::clip(c, w.saturating_sub(5) as usize);
            if Some(i) == sel {
                Line::styled(format!("›{c} "), theme.selected)
            } else {
                Line::styled(format!(" {c} "), theme.text)
            }
        })
        .collect();
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title)
        .border_style(theme.dim);
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// The permission dialog: the question scrolls when it is taller than the screen; the
/// answer keys are always on its last lines.
fn draw_dialog(
    f: &mut Frame<'_>,
    app: &mut App,
    (req, call, options, i, n): (
        String,
        usize,
        Vec<trellis_core::permission::PermissionOption>,
        usize,
        usize,
    ),
    main: Rect,
) {
    let theme = app.theme.clone();
    let call = app.driver.session.ledger.at(call);
    // An edit's question is as wide as the screen allows (up to 160 columns), so that its
    // diff can be drawn side by side; other questions stay at most 100 wide.
    let has_diff = call
        .content
        .iter()
        .any(|c| matches!(c, trellis_core::tool_call::ToolContent::Diff { .. }));
    let w = main
        .width
        .saturating_sub(4)
        .min(if has_diff { 160 } else { 100 });
    // Built once per question, call revision and width (its diff can be large).
    let key = format!("dialog {} {} {}/{} {w}", call.id, call.rev, i, n);
    // Attached to a hub, "always" is the hub's to decide: its keys are not offered here,
    // and the dialog says so before anyone presses one.
    let attached = app.driver.attached();
    let observing = app.driver.observing();
    let key = format!("{key} {observing}");
    let d = app.dialog_built(key, || {
        use trellis_core::permission::OptionKind;
        let offered: Vec<_> = options
            .iter()
            .filter(|o| {
                !observing
                    && (!attached
                        || !matches!(o.kind, OptionKind::AllowAlways | OptionKind::RejectAlways))
            })
            .cloned()
            .collect();
        let mut d = trellis_view::dialog::permission_dialog(
            &call,
            &app.driver.session,
            &offered,
            i,
            n,
            w.saturating_sub(2) as usize,
            &theme,
        );
        if observing {
            d.keys.push(ratatui::text::Line::styled(
                "observing: the controller answers (trellis attach --take to answer here)",
                theme.dim,
            ));
        } else if attached && offered.len() < options.len() {
            d.keys.push(ratatui::text::Line::styled(
                "\"always\" rules are the hub's own (its config or --permission): answer once here",
                theme.dim,
            ));
        }
        d
    });
    let inner_max = main.height.saturating_sub(2) as usize;
    // The keys first; the question gets what is left (a blank line between when it fits).
    let keys = d.keys.len().min(inner_max);
    let room = inner_max - keys;
    let wanted = d.body.len() + 1;
    let shown = wanted.min(room);
    let max_scroll = wanted.saturating_sub(room);
    if app.dialog_scroll.0 != req {
        app.dialog_scroll = (req, 0);
    }
    app.dialog_scroll.1 = app.dialog_scroll.1.min(max_scroll);
    let top = app.dialog_scroll.1;
    let mut lines: Vec<ratatui::text::Line<'static>> = d
        .body
        .iter()
        .chain(std::iter::once(&ratatui::text::Line::default()))
        .skip(top)
        .take(shown)
        .cloned()
        .collect();
    lines.extend(d.keys.iter().take(keys).cloned());
    let h = (lines.len() as u16 + 2).min(main.height);
    let r = centered(main, w, h);
    f.render_widget(Clear, r);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", d.title))
        .border_style(theme.cancelled);
    if max_scroll > 0 {
        let below = max_scroll - top;
        let hint = match (top, below) {
            (0, b) => format!(" ↓ {b} more lines · ↑/↓ PgUp/PgDn scroll "),
            (t, 0) => format!(" ↑ {t} lines above "),
            (t, b) => format!(" ↑ {t} · ↓ {b} more "),
        };
        block = block.title_bottom(ratatui::text::Line::styled(hint, theme.dim));
    }
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// Prompts queued while the agent works, above the prompt.
fn queue_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let n = app.queued.len();
    app.queued
        .iter()
        .enumerate()
        .map(|(i, (text, _))| {
            let head = format!(" queued {}/{n} › ", i + 1);
            let room = width.saturating_sub(trellis_text::display_width(&head) + 1);
            Line::from(vec![
                Span::styled(head, app.theme.dim),
                Span::styled(
                    trellis_text::clip(&trellis_text::one_line(text), room).into_owned(),
                    app.theme.user,
                ),
            ])
        })
        .collect()
}
