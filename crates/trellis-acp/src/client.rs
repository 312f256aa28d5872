//! The agent connection: spawn, initialize, authenticate when required, `session/new`,
//! prompts and cancel; the client methods the agent calls are routed in `services.rs`.
//!
//! Invariants:
//! - Handlers never await anything long: permission requests park their responder in
//!   [`Responders`] for the driver to answer; fs/terminal requests are served on spawned tasks.
//! - Session state is built only from the frame tap (via [`Recorder`]); handlers only route.
//! - Every permission responder is answered exactly once: by the driver, or `cancelled` when
//!   the connection shuts down with it still open.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    ListSessionsRequest, PromptRequest, ResourceLink, SessionConfigOptionValue, SessionId,
    SetSessionConfigOptionRequest, SetSessionModeRequest, TextContent, TextResourceContents,
};
use agent_client_protocol::{Dispatch, Handled, UntypedMessage, V1};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use trellis_core::permission::Outcome;

use crate::inputs::Input;
use crate::link::{Carried, Link, established};
use crate::lock;
use crate::recorder::Recorder;
use crate::responders::Responders;
use crate::roots::Roots;
use crate::services::{Services, route};
use crate::setup::Conn;
pub use crate::spec::{AgentSpec, Caps, DEFAULT_SETUP_TIMEOUT_S, Embedded};
use crate::terminal::Terminals;

/// The running `session/prompt` request.
type TurnFuture =
    std::pin::Pin<Box<dyn Future<Output = Result<(), agent_client_protocol::Error>> + Send>>;

/// From the driver to the connection.
#[derive(Debug)]
pub enum Command {
    /// Send a prompt: text, files to attach as resource links, and documents to embed.
    Prompt {
        text: String,
        files: Vec<PathBuf>,
        embedded: Vec<Embedded>,
    },
    Cancel,
    /// Cancel the work of a subagent (`session/cancel` with the child's session id).
    CancelSubagent {
        session_id: String,
    },
    /// Ask the agent to switch to session mode `mode` (`session/set_mode`).
    SetMode {
        mode: String,
    },
    /// Set one of the agent's config options (`session/set_config_option`).
    SetConfigOption {
        id: String,
        value: trellis_core::session_config::ConfigValue,
    },
    /// Ask the agent for its sessions in `cwd` (`session/list`; `cursor`: the page after
    /// the first that the agent offered); the answer is in the frame stream (the session
    /// keeps it, and asks for the next page itself).
    ListSessions {
        cwd: Option<PathBuf>,
        cursor: Option<String>,
    },
    /// The login the connection asked for ([`Input::Login`]) is over; `ok` false when it
    /// could not run.
    LoginDone {
        ok: bool,
    },
    /// Kill a terminal of the agent's (its process group; the exit is recorded as any).
    KillTerminal {
        terminal_id: String,
    },
    /// Run the user's own command line (`!cmd`) in `cwd` in a terminal of Trellis's: its
    /// output and exit are recorded as any terminal's, and its card as the user's.
    UserCommand {
        command: String,
        cwd: PathBuf,
    },
    Shutdown,
}

/// Output of a user's command kept (the rest of it is cut from the front, and said).
pub const USER_OUTPUT_LIMIT: u64 = 1 << 20;

/// The driver's handle on a running connection.
#[derive(Clone)]
pub struct Handle {
    pub(crate) cmd: UnboundedSender<Command>,
    pub(crate) responders: Arc<Mutex<Responders>>,
    pub(crate) recorder: Recorder,
}

fn outcome_json(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Selected { option_id, .. } => {
            json!({"outcome": {"outcome": "selected", "optionId": option_id}})
        }
        Outcome::Cancelled | Outcome::Error { .. } => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

impl Handle {
    pub fn send(&self, c: Command) {
        let _ = self.cmd.send(c);
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Performs a reducer effect that concerns the connection (answers, cancel, log sync);
    /// the caller keeps its own (events, prompts), which are ignored here.
    pub fn perform(&self, effect: trellis_core::Effect) {
        use trellis_core::Effect;
        match effect {
            Effect::Answer {
                request_id,
                outcome,
                decider,
                reason,
            } => {
                self.recorder
                    .local(trellis_core::LocalRecord::PermissionDecided {
                        request_id: request_id.clone(),
                        decider,
                        reason,
                    });
                self.answer_permission(&request_id, &outcome);
            }
            Effect::Elicit {
                request_id,
                answer,
                decider,
            } => {
                self.recorder
                    .local(trellis_core::LocalRecord::ElicitationDecided {
                        request_id: request_id.clone(),
                        decider,
                    });
                self.answer(&request_id, answer.to_json());
            }
            Effect::SendCancel => {
                self.send(Command::Cancel);
            }
            Effect::KillTerminal { terminal_id } => {
                self.send(Command::KillTerminal { terminal_id });
            }
            Effect::CancelSubagent { session_id } => {
                self.send(Command::CancelSubagent { session_id });
            }
            Effect::ListSessions { cwd, cursor } => {
                self.send(Command::ListSessions {
                    cwd: cwd.map(PathBuf::from),
                    cursor: Some(cursor),
                });
            }
            // A turn's end: durable soon, without holding the front end (the close
            // syncs in place).
            Effect::Sync => {
                self.recorder.sync_soon();
            }
            // Events and prompts are the caller's.
            _ => {}
        }
    }

    /// Answers permission request `request_id` (canonical JSON id) with `outcome`.
    pub fn answer_permission(&self, request_id: &str, outcome: &Outcome) {
        self.answer(request_id, outcome_json(outcome));
    }

    /// Answers the parked agent request `request_id` with `value` (or keeps the answer
    /// for when it is parked).
    fn answer(&self, request_id: &str, value: Value) {
        let mut r = lock(&self.responders);
        match r.waiting.remove(request_id) {
            Some((_, responder)) => {
                let _ = responder.respond(value);
            }
            None => {
                r.answers.insert(request_id.to_string(), value);
            }
        }
    }
}

/// What serves the agent's requests on one connection: the session's roots, its
/// terminals, and the map of an agent elsewhere's shared directories.
fn services(
    spec: &AgentSpec,
    session: &Arc<Mutex<Option<String>>>,
    recorder: &Recorder,
) -> Services {
    let mut roots = vec![spec.cwd.clone()];
    roots.extend(spec.extra_roots.iter().cloned());
    Services {
        roots: Arc::new(Roots::new(roots)),
        session: session.clone(),
        children: Default::default(),
        cwd: spec.cwd.clone(),
        caps: spec.caps,
        terminals: Terminals::with_default_limit(recorder.clone(), spec.terminal_output_limit)
            .traced(spec.traceparent.clone(), spec.terminal_trace.clone()),
        recorder: recorder.clone(),
        paths: spec
            .remote
            .as_ref()
            .map(|r| r.paths.clone())
            .unwrap_or_default(),
    }
}

/// One connection: the agent started or dialed, set up, and served until it ends.
/// `pending`: commands that came while there was no connection; `carried`: what a
/// reconnection takes over from the connection before.
pub(crate) async fn run(
    spec: AgentSpec,
    link: &Link,
    cmd_rx: &mut UnboundedReceiver<Command>,
    pending: &mut std::collections::VecDeque<Command>,
    carried: &Arc<Mutex<Carried>>,
    stopping: &Arc<std::sync::atomic::AtomicBool>,
) -> Result<(), String> {
    let (recorder, responders, tx) = (
        link.recorder.clone(),
        link.responders.clone(),
        link.tx.clone(),
    );
    let carried = carried.clone();
    let stopping = stopping.clone();
    let (mut process, transport) = match &spec.remote {
        Some(remote) => {
            crate::transport::dial(
                remote,
                spec.bulk_reads,
                spec.setup_timeout,
                recorder.clone(),
            )
            .await?
        }
        None => crate::transport::spawn(
            &spec.command,
            &spec.args,
            &spec.env,
            &spec.cwd,
            spec.bulk_reads,
            recorder.clone(),
        )
        .map_err(|e| format!("cannot start {}: {e}", spec.command))?,
    };
    // The agent's output ended (it died, or its connection was lost): an idle session
    // learns it then, not at its next prompt.
    let mut ended = process.take_ended();
    let session: Arc<Mutex<Option<String>>> = Arc::default();
    let services = services(&spec, &session, &recorder);
    let terminals = services.terminals.clone();
    let traceparent = spec.traceparent.clone();
    let before_turn = spec.before_turn.clone();
    let session_slot = session;
    let handler_responders = responders.clone();
    let result = agent_client_protocol::Client
        .v1()
        .name("trellis")
        .on_receive_dispatch(
            async move |d: Dispatch<UntypedMessage, UntypedMessage, V1>, _cx| match d {
                Dispatch::Request(req, responder) => {
                    route(&services, &handler_responders, req, responder);
                    Ok(Handled::Yes)
                }
                // State comes from the frame tap; the services only follow subagents.
                Dispatch::Notification(n) => {
                    services.observe(&n);
                    Ok(Handled::Yes)
                }
                other @ Dispatch::Response(..) => Ok(Handled::No { message: other, retry: false }),
            },
            agent_client_protocol::on_receive_dispatch!(),
        )
        .connect_with(transport, async |cx| {
            // Setup is bounded by the setup timeout, and the user can stop it at any time;
            // prompts sent meanwhile wait for it.
            // Prompts wait in `pending` until the session is set up: a setup that fails
            // leaves them there for the next connection.
            // The setup timeout stops while the user logs in (`None`).
            let timeout = spec.setup_timeout;
            let deadline = Mutex::new(Some(std::time::Instant::now() + timeout));
            let (login_tx, mut login_rx) = unbounded_channel::<bool>();
            let setup = crate::setup::set_up(&cx, &spec, &tx, &deadline, &mut login_rx);
            tokio::pin!(setup);
            // Checked at least every second: the deadline moves when a login ends.
            let expired = || async {
                loop {
                    let now = std::time::Instant::now();
                    let next = match *lock(&deadline) {
                        Some(d) if d <= now => return,
                        Some(d) => (d - now).min(std::time::Duration::from_secs(1)),
                        None => std::time::Duration::from_secs(1),
                    };
                    tokio::time::sleep(next).await;
                }
            };
            let (session_id, embed, forked, resumable): (SessionId, bool, bool, bool) = loop {
                tokio::select! {
                    r = &mut setup => break r?,
                    () = expired() => {
                        return Err(agent_client_protocol::Error::new(
                            -32603,
                            format!(
                                "the agent did not finish setting up (initialize, session/new) within {} s",
                                timeout.as_secs_f64()
                            ),
                        ));
                    }
                    cmd = cmd_rx.recv() => match cmd {
                        Some(Command::Shutdown) | None => {
                            stopping.store(true, std::sync::atomic::Ordering::Relaxed);
                            return Ok(());
                        }
                        Some(Command::Cancel | Command::CancelSubagent { .. }) => {}
                        Some(Command::LoginDone { ok }) => {
                            let _ = login_tx.send(ok);
                        }
                        Some(prompt) => pending.push_back(prompt),
                    },
                }
            };
            let mut queued = std::mem::take(pending);
            *lock(&session_slot) = Some(session_id.to_string());
            let turns_before = established(&carried, &recorder, session_id.to_string(), resumable);
            if forked {
                // The agent's own fork remembers the conversation: a transcript carried
                // by a prompt held during setup is not sent as well.
                for c in &mut queued {
                    if let Command::Prompt { embedded, .. } = c {
                        embedded.clear();
                    }
                }
            }
            let _ = tx.send(Input::Ready);
            let turns = Turns { before: before_turn, recorder: recorder.clone(), n: turns_before, carried: carried.clone() };
            serve(&cx, session_id, (embed, traceparent), queued, (cmd_rx, &mut ended), (&stopping, &terminals), turns).await
        })
        .await;
    terminals.stop_all(std::time::Duration::from_secs(1)).await;
    let exit = process.finish(std::time::Duration::from_secs(1)).await;
    match (result, exit) {
        (_, Some(exit)) => Err(exit),
        (Err(e), None) => Err(match e.data.as_ref() {
            Some(d) => format!("{} ({d})", e.message),
            None => e.message.clone(),
        }),
        (Ok(()), None) => Ok(()),
    }
}

/// The turns sent, and what runs before each ([`crate::spec::AgentSpec::before_turn`]).
struct Turns {
    before: Option<crate::spec::BeforeTurn>,
    recorder: Recorder,
    n: u32,
    /// Where the count is kept for a reconnection (its turns go on counting).
    carried: Arc<Mutex<Carried>>,
}

impl Turns {
    /// A turn is about to start: its hook runs on a blocking thread (git on a large tree
    /// must not stall the connection's other work), and the prompt waits for it, at most
    /// [`crate::spec::BEFORE_TURN_LIMIT`]; past that, the hook is told it came too late.
    async fn starting(&mut self) {
        self.n += 1;
        lock(&self.carried).turns = self.n;
        let Some(hook) = self.before.clone() else {
            return;
        };
        let n = self.n;
        let late = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task = tokio::task::spawn_blocking({
            let late = late.clone();
            move || (hook.0)(n, &late)
        });
        let limit = crate::spec::BEFORE_TURN_LIMIT;
        let text = match tokio::time::timeout(limit, task).await {
            Ok(Ok(text)) => text,
            Ok(Err(_)) => None,
            Err(_) => {
                late.store(true, std::sync::atomic::Ordering::SeqCst);
                Some(format!(
                    "no checkpoint before turn {n}: it took longer than {} s, and the prompt was sent without it",
                    limit.as_secs()
                ))
            }
        };
        if let Some(text) = text {
            self.recorder
                .local(trellis_core::session::LocalRecord::Mark { text });
        }
    }
}

/// Sends prompts (queued ones first, one turn at a time), cancels and settings until the
/// client shuts down or the agent goes away.
async fn serve(
    cx: &Conn,
    session_id: SessionId,
    (embed, traceparent): (bool, Option<String>),
    mut queued: std::collections::VecDeque<Command>,
    (cmd_rx, ended): (
        &mut UnboundedReceiver<Command>,
        &mut Option<tokio::sync::oneshot::Receiver<()>>,
    ),
    (stopping, terminals): (&std::sync::atomic::AtomicBool, &Terminals),
    mut turns: Turns,
) -> Result<(), agent_client_protocol::Error> {
    let mut turn: Option<TurnFuture> = None;
    loop {
        let next = match queued.pop_front() {
            Some(c) if turn.is_none() => Some(Some(c)),
            Some(c) => {
                queued.push_front(c);
                None
            }
            None => None,
        };
        tokio::select! {
            cmd = async { match next { Some(c) => c, None => cmd_rx.recv().await } } => match cmd {
                Some(Command::Prompt { text, files, embedded }) if turn.is_none() => {
                    turns.starting().await;
                    let blocks = prompt_blocks(text, files, embedded, embed);
                    let mut request = PromptRequest::new(session_id.clone(), blocks);
                    if let Some(tp) = &traceparent {
                        let mut meta = serde_json::Map::new();
                        meta.insert("traceparent".into(), serde_json::json!(tp));
                        request = request.meta(meta);
                    }
                    let sent = cx.send_request(request);
                    turn = Some(Box::pin(async move { sent.block_task().await.map(|_| ()) }));
                }
                // The driver saw the turn end (its answer is on record) before the SDK
                // read that answer: sent once it has.
                Some(c @ Command::Prompt { .. }) => queued.push_back(c),
                Some(Command::Cancel) => {
                    cx.send_notification(CancelNotification::new(session_id.clone()))?;
                }
                Some(Command::CancelSubagent { session_id: child }) => {
                    cx.send_notification(CancelNotification::new(SessionId::from(child)))?;
                }
                Some(Command::SetMode { mode }) => {
                    // The answer (or error) is in the frame stream and the log.
                    let _ = cx.send_request(SetSessionModeRequest::new(session_id.clone(), mode));
                }
                Some(Command::SetConfigOption { id, value }) => {
                    use trellis_core::session_config::ConfigValue;
                    let value = match value {
                        ConfigValue::Id(v) => SessionConfigOptionValue::value_id(v),
                        ConfigValue::Bool(b) => SessionConfigOptionValue::boolean(b),
                    };
                    // The answer (the options as they now stand, or an error) is in
                    // the frame stream and the log.
                    let _ = cx.send_request(SetSessionConfigOptionRequest::new(session_id.clone(), id, value));
                }
                // A login is only ever asked for during setup.
                Some(Command::LoginDone { .. }) => {}
                Some(Command::KillTerminal { terminal_id }) => {
                    // One the agent released already, or never made here: nothing to do.
                    let _ = terminals.kill(&terminal_id);
                }
                Some(Command::UserCommand { command, cwd }) => {
                    let spawn = crate::terminal::Spawn {
                        command: command.clone(),
                        args: Vec::new(),
                        env: Vec::new(),
                        cwd: cwd.clone(),
                        output_byte_limit: Some(USER_OUTPUT_LIMIT),
                    };
                    turns.recorder.local(match terminals.create_users(spawn) {
                        Ok(terminal_id) => trellis_core::LocalRecord::UserCommand {
                            terminal_id,
                            command,
                            cwd: cwd.display().to_string(),
                        },
                        Err(e) => trellis_core::LocalRecord::Mark {
                            text: format!("your command did not start: {e}"),
                        },
                    });
                }
                Some(Command::ListSessions { cwd, cursor }) => {
                    let _ = cx.send_request(ListSessionsRequest::new().cwd(cwd).cursor(cursor));
                }
                Some(Command::Shutdown) | None => {
                    stopping.store(true, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            },
            // Between turns, the agent's output ended: it is gone (in a turn, the turn's
            // answer says so).
            _ = async { match ended.as_mut() { Some(e) => { let _ = e.await; } None => std::future::pending().await } }, if turn.is_none() => {
                break;
            }
            result = async { match turn.as_mut() { Some(f) => f.await, None => std::future::pending().await } } => {
                turn = None;
                // An error answer is already in the frame stream; a closed
                // connection means the agent is gone.
                if result.is_err() && cx.is_incoming_closed() {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// A prompt's content: its text, a link per attached file, and each embedded file as a
/// resource when the agent takes them (else as text).
fn prompt_blocks(
    text: String,
    files: Vec<PathBuf>,
    embedded: Vec<crate::Embedded>,
    embed: bool,
) -> Vec<ContentBlock> {
    let mut blocks = vec![ContentBlock::Text(TextContent::new(text))];
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        blocks.push(ContentBlock::ResourceLink(ResourceLink::new(
            name,
            file_uri(&f),
        )));
    }
    for e in embedded {
        blocks.push(if embed {
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(
                    TextResourceContents::new(e.text, e.uri).mime_type(e.mime),
                ),
            ))
        } else {
            ContentBlock::Text(TextContent::new(format!("{}:\n\n{}", e.uri, e.text)))
        });
    }
    blocks
}

fn file_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}
