//! A served agent over streamable HTTP, through the SDK's transport (the same as the
//! listener's `/acp`): the `POST` of `initialize` opens a connection and starts its agent;
//! later requests name it (`Acp-Connection-Id`) and must bring the same token; `GET`s
//! are its streams; `DELETE`, or a client gone for [`ABANDONED`], ends it and its agent.
//!
//! The transport queues what goes to a client without a bound, so the agent's lines
//! reach it through a [`Window`]: an agent that writes faster than its client reads
//! waits on its pipe, and a client that leaves the window full is let go.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::SinkExt;
use tokio::io::AsyncWriteExt;

use super::{Agent, MESSAGE_LIMIT, Server, as_line, read_line, refusal};
use crate::listen::acp::bounds::{Owners, Window, counted};

/// How long a client has to send a message's body.
const BODY_WAIT: Duration = Duration::from_secs(10);

/// The server's streamable-HTTP side: the transport's one router, and each connection's
/// token and window.
#[derive(Default)]
pub(super) struct Streamable {
    router: std::sync::OnceLock<axum::Router>,
    owners: Owners,
}

tokio::task_local! {
    /// What may open a connection (the `POST` of its `initialize`).
    static OPENING: Opening;
}

/// What opens a connection: its agent's place, its window, its agent, and its id once
/// the transport has named it.
struct Opening {
    server: Arc<Server>,
    window: Arc<Window>,
    id: Arc<std::sync::OnceLock<String>>,
    seat: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// Its agent, started before the request reached the transport (so a failure to
    /// start is said to the client in words); stopped if the transport takes no agent.
    started: Mutex<Option<Started>>,
}

/// An agent started for a connection: what stops it, its stdin and stdout.
struct Started {
    stopper: Arc<Stopper>,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
}

type Component = agent_client_protocol::Lines<
    Pin<Box<dyn futures::Sink<String, Error = std::io::Error> + Send>>,
    Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>,
>;

/// A component that ends at once (a connection nobody may use).
fn ended() -> Component {
    agent_client_protocol::Lines::new(
        Box::pin(futures::sink::drain().sink_map_err(|e| match e {})),
        Box::pin(futures::stream::empty()),
    )
}

/// Stops the agent when the last of its connection's halves goes.
struct Stopper {
    agent: Option<Agent>,
    say: Arc<dyn Fn(String) + Send + Sync>,
    from: (u64, SocketAddr),
}

impl Drop for Stopper {
    fn drop(&mut self) {
        let Some(agent) = self.agent.take() else {
            return;
        };
        let (conn, peer) = self.from;
        let say = self.say.clone();
        // Within the runtime (where the transport drops its components); else the agent
        // dies as its handle drops (and with this process).
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                agent.stop().await;
                say(format!("connection {conn} from {peer}: closed"));
            });
        }
    }
}

/// The agent of a new connection as the transport's component: its stdin takes the
/// client's messages as lines, its stdout's lines go to the client through the window.
fn component(opening: &Opening) -> Component {
    let server = &opening.server;
    let seat = opening
        .seat
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let started = opening
        .started
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let (
        Some(seat),
        Some(Started {
            stopper,
            stdin,
            stdout,
        }),
    ) = (seat, started)
    else {
        return ended();
    };
    let window = opening.window.clone();
    let ending = (Arc::downgrade(server), opening.id.clone());
    let sink = futures::sink::unfold(
        (stdin, window.clone(), stopper.clone()),
        |(mut stdin, window, stopper), line: String| async move {
            window.received(line.len());
            stdin.write_all(&as_line(line.as_bytes())).await?;
            Ok::<_, std::io::Error>((stdin, window, stopper))
        },
    );
    let reader = tokio::io::BufReader::with_capacity(1 << 16, stdout);
    let stream = futures::stream::unfold(
        (reader, window, stopper, seat, ending),
        |(mut reader, window, stopper, seat, ending)| async move {
            let mut buf = Vec::new();
            // Ended from outside (abandoned), or the agent's output ended.
            let read = tokio::select! {
                r = read_line(&mut reader, &mut buf) => matches!(r, Ok(true)),
                () = window.ended() => false,
            };
            if !read || !window.admit(buf.len()).await {
                window.close();
                tokio::spawn(end(ending.0, ending.1));
                return None;
            }
            let line = String::from_utf8(buf)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            Some((Ok(line), (reader, window, stopper, seat, ending)))
        },
    );
    agent_client_protocol::Lines::new(Box::pin(sink), Box::pin(stream))
}

/// The agent's side of connection `id` ended (its output, or a client that left): the
/// transport ends the connection too, so its streams end once what is queued on them is
/// sent, and the client learns it at once.
async fn end(server: Weak<Server>, id: Arc<std::sync::OnceLock<String>>) {
    use tower::ServiceExt;
    let (Some(server), Some(id)) = (server.upgrade(), id.get()) else {
        return;
    };
    server
        .streamable
        .owners
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(id);
    let Some(router) = server.streamable.router.get().cloned() else {
        return;
    };
    let Ok(req) = hyper::Request::delete("/acp")
        .header("acp-connection-id", id.as_str())
        .body(axum::body::Body::empty())
    else {
        return;
    };
    let _ = router.oneshot(req).await;
}

impl Streamable {
    /// The open connections: their token and window, by id.
    pub(super) fn owners(&self) -> &Owners {
        &self.owners
    }
}

/// Ends the connections their clients left (see [`Window::abandoned`]), for as long as
/// the server lives.
pub(super) async fn sweep(server: Weak<Server>) {
    crate::listen::acp::bounds::sweep(server, |s| &s.streamable.owners).await;
}

/// The agent of a connection opening from `from`, or why it could not start.
fn start(server: &Server, from: (u64, SocketAddr)) -> Result<Started, String> {
    let (n, peer) = from;
    match Agent::start(&server.opts, n) {
        Ok((agent, stdin, stdout)) => {
            (server.opts.say)(format!(
                "connection {n} from {peer}: agent started (pid {}, streamable HTTP)",
                agent.pid.unwrap_or(0)
            ));
            let stopper = Arc::new(Stopper {
                agent: Some(agent),
                say: server.opts.say.clone(),
                from,
            });
            Ok(Started {
                stopper,
                stdin,
                stdout,
            })
        }
        Err(why) => {
            (server.opts.say)(format!("connection {n} from {peer}: {why}"));
            Err(why)
        }
    }
}

/// Whether a `POST`'s body is an `initialize` request (what opens a connection).
fn initializing(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Peek<'_>>(body).is_ok_and(|p| p.method == Some("initialize"))
}

/// The body of a `POST`, read within [`BODY_WAIT`] and [`MESSAGE_LIMIT`]; else the
/// answer that says why.
async fn body(
    body: hyper::body::Incoming,
) -> Result<hyper::body::Bytes, hyper::Response<axum::body::Body>> {
    use http_body_util::BodyExt;
    let read = tokio::time::timeout(
        BODY_WAIT,
        http_body_util::Limited::new(body, MESSAGE_LIMIT).collect(),
    )
    .await;
    match read {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(_)) => Err(refusal(
            hyper::StatusCode::PAYLOAD_TOO_LARGE,
            "a message is at most 65 MiB",
        )),
        Err(_) => Err(refusal(
            hyper::StatusCode::REQUEST_TIMEOUT,
            "the request's body took too long",
        )),
    }
}

/// A streamable-HTTP request (`POST`, `GET` of a stream, `DELETE`) of token `token`.
pub(super) async fn request(
    server: &Arc<Server>,
    token: String,
    req: hyper::Request<hyper::body::Incoming>,
    from: (u64, SocketAddr),
) -> hyper::Response<axum::body::Body> {
    let r = answer(server, token, req, from).await;
    let status = r.status();
    if status.is_client_error() || status.is_server_error() {
        // Every refusal is said on the server too (the transport's own, by status).
        let (n, peer) = from;
        let why = r
            .extensions()
            .get::<super::Refused>()
            .map(|w| format!(": {}", w.0))
            .unwrap_or_default();
        (server.opts.say)(format!(
            "connection {n} from {peer}: refused: {status}{why}"
        ));
    }
    r
}

/// The window of connection `c`, if `token` opened it and it is open; else the answer
/// that says why not.
fn owned(
    server: &Server,
    c: &str,
    token: &str,
) -> Result<Arc<Window>, Box<hyper::Response<axum::body::Body>>> {
    let owners = &server.streamable.owners;
    let owner = owners
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(c)
        .cloned();
    match owner {
        Some((id, _)) if id != token => Err(Box::new(refusal(
            hyper::StatusCode::FORBIDDEN,
            "this connection was opened with another token",
        ))),
        Some((_, window)) if !window.is_closed() => {
            window.touch();
            Ok(window)
        }
        _ => {
            owners.lock().unwrap_or_else(|e| e.into_inner()).remove(c);
            Err(Box::new(refusal(
                hyper::StatusCode::NOT_FOUND,
                "no such connection (it ended, its agent ended, or it was let go for not reading)",
            )))
        }
    }
}

/// [`request`]'s answer.
async fn answer(
    server: &Arc<Server>,
    token: String,
    req: hyper::Request<hyper::body::Incoming>,
    from: (u64, SocketAddr),
) -> hyper::Response<axum::body::Body> {
    use tower::ServiceExt;
    let router = server
        .streamable
        .router
        .get_or_init(|| {
            agent_client_protocol_http::AcpHttpServer::new(|| {
                OPENING.try_with(component).unwrap_or_else(|_| ended())
            })
            .with_options(
                agent_client_protocol_http::ServerOptions::default()
                    .with_path("/acp")
                    .with_health_endpoint(false),
            )
            .into_router()
        })
        .clone();
    let conn = req
        .headers()
        .get("acp-connection-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let owners = &server.streamable.owners;
    let window = match &conn {
        Some(c) => match owned(server, c, &token) {
            Ok(window) => Some(window),
            Err(refused) => return *refused,
        },
        None => None,
    };
    let deleting = req.method() == hyper::Method::DELETE;
    let posting = req.method() == hyper::Method::POST;
    let (parts, incoming) = req.into_parts();
    let announced = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if posting && announced.is_some_and(|n| n > MESSAGE_LIMIT as u64) {
        return refusal(
            hyper::StatusCode::PAYLOAD_TOO_LARGE,
            "a message is at most 65 MiB",
        );
    }
    let mut body_bytes = hyper::body::Bytes::new();
    let (body, sent) = if posting {
        match body(incoming).await {
            Ok(bytes) => {
                let n = bytes.len();
                body_bytes = bytes.clone();
                (axum::body::Body::from(bytes), n)
            }
            Err(refused) => return refused,
        }
    } else {
        (axum::body::Body::new(incoming), 0)
    };
    let req = hyper::Request::from_parts(parts, body);
    let response = match window {
        Some(window) => {
            if sent > 0 && !window.receive(sent) {
                return refusal(
                    hyper::StatusCode::TOO_MANY_REQUESTS,
                    "too much sent that the agent has not read yet: wait for answers",
                );
            }
            let Ok(response) = router.oneshot(req).await;
            if sent > 0 && response.status() != hyper::StatusCode::ACCEPTED {
                // Refused by the transport: it never reaches the agent.
                window.received(sent);
            }
            response.map(|b| counted(b, window))
        }
        None if posting => {
            // A connection may open: its agent takes a place.
            let Ok(seat) = server.seats.clone().try_acquire_owned() else {
                return refusal(
                    hyper::StatusCode::SERVICE_UNAVAILABLE,
                    "every agent of this server is at work: try again later",
                );
            };
            // Its agent now, if it asks for one: a command that cannot start is said.
            let started = if initializing(&body_bytes) {
                match start(server, from) {
                    Ok(started) => Some(started),
                    Err(why) => return refusal(hyper::StatusCode::INTERNAL_SERVER_ERROR, &why),
                }
            } else {
                None
            };
            let id = Arc::new(std::sync::OnceLock::new());
            let opening = Opening {
                started: Mutex::new(started),
                server: server.clone(),
                window: Arc::default(),
                id: id.clone(),
                seat: Mutex::new(Some(seat)),
            };
            let window = opening.window.clone();
            window.receive(sent);
            let Ok(response) = OPENING.scope(opening, router.oneshot(req)).await;
            if let Some(opened) = response
                .headers()
                .get("acp-connection-id")
                .and_then(|v| v.to_str().ok())
            {
                let mut owned = owners.lock().unwrap_or_else(|e| e.into_inner());
                // Connections whose agent ended are forgotten on the way.
                owned.retain(|_, (_, w)| !w.is_closed());
                owned.insert(opened.to_string(), (token, window.clone()));
                let _ = id.set(opened.to_string());
                if window.is_closed() {
                    // Its agent ended before it was named.
                    tokio::spawn(end(Arc::downgrade(server), id));
                }
            }
            response.map(|b| counted(b, window))
        }
        None => {
            let Ok(response) = router.oneshot(req).await;
            response
        }
    };
    if let (Some(c), true) = (&conn, deleting) {
        owners.lock().unwrap_or_else(|e| e.into_inner()).remove(c);
    }
    response
}
