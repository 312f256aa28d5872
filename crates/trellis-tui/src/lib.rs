//! The terminal UI: a crossterm + ratatui loop around the same core the headless mode
//! uses. Keys, agent input and timer ticks are handled in one `select!`; frames are drawn
//! once per batch (coalesced), and a batch of agent input is bounded so that keys are
//! never kept waiting behind a flood of updates.
//!
//! Invariant: the terminal is always restored — on return, on error and on panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent_options;
pub mod app;
mod app_ext;
mod app_inspector;
mod app_keys;
pub mod ask;
pub mod complete;
pub mod draw;
pub mod extui;
pub mod help;
pub mod history;
pub mod keymap;
pub mod opener;
mod plans;
pub mod plugins_page;
pub mod prompt;
pub mod rules;
mod siblings;
pub mod sidebar;

use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream};
use futures::StreamExt;
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
            Note::OpenInspector(call_id) => app.inspect_call(&call_id),
            // Run by the loop: the key reader must let go of the terminal first.
            Note::Login(login) => app.login = Some(login),
            Note::Repaint | Note::Ready | Note::Stderr(_) | Note::Closed => {}
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
fn reap_openers(app: &mut App) {
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
        } => app.driver.decide(
            request_id,
            Choice::Option(option_id),
            Decider::User,
            &mut notes,
        ),
    }
    show_notes(app, notes);
}

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
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    status
}

/// Runs the agent's login in the terminal's normal screen, under a line that says what
/// asks for it and why.
fn run_login(login: &trellis_acp::Login) -> std::io::Result<std::process::ExitStatus> {
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
        crossterm::event::DisableFocusChange
    );
    ratatui::restore();
}

/// Starts the agent again, continuing the session log from an origin.
pub type Restart = Box<dyn FnMut(trellis_acp::Origin) -> Result<Connection, String> + Send>;

/// Runs the UI until the user quits (or a signal asks it to), then closes the session.
/// Returns what closing the session had to tell the user (to print after the UI).
pub async fn run(mut app: App, mut restart: Option<Restart>) -> std::io::Result<Vec<String>> {
    let mut terminal = ratatui::init();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        hook(info);
    }));
    // Panics inside extensions are recorded, never printed over the screen.
    trellis_ext_host::install_panic_guard();
    crossterm::execute!(
        std::io::stdout(),
        EnableMouseCapture,
        crossterm::event::EnableFocusChange
    )?;
    let mut signals = trellis_os::signals::Signals::new(true)?;
    let result = run_loop(&mut terminal, &mut app, &mut restart, &mut signals).await;
    restore();
    let mut said = Vec::new();
    if app.driver.connection().is_some() {
        let reason = app
            .stop_reason
            .clone()
            .unwrap_or_else(|| "user quit".into());
        let mut notes = Vec::new();
        app.driver.close(&reason, &mut notes).await;
        // What closing had to say (the session missing from the history, say) goes to
        // the caller, to print once the screen is the terminal's again.
        said.extend(notes.into_iter().filter_map(|n| match n {
            trellis_driver::Note::Message(text) => Some(text),
            _ => None,
        }));
    }
    // Resuming another session from the picker: this one is closed (its extensions
    // and plugins stopped as the app goes), then Trellis starts again in its place.
    if let (Ok(()), Some(args)) = (&result, app.then_run.take()) {
        drop(app);
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe()?;
        return Err(std::process::Command::new(exe).args(args).exec());
    }
    result.map(|()| said)
}

/// How often a recording being read in is drawn.
const READING_FRAME: Duration = Duration::from_millis(100);

/// How long the first frame of a recording being read in waits for it (a short one is
/// whole in it; a long one shows what was read, and the rest comes as it is read).
const FIRST_FRAME_WAIT: Duration = Duration::from_millis(150);

/// A recording being read: what arrives in the first moments is in the first frame.
async fn first_moments(app: &mut App) {
    let until = tokio::time::Instant::now() + FIRST_FRAME_WAIT;
    // (the deadline is checked here too: a timeout polls a ready future first, and a
    // feed is always ready)
    while app.driver.loading().is_some() && tokio::time::Instant::now() < until {
        let Ok(incoming) = tokio::time::timeout_at(until, app.driver.recv()).await else {
            break;
        };
        let mut notes = Vec::new();
        app.driver.handle(incoming, &mut notes);
        show_notes(app, notes);
        app.inspect_when_loaded();
    }
}

async fn run_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    restart: &mut Option<Restart>,
    signals: &mut trellis_os::signals::Signals,
) -> std::io::Result<()> {
    let start = Instant::now();
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut frame = 0usize;
    let mut dirty = true;
    // While a recording is read in, its slices come faster than frames are worth drawing:
    // they are drawn at most every `READING_FRAME` (keys still draw at once).
    let mut last_frame = Instant::now();
    first_moments(app).await;
    loop {
        if std::mem::take(&mut app.full_redraw) {
            // Clears the screen and forgets the last frame. Not `Terminal::clear`: it asks
            // the terminal where the cursor is and fails the UI when no answer comes within
            // 2 s (a loaded machine after a login, a terminal that does not answer).
            let size = terminal.size()?;
            terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))?;
            dirty = true;
        }
        if dirty {
            let now = start.elapsed().as_secs_f64();
            last_frame = Instant::now();
            terminal.draw(|f| draw(f, app, Clock { now, frame }))?;
            dirty = false;
            if app.exit_after_first_frame {
                return Ok(());
            }
        }
        if app.quit {
            return Ok(());
        }
        if let Some(login) = app.login.take() {
            // The key reader reads the terminal while it waits: it would take the
            // login's keys and the terminal's answers. It goes, and comes back after.
            drop(events);
            // Exit status 0 is a login (ACP's terminal auth); setup is tried again.
            let ran = run_login(&login);
            events = EventStream::new();
            let ok = ran.as_ref().is_ok_and(|s| s.success());
            app.driver.login_done(ok);
            app.full_redraw = true;
            let command = trellis_text::one_line(&login.command_line()).into_owned();
            app.message = Some(match ran {
                Ok(_) if ok => "login finished: the agent sets up its session again".into(),
                Ok(s) => format!("the login failed ({s}): {command}"),
                Err(e) => format!("the login could not run ({e}): {command}"),
            });
            continue;
        }
        // Events of the last batch go to the extensions' workers together.
        app.driver.deliver();
        let animating = trellis_view::TranscriptView::animating(&app.driver.session);
        tokio::select! {
            incoming = app.driver.recv() => {
                let mut notes = Vec::new();
                app.driver.handle(incoming, &mut notes);
                show_notes(app, notes);
                app.inspect_when_loaded();
                // (a slice of a recording is drawn by the tick when it comes too soon)
                dirty |= app.driver.loading().is_none() || last_frame.elapsed() >= READING_FRAME;
            }
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => {
                    for intent in app.on_key(k) {
                        if intent == Intent::Restart {
                            let origin = app.driver.connection().map(|h| h.recorder().origin());
                            match (restart.as_mut(), origin) {
                                (Some(start), Some(origin)) => match start(origin) {
                                    Ok(c) => app.driver.connect(c),
                                    Err(e) => app.message = Some(format!("cannot restart the agent: {e}")),
                                },
                                _ => app.message = Some("this session cannot restart its agent".into()),
                            }
                            continue;
                        }
                        perform_intent(app, intent);
                    }
                    dirty = true;
                }
                Some(Ok(Event::Mouse(m))) => {
                    app.on_mouse(m);
                    dirty = true;
                }
                Some(Ok(Event::FocusGained)) => app.focused = true,
                Some(Ok(Event::FocusLost)) => app.focused = false,
                Some(Ok(_)) => dirty = true,
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            sig = signals.recv() => {
                app.stop_reason = Some(format!("stopped by {sig}"));
                return Ok(());
            }
            _ = tick.tick(), if animating || app.catching_up() || !app.openers.is_empty()
                || app.driver.loading().is_some() => {
                frame = frame.wrapping_add(1);
                reap_openers(app);
                dirty = true;
            }
        }
    }
}
