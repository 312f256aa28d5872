//! What keys do while the deck's new-session form, inbox or comparison is open, and a
//! session's worktree ended from the UI.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::close_slot;
use crate::deck::{Deck, NewSession};
use crate::{Intent, perform_intent};

/// A key while the comparison is open.
pub(super) async fn compare_key(deck: &mut Deck, k: &KeyEvent, said: &mut Vec<String>) {
    let Some(c) = deck.compare.as_mut() else {
        return;
    };
    let n = c.rows.len().max(1);
    match k.code {
        KeyCode::Esc | KeyCode::Char('q') => deck.compare = None,
        KeyCode::Down | KeyCode::Char('j') => c.selected = (c.selected + 1) % n,
        KeyCode::Up | KeyCode::Char('k') => c.selected = (c.selected + n - 1) % n,
        KeyCode::Enter | KeyCode::Char('o') => {
            let key = c.rows.get(c.selected).map(|r| r.key);
            if let Some(i) = key.and_then(|k| deck.index_of(k)) {
                deck.compare = None;
                deck.show(i);
            }
        }
        KeyCode::Char('d') => match c.mark.take() {
            None => {
                c.mark = Some(c.selected);
                deck.front().message =
                    Some("d on another row shows the diff between the two".into());
            }
            Some(m) if m != c.selected => {
                let (a, b) = (c.rows[m].label.clone(), c.rows[c.selected].label.clone());
                let text = match (a, b, deck.worktrees.as_ref()) {
                    (Some(a), Some(b), Some(ops)) => ops.diff(&a, &b),
                    (_, _, None) => Err("no worktrees here".into()),
                    _ => Err("both sessions must run in worktrees of Trellis's".into()),
                };
                match text {
                    Ok(t) => perform_intent(deck.front(), Intent::Page(t)),
                    Err(e) => deck.front().message = Some(format!("no diff: {e}")),
                }
            }
            Some(_) => {}
        },
        KeyCode::Char('K') => {
            let rows = c.rows.clone();
            let Some(keep) = rows.get(c.selected).and_then(|r| r.label.clone()) else {
                deck.front().message =
                    Some("keep works on sessions that run in worktrees of Trellis's".into());
                return;
            };
            let others: Vec<String> = rows
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != c.selected)
                .filter_map(|(_, r)| r.label.clone())
                .collect();
            deck.compare = None;
            // The sessions end first: their agents must not write into trees being removed.
            for r in &rows {
                if let Some(i) = deck.index_of(r.key) {
                    close_slot(deck, i, "kept one of a fan-out", said).await;
                }
            }
            let outcome = match deck.worktrees.as_ref() {
                Some(ops) => ops.keep(&keep, &others),
                None => Err("no worktrees here".into()),
            };
            let lines = match outcome {
                Ok(lines) => lines,
                Err(e) => vec![format!("keeping {keep} failed: {e}")],
            };
            if let Some(s) = deck.slots.get_mut(deck.front) {
                s.app.message = lines.last().map(|l| trellis_text::one_line(l).into_owned());
            }
            said.extend(lines);
        }
        _ => {}
    }
}

/// `/worktree ACTION` in the session in front: `keep` leaves it running; the endings that
/// remove the tree close the session first (its agent must not write into a tree being
/// removed). What happened is said in the message line, and again after the UI.
pub(super) async fn end_worktree(deck: &mut Deck, action: &str, said: &mut Vec<String>) {
    let i = deck.front;
    let Some(label) = deck.slots[i]
        .app
        .driver
        .session
        .worktree
        .as_ref()
        .map(|w| w.label.clone())
    else {
        return;
    };
    if action != "keep" {
        close_slot(deck, i, &format!("worktree {action}"), said).await;
    }
    let lines = match deck.worktrees.as_ref() {
        Some(ops) => ops.end(&label, action),
        None => Err("no worktrees here".into()),
    }
    .unwrap_or_else(|e| vec![format!("{action} {label}: {e}")]);
    if let Some(s) = deck.slots.get_mut(deck.front) {
        s.app.message = lines.last().map(|l| trellis_text::one_line(l).into_owned());
    }
    said.extend(lines);
}

/// A key while the new-session form is open.
pub(super) fn form_key(deck: &mut Deck, k: &KeyEvent) {
    let Some(form) = deck.form.as_mut() else {
        return;
    };
    let field = if form.field == 0 {
        &mut form.agent
    } else {
        &mut form.dir
    };
    match k.code {
        KeyCode::Esc => deck.form = None,
        KeyCode::Tab | KeyCode::BackTab | KeyCode::Up | KeyCode::Down => {
            form.field = 1 - form.field;
        }
        KeyCode::Backspace => {
            field.pop();
        }
        KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => field.clear(),
        KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => field.push(c),
        KeyCode::Enter => {
            let req = NewSession {
                agent: form.agent.trim().to_string(),
                cwd: std::path::PathBuf::from(form.dir.trim()),
                worktree: form.worktree,
            };
            let Some(open) = deck.opener.as_mut() else {
                deck.form = None;
                return;
            };
            match open(req.clone()) {
                Ok(opened) => {
                    deck.form = None;
                    deck.add(opened, req.agent);
                    let keys = deck.keys.listed();
                    let front = deck.front;
                    deck.slots[front].app.session_keys = keys;
                }
                Err(e) => {
                    if let Some(f) = deck.form.as_mut() {
                        f.error = Some(e);
                    }
                }
            }
        }
        _ => {}
    }
}
