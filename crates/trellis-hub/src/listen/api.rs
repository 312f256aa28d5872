//! The approvals page and the JSON calls it makes (`/api/pending`, `/api/decide`,
//! `/api/send`, `/api/pair`): each carried to the hub's loop as a socket request is.

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::guard::{authorize, credential_in_url, same_origin, take_code};
use super::{ANSWER_WAIT, BODY_LIMIT, PAGE, PAIRED_TTL, Pairing, READ_WAIT, SCRIPT, STYLE};
use crate::call::{Call, Reply};
use crate::tokens::Scope;
use crate::wire::{self, Body, Op};

pub(super) type Answer = Response<Full<Bytes>>;

/// An answer with the headers every answer has: nothing cached, nothing framed, no
/// referrer, no type guessing, a policy that lets the page load only its own script and
/// style and talk only to this listener.
pub(super) fn answer(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Answer {
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
pub(super) struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Problem {
    pub(super) fn answer(self) -> Answer {
        problem(self.status, self.code, &self.message)
    }
}

pub(super) fn fail(status: StatusCode, code: &'static str, message: &str) -> Problem {
    Problem {
        status,
        code,
        message: message.to_string(),
    }
}

/// The page and its calls (every request but `/acp`'s).
pub(super) async fn handle(p: &Pairing, req: Request<Incoming>) -> Answer {
    let path = req.uri().path().to_string();
    if let Err(refused) = credential_in_url(p, &req) {
        return refused.answer();
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
    let body = match read_json(req).await {
        Ok(v) => v,
        Err(a) => return a.answer(),
    };
    let code = body["code"].as_str().unwrap_or("");
    if let Err(refused) = take_code(p, code) {
        return refused.answer();
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
                // Answered already, or claimed by another client: what happened, not a
                // reason to retry.
                "answered" | "claimed" => StatusCode::CONFLICT,
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
    // A reject's reason, told to the agent (the hub checks it goes with a reject).
    let reason = match &body["reason"] {
        Value::Null => None,
        Value::String(r) => Some(r.clone()),
        _ => {
            return problem(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "reason is text, when given",
            );
        }
    };
    let op = Op::Decide {
        session,
        request_id: request_id.to_string(),
        option_id: option_id.to_string(),
        claim: body["claim"].as_str().map(str::to_string),
        always,
        reason,
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
