//! The terminal UI: a crossterm + ratatui loop around the same core the headless mode
//! uses. Keys, agent input and timer ticks are handled in one `select!`; frames are drawn
//! once per batch (coalesced), and a batch of agent input is bounded so that keys are
//! never kept waiting behind a flood of updates.
//!
//! Invariant: the terminal is always restored — on return, on error and on panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent_options;
pub mod app;
mod app_alerts;
mod app_ext;
mod app_inspector;
mod app_keys;
mod app_stepback;
mod app_view;
pub mod ask;
mod ask_draw;
pub mod compare;
pub mod complete;
pub mod deck;
mod deck_loop;
pub mod draw;
mod draw_inspector;
mod draw_overlay;
pub mod extui;
pub mod fork;
pub mod help;
pub mod history;
mod intent;
pub mod keymap;
mod layout;
pub mod opener;
mod plans;
pub mod plugins_page;
pub mod prompt;
mod prompt_view;
pub mod rail;
pub mod reason;
pub mod rewind;

mod siblings;
pub mod sidebar;

use std::time::Duration;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use trellis_core::event::EventBody;
use trellis_core::{Choice, Decider, Effect};
use trellis_driver::Note;

pub use app::{Alert, App, Intent};
pub use draw::{Clock, draw};
pub use trellis_driver::Connection;

/// Shows what the driver reported: views invalidated, alerts, messages.
pub fn show_notes(app: &mut App, notes: Vec<Note>) {
    for note in notes {
        match note {
            Note::Event(ev) => {
                alert_for(app, &ev.body);
                invalidate_for(app, &ev);
                if let EventBody::AgentSessionsListed { .. } = &ev.body {
                    app.agent_sessions_listed();
                }
                if let EventBody::TurnEnded { stop_reason, .. } = &ev.body {
                    app.turn_ended(stop_reason);
                }
            }
            // A recording read in: cards already drawn whose calls changed are laid out
            // again (a subagent's call shows in its parent's card).
            Note::Touched(places) => {
                let session = &app.driver.session;
                let nested = !session.subagents.is_empty();
                for p in places {
                    if app.view.knows_call(p) {
                        app.view.invalidate_call(p);
                    } else if nested && let Some(shown) = session.shown_call(p) {
                        app.view.invalidate_call(shown);
                    }
                }
            }
            Note::TerminalOutput { terminal_id } => {
                let session = &app.driver.session;
                let shown = session.terminals.get(&terminal_id).and_then(|t| t.call);
                if let Some(p) = shown.and_then(|p| session.shown_call(p)) {
                    app.view.invalidate_call(p);
                }
            }
            // The dialog shows every open request no extension holds; a request that comes
            // back from extensions alerts the user now.
            Note::Dialog { request_id } => {
                let held_first = app.driver.host.as_ref().is_some_and(|h| h.has_claimants());
                let session = &app.driver.session;
                if held_first
                    && let Some((_, index, _)) = session
                        .pending_permissions()
                        .into_iter()
                        .find(|(r, ..)| *r == request_id)
                {
                    let title = trellis_core::enrich::card_title(&session.ledger.at(index));
                    ring(app, &Alert::Permission { title });
                }
            }
            // A question extensions let go: the user is alerted now.
            Note::Question { request_id } => {
                let message = app
                    .driver
                    .session
                    .pending_elicitations()
                    .find(|e| e.request_id == request_id)
                    .map(|e| e.message.clone());
                if let Some(message) = message {
                    ring(app, &Alert::Question { message });
                }
            }
            // Warnings quote the agent and extensions: one line, nothing raw.
            Note::Message(text) => app.message = Some(trellis_text::one_line(&text).into_owned()),
            // Said once; the rest is counted where the key leads.
            Note::Failure { text, .. } => {
                app.failures
                    .push(trellis_text::one_line(&text).into_owned());
                app.message = Some(match app.failures.as_slice() {
                    [one] => format!("{one} · /status shows more"),
                    all => format!(
                        "{} failures: {} · /status shows more",
                        all.len(),
                        all.join(" · ")
                    ),
                });
            }
            Note::OpenInspector(call_id) => app.inspect_call(&call_id),
            // Run by the loop: the key reader must let go of the terminal first.
            Note::Login(login) => app.login = Some(login),
            // An agent given as a command line is named as it names itself.
            Note::Ready => {
                // Connected (again): what was said while dialing is over.
                if app.driver.session.remote.is_some() {
                    app.message = None;
                }
                let own = &app.driver.session.agent.name;
                let own = own.rsplit('/').next().unwrap_or(own).trim();
                if app.name_from_agent && !own.is_empty() {
                    app.agent = trellis_text::one_line(own).into_owned();
                }
            }
            Note::Repaint | Note::Stderr(_) | Note::Closed => {}
        }
    }
}

/// Applies reducer effects computed elsewhere (tests that build a session by hand):
/// extensions see the events, and the UI shows what follows.
pub fn apply_effects(app: &mut App, fx: Vec<Effect>) {
    let mut notes = Vec::new();
    app.driver.effects(fx, &mut notes);
    show_notes(app, notes);
}

/// Carries out what the extension host asked for.
pub fn perform_outs(app: &mut App, outs: Vec<trellis_ext_host::Out>) {
    let mut notes = Vec::new();
    app.driver.outs(outs, &mut notes);
    show_notes(app, notes);
}

fn alert_for(app: &mut App, body: &EventBody) {
    // A recording read in replays its requests: they were answered long ago.
    if app.driver.loading().is_some() {
        return;
    }
    // A request extensions may take alerts only if it reaches the dialog (above).
    let host = app.driver.host.as_ref();
    let alert = match body {
        EventBody::PermissionRequested { title, .. } => {
            if host.is_some_and(|h| h.has_claimants()) {
                return;
            }
            Alert::Permission {
                title: title.clone(),
            }
        }
        EventBody::ElicitationRequested { elicitation } => {
            if host.is_some_and(|h| h.has_question_claimants()) {
                return;
            }
            Alert::Question {
                message: elicitation.message.clone(),
            }
        }
        EventBody::PermissionResolved { .. } | EventBody::ElicitationResolved { .. } => {
            Alert::Answered
        }
        _ => return,
    };
    ring(app, &alert);
}

/// Writes the alert sequences for `alert`, if the app wants any.
fn ring(app: &mut App, alert: &Alert) {
    if let Some(seq) = app.alert(alert) {
        let out = &mut std::io::stdout();
        let _ = std::io::Write::write_all(out, seq.as_bytes());
        let _ = std::io::Write::flush(out);
    }
}

/// The card of the call an event is about is drawn again (a subagent's call is drawn
/// under the card of the call that started it).
fn invalidate_for(app: &mut App, ev: &trellis_core::Event) {
    let session = &app.driver.session;
    if let Some(p) = ev.position.and_then(|p| session.shown_call(p)) {
        app.view.invalidate_call(p);
    }
}

/// Reaps the browser openers that ended; a failed one's link goes to the clipboard.
pub(crate) fn reap_openers(app: &mut App) {
    for ended in app.openers.reap() {
        if let opener::Ended::Failed { status, url } = ended {
            copy(&url);
            app.message = Some(format!(
                "the browser did not open the link ({}): it is on the clipboard",
                trellis_text::one_line(&status)
            ));
        }
    }
}

/// Puts `text` on the clipboard (OSC 52).
fn copy(text: &str) {
    let seq = format!(
        "\x1b]52;c;{}\x07",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text.as_bytes())
    );
    let _ = std::io::Write::write_all(&mut std::io::stdout(), seq.as_bytes());
    let _ = std::io::Write::flush(&mut std::io::stdout());
}

/// Carries out what a key asked for.
pub fn perform_intent(app: &mut App, intent: Intent) {
    let mut notes = Vec::new();
    match intent {
        Intent::Copy(text) => copy(&text),
        Intent::Page(text) => {
            if let Err(e) = page(&text) {
                app.message = Some(format!("cannot open the pager: {e}"));
            }
            // What the pager left on the screen is not what the last frame drew.
            app.full_redraw = true;
        }
        Intent::Edit(text) => {
            match edit(&text) {
                Ok(Some(t)) => app.prompt.set(t),
                Ok(None) => app.message = Some("the editor failed: the prompt is unchanged".into()),
                Err(e) => app.message = Some(format!("cannot open the editor: {e}")),
            }
            app.full_redraw = true;
        }
        Intent::Open { log, call } => {
            if let Err(e) = open_replay(&log, call.as_deref()) {
                app.message = Some(format!("cannot open the session: {e}"));
            }
            app.full_redraw = true;
        }
        Intent::Prompt { text, files } => app.driver.prompt(text, files),
        Intent::UserCommand { command, attach } => {
            app.message = Some(match app.driver.user_command(command.clone()) {
                Ok(()) if attach => {
                    app.attach_output.push(crate::app::Attached::Newest(command));
                    format!(
                        "running · its output goes with your next prompt (its last {} KB at most)",
                        ATTACHED_OUTPUT / 1024
                    )
                }
                Ok(()) => "running · its card holds the output; !!cmd sends a command's output with your next prompt".into(),
                Err(e) => e,
            });
        }
        // The run loop stops on `app.quit`; closing the session follows it.
        Intent::Quit | Intent::Restart => {}
        Intent::Cancel => app.driver.cancel(&mut notes),
        Intent::CancelSubagent(id) => app.driver.cancel_subagent(id, &mut notes),
        Intent::Elicit { request_id, answer } => {
            app.driver
                .elicit(request_id, answer, Decider::User, &mut notes)
        }
        Intent::Visit { request_id, url } => {
            app.message = Some(match app.openers.open(&url) {
                Ok(()) => "opening the link in your browser".into(),
                Err(e) => {
                    copy(&url);
                    format!("cannot start a browser ({e}): the link is on the clipboard")
                }
            });
            let answer = trellis_core::ElicitAnswer::Accept(Default::default());
            app.driver
                .elicit(request_id, answer, Decider::User, &mut notes);
        }
        Intent::Decide {
            request_id,
            option_id,
            reason,
        } => app.driver.decide_because(
            request_id,
            Choice::Option(option_id),
            Decider::User,
            reason,
            &mut notes,
        ),
    }
    show_notes(app, notes);
}

/// The most of one command's output sent with a prompt (`!!cmd`): its last bytes.
pub const ATTACHED_OUTPUT: usize = 8 * 1024;

/// Edits `text` in `$VISUAL`, `$EDITOR` or `vi`, leaving the full screen meanwhile:
/// what the editor saved (one final newline dropped), or `None` when it failed.
fn edit(text: &str) -> std::io::Result<Option<String>> {
    // Created exclusively with an unpredictable name, removed on return.
    let mut file = tempfile::Builder::new()
        .prefix("trellis-prompt-")
        .suffix(".md")
        .tempfile()?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    let status = outside(&editor, file.path())?;
    if !status.success() {
        return Ok(None);
    }
    let bytes = std::fs::read(file.path())?;
    let mut saved = String::from_utf8_lossy(&bytes).into_owned();
    if saved.ends_with('\n') {
        saved.pop();
    }
    Ok(Some(saved))
}

/// Runs `program "$path"` through `sh` in the terminal's normal screen, then returns
/// to the full screen (the next frame redraws everything).
fn outside(program: &str, path: &std::path::Path) -> std::io::Result<std::process::ExitStatus> {
    outside_run(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{program} \"$1\""))
            .arg("sh")
            .arg(path),
    )
}

/// Runs `cmd` in the terminal's normal screen, then returns to the full screen.
fn outside_run(cmd: &mut std::process::Command) -> std::io::Result<std::process::ExitStatus> {
    outside_run_with(cmd, "")
}

/// [`outside_run`], with `head` printed first.
fn outside_run_with(
    cmd: &mut std::process::Command,
    head: &str,
) -> std::io::Result<std::process::ExitStatus> {
    restore();
    if !head.is_empty() {
        // Sanitized by the caller; the normal screen, before the command takes it.
        let out = &mut std::io::stdout();
        let _ = std::io::Write::write_all(out, format!("{head}\n").as_bytes());
        let _ = std::io::Write::flush(out);
    }
    let status = cmd.spawn().and_then(|mut child| {
        // Waited for here, not by the orphan reaper.
        trellis_os::reaper::own(child.id());
        child.wait()
    });
    let _ = ratatui::init();
    let _ = crossterm::execute!(
        std::io::stdout(),
        EnableMouseCapture,
        crossterm::event::EnableBracketedPaste
    );
    status
}

/// Runs the agent's login in the terminal's normal screen, under a line that says what
/// asks for it and why.
pub(crate) fn run_login(login: &trellis_acp::Login) -> std::io::Result<std::process::ExitStatus> {
    let mut cmd = std::process::Command::new(&login.program);
    cmd.args(&login.args)
        .envs(login.env.iter().map(|(k, v)| (k, v)));
    let mut head = format!(
        "Trellis: the agent asks you to log in ({}).",
        trellis_text::one_line(&login.name)
    );
    if let Some(d) = login.description.as_deref().filter(|d| !d.is_empty()) {
        head.push_str(&format!("\n{}", trellis_text::one_line(d)));
    }
    head.push_str(&format!(
        "\nRunning: {}\n",
        trellis_text::one_line(&login.command_line())
    ));
    outside_run_with(&mut cmd, &head)
}

/// `trellis replay LOG [--call ID]` in the terminal's normal screen: a past session,
/// read-only, while this one waits.
fn open_replay(log: &std::path::Path, call: Option<&str>) -> std::io::Result<()> {
    // No shell: the call id came from an agent.
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("replay").arg(log);
    if let Some(c) = call {
        // One argument: an id that starts with `-` is still the option's value.
        cmd.arg(format!("--call={c}"));
    }
    outside_run(&mut cmd).map(|_| ())
}

/// Shows `text` in `$PAGER` (default `less -R`), leaving the full screen meanwhile.
fn page(text: &str) -> std::io::Result<()> {
    // Created exclusively with an unpredictable name (never a planted link), removed on
    // return.
    let mut file = tempfile::Builder::new()
        .prefix("trellis-view-")
        .suffix(".txt")
        .tempfile()?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
    outside(&pager, file.path()).map(|_| ())
}

fn restore() {
    let _ = crossterm::execute!(
        std::io::stdout(),
        DisableMouseCapture,
        crossterm::event::DisableFocusChange,
        crossterm::event::DisableBracketedPaste
    );
    // Not `ratatui::restore`: it reports a failure with `eprintln!`, which panics when the
    // terminal is gone (a hangup), and its panic hook restores (and prints) again — an abort
    // that skips every drop still to come: the demo's workspace stays behind.
    if let Err(e) = ratatui::try_restore() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "trellis: could not restore the terminal: {e}"
        );
    }
}

pub use trellis_driver::Restart;

/// Runs the UI on one session until the user quits (or a signal asks it to), then closes
/// the session. Returns what closing the session had to tell the user (to print after
/// the UI).
pub async fn run(app: App, restart: Option<Restart>) -> std::io::Result<Vec<String>> {
    let source = app.driver.session.cwd.clone().unwrap_or_default();
    let deck = deck::Deck::new(
        deck::Opened {
            app,
            restart,
            source,
            branch: None,
            from: None,
        },
        String::new(),
    );
    run_deck(deck).await
}

/// Runs the UI on a deck of sessions until the user quits (or a signal asks it to), then
/// closes every session. Returns what closing them had to tell the user.
pub async fn run_deck(mut deck: deck::Deck) -> std::io::Result<Vec<String>> {
    let mut terminal = ratatui::try_init()
        .map_err(|e| std::io::Error::new(e.kind(), format!("the UI needs a terminal: {e}")))?;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        hook(info);
    }));
    // Panics inside extensions are recorded, never printed over the screen.
    trellis_ext_host::install_panic_guard();
    // A paste arrives whole (never as keys: a newline in it is no Enter).
    crossterm::execute!(
        std::io::stdout(),
        EnableMouseCapture,
        crossterm::event::EnableFocusChange,
        crossterm::event::EnableBracketedPaste
    )?;
    deck.hint_keys();
    let mut signals = trellis_os::signals::Signals::new(true)?;
    let mut said = Vec::new();
    let result = deck_loop::deck_loop(&mut terminal, &mut deck, &mut signals, &mut said).await;
    restore();
    let reason = deck
        .sessions
        .slots
        .get(deck.sessions.front)
        .and_then(|s| s.app.stop_reason.clone())
        .unwrap_or_else(|| "user quit".into());
    let then_run = deck
        .sessions
        .slots
        .get_mut(deck.sessions.front)
        .and_then(|s| s.app.then_run.take());
    for slot in &mut deck.sessions.slots {
        if let Some(log) = &slot.app.log_path
            && !slot.app.replay
        {
            said.push(format!("session log: {}", log.display()));
        }
        // Every session's worktree that is still open, however the session was opened.
        if let (Some(w), Some(ops)) = (&slot.app.driver.session.worktree, &deck.worktrees)
            && let Some(r) = ops.reminder(&w.label)
        {
            said.push(r);
        }
        if slot.app.driver.connection().is_some() {
            let mut notes = Vec::new();
            slot.app.driver.close(&reason, &mut notes).await;
            // What closing had to say (the session missing from the history, say) goes
            // to the caller, to print once the screen is the terminal's again.
            said.extend(notes.into_iter().filter_map(|n| match n {
                trellis_driver::Note::Message(text)
                | trellis_driver::Note::Failure { text, .. } => Some(text),
                _ => None,
            }));
        }
    }
    // Resuming another session from the picker: this one is closed (its extensions
    // and plugins stopped as the app goes), then Trellis starts again in its place.
    if let (Ok(()), Some(args)) = (&result, then_run) {
        drop(deck);
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe()?;
        return Err(std::process::Command::new(exe).args(args).exec());
    }
    result.map(|()| said)
}

/// How often a recording being read in is drawn.
pub(crate) const READING_FRAME: Duration = Duration::from_millis(100);

/// How long the first frame of a recording being read in waits for it (a short one is
/// whole in it; a long one shows what was read, and the rest comes as it is read).
pub(crate) const FIRST_FRAME_WAIT: Duration = Duration::from_millis(150);
