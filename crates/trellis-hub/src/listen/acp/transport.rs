//! How an ACP client reaches its facade through the SDK's transport, whose one component
//! per connection is the facade (`Lines` over two channels). The transport's factory sees
//! no request, so the token a connection was opened with reaches it another way:
//!
//! - WebSocket: an authorised `/acp` upgrade gets a router made for that one request;
//! - streamable HTTP: one router for the listener; the `POST` that opens a connection
//!   (`initialize`) runs with its token in a task-local the factory reads, and every later
//!   request of that connection (`Acp-Connection-Id`) must come with the same token.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;

use super::bounds::{Full, Seat, Window, counted};
use super::{CONN_BIT, FROM_CLIENT, INVALID_REQUEST, PARSE_ERROR, facade, outbox};
use crate::listen::{Pairing, Problem, fail};
use crate::tokens::{Scope, Token};

/// `/acp` (ACP over WebSocket, for a token that may at least read), else the page and
/// its calls.
pub(in crate::listen) async fn route(
    p: &Arc<Pairing>,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<axum::body::Body> {
    let websocket = req
        .headers()
        .get(hyper::header::UPGRADE)
        .and_then(|u| u.to_str().ok())
        .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    if req.uri().path() != "/acp" || req.uri().query().is_some() {
        return crate::listen::api::handle(p, req)
            .await
            .map(axum::body::Body::new);
    }
    let acp = async {
        // A browser page of another site may not open a WebSocket here, whatever it holds.
        if !crate::listen::guard::same_origin(&req) {
            return Err(fail(
                hyper::StatusCode::FORBIDDEN,
                "origin",
                "a request from another site",
            ));
        }
        let token = crate::listen::guard::authorize(p, &req, Scope::Read)?;
        if websocket {
            upgrade(p, token, req).await
        } else {
            streamable(p, token, req).await
        }
    };
    match acp.await {
        Ok(r) => r,
        Err(problem) => problem.answer().map(axum::body::Body::new),
    }
}

/// How long a write to a WebSocket client may wait (its socket full: it stopped
/// reading) before the client is let go.
pub(in crate::listen) const WRITE_DEADLINE: std::time::Duration =
    std::time::Duration::from_secs(10);

/// The largest message a client may send, and what a WebSocket buffers for one.
const MESSAGE_LIMIT: usize = 4 << 20;

/// How long a client has to send a message's body.
const BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How often a WebSocket client is pinged, and how long it may send nothing at all — not
/// even the pong every client library sends by itself — before it is let go: a client
/// gone without a word, or one holding a message begun and never finished (nothing else
/// can come through until it is).
const PING_EVERY: std::time::Duration = std::time::Duration::from_secs(30);
const SILENCE: std::time::Duration = std::time::Duration::from_secs(75);

/// A place for one more ACP connection of `token`, or why there is none.
fn seat(p: &Pairing, token: &Token) -> Result<Seat, Problem> {
    p.seats.take(&token.id).map_err(|full| match full {
        Full::Token => fail(
            hyper::StatusCode::TOO_MANY_REQUESTS,
            "connections",
            &format!(
                "this token holds {} ACP connections already: close one first",
                super::bounds::PER_TOKEN
            ),
        ),
        Full::All => fail(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            "connections",
            &format!(
                "the listener holds {} ACP connections already",
                super::bounds::ALL
            ),
        ),
    })
}

/// Serves one WebSocket upgrade request with a facade of its own, for `token`. Trellis
/// runs the socket itself (not the SDK's transport, whose queues toward a client are
/// unbounded): every queue between the session and the socket is bounded, a write
/// waits at most [`WRITE_DEADLINE`], and a client that falls behind is let go.
async fn upgrade(
    p: &Arc<Pairing>,
    token: Token,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<axum::body::Body>, Problem> {
    use tower::ServiceExt;
    let seat = seat(p, &token)?;
    let pairing = Arc::downgrade(p);
    // The handler runs once, for this request's one upgrade.
    let opening = Arc::new(Mutex::new(Some((token, seat))));
    let router = axum::Router::new().route(
        "/acp",
        axum::routing::get(move |ws: axum::extract::ws::WebSocketUpgrade| {
            let opening = opening.lock().unwrap_or_else(|e| e.into_inner()).take();
            let pairing = pairing.clone();
            async move {
                ws.max_message_size(MESSAGE_LIMIT)
                    .max_frame_size(MESSAGE_LIMIT)
                    .max_write_buffer_size(MESSAGE_LIMIT * 2)
                    .on_upgrade(move |socket| websocket(socket, pairing, opening))
            }
        }),
    );
    router
        .oneshot(req.map(axum::body::Body::new))
        .await
        .map_err(|_| {
            fail(
                hyper::StatusCode::INTERNAL_SERVER_ERROR,
                "acp",
                "the ACP endpoint failed",
            )
        })
}

/// One WebSocket client: its text messages to its facade, the facade's lines to it.
async fn websocket(
    socket: axum::extract::ws::WebSocket,
    pairing: Weak<Pairing>,
    opening: Option<(Token, Seat)>,
) {
    use axum::extract::ws::Message;
    use futures::{SinkExt, StreamExt};
    let (Some(p), Some((token, _seat))) = (pairing.upgrade(), opening) else {
        return;
    };
    let (to_facade, from_client) = mpsc::channel::<String>(FROM_CLIENT);
    let (to_client, mut from_facade) = outbox::outbox();
    let conn = p.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed) | CONN_BIT;
    tokio::spawn(facade(p, token, conn, from_client, to_client));
    let (mut out, mut inbox) = socket.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if heard.elapsed() > SILENCE {
                    break;
                }
                let sent = tokio::time::timeout(
                    WRITE_DEADLINE,
                    out.send(Message::Ping(Vec::new().into())),
                )
                .await;
                if !matches!(sent, Ok(Ok(()))) {
                    break;
                }
            }
            next = from_facade.recv() => {
                let Some(next) = next else { break };
                let sent = tokio::time::timeout(
                    WRITE_DEADLINE,
                    out.send(Message::Text(next.line.into())),
                )
                .await;
                if !matches!(sent, Ok(Ok(()))) {
                    // It stopped reading (or went away): let go; its facade ends with it.
                    break;
                }
            }
            msg = inbox.next() => {
                if matches!(msg, Some(Ok(_))) {
                    heard = tokio::time::Instant::now();
                }
                match msg {
                    Some(Ok(Message::Text(text))) => {
                        if to_facade.send(text.to_string()).await.is_err() {
                            break;
                        }
                    }
                    // Not text: what JSON-RPC answers unparsable input with.
                    Some(Ok(Message::Binary(_))) => {
                        if to_facade.send(String::new()).await.is_err() {
                            break;
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                }
            }
        }
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), out.close()).await;
}

/// A connection's component: the facade's lines, in and out.
type Component = agent_client_protocol::Lines<
    std::pin::Pin<Box<dyn futures::Sink<String, Error = std::io::Error> + Send>>,
    std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>,
>;

/// What opens a streamable-HTTP connection: its token, its window, its place.
struct Opening {
    token: Token,
    window: Arc<Window>,
    seat: Mutex<Option<Seat>>,
}

/// The facade of one streamable-HTTP connection (none: a connection nobody may use,
/// which ends at once), as the transport's component: its lines go to the transport
/// through the connection's [`Window`], what the client sends is counted off as read.
fn component(pairing: &Weak<Pairing>, opening: Option<&Opening>) -> Component {
    let (to_facade, from_client) = mpsc::channel::<String>(FROM_CLIENT);
    let (to_client, from_facade) = outbox::outbox();
    let window = opening.map_or_else(Arc::default, |o| o.window.clone());
    let seat = opening.and_then(|o| o.seat.lock().unwrap_or_else(|e| e.into_inner()).take());
    if let (Some(p), Some(o), Some(seat)) = (pairing.upgrade(), opening, seat) {
        let conn = p.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed) | CONN_BIT;
        let token = o.token.clone();
        tokio::spawn(async move {
            facade(p, token, conn, from_client, to_client).await;
            drop(seat);
        });
    }
    let sink = futures::sink::unfold(
        (to_facade, window.clone()),
        |(tx, window), line: String| async move {
            window.received(line.len());
            tx.send(line)
                .await
                .map_err(|_| std::io::Error::other("the facade is gone"))?;
            Ok::<_, std::io::Error>((tx, window))
        },
    );
    let stream = futures::stream::unfold((from_facade, window), |(mut rx, window)| async move {
        // Ended from outside (abandoned): the connection goes, and its facade with it.
        let next = tokio::select! {
            next = rx.recv() => next,
            () = window.ended() => None,
        };
        let admitted = match &next {
            Some(out) => window.admit(out.line.len()).await,
            None => false,
        };
        if !admitted {
            // The facade ended, or the client left the window full: the connection ends.
            window.close();
            return None;
        }
        next.map(|out| (Ok(out.line), (rx, window)))
    });
    agent_client_protocol::Lines::new(Box::pin(sink), Box::pin(stream))
}

/// The transport's router on `/acp` over `factory`'s components.
fn acp_router<F, C>(factory: F) -> axum::Router
where
    F: Fn() -> C + Send + Sync + 'static,
    C: agent_client_protocol::ConnectTo<agent_client_protocol::Client>,
{
    agent_client_protocol_http::AcpHttpServer::new(factory)
        .with_options(
            agent_client_protocol_http::ServerOptions::default()
                .with_path("/acp")
                .with_health_endpoint(false),
        )
        .into_router()
}

tokio::task_local! {
    /// What may open a streamable-HTTP connection (the `POST` of its `initialize`).
    static PRESENTED: Opening;
}

/// The listener's streamable-HTTP side: its one router, and each connection's token and
/// window.
#[derive(Debug, Default)]
pub(in crate::listen) struct Streamable {
    router: std::sync::OnceLock<axum::Router>,
    owners: super::bounds::Owners,
}

/// Ends the streamable-HTTP connections their clients left (see [`Window::abandoned`]),
/// for as long as the listener lives.
async fn sweep(pairing: Weak<Pairing>) {
    super::bounds::sweep(pairing, |p| &p.streamable.owners).await;
}

/// A JSON-RPC error answered over HTTP (a message that cannot be one), as `400`.
fn rpc_refusal(code: i64, message: &str) -> hyper::Response<axum::body::Body> {
    let mut r = hyper::Response::new(axum::body::Body::from(super::error(
        &serde_json::Value::Null,
        code,
        message,
    )));
    *r.status_mut() = hyper::StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// The body of a `POST`: one JSON-RPC message (an object), read within [`BODY_WAIT`] and
/// [`MESSAGE_LIMIT`]; else the answer that says why.
pub(in crate::listen) async fn message(
    body: hyper::body::Incoming,
) -> Result<hyper::body::Bytes, hyper::Response<axum::body::Body>> {
    use http_body_util::BodyExt;
    let read = tokio::time::timeout(
        BODY_WAIT,
        http_body_util::Limited::new(body, MESSAGE_LIMIT).collect(),
    )
    .await;
    let bytes = match read {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => {
            return Err(fail(
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                &format!("a message is at most {} MiB", MESSAGE_LIMIT >> 20),
            )
            .answer()
            .map(axum::body::Body::new));
        }
        Err(_) => {
            return Err(fail(
                hyper::StatusCode::REQUEST_TIMEOUT,
                "slow",
                "the request took too long",
            )
            .answer()
            .map(axum::body::Body::new));
        }
    };
    check_message(&bytes).map_err(|(code, why)| rpc_refusal(code, &why))?;
    Ok(bytes)
}

/// Whether `bytes` are one JSON-RPC message: the error code and message that say why not.
pub fn check_message(bytes: &[u8]) -> Result<(), (i64, String)> {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) if v.is_object() => Ok(()),
        Ok(v) if v.is_array() => Err((INVALID_REQUEST, "batches are not supported".into())),
        Ok(_) => Err((INVALID_REQUEST, "not a JSON-RPC request".into())),
        Err(e) => Err((PARSE_ERROR, format!("not JSON: {e}"))),
    }
}

/// A streamable-HTTP request (`POST`, `GET` of a stream, `DELETE`) on `/acp`.
async fn streamable(
    p: &Arc<Pairing>,
    token: Token,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<axum::body::Body>, Problem> {
    use tower::ServiceExt;
    let router = p
        .streamable
        .router
        .get_or_init(|| {
            tokio::spawn(sweep(Arc::downgrade(p)));
            let pairing = Arc::downgrade(p);
            acp_router(move || {
                let opening = PRESENTED.try_with(|o| component(&pairing, Some(o)));
                opening.unwrap_or_else(|_| component(&pairing, None))
            })
        })
        .clone();
    let conn = req
        .headers()
        .get("acp-connection-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let owners = &p.streamable.owners;
    let window = match &conn {
        Some(c) => {
            if let Some((_, w)) = owners.lock().unwrap_or_else(|e| e.into_inner()).get(c) {
                w.touch();
            }
            let owner = owners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(c)
                .cloned();
            match owner {
                Some((id, _)) if id != token.id => {
                    return Err(fail(
                        hyper::StatusCode::FORBIDDEN,
                        "connection",
                        "this connection is not this token's",
                    ));
                }
                Some((_, window)) if !window.is_closed() => Some(window),
                _ => {
                    owners.lock().unwrap_or_else(|e| e.into_inner()).remove(c);
                    return Err(fail(
                        hyper::StatusCode::NOT_FOUND,
                        "connection",
                        "no such connection (it ended, or was let go for not reading)",
                    ));
                }
            }
        }
        None => None,
    };
    let deleting = req.method() == hyper::Method::DELETE;
    let posting = req.method() == hyper::Method::POST;
    let (parts, body) = req.into_parts();
    // A body announced too large is refused before a byte of it is read.
    let announced = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if posting && announced.is_some_and(|n| n > MESSAGE_LIMIT as u64) {
        return Err(fail(
            hyper::StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            &format!("a message is at most {} MiB", MESSAGE_LIMIT >> 20),
        ));
    }
    let (body, sent) = if posting {
        match message(body).await {
            Ok(bytes) => (axum::body::Body::from(bytes.clone()), bytes.len()),
            Err(refused) => return Ok(refused),
        }
    } else {
        (axum::body::Body::new(body), 0)
    };
    let req = hyper::Request::from_parts(parts, body);
    let failed = || {
        fail(
            hyper::StatusCode::INTERNAL_SERVER_ERROR,
            "acp",
            "the ACP endpoint failed",
        )
    };
    let id = token.id.clone();
    let response = match window {
        Some(window) => {
            if sent > 0 && !window.receive(sent) {
                return Err(fail(
                    hyper::StatusCode::TOO_MANY_REQUESTS,
                    "slow_down",
                    "too much sent that the session has not read yet: wait for answers",
                ));
            }
            let response = router.oneshot(req).await.map_err(|_| failed())?;
            if sent > 0 && response.status() != hyper::StatusCode::ACCEPTED {
                // Refused by the transport: it never reaches the facade.
                window.received(sent);
            }
            response.map(|b| counted(b, window))
        }
        None if posting => {
            // A connection may open: it takes a place of its own.
            let opening = Opening {
                window: Arc::default(),
                seat: Mutex::new(Some(seat(p, &token)?)),
                token,
            };
            let window = opening.window.clone();
            window.receive(sent);
            let response = PRESENTED
                .scope(opening, router.oneshot(req))
                .await
                .map_err(|_| failed())?;
            if let Some(opened) = response
                .headers()
                .get("acp-connection-id")
                .and_then(|v| v.to_str().ok())
            {
                let mut owned = owners.lock().unwrap_or_else(|e| e.into_inner());
                // Connections whose facade ended are forgotten on the way.
                owned.retain(|_, (_, w)| !w.is_closed());
                owned.insert(opened.to_string(), (id, window.clone()));
            }
            response.map(|b| counted(b, window))
        }
        None => router.oneshot(req).await.map_err(|_| failed())?,
    };
    if let (Some(c), true) = (&conn, deleting) {
        owners.lock().unwrap_or_else(|e| e.into_inner()).remove(c);
    }
    Ok(response)
}
