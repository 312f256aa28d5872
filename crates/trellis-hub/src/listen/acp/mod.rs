//! ACP on the listener (`/acp`, WebSocket or streamable HTTP): any ACP client that speaks
//! the multi-client attach shape (RFD #533) reaches the hub's sessions. The SDK's
//! HTTP transport (`agent-client-protocol-http`) carries the JSON-RPC frames; a facade of
//! Trellis's own answers them, one per connection, as an agent would:
//!
//! - `initialize`; `session/list` (the hub's sessions, `sessionId` = their key);
//! - `session/attach {sessionId, role: controller|observer, historyPolicy: full|pending_only|
//!   none}` (also as `_session/attach`): the session's agent updates follow as
//!   `session/update` — from its start (`full`), or from now — and a controller allowed to
//!   approve is asked `session/request_permission` for what the agent asks (with
//!   `pending_only`, the requests waiting now first); `session/detach`;
//! - `session/prompt` (queued in the hub; answered with its `stopReason` when the turn
//!   ends) and `session/cancel`, for a controller allowed to prompt;
//! - `_trellis/permission_resolved {sessionId, requestId, outcome, resolvedBy}` when any
//!   request of the session is answered, by anyone; `_trellis/client_disconnected
//!   {sessionId, client}` when another attachment of the session leaves.
//!
//! Every answer goes through the hub exactly as a socket's does (exactly once, the
//! loser told who won, an observer refused); what a client sends is text the hub makes
//! harmless before the log or the UI see it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

pub(crate) mod bounds;
mod log;
mod outbox;
mod transport;

pub(super) use bounds::Seats;
pub use transport::check_message;
pub(super) use transport::{Streamable, route};

use log::{follow_log, pending_requests};
use outbox::Outbox;

use super::Pairing;
use crate::call::{Call, Reply};
use crate::tokens::{Scope, Token};
use crate::wire::{self, Body, Op};

/// JSON-RPC errors of the facade.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// #533's codes: not found, not authorised.
const NOT_FOUND: i64 = -32001;
const NOT_AUTHORISED: i64 = -32002;

/// The attachments of the listener's WebSocket clients, by session: who is told when
/// one leaves.
#[derive(Debug, Default)]
pub(super) struct Attached(Mutex<HashMap<u64, Member>>);

/// An attached client: its session, its name and role, and its way out.
type Member = (u32, String, &'static str, Outbox);

impl Attached {
    /// `conn` attaches to `session`: the ACP clients already attached to it.
    fn join(&self, conn: u64, member: Member) -> Vec<Value> {
        let mut a = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let others = a
            .values()
            .filter(|(s, ..)| *s == member.0)
            .map(|(_, name, role, _)| json!({"name": name, "role": role}))
            .collect();
        a.insert(conn, member);
        others
    }

    /// `conn` left: the others on its session are told.
    fn leave(&self, conn: u64) {
        let mut a = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some((session, client, ..)) = a.remove(&conn) else {
            return;
        };
        for (s, _, _, tx) in a.values() {
            if *s == session {
                // Told if there is room: a client that stopped reading is being let go.
                let _ = tx.try_send(notification(
                    "_trellis/client_disconnected",
                    json!({"sessionId": session.to_string(), "client": client}),
                ));
            }
        }
    }
}

/// Messages from a client waiting for the facade (then the client's socket is not read
/// until there is room).
pub(super) const FROM_CLIENT: usize = 64;

/// Connection numbers of WebSocket clients (the hub lets a connection's claims and
/// control go when it ends: apart from the socket's).
pub(super) const CONN_BIT: u64 = 1 << 62;

fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

fn result(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// One client's attachment to a session.
struct Attachment {
    session: u32,
    controller: bool,
    /// The hub's id of this attachment, for its requests.
    id: String,
    follower: tokio::task::JoinHandle<()>,
    /// Dropped with the attachment: the hub's control lease and attachment go with it.
    _follow: crate::watch::Follow,
}

/// What the follower tells the facade.
pub(super) enum Seen {
    /// The agent asks permission: its request id and params.
    Asks(String, Value),
    /// A prompt this client sent reached the agent as request `id`.
    Prompted(String),
    /// The agent answered request `id` (a prompt's end, with its stop reason).
    Answered(String, Value),
    /// The client left what was sent to it unread too long.
    Stalled,
}

struct Facade {
    p: Arc<Pairing>,
    token: Token,
    conn: u64,
    client: String,
    tx: Outbox,
    /// The client stopped reading: the connection ends.
    stalled: bool,
    attached: Option<Attachment>,
    /// Our requests to the client: our id → the agent's request id.
    asked: HashMap<u64, String>,
    next: u64,
    /// The client's prompts waiting for their turn to end: client id, and the agent's id
    /// of the prompt once it is seen.
    prompts: Vec<(Value, Option<String>)>,
    /// What goes to the client after the answer being made (the requests waiting when it
    /// attached come after the attach answer).
    later: Vec<String>,
}

async fn facade(
    p: Arc<Pairing>,
    token: Token,
    conn: u64,
    mut from_client: mpsc::Receiver<String>,
    tx: Outbox,
) {
    let client = format!("{} (token {}, ACP)", token.label, token.id);
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<Seen>();
    let mut f = Facade {
        p,
        token,
        conn,
        client,
        tx,
        stalled: false,
        attached: None,
        asked: HashMap::new(),
        next: 1,
        prompts: Vec::new(),
        later: Vec::new(),
    };
    while !f.stalled {
        tokio::select! {
            line = from_client.recv() => match line {
                Some(line) => f.heard(&line, &seen_tx).await,
                None => break,
            },
            Some(s) = seen.recv() => f.seen(s).await,
        }
    }
    f.detach().await;
}

impl Facade {
    /// Sends `line` to the client, waiting at most [`log::STALL`] for room.
    async fn send(&mut self, line: String) {
        if !self.tx.send(line).await {
            self.stalled = true;
        }
    }

    async fn heard(&mut self, line: &str, seen: &mpsc::UnboundedSender<Seen>) {
        // What is not a JSON-RPC message is answered as the spec says (an id it cannot
        // have: null), never dropped in silence.
        let msg = match serde_json::from_str::<Value>(line) {
            Ok(m) if m.is_object() => m,
            Ok(_) => {
                return self
                    .send(error(
                        &Value::Null,
                        INVALID_REQUEST,
                        "not a JSON-RPC request",
                    ))
                    .await;
            }
            Err(e) => {
                return self
                    .send(error(&Value::Null, PARSE_ERROR, &format!("not JSON: {e}")))
                    .await;
            }
        };
        let id = msg.get("id").cloned();
        // JSON-RPC 2.0, and an id that is a string, a number or null: anything else is no
        // request (answered with the id it cannot have).
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0")
            || id
                .as_ref()
                .is_some_and(|i| i.is_object() || i.is_array() || i.is_boolean())
        {
            return self
                .send(error(
                    &Value::Null,
                    INVALID_REQUEST,
                    "not a JSON-RPC 2.0 request (\"jsonrpc\": \"2.0\", an id that is a string, a number or null)",
                ))
                .await;
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            // An answer to one of our requests (a permission).
            if let Some(id) = id {
                self.answered(&id, &msg).await;
            }
            return;
        };
        let reply = match method {
            "initialize" => Ok(json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": false,
                    "sessionCapabilities": {"list": {}},
                    "_meta": {"dev.trellis": {"attach": {
                        "roles": ["controller", "observer"],
                        "historyPolicies": ["full", "pending_only", "none"],
                    }}},
                },
                "authMethods": [],
                "agentInfo": {"name": "trellis", "version": env!("CARGO_PKG_VERSION")},
            })),
            "session/list" => self.list().await,
            "session/attach" | "_session/attach" => self.attach(&params, seen).await,
            "session/detach" | "_session/detach" => {
                let session = self.attached.as_ref().map(|a| a.session);
                self.detach().await;
                match session {
                    Some(s) => Ok(json!({"sessionId": s.to_string(), "status": "detached"})),
                    None => Err((NOT_FOUND, "not attached".to_string())),
                }
            }
            "session/prompt" => match self.prompt(&params).await {
                // Answered when the turn ends.
                Ok(()) => {
                    if let Some(id) = id {
                        self.prompts.push((id, None));
                    }
                    return;
                }
                Err(e) => Err(e),
            },
            "session/cancel" => {
                let allowed = self
                    .attached
                    .as_ref()
                    .is_some_and(|a| a.controller && self.token.grants(Scope::Prompt));
                if let Some(a) = self.attached.as_ref().filter(|_| allowed) {
                    let _ = self.call(Op::Cancel { session: a.session }).await;
                }
                // A notification, as ACP has it; sent as a request, it is answered.
                if id.is_none() {
                    return;
                }
                if allowed {
                    Ok(Value::Null)
                } else {
                    Err((
                        NOT_AUTHORISED,
                        "only a controller allowed to prompt cancels".to_string(),
                    ))
                }
            }
            _ => Err((METHOD_NOT_FOUND, format!("{method} is not served here"))),
        };
        let Some(id) = id else {
            return;
        };
        self.send(match reply {
            Ok(v) => result(&id, v),
            Err((code, message)) => error(&id, code, &message),
        })
        .await;
        for line in std::mem::take(&mut self.later) {
            self.send(line).await;
        }
    }

    /// A call to the hub, as this client.
    async fn call(&self, op: Op) -> Result<Body, String> {
        let attachment = self.attached.as_ref().map(|a| a.id.clone());
        let (reply, rx) = oneshot::channel();
        let request = wire::Request {
            id: self
                .p
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            op,
            client: self.client.clone(),
            operation_id: None,
            attachment,
        };
        let call = Call {
            request,
            pid: None,
            conn: self.conn,
            reply,
        };
        self.p
            .calls
            .send(call)
            .await
            .map_err(|_| "the hub is gone".to_string())?;
        match rx.await {
            Ok(Reply::Once(r)) => Ok(r.body),
            Ok(Reply::Follow(r, _)) => Ok(r.body),
            Err(_) => Err("the hub did not answer".into()),
        }
    }

    async fn list(&self) -> Result<Value, (i64, String)> {
        if !self.token.grants(Scope::Read) {
            return Err((NOT_AUTHORISED, "this token may not read".into()));
        }
        match self.call(Op::List).await {
            Ok(Body::Sessions { sessions, .. }) => Ok(json!({"sessions": sessions
                .iter()
                .map(|s| json!({"sessionId": s.key.to_string(), "cwd": s.cwd, "title": s.title}))
                .collect::<Vec<_>>()})),
            Ok(other) => Err((INVALID_PARAMS, format!("{other:?}"))),
            Err(e) => Err((INVALID_PARAMS, e)),
        }
    }

    async fn attach(
        &mut self,
        params: &Value,
        seen: &mpsc::UnboundedSender<Seen>,
    ) -> Result<Value, (i64, String)> {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .and_then(|s| s.rsplit(':').next()?.parse::<u32>().ok())
            .ok_or((
                INVALID_PARAMS,
                "sessionId names a session of this hub".to_string(),
            ))?;
        let role = params
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("observer");
        let history = params
            .get("historyPolicy")
            .and_then(Value::as_str)
            .unwrap_or("full");
        if !["full", "pending_only", "none"].contains(&history) {
            return Err((INVALID_PARAMS, format!("historyPolicy {history:?}")));
        }
        let controller = match role {
            "observer" => false,
            "controller" => true,
            _ => return Err((INVALID_PARAMS, format!("role {role:?}"))),
        };
        let allowed = if controller {
            self.token.grants(Scope::Approve) || self.token.grants(Scope::Prompt)
        } else {
            self.token.grants(Scope::Read)
        };
        if !allowed {
            return Err((
                NOT_AUTHORISED,
                format!("this token may not attach as {role}"),
            ));
        }
        self.detach().await;
        let (reply, rx) = oneshot::channel();
        let request = wire::Request {
            id: self
                .p
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            op: Op::Watch {
                session,
                observe: !controller,
                take: false,
            },
            client: self.client.clone(),
            operation_id: None,
            attachment: None,
        };
        let sent = self.p.calls.send(Call {
            request,
            pid: None,
            conn: self.conn,
            reply,
        });
        if sent.await.is_err() {
            return Err((NOT_FOUND, "the hub is gone".into()));
        }
        let (log, attachment, follow) = match rx.await {
            Ok(Reply::Follow(r, follow)) => match r.body {
                Body::Watching {
                    log, attachment, ..
                } => (log, attachment, follow),
                _ => return Err((NOT_FOUND, "not followed".into())),
            },
            Ok(Reply::Once(r)) => {
                return Err(match r.body {
                    Body::Error { code, message } if code == "not_found" => (NOT_FOUND, message),
                    Body::Error { message, .. } => (NOT_AUTHORISED, message),
                    other => (NOT_FOUND, format!("{other:?}")),
                });
            }
            Err(_) => return Err((NOT_FOUND, "the hub did not answer".into())),
        };
        let from = match history {
            "full" => 0,
            _ => std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0),
        };
        if history == "pending_only" && controller && self.token.grants(Scope::Approve) {
            for (request_id, params) in pending_requests(&log, from).await {
                let line = self.asking(&request_id, params, session);
                self.later.push(line);
            }
        }
        let follower = tokio::spawn(follow_log(
            std::path::PathBuf::from(log),
            from,
            follow.progress.clone(),
            session,
            self.tx.clone(),
            seen.clone(),
        ));
        let role_word = if controller { "controller" } else { "observer" };
        let connected = self.p.acp.join(
            self.conn,
            (session, self.client.clone(), role_word, self.tx.clone()),
        );
        self.attached = Some(Attachment {
            session,
            controller,
            id: attachment,
            follower,
            _follow: follow,
        });
        Ok(json!({
            "sessionId": session.to_string(),
            "role": role,
            // The history comes as `session/update` notifications after this answer.
            "history": [],
            // The other ACP clients attached through this listener.
            "connectedClients": connected,
        }))
    }

    async fn detach(&mut self) {
        if let Some(a) = self.attached.take() {
            a.follower.abort();
            self.p.acp.leave(self.conn);
            // Claims made on this connection go too.
            let _ = self.call(Op::Hangup).await;
        }
    }

    async fn prompt(&self, params: &Value) -> Result<(), (i64, String)> {
        let Some(a) = &self.attached else {
            return Err((NOT_FOUND, "attach to a session first".into()));
        };
        if !a.controller || !self.token.grants(Scope::Prompt) {
            return Err((NOT_AUTHORISED, "only a controller allowed to prompt".into()));
        }
        let text: Vec<&str> = params
            .get("prompt")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        match self
            .call(Op::Send {
                session: a.session,
                text: text.join("\n"),
                files: Vec::new(),
            })
            .await
        {
            Ok(Body::Done { .. }) => Ok(()),
            Ok(Body::Error { message, .. }) => Err((NOT_AUTHORISED, message)),
            Ok(other) => Err((INVALID_PARAMS, format!("{other:?}"))),
            Err(e) => Err((NOT_FOUND, e)),
        }
    }

    /// The request asking the client the agent's permission request `request_id`.
    fn asking(&mut self, request_id: &str, mut params: Value, session: u32) -> String {
        params["sessionId"] = json!(session.to_string());
        let id = self.next;
        self.next += 1;
        self.asked.insert(id, request_id.to_string());
        json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": params})
            .to_string()
    }

    async fn seen(&mut self, s: Seen) {
        let Some(a) = &self.attached else {
            return;
        };
        match s {
            Seen::Asks(request_id, params) => {
                if a.controller && self.token.grants(Scope::Approve) {
                    let session = a.session;
                    let line = self.asking(&request_id, params, session);
                    self.send(line).await;
                }
            }
            Seen::Prompted(agent_id) => {
                if let Some(p) = self.prompts.iter_mut().find(|(_, seen)| seen.is_none()) {
                    p.1 = Some(agent_id);
                }
            }
            Seen::Stalled => self.stalled = true,
            Seen::Answered(agent_id, answer) => {
                if let Some(i) = self
                    .prompts
                    .iter()
                    .position(|(_, seen)| seen.as_deref() == Some(agent_id.as_str()))
                {
                    let (id, _) = self.prompts.remove(i);
                    let stop = answer
                        .get("stopReason")
                        .cloned()
                        .unwrap_or(json!("end_turn"));
                    self.send(result(&id, json!({"stopReason": stop}))).await;
                }
            }
        }
    }

    /// The client answered our request `id`: a permission, decided in the hub once.
    async fn answered(&mut self, id: &Value, msg: &Value) {
        let Some(request_id) = id.as_u64().and_then(|i| self.asked.remove(&i)) else {
            return;
        };
        let Some(a) = &self.attached else {
            return;
        };
        let outcome = &msg["result"]["outcome"];
        if outcome["outcome"] != "selected" {
            return;
        }
        let Some(option_id) = outcome["optionId"].as_str() else {
            return;
        };
        // Exactly once whoever answers: a late or losing answer is refused by the hub
        // (and the client hears `_trellis/permission_resolved` naming who won).
        let _ = self
            .call(Op::Decide {
                session: a.session,
                request_id,
                option_id: option_id.to_string(),
                claim: None,
                always: None,
                // ACP's answer has no words: a reject's reason is given elsewhere.
                reason: None,
            })
            .await;
    }
}
