//! `trellis attach [SESSION]`: the full UI on a session that runs in a hub (a `trellis
//! serve`, or another terminal's Trellis). The session is rebuilt from its own log — the
//! history first, then each record as the hub writes it — so it shows as if it had been
//! open here all along; what the human does goes to the hub, which does it on the live
//! session, exactly once whoever else answers. Leaving (quitting) leaves the session
//! running.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};

use anyhow::Context;
use trellis_driver::attached::Remote;
use trellis_driver::replay::Wake;
use trellis_hub::client::{Client, Following, list_all};
use trellis_hub::place::{HubFiles, runtime_dir};
use trellis_hub::wire::{Answer, Body, Op};

use crate::output::safe;

#[derive(clap::Args)]
pub struct AttachArgs {
    /// HUB:KEY, KEY, or an ACP session id's first characters (see `trellis ls`); without
    /// it, the session that needs you most.
    pub session: Option<String>,
    /// Follow without controlling: prompts, cancels and answers are not sent.
    #[arg(long)]
    pub observe: bool,
    /// Take control from the attachment that has it (it goes on observing).
    #[arg(long, conflicts_with = "observe")]
    pub take: bool,
}

/// The session `trellis attach` without a name means: the one that needs the human most
/// (blocked first, the longest waiting), of every running hub.
fn most_wanted() -> anyhow::Result<(String, u32)> {
    let dir = runtime_dir()?;
    let mut rows = Vec::new();
    for (hub, r) in list_all(&dir, "trellis attach") {
        for s in r.unwrap_or_default() {
            rows.push((s.rank, std::cmp::Reverse(s.for_s), hub.clone(), s.key));
        }
    }
    rows.sort();
    rows.into_iter()
        .next()
        .map(|(_, _, hub, key)| (hub, key))
        .ok_or_else(|| anyhow::anyhow!("no running session to attach to (trellis ls)"))
}

pub fn main(args: AttachArgs, config_path: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    let config = crate::ui::load_config(config_path)?;
    let (hub, key) = match &args.session {
        Some(s) => crate::hub_cmd::resolve(s)?,
        None => most_wanted()?,
    };
    let files = HubFiles::new(&runtime_dir()?, &hub);
    let following = match Following::start(&files, "trellis attach", key, args.observe, args.take)?
    {
        Ok(f) => f,
        Err((code, message)) => {
            say!("trellis: {}: {}", safe(&code), safe(&message));
            return Ok(ExitCode::from(1));
        }
    };
    let (wake_tx, wake_rx) = std::sync::mpsc::channel();
    let (session, spill_error, feed) =
        trellis_driver::replay::Feed::follow(&following.log, wake_rx)
            .with_context(|| format!("cannot read {}", following.log.display()))?;
    let observing = Arc::new(AtomicBool::new(!following.controller));
    let named = format!("{hub}:{key}");
    let mut app = trellis_tui::App::new(session, following.agent.clone(), false);
    app.log_path = Some(following.log.clone());
    crate::ui_config::apply_ui_config(&mut app, &config)?;
    let (remote_tx, remote_rx) = std::sync::mpsc::channel();
    app.driver.attach(feed, remote_tx);
    app.driver.observe_with(observing.clone());
    app.message = Some(match (following.controller, spill_error) {
        (_, Some(e)) => format!("every call stays in memory (no spill file: {e})"),
        (true, None) => format!("attached to {named}: quitting leaves it running"),
        (false, None) => format!(
            "observing {named}: nothing you type is sent (trellis attach --take to control it)"
        ),
    });
    let log = following.log.clone();
    let attachment = following.attachment.clone();
    spawn_follower(following, wake_tx.clone(), observing.clone())?;
    spawn_intents(files, key, attachment, remote_rx, wake_tx, observing)?;
    let said = crate::ui::runtime()?.block_on(trellis_tui::run(app, None))?;
    for line in said {
        // The log is the hub's: this copy only read it.
        if !line.starts_with("session log:") {
            say!("trellis: {}", safe(&line));
        }
    }
    say!(
        "trellis: left {named}; it goes on in its hub unless it ended (trellis attach {named}); log: {}",
        log.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Reads the hub's progress: each one wakes the log's reader; a change of controller is
/// said; the session's end (or the hub's) ends the follow.
fn spawn_follower(
    mut following: Following,
    wake: Sender<Wake>,
    observing: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("hub-follower".into())
        .spawn(move || {
            let mut controller = following.controller.then(|| following.you.clone());
            loop {
                match following.progress() {
                    Ok(Some(p)) => {
                        if p.controller != controller {
                            let mine = p.controller.as_deref() == Some(following.you.as_str());
                            if !mine && !observing.swap(true, Ordering::Relaxed) {
                                let by = p.controller.as_deref().unwrap_or("someone");
                                let _ = wake.send(Wake::Said(format!(
                                    "{} took control: you observe now",
                                    trellis_text::one_line(by)
                                )));
                            }
                            controller = p.controller.clone();
                        }
                        let _ = wake.send(Wake::Grown);
                        if p.ended {
                            let _ = wake.send(Wake::Said("the session ended in its hub".into()));
                            let _ = wake.send(Wake::Ended);
                            return;
                        }
                    }
                    Ok(None) | Err(_) => {
                        let _ = wake.send(Wake::Said(
                            "the hub closed the connection: what its log holds is shown".into(),
                        ));
                        let _ = wake.send(Wake::Ended);
                        return;
                    }
                }
            }
        })
        .context("cannot start the follower")?;
    Ok(())
}

/// Carries the UI's intents to the hub, one at a time, each with an operation id (a
/// retry after a broken connection is not carried out twice); what the hub refuses is
/// said in the UI.
fn spawn_intents(
    files: HubFiles,
    key: u32,
    attachment: String,
    intents: Receiver<Remote>,
    wake: Sender<Wake>,
    observing: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("hub-intents".into())
        .spawn(move || {
            let mut client: Option<Client> = None;
            for intent in intents {
                if observing.load(Ordering::Relaxed) {
                    let _ = wake.send(Wake::Said(
                        "observing: not sent (trellis attach --take to control the session)".into(),
                    ));
                    continue;
                }
                let Some(op) = op_of(key, intent) else {
                    let _ = wake.send(Wake::Said(
                        "cancelling a subagent's work is done where the session runs".into(),
                    ));
                    continue;
                };
                let id = crate::hub_cmd::operation_id();
                let mut outcome = None;
                for _ in 0..2 {
                    if client.is_none() {
                        // Its requests say which attachment they come from: the hub
                        // refuses them while it observes.
                        client = Client::connect(&files, "trellis attach").ok().map(|mut c| {
                            c.attachment = Some(attachment.clone());
                            c
                        });
                    }
                    let Some(c) = client.as_mut() else { break };
                    match c.call(op.clone(), Some(id.clone())) {
                        Ok(body) => {
                            outcome = Some(body);
                            break;
                        }
                        // Once more on a new connection, with the same operation id.
                        Err(_) => client = None,
                    }
                }
                let said = match outcome {
                    Some(Body::Error { message, .. }) => message,
                    Some(_) => continue,
                    None => "the hub does not answer: not sent".into(),
                };
                let _ = wake.send(Wake::Said(said));
            }
        })
        .context("cannot start the intents' sender")?;
    Ok(())
}

/// The request an intent is to the hub (`None`: none carries it).
fn op_of(session: u32, intent: Remote) -> Option<Op> {
    Some(match intent {
        Remote::Prompt { text, files } => Op::Send {
            session,
            text,
            files: files
                .iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
        },
        Remote::Cancel => Op::Cancel { session },
        Remote::CancelSubagent(_) => return None,
        Remote::Decide {
            request_id,
            choice: trellis_core::Choice::Option(option_id),
            reason,
        } => Op::Decide {
            session,
            request_id,
            option_id,
            claim: None,
            // The attached UI answers once ("always" is refused before it gets here).
            always: None,
            reason,
        },
        Remote::Decide { .. } => return None,
        Remote::Elicit { request_id, answer } => Op::Answer {
            session,
            request_id,
            answer: match answer {
                trellis_core::ElicitAnswer::Accept(content) => Answer::Accept { content },
                trellis_core::ElicitAnswer::Decline => Answer::Decline,
                trellis_core::ElicitAnswer::Cancel => Answer::Cancel,
            },
            claim: None,
        },
    })
}
