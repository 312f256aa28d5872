//! The sessions rail (a column on wide terminals, a one-line strip on narrow ones), the
//! new-session form and the inbox, drawn from the deck's data in hand.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use trellis_core::attention::Attention;
use trellis_view::Theme;

use crate::deck::{Deck, Pending, Slot};
use crate::draw::{Clock, draw_in};
use crate::layout::centered;

/// Width of the rail column.
pub const WIDTH: u16 = 30;
/// Below this terminal width the rail is a one-line strip.
pub const MIN_WIDE: u16 = 100;

fn style(theme: &Theme, a: Attention) -> ratatui::style::Style {
    match a {
        Attention::Blocked(_) => theme.notice.add_modifier(Modifier::BOLD),
        Attention::Error => theme.failed,
        Attention::Done => theme.ok,
        Attention::Working | Attention::Starting => theme.running,
        Attention::Idle | Attention::Exited => theme.dim,
    }
}

/// `4m`, `2h`, `3d`.
fn age(since: Instant, now: Instant) -> String {
    let s = now.saturating_duration_since(since).as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// The last part of a path (a group's name).
fn base(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(path)
}

/// A group's sessions as threads: each in the deck's order, but a fork (or a hand-off)
/// right under the session it came from, when that one is in the group.
fn threaded(members: Vec<(usize, &Slot)>) -> Vec<(usize, &Slot)> {
    let parent = |s: &Slot| {
        let log = &s.from.as_ref()?.log;
        members
            .iter()
            .find(|(_, p)| p.app.log_path.as_deref() == Some(log.as_path()))
            .map(|(i, _)| *i)
    };
    let mut out: Vec<(usize, &Slot)> = Vec::with_capacity(members.len());
    // Depth first from each root; a cycle (impossible: a log continues an older one)
    // cannot lose a session, as whatever is left is added at the end.
    let mut stack: Vec<(usize, &Slot)> = members
        .iter()
        .rev()
        .filter(|(_, s)| parent(s).is_none())
        .copied()
        .collect();
    while let Some((i, s)) = stack.pop() {
        if out.iter().any(|(j, _)| *j == i) {
            continue;
        }
        out.push((i, s));
        stack.extend(
            members
                .iter()
                .rev()
                .filter(|(_, c)| parent(c) == Some(i))
                .copied(),
        );
    }
    for m in &members {
        if !out.iter().any(|(j, _)| *j == m.0) {
            out.push(*m);
        }
    }
    out
}

/// `↳ 2 before turn 3` (a fork), `↳ fork of 2` (after its last turn), `↳ from 1` (a
/// hand-off): the session a slot continues,
/// by its number on the rail when the deck holds it, else by its log's name.
fn lineage(deck: &Deck, s: &Slot) -> Option<String> {
    let from = s.from.as_ref()?;
    let whose = match deck
        .sessions
        .slots
        .iter()
        .position(|p| p.app.log_path.as_deref() == Some(from.log.as_path()))
    {
        Some(i) => format!("{}", i + 1),
        None => trellis_text::one_line(
            &from
                .log
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
        .into_owned(),
    };
    let arrow = if deck.ascii { "<-" } else { "↳" };
    // Short: the rail is narrow, and the age follows.
    Some(match (from.handoff, from.at) {
        (true, None) => format!("{arrow} from {whose}"),
        (true, Some(t)) => format!("{arrow} from {whose} before turn {t}"),
        (false, None) => format!("{arrow} fork of {whose}"),
        (false, Some(t)) => format!("{arrow} {whose} before turn {t}"),
    })
}

/// The rail's lines: sessions grouped by repository (in the order each group first
/// appears), each group's header counting its blocked and done sessions in words.
pub fn rail_lines(deck: &Deck, width: usize, theme: &Theme, now: Instant) -> Vec<Line<'static>> {
    let mut groups: Vec<&str> = Vec::new();
    for s in &deck.sessions.slots {
        if !groups.contains(&s.source.as_str()) {
            groups.push(&s.source);
        }
    }
    let clip = |s: &str, w: usize| trellis_text::clip(s, w).into_owned();
    let mut lines = Vec::new();
    for g in groups {
        let members = threaded(
            deck.sessions
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.source == g)
                .collect(),
        );
        let blocked = members
            .iter()
            .filter(|(_, s)| matches!(s.attention, Attention::Blocked(_)))
            .count();
        let done = members
            .iter()
            .filter(|(_, s)| s.attention == Attention::Done)
            .count();
        let mut counts = Vec::new();
        if blocked > 0 {
            counts.push(format!("{blocked} blocked"));
        }
        if done > 0 {
            counts.push(format!("{done} done"));
        }
        let head = if counts.is_empty() {
            base(g).to_string()
        } else {
            format!("{} · {}", base(g), counts.join(" · "))
        };
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        lines.push(Line::styled(clip(&head, width), theme.title));
        for (i, s) in members {
            let front = i == deck.sessions.front;
            let a = s.attention;
            let number = if i < 9 {
                format!("{}", i + 1)
            } else {
                " ".into()
            };
            let pointer = match (front, deck.ascii) {
                (true, true) => ">",
                (true, false) => "▶",
                _ => " ",
            };
            let head = format!("{pointer}{number} ");
            let rest_w = width.saturating_sub(head.chars().count());
            let first = format!("{} {} {}", a.mark(deck.ascii), a.word(), s.app.agent);
            let mut row = vec![
                Span::styled(head, if front { theme.title } else { theme.dim }),
                Span::styled(clip(&first, rest_w), style(theme, a)),
            ];
            if front {
                row = row
                    .into_iter()
                    .map(|sp| {
                        let st = sp.style.add_modifier(Modifier::REVERSED);
                        Span::styled(sp.content, st)
                    })
                    .collect();
            }
            lines.push(Line::from(row));
            lines.push(Line::styled(
                format!("   {}", clip(&s.title(), width.saturating_sub(3))),
                theme.text,
            ));
            let (add, del) = s.diffstat();
            // The age and the line counts first: a long branch name is what gets cut.
            let mut third = vec![age(s.started, now)];
            if let Some(from) = lineage(deck, s) {
                third.insert(0, from);
            }
            if add + del > 0 {
                third.push(format!("+{add} −{del}"));
            }
            if let Some(b) = &s.branch {
                third.push(b.clone());
            }
            lines.push(Line::styled(
                format!("   {}", clip(&third.join(" · "), width.saturating_sub(3))),
                theme.dim,
            ));
        }
    }
    lines
}

/// The one-line strip of a narrow terminal: `1◆permission 2✓done [3◐working]`.
pub fn strip_line(deck: &Deck, width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, s) in deck.sessions.slots.iter().enumerate() {
        let a = s.attention;
        let text = format!("{}{}{}", i + 1, a.mark(deck.ascii), a.word());
        let text = if i == deck.sessions.front {
            format!("[{text}]")
        } else {
            text
        };
        if !spans.is_empty() {
            spans.push(Span::raw(" "));
        }
        let st = style(theme, a);
        spans.push(Span::styled(
            text,
            if i == deck.sessions.front {
                st.add_modifier(Modifier::BOLD)
            } else {
                st
            },
        ));
    }
    let line = Line::from(spans);
    if line.width() > width {
        // Too many for the width: the counts that matter, in words.
        let blocked = deck
            .sessions
            .slots
            .iter()
            .filter(|s| matches!(s.attention, Attention::Blocked(_)))
            .count();
        let done = deck
            .sessions
            .slots
            .iter()
            .filter(|s| s.attention == Attention::Done)
            .count();
        let f = &deck.sessions.slots[deck.sessions.front];
        let text = format!(
            "[{}{}{}] of {} · {blocked} blocked · {done} done",
            deck.sessions.front + 1,
            f.attention.mark(deck.ascii),
            f.attention.word(),
            deck.sessions.slots.len()
        );
        return Line::styled(trellis_text::clip(&text, width).into_owned(), theme.title);
    }
    line
}

/// A frame of the deck: the rail (or strip) and the session in front, with the form or
/// the inbox over them.
pub fn draw_deck(f: &mut Frame<'_>, deck: &mut Deck, clock: Clock) {
    draw_deck_at(f, deck, clock, Instant::now());
}

/// [`draw_deck`] at a given instant (ages in snapshots).
pub fn draw_deck_at(f: &mut Frame<'_>, deck: &mut Deck, clock: Clock, now: Instant) {
    let area = f.area();
    let theme = deck.sessions.slots[deck.sessions.front].app.theme.clone();
    let several = deck.sessions.slots.len() > 1;
    let main = if !several {
        area
    } else if deck.rail && area.width >= MIN_WIDE {
        let [rail, main] =
            Layout::horizontal([Constraint::Length(WIDTH), Constraint::Min(20)]).areas(area);
        let inner = Rect {
            width: rail.width.saturating_sub(1),
            ..rail
        };
        let lines = rail_lines(deck, inner.width as usize, &theme, now);
        f.render_widget(
            Block::default()
                .borders(Borders::RIGHT)
                .border_style(theme.dim),
            rail,
        );
        // The keys between sessions, at the rail's foot when there is room for them.
        let hint: Vec<Line<'static>> = deck.sessions.slots[deck.sessions.front]
            .app
            .deck_hint
            .as_deref()
            .map(|h| {
                trellis_text::wrap::wrap_line(&Line::raw(h.to_string()), inner.width as usize)
                    .into_iter()
                    .map(|l| l.style(theme.dim))
                    .collect()
            })
            .unwrap_or_default();
        let foot = hint.len() as u16;
        if lines.len() as u16 + foot < inner.height {
            let [top, bottom] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(foot)]).areas(inner);
            f.render_widget(Paragraph::new(lines), top);
            f.render_widget(Paragraph::new(hint), bottom);
        } else {
            f.render_widget(Paragraph::new(lines), inner);
        }
        main
    } else {
        let [strip, main] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
        f.render_widget(
            Paragraph::new(strip_line(deck, strip.width as usize, &theme)),
            strip,
        );
        main
    };
    let front = deck.sessions.front;
    draw_in(f, &mut deck.sessions.slots[front].app, main, clock);
    if deck.form.is_some() {
        draw_form(f, deck, area, &theme);
    } else if deck.inbox.is_some() {
        draw_inbox(f, deck, area, &theme, now);
    } else if let Some(c) = &deck.compare {
        let w = area.width.saturating_sub(2).min(130);
        let lines = crate::compare::lines(c, w.saturating_sub(2) as usize, &theme, deck.ascii);
        let h = (lines.len() as u16 + 2).min(area.height);
        let r = centered(area, w, h);
        f.render_widget(Clear, r);
        let n = c.rows.len();
        let closed = if c.closed.is_empty() {
            String::new()
        } else {
            format!(" (+{} closed)", c.closed.len())
        };
        let title = format!(
            " Compare · {n} session{}{closed} ",
            if n == 1 { "" } else { "s" }
        );
        f.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
            r,
        );
    }
}

fn draw_form(f: &mut Frame<'_>, deck: &Deck, area: Rect, theme: &Theme) {
    let Some(form) = &deck.form else { return };
    let w = area.width.saturating_sub(4).min(72);
    let inner = w.saturating_sub(2) as usize;
    let field = |label: &str, value: &str, on: bool| {
        let text = format!("{label:<11}{value}{}", if on { "▏" } else { "" });
        let text = trellis_text::clip(&text, inner).into_owned();
        Line::styled(text, if on { theme.title } else { theme.text })
    };
    let mut lines = vec![
        field("Agent", &form.agent, form.field == 0),
        field("Directory", &form.dir, form.field == 1),
        Line::raw(""),
        Line::styled(
            trellis_text::clip(
                if form.worktree {
                    "in a new worktree of the directory's repository"
                } else {
                    "in the directory itself"
                },
                inner,
            )
            .into_owned(),
            theme.dim,
        ),
        Line::styled(
            trellis_text::clip("Enter starts · Tab next field · Esc cancels", inner).into_owned(),
            theme.dim,
        ),
    ];
    if let Some(e) = &form.error {
        lines.push(Line::styled(
            trellis_text::clip(&trellis_text::one_line(e), inner).into_owned(),
            theme.failed,
        ));
    }
    let h = lines.len() as u16 + 2;
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let title = if form.worktree {
        " New session in a worktree "
    } else {
        " New session "
    };
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}

/// The inbox's lines: each pending request with its session, agent, subject, place and
/// the one-time answers (numbered).
pub fn inbox_lines(
    pending: &[Pending],
    selected: usize,
    width: usize,
    theme: &Theme,
    now: Instant,
) -> Vec<Line<'static>> {
    let clip = |s: &str| trellis_text::clip(s, width).into_owned();
    if pending.is_empty() {
        return vec![Line::styled(
            "Nothing waits for you in any session.",
            theme.dim,
        )];
    }
    let mut lines = Vec::new();
    for (i, p) in pending.iter().enumerate() {
        let on = i == selected;
        let kind = match p.kind {
            trellis_core::attention::Blocked::Permission => "permission",
            trellis_core::attention::Blocked::Question => "question",
            trellis_core::attention::Blocked::Login => "login",
        };
        let place = match &p.branch {
            Some(b) => format!("{} [{b}]", base(&p.source)),
            None => base(&p.source).to_string(),
        };
        let head = format!(
            "{} {} {} · {} · {kind} · {}",
            if on { ">" } else { " " },
            p.index + 1,
            p.agent,
            place,
            age(p.since, now)
        );
        lines.push(Line::styled(
            clip(&head),
            if on { theme.selected } else { theme.title },
        ));
        lines.push(Line::styled(
            clip(&format!("    {}", trellis_text::one_line(&p.subject))),
            theme.text,
        ));
        if on {
            let answers: Vec<String> = p
                .options
                .iter()
                .enumerate()
                .take(9)
                .map(|(n, (_, name))| format!("{} {}", n + 1, trellis_text::one_line(name)))
                .collect();
            let keys = if p.kind == trellis_core::attention::Blocked::Question {
                "    Enter answers here · o opens the session · s skips".to_string()
            } else if answers.is_empty() {
                "    Enter opens the session · s skips".to_string()
            } else {
                format!(
                    "    {} · r reject with a reason · Enter opens the session · s skips",
                    answers.join("  ")
                )
            };
            lines.push(Line::styled(clip(&keys), theme.dim));
        }
    }
    lines
}

fn draw_inbox(f: &mut Frame<'_>, deck: &mut Deck, area: Rect, theme: &Theme, now: Instant) {
    // A question answered here: its session's own form, over the deck.
    if let Some((i, e)) = deck.answering() {
        let slot = &deck.sessions.slots[i];
        let from = format!("{} {} · {}", i + 1, slot.app.agent, base(&slot.source));
        crate::ask_draw::draw_from(f, &mut deck.sessions.slots[i].app, &e, area, Some(&from));
        return;
    }
    let Some(inbox) = &deck.inbox else { return };
    let pending = deck.sessions.pending();
    let w = area.width.saturating_sub(4).min(96);
    let lines = inbox_lines(
        &pending,
        inbox.selected,
        w.saturating_sub(2) as usize,
        theme,
        now,
    );
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let title = format!(" Inbox · {} pending · Esc closes ", pending.len());
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}
