//! The terminal UI: a crossterm + ratatui loop around the same core the headless mode
//! uses. Keys, agent input and timer ticks are handled in one `select!`; frames are drawn
//! once per batch (coalesced), and a batch of agent input is bounded so that keys are
//! never kept waiting behind a flood of updates.
//!
//! Invariant: the terminal is always restored — on return, on error and on panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
mod app_ext;
mod app_keys;
pub mod complete;
pub mod draw;
pub mod extui;
pub mod keymap;
pub mod prompt;
pub mod rules;
pub mod sidebar;
pub mod signals;

use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream};
use futures::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;
use trellis_acp::{Command, Handle, Input};
use trellis_core::event::EventBody;
use trellis_core::session::LocalRecord;
use trellis_core::{Action, Choice, Decider, Effect, update};

pub use app::{App, Intent};
pub use draw::{Clock, draw};

/// A live agent behind the UI.
pub struct Connection {
    pub handle: Handle,
    pub rx: UnboundedReceiver<Input>,
}

/// Most agent inputs applied between two looks at the keyboard.
const BATCH: usize = 512;

/// Applies one agent input to the app; returns false once the connection is gone.
pub fn apply_input(app: &mut App, handle: &Handle, input: Input) -> bool {
    match input {
        Input::Action(action) => {
            let terminal = match &action {
                Action::Local {
                    record: LocalRecord::TerminalOutput { terminal_id, .. },
                    ..
                } => Some(terminal_id.clone()),
                _ => None,
            };
            let fx = update(&mut app.session, action);
            apply_effects(app, Some(handle), fx);
            if let Some(tid) = terminal {
                let pos = app.session.ledger.calls().rposition(|c| {
                    c.content.iter().any(|x| {
                        matches!(x, trellis_core::tool_call::ToolContent::Terminal { terminal_id } if *terminal_id == tid)
                    })
                });
                if let Some(p) = pos {
                    app.view.invalidate_call(p);
                }
            }
            true
        }
        Input::Ready | Input::Stderr(_) => true,
        Input::Warning(w) => {
            app.message = Some(w);
            true
        }
        Input::Closed { error } => {
            if app.session.agent_exited.is_none() {
                let message = error.unwrap_or_else(|| "the agent closed the connection".into());
                handle.recorder().local(LocalRecord::AgentExited {
                    code: None,
                    message,
                });
            }
            false
        }
    }
}

/// Performs reducer effects: extensions see the events first (and may start the
/// permission chain), then the connection performs answers and the view is invalidated.
pub fn apply_effects(app: &mut App, handle: Option<&Handle>, fx: Vec<Effect>) {
    let t = handle.map(|h| h.recorder().now()).unwrap_or(0.0);
    let outs = match app.ext.as_mut() {
        Some(h) => h.on_effects(&fx, t),
        None => Vec::new(),
    };
    for e in fx {
        let e = match handle {
            Some(h) => h.perform(e),
            None => Some(e),
        };
        if let Some(Effect::Emit(ev)) = e {
            invalidate_for(app, &ev.body);
        }
    }
    perform_outs(app, handle, outs);
}

/// Carries out what the extension host asked for.
pub fn perform_outs(app: &mut App, handle: Option<&Handle>, outs: Vec<trellis_ext::Out>) {
    use trellis_ext::Out;
    for o in outs {
        match o {
            Out::Decide {
                request_id,
                option_id,
                extension,
            } => {
                let t = handle.map(|h| h.recorder().now()).unwrap_or(0.0);
                let fx = update(
                    &mut app.session,
                    Action::Decide {
                        t,
                        request_id,
                        choice: Choice::Option(option_id),
                        decider: Decider::Extension(extension),
                    },
                );
                apply_effects(app, handle, fx);
            }
            // The dialog shows every open request no extension holds.
            // The dialog shows every open request no extension holds; a request that
            // comes back from extensions alerts the user now.
            Out::Dialog { request_id } => {
                let held_first = app.ext.as_ref().is_some_and(|h| h.has_claimants());
                if held_first
                    && let Some((_, call_id, options)) = app
                        .session
                        .pending_permissions()
                        .into_iter()
                        .find(|(r, ..)| *r == request_id)
                    && let Some(call) = app.session.ledger.get(&call_id)
                {
                    let body = EventBody::PermissionRequested {
                        request_id,
                        call_id: call_id.clone(),
                        title: trellis_core::enrich::card_title(call),
                        kind: call.kind,
                        options,
                    };
                    ring(app, &body);
                }
            }
            Out::Repaint => {}
            Out::CallState {
                extension,
                call_id,
                value,
            } => {
                let record = LocalRecord::CallState {
                    extension,
                    call_id,
                    value,
                };
                match handle {
                    Some(h) => h.recorder().local(record),
                    None => {
                        let fx = update(&mut app.session, Action::Local { t: 0.0, record });
                        apply_effects(app, None, fx);
                    }
                }
            }
            Out::Notify(text) | Out::Notice(text) => app.message = Some(text),
            Out::OpenInspector(call_id) => app.inspect_call(&call_id),
        }
    }
}

fn alert_for(app: &mut App, body: &EventBody) {
    // A request extensions may take alerts only if it reaches the dialog (above).
    if matches!(body, EventBody::PermissionRequested { .. })
        && app.ext.as_ref().is_some_and(|h| h.has_claimants())
    {
        return;
    }
    ring(app, body);
}

/// Writes the alert sequences for `body`, if the app wants any.
fn ring(app: &mut App, body: &EventBody) {
    if let Some(seq) = app.alert(body) {
        let out = &mut std::io::stdout();
        let _ = std::io::Write::write_all(out, seq.as_bytes());
        let _ = std::io::Write::flush(out);
    }
}

fn invalidate_for(app: &mut App, body: &EventBody) {
    alert_for(app, body);
    let id = match body {
        EventBody::ToolCallUpdated { call, .. } | EventBody::ToolCallCreated { call } => {
            Some(call.id.as_str())
        }
        EventBody::PermissionRequested { call_id, .. }
        | EventBody::PermissionResolved { call_id, .. } => Some(call_id.as_str()),
        EventBody::TerminalExited {
            call_id: Some(call_id),
            ..
        } => Some(call_id.as_str()),
        _ => None,
    };
    if let Some(p) = id.and_then(|id| app.session.ledger.position(id)) {
        app.view.invalidate_call(p);
    }
}

/// Carries out what a key asked for.
pub fn perform_intent(app: &mut App, handle: Option<&Handle>, intent: Intent) {
    match &intent {
        Intent::Copy(text) => {
            let seq = format!(
                "\x1b]52;c;{}\x07",
                trellis_core::b64::encode(text.as_bytes())
            );
            let _ = std::io::Write::write_all(&mut std::io::stdout(), seq.as_bytes());
            let _ = std::io::Write::flush(&mut std::io::stdout());
            return;
        }
        Intent::Page(text) => {
            if let Err(e) = page(text) {
                app.message = Some(format!("cannot open the pager: {e}"));
            }
            return;
        }
        _ => {}
    }
    let Some(handle) = handle else { return };
    let t = handle.recorder().now();
    let action = match intent {
        Intent::Prompt { text, files } => {
            handle.send(Command::Prompt { text, files });
            return;
        }
        Intent::Quit => {
            handle.send(Command::Shutdown);
            return;
        }
        Intent::Copy(_) | Intent::Page(_) | Intent::Restart => return,
        Intent::Cancel => Action::Cancel { t },
        Intent::Decide {
            request_id,
            option_id,
        } => Action::Decide {
            t,
            request_id,
            choice: Choice::Option(option_id),
            decider: Decider::User,
        },
    };
    let fx = update(&mut app.session, action);
    apply_effects(app, Some(handle), fx);
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
    let path = file.path().to_path_buf();
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
    restore();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{pager} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status();
    drop(file);
    // Back to the full screen: ratatui redraws everything on the next frame.
    let _ = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    status.map(|_| ())
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

/// Runs the UI until the user quits.
pub async fn run(
    mut app: App,
    mut conn: Option<Connection>,
    mut restart: Option<Restart>,
) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        hook(info);
    }));
    // Panics inside extensions are recorded, never printed over the screen.
    trellis_ext::install_panic_guard();
    crossterm::execute!(
        std::io::stdout(),
        EnableMouseCapture,
        crossterm::event::EnableFocusChange
    )?;
    let mut signals = signals::Signals::new(true)?;
    let result = run_loop(
        &mut terminal,
        &mut app,
        &mut conn,
        &mut restart,
        &mut signals,
    )
    .await;
    restore();
    if let Some(c) = conn.as_mut() {
        close(&mut app, c).await;
    }
    result
}

/// Ends the session when the UI goes: the turn cancelled (open requests answered
/// `cancelled`), a closing record, the agent and its terminals stopped; waits (bounded) for
/// the connection to report it is closed, so that no process Trellis started outlives it.
async fn close(app: &mut App, c: &mut Connection) {
    if app.session.ended.is_none() && app.session.agent_exited.is_none() {
        let t = c.handle.recorder().now();
        let fx = update(&mut app.session, Action::Cancel { t });
        apply_effects(app, Some(&c.handle), fx);
        let reason = app
            .stop_reason
            .clone()
            .unwrap_or_else(|| "user quit".into());
        c.handle
            .recorder()
            .local(LocalRecord::SessionEnded { reason });
    }
    c.handle.send(Command::Shutdown);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    while let Ok(Some(input)) = tokio::time::timeout_at(deadline, c.rx.recv()).await {
        if !apply_input(app, &c.handle, input) {
            break;
        }
    }
    // What the agent's exit recorded after `Closed`.
    while let Ok(input) = c.rx.try_recv() {
        apply_input(app, &c.handle, input);
    }
    c.handle.recorder().sync();
}

async fn run_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    conn: &mut Option<Connection>,
    restart: &mut Option<Restart>,
    signals: &mut signals::Signals,
) -> std::io::Result<()> {
    let start = Instant::now();
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut frame = 0usize;
    let mut dirty = true;
    let mut ext_rx = app.ext_rx.take();
    loop {
        if dirty {
            let now = start.elapsed().as_secs_f64();
            terminal.draw(|f| draw(f, app, Clock { now, frame }))?;
            dirty = false;
            if app.exit_after_first_frame {
                return Ok(());
            }
        }
        if app.quit {
            return Ok(());
        }
        // Events of the last batch go to the extensions' workers together.
        if let Some(h) = &app.ext {
            h.deliver();
        }
        let animating = trellis_view::TranscriptView::animating(&app.session);
        let session_now = conn
            .as_ref()
            .map(|c| c.handle.recorder().now())
            .unwrap_or_else(|| start.elapsed().as_secs_f64());
        let deadline = app
            .ext
            .as_ref()
            .and_then(|h| h.next_deadline())
            .map(|d| Duration::from_secs_f64((d - session_now).max(0.0)));
        tokio::select! {
            msg = async {
                match ext_rx.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let Some(msg) = msg else { ext_rx = None; continue };
                let handle = conn.as_ref().map(|c| c.handle.clone());
                let mut next = Some(msg);
                while let Some(msg) = next.take() {
                    let outs = match app.ext.as_mut() {
                        Some(h) => h.on_msg(msg, session_now),
                        None => Vec::new(),
                    };
                    perform_outs(app, handle.as_ref(), outs);
                    next = ext_rx.as_mut().and_then(|rx| rx.try_recv().ok());
                }
                dirty = true;
            },
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => {
                let handle = conn.as_ref().map(|c| c.handle.clone());
                let outs = match app.ext.as_mut() {
                    Some(h) => h.tick(session_now + 0.001),
                    None => Vec::new(),
                };
                perform_outs(app, handle.as_ref(), outs);
                dirty = true;
            },
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => {
                    for intent in app.on_key(k) {
                        if intent == Intent::Restart {
                            match (restart.as_mut(), conn.as_ref()) {
                                (Some(start), Some(old)) => match start(old.handle.recorder().origin()) {
                                    Ok(c) => *conn = Some(c),
                                    Err(e) => app.message = Some(format!("cannot restart the agent: {e}")),
                                },
                                _ => app.message = Some("this session cannot restart its agent".into()),
                            }
                            continue;
                        }
                        perform_intent(app, conn.as_ref().map(|c| &c.handle), intent);
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
            input = async {
                match conn.as_mut() {
                    Some(c) => c.rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let Some(c) = conn.as_mut() else { continue };
                let mut next = input;
                let mut n = 0;
                while let Some(input) = next.take() {
                    apply_input(app, &c.handle, input);
                    n += 1;
                    if n < BATCH {
                        next = c.rx.try_recv().ok();
                    }
                }
                dirty = true;
            },
            sig = signals.recv() => {
                app.stop_reason = Some(format!("stopped by {sig}"));
                return Ok(());
            }
            _ = tick.tick(), if animating => {
                frame = frame.wrapping_add(1);
                dirty = true;
            }
        }
    }
}
