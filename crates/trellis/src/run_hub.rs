//! `trellis run --approve-via hub`: the run serves its one session on a hub socket of its
//! own (`run-<pid>` unless `--hub` names it), so `trellis ls` lists it, `trellis approve`
//! and the attached UI answer what it asks, and `trellis attach` follows it. A request
//! nothing else decided waits there for `--ask-timeout`; then `--on-ask` answers it, on
//! the record. Answers are the deck's: claims, compare-and-set, one-time choices only.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;
use trellis_core::attention::{Attention, Facts};
use trellis_driver::claims::{Claims, Waiting};
use trellis_driver::{Driver, Note};
use trellis_hub::serve::{Call, Outcomes, Reply, Served};
use trellis_hub::watch::Watched;
use trellis_hub::wire::{Body, HubInfo, Op, PendingInfo, Response, SessionInfo};

/// The session's key on the run's hub (it has only this one).
pub(crate) const KEY: u32 = 1;

/// The run's hub: its socket, the claims on its requests, who follows it, and the
/// requests waiting for an answer from it.
pub(crate) struct RunHub {
    served: Served,
    claims: Claims,
    outcomes: Outcomes,
    watched: Watched,
    /// How long a request waits for an answer through the hub.
    pub(crate) ask_timeout: Duration,
    /// Requests handed to the hub: request id, when `--on-ask` takes over, what it is.
    asks: Vec<(String, Instant, Waiting)>,
    agent: String,
    source: String,
    branch: Option<String>,
    log: PathBuf,
    since: (Attention, std::time::Instant),
}

impl RunHub {
    /// Serves hub `name` (within the run's runtime).
    pub(crate) fn serve(
        name: &str,
        ask_timeout: Duration,
        agent: String,
        (source, branch): (String, Option<String>),
        log: PathBuf,
    ) -> anyhow::Result<RunHub> {
        if !trellis_hub::place::valid_name(name) {
            anyhow::bail!("--hub {name}: a hub's name is letters, digits, - and _");
        }
        let dir = trellis_hub::place::runtime_dir()?;
        let served = trellis_hub::serve::serve(&dir, name)
            .map_err(|e| anyhow::anyhow!("--approve-via hub: cannot serve hub {name}: {e}"))?;
        Ok(RunHub {
            served,
            claims: Claims::default(),
            outcomes: Outcomes::default(),
            watched: Watched::default(),
            ask_timeout,
            asks: Vec::new(),
            agent,
            source,
            branch,
            log,
            since: (Attention::Starting, std::time::Instant::now()),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.served.files.name
    }

    /// The next request from the socket.
    pub(crate) async fn next_call(&mut self) -> Call {
        match self.served.calls.recv().await {
            Some(c) => c,
            None => std::future::pending().await,
        }
    }

    /// Hands request `w` to the hub: it waits there until `--ask-timeout`.
    pub(crate) fn ask(&mut self, w: Waiting) {
        if self.asks.iter().any(|(r, ..)| *r == w.request_id) {
            return;
        }
        say!(
            "trellis: waiting up to {} s for an answer through hub {} (trellis approve): {}",
            self.ask_timeout.as_secs_f64(),
            self.name(),
            crate::output::safe(&w.subject)
        );
        let until = Instant::now() + self.ask_timeout;
        self.asks.push((w.request_id.clone(), until, w));
    }

    /// Whether a request waits for an answer through the hub (the agent waits for us, so
    /// its silence is not idleness).
    pub(crate) fn waiting(&mut self, driver: &Driver) -> bool {
        let open = trellis_driver::claims::waiting(&driver.session);
        self.asks
            .retain(|(r, ..)| open.iter().any(|w| w.request_id == *r));
        !self.asks.is_empty()
    }

    /// The earliest request whose wait ends, and when.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.asks.iter().map(|(_, at, _)| *at).min()
    }

    /// The requests still open whose wait has ended (taken off the hub's list).
    pub(crate) fn expired(&mut self, driver: &Driver) -> Vec<Waiting> {
        self.waiting(driver);
        let now = Instant::now();
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.asks)
            .into_iter()
            .partition(|(_, at, _)| *at <= now);
        self.asks = kept;
        gone.into_iter().map(|(.., w)| w).collect()
    }

    /// Tells whoever follows the session how far its log is written and its state.
    pub(crate) fn publish(&mut self, driver: &Driver, ended: bool) {
        let state = state_of(driver);
        if state != self.since.0 {
            self.since = (state, std::time::Instant::now());
        }
        if !self.watched.followed() {
            return;
        }
        let len = std::fs::metadata(&self.log).map_or(0, |m| m.len());
        self.watched.publish(len, state.word(), ended);
    }

    /// Carries out a request from the socket and answers it; what it produced goes to
    /// `notes`.
    pub(crate) fn remote(&mut self, call: Call, driver: &mut Driver, notes: &mut Vec<Note>) {
        let who = call.who();
        let Call {
            request,
            conn,
            reply,
            ..
        } = call;
        let id = request.id;
        if request.op == Op::Hangup {
            self.claims.hangup(conn);
            return;
        }
        if let Some(body) = request
            .operation_id
            .as_deref()
            .and_then(|o| self.outcomes.find(o))
        {
            let _ = reply.send(Reply::Once(Response {
                id,
                body: body.clone(),
            }));
            return;
        }
        if let Some(key) = request.op.session()
            && key != KEY
        {
            let _ = reply.send(Reply::Once(Response::error(
                id,
                "not_found",
                format!("no session {key}"),
            )));
            return;
        }
        if let Op::Watch { observe, take, .. } = request.op {
            let _ = reply.send(match self.watched.attach(&who, observe, take) {
                Ok(follow) => {
                    let body = Body::Watching {
                        log: self.log.to_string_lossy().into_owned(),
                        agent: self.agent.clone(),
                        controller: follow.lease.is_some(),
                        you: who,
                        attachment: follow.attachment.id.clone(),
                    };
                    self.publish(driver, false);
                    Reply::Follow(Response { id, body }, follow)
                }
                Err(e) => Reply::Once(Response::error(id, "refused", e)),
            });
            return;
        }
        // An attachment acts only while it controls the session.
        if let Some(att) = &request.attachment
            && let Err(why) = self.watched.may_act(att)
        {
            let _ = reply.send(Reply::Once(Response::error(id, "refused", why)));
            return;
        }
        let body = self.carry_out(request.op, who, conn, driver, notes);
        if let Some(op) = request.operation_id {
            self.outcomes.keep(op, body.clone());
        }
        let _ = reply.send(Reply::Once(Response { id, body }));
    }

    fn carry_out(
        &mut self,
        op: Op,
        who: String,
        conn: u64,
        driver: &mut Driver,
        notes: &mut Vec<Note>,
    ) -> Body {
        let error = |code: &str, message: String| Body::Error {
            code: code.into(),
            message,
        };
        let result = match op {
            Op::List => {
                return Body::Sessions {
                    hub: HubInfo {
                        name: self.name().to_string(),
                        pid: std::process::id(),
                        kind: "run".into(),
                        policy: Some(driver.session.policy.describe()),
                        plugins: Vec::new(),
                        allow_drive: false,
                        listening: None,
                    },
                    sessions: vec![self.info(driver)],
                };
            }
            Op::Claim {
                request_id,
                lease_s,
                ..
            } => {
                return match self
                    .claims
                    .claim(&driver.session, &request_id, lease_s, &who, conn)
                {
                    Ok((claim, expires_s)) => Body::Claimed { claim, expires_s },
                    Err((code, message)) => error(code, message),
                };
            }
            Op::Release {
                request_id, claim, ..
            } => {
                return if self.claims.release(&request_id, &claim) {
                    Body::Done {
                        said: format!("released {request_id}"),
                    }
                } else {
                    error("not_found", format!("no such claim on {request_id}"))
                };
            }
            Op::Decide {
                always: Some(_), ..
            } => Err((
                "refused",
                "a headless run's rules are its --permission: answer once".to_string(),
            )),
            Op::Decide {
                request_id,
                option_id,
                claim,
                reason,
                ..
            } => {
                let reason_given = reason.is_some();
                self.claims
                    .decide(
                        driver,
                        &request_id,
                        &option_id,
                        claim.as_deref(),
                        who,
                        false,
                        reason,
                        notes,
                    )
                    .map(|()| {
                        let told = if reason_given {
                            format!("; {}", trellis_driver::claims::REASON_SENT)
                        } else {
                            String::new()
                        };
                        format!("request {request_id} answered {option_id}{told}")
                    })
            }
            Op::Answer {
                request_id,
                answer,
                claim,
                ..
            } => self
                .claims
                .answer(
                    driver,
                    &request_id,
                    trellis_deck::elicit_answer(answer),
                    claim.as_deref(),
                    who,
                    notes,
                )
                .map(|()| format!("answered {request_id}")),
            Op::Cancel { .. } if !driver.session.turn_open => Err((
                "idle",
                format!("session {KEY} has no turn running: nothing was cancelled"),
            )),
            Op::Cancel { .. } => {
                driver.cancel(notes);
                Ok(format!("session {KEY}: turn cancelled"))
            }
            Op::Stop { .. } => {
                say!("trellis: stopped by {}", crate::output::safe(&who));
                driver.end(&format!("stopped by {who}"), notes);
                Ok(format!("session {KEY} stopped"))
            }
            Op::Send { .. } => Err((
                "refused",
                "a headless run sends the prompts of its command line (--prompt)".to_string(),
            )),
            Op::New { .. } => Err((
                "refused",
                "a headless run's hub starts no sessions (trellis serve does)".to_string(),
            )),
            Op::Listen { .. } | Op::Shutdown => Err((
                "refused",
                "a headless run's hub ends with the run (Ctrl-C, or trellis stop)".to_string(),
            )),
            Op::Pair | Op::Watch { .. } | Op::Hangup => {
                Err(("refused", "not answered here".to_string()))
            }
        };
        match result {
            Ok(said) => Body::Done { said },
            Err((code, message)) => error(code, message),
        }
    }

    /// The session as `trellis ls` shows it.
    fn info(&self, driver: &Driver) -> SessionInfo {
        let session = &driver.session;
        let now = driver.connection().map(|h| h.recorder().origin().t);
        let state = state_of(driver);
        let title = session
            .title
            .clone()
            .or_else(|| {
                session.transcript.iter().find_map(|e| match e {
                    trellis_core::transcript::Entry::Message(m)
                        if m.role == trellis_core::transcript::Role::User =>
                    {
                        Some(m.text.clone())
                    }
                    _ => None,
                })
            })
            .unwrap_or_else(|| "headless run".into());
        SessionInfo {
            key: KEY,
            acp_id: session.id.as_deref().map(str::to_string),
            agent: self.agent.clone(),
            state: state.word().into(),
            rank: state.rank(),
            title: trellis_text::one_line(&title).into_owned(),
            cwd: session.cwd.clone().unwrap_or_default(),
            source: self.source.clone(),
            branch: session
                .worktree
                .as_ref()
                .map(|w| w.branch.clone())
                .or_else(|| self.branch.clone()),
            for_s: self.since.1.elapsed().as_secs(),
            policy: session.policy.describe(),
            worktree: session.worktree.as_ref().map(|w| w.label.clone()),
            pending: trellis_driver::claims::waiting_in_full(session)
                .into_iter()
                .map(|w| PendingInfo {
                    waited_s: w.asked_at.zip(now).map(|(a, n)| (n - a).max(0.0) as u64),
                    diff: w.diff,
                    input: w.input,
                    claimed_by: self.claims.claimant(&w.request_id),
                    request_id: w.request_id,
                    kind: if w.question { "question" } else { "permission" }.into(),
                    subject: w.subject,
                    options: w.options,
                    // Not offered: a headless run's rules are its --permission.
                    always: Vec::new(),
                    reject_once: w.reject_once,
                })
                .collect(),
        }
    }
}

/// The session's state as the hub says it; nobody sees a headless run's turns end, so a
/// finished turn reads as idle, not as done and unseen.
fn state_of(driver: &Driver) -> Attention {
    let session = &driver.session;
    Attention::of(
        session,
        &Facts {
            ready: driver.ready(),
            closed: driver.closed() && driver.connection().is_some(),
            login: false,
            seen_turn: session.turn,
        },
    )
}
