//! The UI's loop over a deck of sessions: keys, every session's driver, signals and ticks
//! in one `select!`. Frames draw the session in front and the rail; a background
//! session's input is handled as it comes (its views only marked for later).

use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, KeyEvent, KeyEventKind};
use futures::StreamExt;

mod fork;
mod overlays;

use overlays::{compare_key, end_worktree, form_key};
use trellis_deck::{USER_CLOSED, next_call, recv_any, remote, run_hook};

use crate::deck::{Deck, DeckAction, DeckKey, Inbox};
use crate::draw::Clock;
use crate::{
    FIRST_FRAME_WAIT, Intent, READING_FRAME, perform_intent, reap_openers, run_login, show_notes,
};

/// A recording being read: what arrives in the first moments is in the first frame.
async fn first_moments(deck: &mut Deck) {
    let until = tokio::time::Instant::now() + FIRST_FRAME_WAIT;
    let i = deck.sessions.front;
    while deck.sessions.slots[i].app.driver.loading().is_some()
        && tokio::time::Instant::now() < until
    {
        let Ok(incoming) =
            tokio::time::timeout_at(until, deck.sessions.slots[i].app.driver.recv()).await
        else {
            break;
        };
        let notes = deck.sessions.handle(i, incoming);
        let app = &mut deck.sessions.slots[i].app;
        show_notes(app, notes.into_iter().map(|n| n.note).collect());
        app.inspect_when_loaded();
    }
}

/// Writes what the deck has to announce: bell, a mark in the window title, a desktop
/// notification (OSC 9 and OSC 777), each as the front session's `[ui]` settings say;
/// inside tmux the notifications are passed through to the outer terminal.
pub(super) fn announce(deck: &mut Deck, title_marked: &mut Option<String>) {
    let tmux = std::env::var_os("TMUX").is_some();
    let seq = announcements(deck, title_marked, tmux);
    if !seq.is_empty() {
        let out = &mut std::io::stdout();
        let _ = std::io::Write::write_all(out, seq.as_bytes());
        let _ = std::io::Write::flush(out);
    }
}

/// The terminal sequences of [`announce`] (and the `[notify] command` run for each).
fn announcements(deck: &mut Deck, title_marked: &mut Option<String>, tmux: bool) -> String {
    // The last session closed (stopped from elsewhere): nothing to announce to.
    let Some(front) = deck.sessions.slots.get(deck.sessions.front) else {
        return String::new();
    };
    let alerts = front.app.alerts;
    let mut seq = String::new();
    for a in std::mem::take(&mut deck.sessions.announce) {
        if let Some(cmd) = &deck.sessions.notify.command {
            run_hook(cmd, &a);
        }
        let number = deck.sessions.index_of(a.key).map(|i| i + 1).unwrap_or(0);
        let agent = trellis_text::sanitize::one_line(&a.agent);
        let text = format!("session {number} ({agent}): {}", a.attention.word());
        if alerts.bell {
            seq.push('\x07');
        }
        if alerts.notify {
            let osc9 = format!("\x1b]9;Trellis: {text}\x07");
            let osc777 = format!("\x1b]777;notify;Trellis;{text}\x07");
            for s in [osc9, osc777] {
                if tmux {
                    // tmux passes a sequence on only wrapped, its escapes doubled.
                    seq.push_str(&format!(
                        "\x1bPtmux;{}\x1b\\",
                        s.replace('\x1b', "\x1b\x1b")
                    ));
                } else {
                    seq.push_str(&s);
                }
            }
        }
        if alerts.title {
            seq.push_str(&format!("\x1b]2;◆ trellis — {text}\x07"));
            *title_marked = Some(text);
        }
    }
    // The mark follows what still wants the human: gone once nothing does, and never a
    // state that has passed (a request answered in the inbox while another session is
    // done, say).
    if title_marked.is_some() {
        let now = deck.sessions.wanted().map(|i| {
            let s = &deck.sessions.slots[i];
            let name = s.agent_name();
            let agent = trellis_text::sanitize::one_line(&name);
            format!("session {} ({agent}): {}", i + 1, s.attention.word())
        });
        match now {
            None => {
                seq.push_str("\x1b]2;trellis\x07");
                *title_marked = None;
            }
            Some(text) if title_marked.as_deref() != Some(text.as_str()) => {
                seq.push_str(&format!("\x1b]2;◆ trellis — {text}\x07"));
                *title_marked = Some(text);
            }
            Some(_) => {}
        }
    }
    seq
}

/// Closes slot `i` (see [`trellis_deck::Sessions::close`]); the keys' hint follows.
pub(super) async fn close_slot(
    deck: &mut Deck,
    i: usize,
    reason: &str,
    said: &mut Vec<String>,
    remind: bool,
) {
    deck.sessions.close(i, reason, said, remind).await;
    deck.hint_keys();
}

/// Carries out a deck action.
async fn act(deck: &mut Deck, a: DeckAction, said: &mut Vec<String>) {
    let n = deck.sessions.slots.len();
    match a {
        DeckAction::Go(k) => {
            let i = usize::from(k).saturating_sub(1);
            if i < n {
                deck.show(i);
            } else {
                deck.front().message = Some(format!("there is no session {k}"));
            }
        }
        DeckAction::Next => deck.show((deck.sessions.front + 1) % n),
        DeckAction::Prev => deck.show((deck.sessions.front + n - 1) % n),
        DeckAction::Attention => match deck.sessions.wanted() {
            Some(i) => deck.show(i),
            None => deck.front().message = Some("no session needs you".into()),
        },
        DeckAction::New | DeckAction::NewWorktree => {
            if deck.sessions.opener.is_none() {
                deck.front().message = Some("no other session can be started here".into());
            } else {
                deck.open_form(a == DeckAction::NewWorktree);
            }
        }
        DeckAction::Close => {
            if deck.may_close() {
                let i = deck.sessions.front;
                close_slot(deck, i, USER_CLOSED, said, true).await;
            }
        }
        DeckAction::Rail => deck.rail = !deck.rail,
        DeckAction::Inbox => deck.inbox = Some(Inbox::default()),
        DeckAction::Compare => deck.open_compare(),
    }
}

/// The shortest time between two frames drawn for agent input (60 Hz). Keys are drawn at
/// once, whatever this says: their echo never waits for it.
const STREAM_FRAME: Duration = Duration::from_millis(16);

/// The loop. Returns when the user quits (every session closes after it).
pub(crate) async fn deck_loop(
    terminal: &mut ratatui::DefaultTerminal,
    deck: &mut Deck,
    signals: &mut trellis_os::signals::Signals,
    said: &mut Vec<String>,
) -> std::io::Result<()> {
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut frame = 0usize;
    let mut dirty = true;
    // The session in front had news since the last frame: drawn at most every
    // STREAM_FRAME (a storm of agent input would otherwise draw a frame per batch).
    let mut owed = false;
    let mut last_frame = Instant::now();
    let mut title_marked: Option<String> = None;
    let mut focused = true;
    first_moments(deck).await;
    loop {
        if deck.sessions.slots.is_empty() {
            return Ok(());
        }
        let front = deck.sessions.front;
        if std::mem::take(&mut deck.sessions.slots[front].app.full_redraw) {
            let size = terminal.size()?;
            terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))?;
            dirty = true;
        }
        if owed && last_frame.elapsed() >= STREAM_FRAME {
            dirty = true;
        }
        if dirty {
            owed = false;
            deck.seen();
            let now = session_clock(deck);
            last_frame = Instant::now();
            terminal.draw(|f| crate::rail::draw_deck(f, deck, Clock { now, frame }))?;
            dirty = false;
            if deck.sessions.slots[front].app.exit_after_first_frame {
                return Ok(());
            }
        }
        if deck.sessions.slots[front].app.quit {
            return Ok(());
        }
        if let Some(login) = deck.sessions.slots[front].app.login.take() {
            drop(events);
            let ran = run_login(&login);
            events = EventStream::new();
            let ok = ran.as_ref().is_ok_and(|s| s.success());
            let app = &mut deck.sessions.slots[front].app;
            app.driver.login_done(ok);
            app.full_redraw = true;
            let command = trellis_text::one_line(&login.command_line()).into_owned();
            app.message = Some(match ran {
                Ok(_) if ok => "login finished: the agent sets up its session again".into(),
                Ok(s) => format!("the login failed ({s}): {command}"),
                Err(e) => format!("the login could not run ({e}): {command}"),
            });
            deck.sessions.refresh(front);
            continue;
        }
        deck.sessions.deliver();
        let app = &deck.sessions.slots[front].app;
        let animating = trellis_view::TranscriptView::animating(&app.driver.session);
        let ticking = animating
            || app.catching_up()
            || !app.openers.is_empty()
            || app.driver.loading().is_some();
        tokio::select! {
            (i, incoming) = recv_any(&mut deck.sessions.slots) => {
                let notes = deck.sessions.handle(i, incoming);
                let app = &mut deck.sessions.slots[i].app;
                show_notes(app, notes.into_iter().map(|n| n.note).collect());
                app.inspect_when_loaded();
                let was = deck.sessions.slots[i].attention;
                deck.sessions.refresh(i);
                if deck.sessions.slots[i].attention != was {
                    deck.refresh_compare();
                }
                if i == deck.sessions.front {
                    if deck.sessions.slots[i].app.driver.loading().is_none() {
                        owed = true;
                    } else {
                        dirty |= last_frame.elapsed() >= READING_FRAME;
                    }
                } else {
                    // A background session redraws only the rail, when its state changed.
                    dirty |= deck.sessions.slots[i].attention != was;
                }
                announce(deck, &mut title_marked);
            }
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => {
                    dirty = true;
                    key_event(deck, &k, focused, &mut title_marked, said).await;
                }
                Some(Ok(Event::Mouse(m))) => {
                    deck.front().on_mouse(m);
                    dirty = true;
                }
                // Into the session in front, unless the deck's own page is open.
                Some(Ok(Event::Paste(text))) => {
                    if deck.inbox.is_none() && deck.compare.is_none() && deck.form.is_none() {
                        deck.front().on_paste(&text);
                    }
                    dirty = true;
                }
                Some(Ok(Event::FocusGained)) => {
                    focused = true;
                    deck.front().focused = true;
                }
                Some(Ok(Event::FocusLost)) => {
                    focused = false;
                    deck.front().focused = false;
                }
                Some(Ok(_)) => dirty = true,
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            m = crate::compare::next_measure(&mut deck.compare) => {
                deck.measured(m);
                dirty = true;
            }
            call = next_call(&mut deck.sessions.hub) => {
                remote(&mut deck.sessions, call, said).await;
                // A session may have opened or closed.
                deck.hint_keys();
                dirty = true;
                announce(deck, &mut title_marked);
            }
            sig = signals.recv() => {
                deck.front().stop_reason = Some(format!("stopped by {sig}"));
                return Ok(());
            }
            _ = tokio::time::sleep_until((last_frame + STREAM_FRAME).into()), if owed => {}
            _ = tick.tick(), if ticking => {
                frame = frame.wrapping_add(1);
                reap_openers(deck.front());
                dirty = true;
            }
        }
    }
}

/// A key: to the open form, comparison or inbox, else the deck's own keys, else the
/// session in front.
async fn key_event(
    deck: &mut Deck,
    k: &KeyEvent,
    focused: bool,
    title_marked: &mut Option<String>,
    said: &mut Vec<String>,
) {
    if k.kind == KeyEventKind::Release {
        return;
    }
    if deck.form.is_some() {
        form_key(deck, k);
        return;
    }
    // Ctrl-C reaches the session whatever is open over it (twice quits, as everywhere):
    // the comparison closes first, asking nothing.
    let ctrl_c = k.code == crossterm::event::KeyCode::Char('c')
        && k.modifiers
            .contains(crossterm::event::KeyModifiers::CONTROL);
    if deck.compare.is_some() && ctrl_c {
        deck.compare = None;
    }
    if deck.compare.is_some() {
        compare_key(deck, k, said).await;
        return;
    }
    if deck.inbox.is_some() {
        deck.inbox_key(k);
        announce(deck, title_marked);
        return;
    }
    match deck.key(k) {
        DeckKey::Action(a) => {
            act(deck, a, said).await;
            // Only the session in front alerts on its own (when the terminal has no
            // focus); the deck announces the others.
            let front = deck.sessions.front;
            for (j, s) in deck.sessions.slots.iter_mut().enumerate() {
                s.app.focused = j != front || focused;
            }
            announce(deck, title_marked);
        }
        DeckKey::Swallowed => {}
        DeckKey::Pass => {
            front_key(deck, *k);
            if let Some(action) = deck.front().worktree_end.take() {
                end_worktree(deck, &action, said).await;
            }
            if let Some(ask) = deck.front().fork_request.take() {
                fork::open(deck, ask);
            }
        }
    }
}

/// The clock the session in front is drawn with: its own (a session opened later — a
/// fork, a hand-off, one from the form — counts from its own start, as its record does;
/// the deck's clock made its calls look minutes old).
fn session_clock(deck: &Deck) -> f64 {
    deck.sessions.slots[deck.sessions.front].app.driver.now()
}

/// The agent's session to take up again when Ctrl-R dials an agent elsewhere again: its
/// own, if it offered `session/resume` or `session/load` (a local agent starts anew, as
/// it always did).
fn taken_up(s: &trellis_core::Session) -> Option<String> {
    let caps = s.agent_capabilities.as_ref()?;
    let resumable = caps.get("loadSession").and_then(|v| v.as_bool()) == Some(true)
        || caps.pointer("/sessionCapabilities/resume").is_some();
    s.remote.as_ref()?;
    s.id.as_deref().filter(|_| resumable).map(str::to_string)
}

/// A key for the session in front (what a single session's loop does with it).
fn front_key(deck: &mut Deck, k: KeyEvent) {
    let i = deck.sessions.front;
    let slot = &mut deck.sessions.slots[i];
    for intent in slot.app.on_key(k) {
        if intent == Intent::Restart {
            let origin = slot.app.driver.connection().map(|h| h.recorder().origin());
            let take_up = taken_up(&slot.app.driver.session);
            match (slot.restart.as_mut(), origin) {
                (Some(start), Some(origin)) => match start(origin, take_up) {
                    Ok(c) => slot.app.driver.connect(c),
                    Err(e) => slot.app.message = Some(format!("cannot restart the agent: {e}")),
                },
                _ => slot.app.message = Some("this session cannot restart its agent".into()),
            }
            continue;
        }
        perform_intent(&mut slot.app, intent);
    }
    deck.sessions.refresh(i);
}

#[cfg(test)]
mod tests {
    use trellis_core::attention::{Attention, Blocked};

    use crate::deck::Deck;
    use crate::deck::tests::opened;

    /// A session opened later (a fork, a hand-off) is drawn on its own clock, not the
    /// deck's: the second trial saw a fork's new call "2m31s waiting" 4 s after it began.
    #[test]
    fn each_session_is_drawn_on_its_own_clock() {
        let mut d = Deck::new(opened("a"), "demo".into());
        std::thread::sleep(std::time::Duration::from_millis(300));
        d.add(opened("b"), "demo".into());
        d.show(1);
        let b = super::session_clock(&d);
        assert!(b < 0.2, "the second session's clock starts with it: {b}");
        d.show(0);
        assert!(super::session_clock(&d) >= 0.3);
    }

    /// The window title's mark follows what still wants the human: a permission answered
    /// in the inbox while another session is done leaves "done", not "permission".
    #[test]
    fn the_title_mark_follows_what_still_wants_the_human() {
        let mut d = Deck::new(opened("a"), "demo".into());
        d.add(opened("b"), "demo".into());
        d.add(opened("c"), "demo".into());
        d.show(0);
        d.sessions.announce.clear();
        let mut mark = None;
        d.sessions.slots[1].attention = Attention::Blocked(Blocked::Permission);
        d.sessions.announce.push(crate::deck::Announcement {
            key: d.sessions.slots[1].key,
            attention: d.sessions.slots[1].attention,
            agent: "b".into(),
            session_id: None,
        });
        let seq = super::announcements(&mut d, &mut mark, false);
        assert!(seq.contains("session 2 (b): permission"), "{seq:?}");
        // Answered in the inbox; session 3 is done meanwhile.
        d.sessions.slots[1].attention = Attention::Working;
        d.sessions.slots[2].attention = Attention::Done;
        let seq = super::announcements(&mut d, &mut mark, false);
        assert!(
            seq.contains("\x1b]2;◆ trellis — session 3 (c): done"),
            "{seq:?}"
        );
        assert!(!seq.contains("permission"), "{seq:?}");
        d.sessions.slots[2].attention = Attention::Idle;
        let seq = super::announcements(&mut d, &mut mark, false);
        assert_eq!(seq, "\x1b]2;trellis\x07", "nothing wants the human");
        assert_eq!(mark, None);
    }
}
