//! What keys do while the deck's new-session form, inbox or comparison is open, and a
//! session's worktree ended from the UI.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::close_slot;
use crate::deck::{Deck, NewSession, Work};
use crate::{Intent, perform_intent};

/// A key while the comparison is open. Landing one session's worktree (and discarding
/// the others') asks first, saying what lands where and what is discarded; only `y`
/// answers yes.
pub(super) async fn compare_key(deck: &mut Deck, k: &KeyEvent, said: &mut Vec<String>) {
    let Some(c) = deck.compare.as_mut() else {
        return;
    };
    if let Some(q) = c.confirm.take() {
        if k.code == KeyCode::Char('y') && k.modifiers.is_empty() {
            land_chosen(deck, q, said).await;
        } else {
            deck.front().message = Some("nothing landed, nothing discarded".into());
        }
        return;
    }
    let n = c.rows.len().max(1);
    match k.code {
        KeyCode::Esc | KeyCode::Char('q') => deck.compare = None,
        KeyCode::Down | KeyCode::Char('j') => c.selected = (c.selected + 1) % n,
        KeyCode::Up | KeyCode::Char('k') => c.selected = (c.selected + n - 1) % n,
        KeyCode::Enter | KeyCode::Char('o') => {
            let key = c.rows.get(c.selected).map(|r| r.key);
            if let Some(i) = key.and_then(|k| deck.sessions.index_of(k)) {
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
        KeyCode::Char('L') => {
            let Some(label) = c.rows.get(c.selected).and_then(|r| r.label.clone()) else {
                deck.front().message =
                    Some("landing works on sessions that run in worktrees of Trellis's".into());
                return;
            };
            // What it will do is found before it is asked; what cannot be done is said
            // now, with every session still running.
            let chosen = c.selected;
            let others = c.others(chosen);
            match landing(deck, &label, &others) {
                Ok(landing) => {
                    if let Some(c) = deck.compare.as_mut() {
                        c.confirm = Some(crate::compare::Confirm { chosen, landing });
                    }
                }
                Err(e) => deck.front().message = Some(format!("cannot land {label}: {e}")),
            }
        }
        KeyCode::Char('K') => {
            deck.front().message =
                Some("L lands the selected session's worktree (it asks first)".into());
        }
        _ => {}
    }
}

/// What a land of worktree `label` (and a discard of `others`) would do now, or why it
/// cannot.
fn landing(deck: &Deck, label: &str, others: &[String]) -> Result<crate::compare::Landing, String> {
    match deck.worktrees.as_ref() {
        Some(ops) => ops.landing(label, others),
        None => Err("no worktrees here".into()),
    }
}

/// Lands the chosen row's worktree and discards the others' (the answer to the question
/// was yes): their sessions close first, so no agent writes into a tree being removed —
/// unless the land can no longer be done as asked (checked again first: the sessions ran
/// meanwhile), when nothing is closed and the comparison stays.
async fn land_chosen(deck: &mut Deck, q: crate::compare::Confirm, said: &mut Vec<String>) {
    let Some(row) = deck.compare.as_ref().and_then(|c| c.rows.get(q.chosen)) else {
        return;
    };
    let Some(label) = row.label.clone() else {
        return;
    };
    let others = deck
        .compare
        .as_ref()
        .map(|c| c.others(q.chosen))
        .unwrap_or_default();
    match landing(deck, &label, &others) {
        Ok(now) if now == q.landing => {}
        Ok(_) => {
            deck.front().message = Some(format!(
                "{label}: what a land would do changed meanwhile; nothing was done — L to ask again"
            ));
            return;
        }
        Err(e) => {
            deck.front().message = Some(format!("cannot land {label}: {e}"));
            return;
        }
    }
    let Some(c) = deck.compare.take() else {
        return;
    };
    let Some(row) = c.rows.get(q.chosen) else {
        return;
    };
    let chosen = q.chosen;
    let work = row.prompt.as_deref().map(|prompt| Work {
        prompt,
        agent: &row.agent,
    });
    let others = c.others(chosen);
    for r in &c.rows {
        if let Some(i) = deck.sessions.index_of(r.key) {
            let why = format!("worktree {label} is being landed");
            close_slot(deck, i, &why, said, false).await;
        }
    }
    let outcome = match deck.worktrees.as_ref() {
        Some(ops) => ops.land_one(&label, &others, work),
        None => Err("no worktrees here".into()),
    };
    let lines = match outcome {
        Ok(lines) => lines,
        Err(e) => vec![format!("landing {label} failed: {e}")],
    };
    if let Some(s) = deck.sessions.slots.get_mut(deck.sessions.front) {
        s.app.message = lines.last().map(|l| trellis_text::one_line(l).into_owned());
    }
    said.extend(lines);
}

/// `/worktree ACTION` in the session in front: `keep` leaves it running; the endings that
/// change or remove the tree close the session first (its agent must not write into a
/// tree being changed). What happened is said in the message line, and again after the UI.
pub(super) async fn end_worktree(deck: &mut Deck, action: &str, said: &mut Vec<String>) {
    let i = deck.sessions.front;
    let slot = &deck.sessions.slots[i];
    let Some(label) = slot
        .app
        .driver
        .session
        .worktree
        .as_ref()
        .map(|w| w.label.clone())
    else {
        return;
    };
    let (prompt, agent) = (slot.first_prompt(), slot.agent_name());
    // What would refuse refuses now, with the session still running.
    if let Some(Err(e)) = deck.worktrees.as_ref().map(|ops| ops.check(&label, action)) {
        deck.front().message = Some(format!("{action} {label}: {e}"));
        said.push(format!("{action} {label}: {e}"));
        return;
    }
    if action != "keep" {
        close_slot(
            deck,
            i,
            &format!("its worktree is being ended ({action})"),
            said,
            false,
        )
        .await;
    }
    let lines = match deck.worktrees.as_ref() {
        Some(ops) => {
            let work = prompt.as_deref().map(|prompt| Work {
                prompt,
                agent: &agent,
            });
            ops.end(&label, action, work)
        }
        None => Err("no worktrees here".into()),
    }
    .unwrap_or_else(|e| vec![format!("{action} {label}: {e}")]);
    if let Some(s) = deck.sessions.slots.get_mut(deck.sessions.front) {
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
                cwd: Some(std::path::PathBuf::from(form.dir.trim())),
                worktree: form.worktree,
                worktree_label: None,
                launched_in: None,
                fork: None,
            };
            let Some(open) = deck.sessions.opener.as_mut() else {
                deck.form = None;
                return;
            };
            match open(req.clone()) {
                Ok(opened) => {
                    deck.form = None;
                    deck.add(opened, req.agent);
                    let keys = deck.keys.listed();
                    let front = deck.sessions.front;
                    deck.sessions.slots[front].app.session_keys = keys;
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
