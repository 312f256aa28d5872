//! Requests from the hub's socket (`trellis ls`, `send`, `cancel`, `stop`, `approve`,
//! `attach`, `run --detach`), carried out on the deck and answered.

use crate::{Command, Front, Sessions};

/// The next request from this UI's socket (never, without one).
pub async fn next_call(hub: &mut Option<trellis_hub::serve::Served>) -> trellis_hub::serve::Call {
    match hub {
        Some(h) => match h.calls.recv().await {
            Some(c) => c,
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

/// Carries out a request from the socket and answers it.
pub async fn remote<F: Front>(
    deck: &mut Sessions<F>,
    call: trellis_hub::serve::Call,
    said: &mut Vec<String>,
) {
    use trellis_hub::serve::Reply;
    use trellis_hub::wire::{Op, Response};
    let who = call.who();
    let trellis_hub::serve::Call {
        request,
        conn,
        reply,
        ..
    } = call;
    if request.op == Op::Hangup {
        deck.hangup(conn);
        return;
    }
    let id = request.id;
    if let Some(op) = &request.operation_id
        && let Some(body) = deck.done_ops.find(op)
    {
        let _ = reply.send(Reply::Once(Response {
            id,
            body: body.clone(),
        }));
        return;
    }
    // A follow takes the connection over.
    if let Op::Watch {
        session,
        observe,
        take,
    } = request.op
    {
        let _ = reply.send(match watch(deck, session, &who, observe, take) {
            Ok((body, follow)) => Reply::Follow(Response { id, body }, follow),
            Err((code, message)) => Reply::Once(Response::error(id, code, message)),
        });
        return;
    }
    // An attachment acts on its session only while it controls it.
    if let (Some(att), Some(key)) = (&request.attachment, request.op.session())
        && let Some(i) = deck.index_of(key)
        && let Err(why) = deck.slots[i].watched.may_act(att)
    {
        let _ = reply.send(Reply::Once(Response::error(id, "refused", why)));
        return;
    }
    let (body, shown) = carry_out(deck, request.op, who, conn, said).await;
    if let Some((i, notes)) = shown {
        deck.show_notes(i, notes);
    }
    if let Some(op) = request.operation_id {
        deck.done_ops.keep(op, body.clone());
    }
    let _ = reply.send(Reply::Once(Response { id, body }));
}

/// The notes of the session a request was carried out on, to show (its slot).
type Shown = Option<(usize, Vec<crate::SessionNote>)>;

/// Carries out one request on the deck: the answer's body, and the notes to show.
async fn carry_out<F: Front>(
    deck: &mut Sessions<F>,
    op: trellis_hub::wire::Op,
    who: String,
    conn: u64,
    said: &mut Vec<String>,
) -> (trellis_hub::wire::Body, Shown) {
    use trellis_hub::wire::{Body, Op};
    let slot_of = |deck: &Sessions<F>, key: u32| deck.index_of(key);
    let error = |code: &str, message: String| Body::Error {
        code: code.into(),
        message,
    };
    let mut shown = None;
    let body = match op {
        Op::List => list(deck),
        // The socket's own business (answered before it reaches the deck).
        Op::Pair | Op::Hangup => error("refused", "not the deck's".into()),
        Op::Listen { addr, hosts } => listen(deck, &addr, hosts),
        Op::Shutdown if deck.headless => {
            deck.shutdown = Some(who);
            Body::Done {
                said: format!("stopping: {} session(s) close first", deck.slots.len()),
            }
        }
        Op::Shutdown => error(
            "refused",
            "this hub is a UI's: quit it there (Ctrl-C twice)".into(),
        ),
        Op::Claim {
            session,
            request_id,
            lease_s,
        } => match deck.claim(session, &request_id, lease_s, &who, conn) {
            Ok((claim, expires_s)) => Body::Claimed { claim, expires_s },
            Err((code, message)) => error(code, message),
        },
        Op::Release {
            session,
            request_id,
            claim,
        } => {
            if deck.release(session, &request_id, &claim) {
                Body::Done {
                    said: format!("released {request_id}"),
                }
            } else {
                error("not_found", format!("no such claim on {request_id}"))
            }
        }
        Op::Send {
            session,
            text,
            files,
        } => {
            let (body, notes) = send(deck, session, text, files);
            shown = notes;
            body
        }
        Op::Cancel { session } => {
            let (body, notes) = cancel(deck, session);
            shown = notes;
            body
        }
        Op::Decide {
            session,
            request_id,
            option_id,
            claim,
            always,
            reason,
        } => match deck.decide_attached(
            session,
            (&request_id, &option_id),
            claim.as_deref(),
            always.as_deref(),
            reason.clone(),
            who,
        ) {
            Ok((notes, saved)) => {
                shown = slot_of(deck, session).map(|i| (i, notes));
                let mut said = format!("request {request_id} answered {option_id}");
                if let Some(rule) = saved {
                    said.push_str(&format!("; rule saved: {rule}"));
                }
                if reason.is_some() {
                    said.push_str(&format!("; {}", trellis_driver::claims::REASON_SENT));
                }
                Body::Done { said }
            }
            Err((code, message)) => error(code, message),
        },
        // Taken over by `remote` (the connection becomes the follower's).
        Op::Watch { .. } => error("refused", "a follow is not answered here".into()),
        Op::Answer {
            session,
            request_id,
            answer,
            claim,
        } => match deck.answer_attached(session, &request_id, answer, claim.as_deref(), who) {
            Ok(notes) => {
                shown = slot_of(deck, session).map(|i| (i, notes));
                Body::Done {
                    said: format!("answered {request_id}"),
                }
            }
            Err((code, message)) => error(code, message),
        },
        op @ Op::New { .. } => open_new(deck, op),
        Op::Stop { session, reason } => match slot_of(deck, session) {
            Some(i) => {
                // A stop that starts an ending (`trellis worktree land`) says so; the
                // worktree's reminder is for a plain stop only.
                let remind = reason.is_none();
                let why = match reason {
                    Some(r) => format!("{} ({who})", trellis_text::one_line(&r)),
                    None => format!("stopped by {who}"),
                };
                deck.close(i, &why, said, remind).await;
                Body::Done {
                    said: format!("session {session} stopped"),
                }
            }
            None => error("not_found", format!("no session {session}")),
        },
    };
    (body, shown)
}

/// `Op::New`: a session started in the deck, as asked from elsewhere (`trellis run
/// --detach`, `sessions fork`).
fn open_new<F: Front>(
    deck: &mut Sessions<F>,
    op: trellis_hub::wire::Op,
) -> trellis_hub::wire::Body {
    use trellis_hub::wire::{Body, Op};
    let Op::New {
        agent,
        cwd,
        worktree,
        worktree_label,
        prompt,
        launched_in,
        fork,
    } = op
    else {
        return Body::Error {
            code: "refused".into(),
            message: "not a new session".into(),
        };
    };
    match deck.open_remote(
        crate::NewSession {
            agent,
            cwd: cwd.map(std::path::PathBuf::from),
            worktree,
            worktree_label,
            launched_in: launched_in.map(std::path::PathBuf::from),
            fork: fork.map(|f| crate::ForkFrom {
                session: f.session,
                at: f.at,
                transcript: true,
            }),
        },
        prompt,
    ) {
        Ok((key, said)) => Body::Started { session: key, said },
        Err(message) => Body::Error {
            code: "refused".into(),
            message,
        },
    }
}

/// Prompts from outside that may wait for their turns in one session.
const QUEUED_PROMPTS: u32 = 32;

/// Starts the hub's listener on `addr` (`trellis serve --listen` for a running hub).
fn listen<F: Front>(
    deck: &mut Sessions<F>,
    addr: &str,
    hosts: Vec<String>,
) -> trellis_hub::wire::Body {
    use trellis_hub::wire::Body;
    let error = |code: &str, message: String| Body::Error {
        code: code.into(),
        message,
    };
    if !deck.headless {
        return error(
            "refused",
            "this hub is a UI's: a listener belongs to a hub of its own (trellis serve --listen)"
                .into(),
        );
    }
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        return error(
            "bad_request",
            format!("{addr}: not an address (127.0.0.1:PORT)"),
        );
    };
    match deck.hub.as_mut().map(|h| h.listen(addr, hosts)) {
        Some(Ok((at, already))) => Body::Listening {
            addr: at.to_string(),
            already,
        },
        Some(Err(e)) => error("refused", e.to_string()),
        None => error("refused", "no socket".into()),
    }
}

/// Follows session `key` for `who`: where its log is, and its progress from now on.
fn watch<F: Front>(
    deck: &mut Sessions<F>,
    key: u32,
    who: &str,
    observe: bool,
    take: bool,
) -> Result<(trellis_hub::wire::Body, trellis_hub::watch::Follow), (&'static str, String)> {
    let i = deck
        .index_of(key)
        .ok_or(("not_found", format!("no session {key}")))?;
    let slot = &deck.slots[i];
    let log = slot
        .app
        .log_path()
        .map(std::path::Path::to_path_buf)
        .ok_or(("refused", format!("session {key} keeps no log")))?;
    let follow = slot
        .watched
        .attach(who, observe, take)
        .map_err(|e| ("refused", e))?;
    slot.publish(false);
    Ok((
        trellis_hub::wire::Body::Watching {
            log: log.to_string_lossy().into_owned(),
            agent: slot.agent_name(),
            controller: follow.lease.is_some(),
            you: who.to_string(),
            attachment: follow.attachment.id.clone(),
        },
        follow,
    ))
}

/// The hub and its sessions, as `trellis ls` shows them.
fn list<F: Front>(deck: &Sessions<F>) -> trellis_hub::wire::Body {
    use trellis_hub::wire::{Body, HubInfo};
    Body::Sessions {
        hub: HubInfo {
            name: deck
                .hub
                .as_ref()
                .map(|h| h.files.name.clone())
                .unwrap_or_default(),
            pid: std::process::id(),
            kind: if deck.headless { "serve" } else { "ui" }.into(),
            policy: deck.settings.policy.clone(),
            plugins: deck.settings.plugins.clone(),
            allow_drive: deck.settings.allow_drive,
            listening: deck
                .hub
                .as_ref()
                .and_then(|h| h.listening_on())
                .map(|a| a.to_string()),
        },
        sessions: deck.session_infos(),
    }
}

/// Queues a prompt from outside for `session`.
fn send<F: Front>(
    deck: &mut Sessions<F>,
    session: u32,
    text: String,
    files: Vec<String>,
) -> (trellis_hub::wire::Body, Shown) {
    use trellis_hub::wire::Body;
    let error = |code: &str, message: String| Body::Error {
        code: code.into(),
        message,
    };
    let body = match deck.index_of(session) {
        Some(_) if text.trim().is_empty() => error("bad_request", "an empty prompt".into()),
        // What waits for a session from outside is bounded: a client that sends
        // faster than turns end is told, not queued without end.
        Some(i) if deck.slots[i].app.driver().waiting_prompts() >= QUEUED_PROMPTS => error(
            "busy",
            format!(
                "session {session} has {QUEUED_PROMPTS} prompts waiting for their turns already: send more as they end"
            ),
        ),
        Some(i) => {
            // From outside: no terminal control reaches the screen or the log.
            let text: String = text
                .chars()
                .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
                .collect();
            let notes = deck.command(
                session,
                Command::Prompt {
                    text,
                    files: files.into_iter().map(Into::into).collect(),
                },
            );
            return (
                Body::Done {
                    said: format!("queued for session {session}"),
                },
                Some((i, notes)),
            );
        }
        None => error("not_found", format!("no session {session}")),
    };
    (body, None)
}

/// Cancels the running turn of `session`, from outside.
fn cancel<F: Front>(deck: &mut Sessions<F>, session: u32) -> (trellis_hub::wire::Body, Shown) {
    use trellis_hub::wire::Body;
    let error = |code: &str, message: String| Body::Error {
        code: code.into(),
        message,
    };
    match deck.index_of(session) {
        Some(i) if !deck.slots[i].app.driver().session.turn_open => (
            error(
                "idle",
                format!("session {session} has no turn running: nothing was cancelled"),
            ),
            None,
        ),
        Some(i) => {
            let notes = deck.command(session, Command::Cancel);
            (
                Body::Done {
                    said: format!("session {session}: turn cancelled"),
                },
                Some((i, notes)),
            )
        }
        None => (error("not_found", format!("no session {session}")), None),
    }
}
