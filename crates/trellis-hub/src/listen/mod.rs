//! The hub's loopback listener (`trellis serve --listen 127.0.0.1:PORT`): a small
//! approvals page and the JSON calls it makes, for a phone or a browser reaching the
//! machine through `ssh -L` or a tunnel the user runs. It binds loopback addresses only;
//! every call is carried to the hub's loop exactly as a socket request is (the same
//! exactly-once answers, the same operation ids).
//!
//! Auth: a bearer token in the `Authorization` header and nowhere else (a URL that carries
//! one is refused, and said in the hub's messages), checked against the token store on
//! every call, scopes per call, failures rate-limited. A phone gets its token by pairing:
//! `trellis pair` asks the hub for a single-use code (five minutes), shown as a QR code of
//! the page's address with the code in its fragment (never sent in a request line); the
//! page exchanges it for an `approve` token.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

mod acp;

use crate::serve::{Call, Reply};
use crate::tokens::{Refused, Scope, Store, Token};
use crate::wire::{self, Body, Op};

/// Connections served at once.
const CONNECTIONS: usize = 32;
/// Longest request body.
const BODY_LIMIT: usize = 64 * 1024;
/// How long a client has to send its request.
const READ_WAIT: Duration = Duration::from_secs(10);
/// How long the hub's loop has to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(30);
/// Failed checks (tokens, pairing codes) allowed per minute before every check waits out
/// the minute.
const FAILURES_PER_MINUTE: usize = 10;
/// How long a pairing code lives.
pub const PAIR_TTL: Duration = Duration::from_secs(300);
/// How long a paired device's token lives.
const PAIRED_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// What the listener's connections share.
#[derive(Debug)]
pub struct Pairing {
    store: Store,
    calls: mpsc::Sender<Call>,
    addr: SocketAddr,
    /// Live pairing codes: (SHA-256 of the code, until).
    codes: Mutex<Vec<(String, Instant)>>,
    failures: Mutex<VecDeque<Instant>>,
    next_id: std::sync::atomic::AtomicU64,
    /// The ACP clients attached to sessions (`/acp`).
    acp: acp::Attached,
    /// ACP over streamable HTTP: its router and its connections' tokens.
    streamable: acp::Streamable,
}

impl Pairing {
    /// A new single-use pairing code and the address to open with it.
    pub fn new_code(&self) -> std::io::Result<(String, String)> {
        let code =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(crate::tokens::random(16)?);
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        codes.retain(|(_, until)| *until > now);
        codes.push((hash(&code), now + PAIR_TTL));
        let url = format!("http://{}/#pair={code}", self.addr);
        Ok((code, url))
    }

    /// Uses up pairing code `code`, if it is live.
    fn take_code(&self, code: &str) -> bool {
        use subtle::ConstantTimeEq;
        let h = hash(code.trim());
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        codes.retain(|(_, until)| *until > now);
        let hit = codes
            .iter()
            .position(|(c, _)| bool::from(c.as_bytes().ct_eq(h.as_bytes())));
        hit.map(|i| codes.remove(i)).is_some()
    }

    /// Whether checks wait out the minute (too many failed ones).
    fn locked(&self) -> bool {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        while f
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
        {
            f.pop_front();
        }
        f.len() >= FAILURES_PER_MINUTE
    }

    fn failed(&self) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        f.push_back(Instant::now());
    }
}

fn hash(s: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The listener while it runs (stopped when dropped).
#[derive(Debug)]
pub struct Listening {
    pub addr: SocketAddr,
    pub pairing: Arc<Pairing>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `addr` (a loopback address only) and serves it within the runtime; calls go to
/// the hub's loop through `calls`.
pub fn listen(
    addr: SocketAddr,
    store: Store,
    calls: mpsc::Sender<Call>,
) -> std::io::Result<Listening> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{addr}: the listener binds loopback addresses only (127.0.0.1, ::1); reach it from elsewhere through ssh -L or a tunnel you run"
            ),
        ));
    }
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let addr = listener.local_addr()?;
    let pairing = Arc::new(Pairing {
        store,
        calls,
        addr,
        codes: Mutex::new(Vec::new()),
        failures: Mutex::new(VecDeque::new()),
        next_id: std::sync::atomic::AtomicU64::new(1),
        acp: acp::Attached::default(),
        streamable: acp::Streamable::default(),
    });
    let task = tokio::spawn(accept(listener, pairing.clone()));
    Ok(Listening {
        addr,
        pairing,
        task,
    })
}

async fn accept(listener: tokio::net::TcpListener, p: Arc<Pairing>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let p = p.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let p = p.clone();
                async move { Ok::<_, Infallible>(acp::route(&p, req).await) }
            });
            // Upgrades: an ACP client's WebSocket (`/acp`).
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(READ_WAIT)
                .keep_alive(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades()
                .await;
            drop(permit);
        });
    }
}

type Answer = Response<Full<Bytes>>;

/// An answer with the headers every answer has: nothing cached, nothing framed, no
/// referrer, no type guessing, a policy that lets the page load only its own script and
/// style and talk only to this listener.
fn answer(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Answer {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    let set = |h: &mut hyper::HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, hyper::header::HeaderValue::from_static(v));
    };
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        h.insert(hyper::header::CONTENT_TYPE, v);
    }
    set(h, "cache-control", "no-store");
    set(h, "x-content-type-options", "nosniff");
    set(h, "x-frame-options", "DENY");
    set(h, "referrer-policy", "no-referrer");
    set(
        h,
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    r
}

fn json_answer(status: StatusCode, v: &Value) -> Answer {
    answer(status, "application/json", v.to_string())
}

fn problem(status: StatusCode, code: &str, message: &str) -> Answer {
    json_answer(status, &json!({"error": code, "message": message}))
}

/// A refusal on its way to becoming an answer.
#[derive(Debug)]
struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Problem {
    fn answer(self) -> Answer {
        problem(self.status, self.code, &self.message)
    }
}

fn fail(status: StatusCode, code: &'static str, message: &str) -> Problem {
    Problem {
        status,
        code,
        message: message.to_string(),
    }
}

async fn handle(p: &Pairing, req: Request<Incoming>) -> Answer {
    let path = req.uri().path().to_string();
    // A token in a URL ends up in histories, logs and screenshots: refused, and said.
    if let Some(q) = req.uri().query() {
        let q = q.to_ascii_lowercase();
        if ["token", "auth", "bearer", "key"]
            .iter()
            .any(|w| q.contains(w))
        {
            eprintln!("trellis: refused a request to {path} carrying a credential in its URL");
            p.failed();
            return problem(
                StatusCode::BAD_REQUEST,
                "token_in_url",
                "a token goes in the Authorization header, never in a URL",
            );
        }
    }
    let method = req.method().clone();
    match (method.clone(), path.as_str()) {
        (Method::GET, "/") => return answer(StatusCode::OK, "text/html; charset=utf-8", PAGE),
        (Method::GET, "/app.js") => {
            return answer(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT);
        }
        (Method::GET, "/app.css") => {
            return answer(StatusCode::OK, "text/css; charset=utf-8", STYLE);
        }
        (Method::GET, "/api/health") => return json_answer(StatusCode::OK, &json!({"ok": true})),
        _ => {}
    }
    if method == Method::POST && !same_origin(&req) {
        return problem(
            StatusCode::FORBIDDEN,
            "origin",
            "a request from another site",
        );
    }
    if method == Method::POST && path == "/api/pair" {
        return pair(p, req).await;
    }
    let scope = match (method, path.as_str()) {
        (Method::GET, "/api/pending") => Scope::Read,
        (Method::POST, "/api/decide") => Scope::Approve,
        (Method::POST, "/api/send") => Scope::Prompt,
        _ => return problem(StatusCode::NOT_FOUND, "not_found", "no such page"),
    };
    let token = match authorize(p, &req, scope) {
        Ok(t) => t,
        Err(a) => return a.answer(),
    };
    let body = if path == "/api/pending" {
        Value::Null
    } else {
        match read_json(req).await {
            Ok(v) => v,
            Err(a) => return a.answer(),
        }
    };
    let client = format!("{} (token {})", token.label, token.id);
    match path.as_str() {
        "/api/pending" => pending(p, &client).await,
        "/api/decide" => decide(p, &client, &body, token.grants(Scope::Admin)).await,
        _ => send(p, &client, &body).await,
    }
}

/// A POST's `Origin`, when the browser sends one, names this listener (the `Host`).
fn same_origin(req: &Request<Incoming>) -> bool {
    let Some(origin) = req.headers().get("origin").and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let host = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    origin
        .strip_prefix("http://")
        .is_some_and(|o| !host.is_empty() && o == host)
}

/// The bearer token of a request, checked for `scope`.
fn authorize(p: &Pairing, req: &Request<Incoming>, scope: Scope) -> Result<Token, Problem> {
    if p.locked() {
        return Err(fail(
            StatusCode::TOO_MANY_REQUESTS,
            "locked",
            "too many failed attempts: try again in a minute",
        ));
    }
    let Some(secret) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return Err(fail(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a token is needed (Authorization: Bearer …; trellis pair or trellis token new)",
        ));
    };
    let token = match p.store.check(secret) {
        Ok(Ok(t)) => t,
        Ok(Err(why)) => {
            p.failed();
            let message = match why {
                Refused::Unknown => "an unknown or revoked token",
                Refused::Expired => "an expired token",
            };
            return Err(fail(StatusCode::UNAUTHORIZED, "unauthorized", message));
        }
        Err(e) => {
            return Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "store",
                &format!("the token store cannot be read: {e}"),
            ));
        }
    };
    if !token.grants(scope) {
        return Err(fail(
            StatusCode::FORBIDDEN,
            "scope",
            &format!(
                "this token may not {} (scope {})",
                match scope {
                    Scope::Read => "read",
                    Scope::Prompt => "send prompts",
                    Scope::Approve => "answer requests",
                    Scope::Admin => "administer",
                },
                scope.name()
            ),
        ));
    }
    Ok(token)
}

async fn read_json(req: Request<Incoming>) -> Result<Value, Problem> {
    let body = tokio::time::timeout(
        READ_WAIT,
        Limited::new(req.into_body(), BODY_LIMIT).collect(),
    )
    .await
    .map_err(|_| {
        fail(
            StatusCode::REQUEST_TIMEOUT,
            "slow",
            "the request took too long",
        )
    })?
    .map_err(|_| {
        fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request is too large",
        )
    })?
    .to_bytes();
    serde_json::from_slice(&body).map_err(|e| {
        fail(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &format!("not JSON: {e}"),
        )
    })
}

/// Exchanges a pairing code for an `approve` token.
async fn pair(p: &Pairing, req: Request<Incoming>) -> Answer {
    if p.locked() {
        return problem(
            StatusCode::TOO_MANY_REQUESTS,
            "locked",
            "too many failed attempts: try again in a minute",
        );
    }
    let body = match read_json(req).await {
        Ok(v) => v,
        Err(a) => return a.answer(),
    };
    let code = body["code"].as_str().unwrap_or("");
    if !p.take_code(code) {
        p.failed();
        return problem(
            StatusCode::UNAUTHORIZED,
            "bad_code",
            "an unknown, used or expired pairing code (trellis pair makes a new one)",
        );
    }
    let suffix: String = crate::tokens::random(2)
        .unwrap_or_default()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match p.store.mint(
        &format!("paired-{suffix}"),
        &[Scope::Approve],
        Some(PAIRED_TTL),
    ) {
        Ok((t, secret)) => json_answer(
            StatusCode::OK,
            &json!({"token": secret, "label": t.label, "expires": t.expires}),
        ),
        Err(e) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store",
            &format!("cannot store the token: {e}"),
        ),
    }
}

/// Carries `op` to the hub's loop as a socket request would be, for `client`.
async fn call(
    p: &Pairing,
    client: &str,
    op: Op,
    operation_id: Option<String>,
) -> Result<Body, Problem> {
    let id = p.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (reply, rx) = oneshot::channel();
    let request = wire::Request {
        id,
        op,
        client: client.to_string(),
        operation_id,
        attachment: None,
    };
    let busy = || {
        fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the hub did not answer in time",
        )
    };
    p.calls
        .send(Call {
            request,
            pid: None,
            conn: 0,
            reply,
        })
        .await
        .map_err(|_| busy())?;
    match tokio::time::timeout(ANSWER_WAIT, rx).await {
        Ok(Ok(Reply::Once(r))) => Ok(r.body),
        _ => Err(busy()),
    }
}

/// What a `Body` answer is as an HTTP answer.
fn outcome(body: Body) -> Answer {
    match body {
        Body::Done { said } => json_answer(StatusCode::OK, &json!({"ok": true, "said": said})),
        Body::Error { code, message } => {
            let status = match code.as_str() {
                "not_found" => StatusCode::NOT_FOUND,
                "answered" => StatusCode::CONFLICT,
                "refused" => StatusCode::FORBIDDEN,
                "bad_request" => StatusCode::BAD_REQUEST,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            problem(status, &code, &message)
        }
        _ => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unexpected",
            "an unexpected answer",
        ),
    }
}

/// The pending requests of the hub's sessions, and nothing else of them.
async fn pending(p: &Pairing, client: &str) -> Answer {
    match call(p, client, Op::List, None).await {
        Ok(Body::Sessions { hub, sessions }) => {
            let rows: Vec<Value> = sessions
                .into_iter()
                .filter(|s| !s.pending.is_empty())
                .map(|s| {
                    json!({"session": s.key, "agent": s.agent, "title": s.title, "cwd": s.cwd,
                           "branch": s.branch, "state": s.state, "pending": s.pending})
                })
                .collect();
            json_answer(StatusCode::OK, &json!({"hub": hub.name, "sessions": rows}))
        }
        Ok(other) => outcome(other),
        Err(a) => a.answer(),
    }
}

fn operation_id(body: &Value) -> Option<String> {
    body["operation_id"]
        .as_str()
        .filter(|s| !s.is_empty() && s.len() <= 128)
        .map(str::to_string)
}

async fn decide(p: &Pairing, client: &str, body: &Value, admin: bool) -> Answer {
    let (Some(session), Some(request_id), Some(option_id)) = (
        body["session"].as_u64().and_then(|s| u32::try_from(s).ok()),
        body["request_id"].as_str(),
        body["option_id"].as_str(),
    ) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "session, request_id and option_id are needed",
        );
    };
    // An "always" choice saves a rule that decides the session's requests from then on:
    // only a token that may administer the hub makes one.
    let always = body["always"].as_str().map(str::to_string);
    if always.is_some() && !admin {
        return problem(
            StatusCode::FORBIDDEN,
            "scope",
            "an \"always\" rule needs a token with the admin scope",
        );
    }
    let op = Op::Decide {
        session,
        request_id: request_id.to_string(),
        option_id: option_id.to_string(),
        claim: body["claim"].as_str().map(str::to_string),
        always,
    };
    match call(p, client, op, operation_id(body)).await {
        Ok(b) => outcome(b),
        Err(a) => a.answer(),
    }
}

async fn send(p: &Pairing, client: &str, body: &Value) -> Answer {
    let (Some(session), Some(text)) = (
        body["session"].as_u64().and_then(|s| u32::try_from(s).ok()),
        body["text"].as_str(),
    ) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "session and text are needed",
        );
    };
    let op = Op::Send {
        session,
        text: text.to_string(),
        files: Vec::new(),
    };
    match call(p, client, op, operation_id(body)).await {
        Ok(b) => outcome(b),
        Err(a) => a.answer(),
    }
}
