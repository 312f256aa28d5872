//! How an ACP client reaches its facade through the SDK's transport, whose one component
//! per connection is the facade (`Lines` over two channels). The transport's factory sees
//! no request, so the token a connection was opened with reaches it another way:
//!
//! - WebSocket: an authorised `/acp` upgrade gets a router made for that one request;
//! - streamable HTTP: one router for the listener; the `POST` that opens a connection
//!   (`initialize`) runs with its token in a task-local the factory reads, and every later
//!   request of that connection (`Acp-Connection-Id`) must come with the same token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;

use super::{CONN_BIT, TO_CLIENT, facade};
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
        return crate::listen::handle(p, req)
            .await
            .map(axum::body::Body::new);
    }
    let acp = async {
        let token = crate::listen::authorize(p, &req, Scope::Read)?;
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

/// Serves one WebSocket upgrade request with a facade of its own, for `token`.
async fn upgrade(
    p: &Arc<Pairing>,
    token: Token,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<axum::body::Body>, Problem> {
    use tower::ServiceExt;
    let pairing = Arc::downgrade(p);
    // The factory runs once, for this request's one connection.
    let parts = Mutex::new(Some(token));
    let factory = move || {
        let token = parts.lock().unwrap_or_else(|e| e.into_inner()).take();
        component(&pairing, token)
    };
    acp_router(factory)
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

/// A connection's component: the facade's lines, in and out.
type Component = agent_client_protocol::Lines<
    std::pin::Pin<Box<dyn futures::Sink<String, Error = std::io::Error> + Send>>,
    std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>,
>;

/// The facade of one connection, for `token` (none: a connection nobody may use, which
/// ends at once), as the transport's component.
fn component(pairing: &Weak<Pairing>, token: Option<Token>) -> Component {
    let (to_facade, from_client) = mpsc::unbounded_channel::<String>();
    let (to_client, from_facade) = mpsc::channel::<String>(TO_CLIENT);
    if let (Some(p), Some(token)) = (pairing.upgrade(), token) {
        let conn = p.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed) | CONN_BIT;
        tokio::spawn(facade(p, token, conn, from_client, to_client));
    }
    let sink = futures::sink::unfold(to_facade, |tx, line: String| async move {
        tx.send(line)
            .map_err(|_| std::io::Error::other("the facade is gone"))?;
        Ok::<_, std::io::Error>(tx)
    });
    let stream = futures::stream::unfold(from_facade, |mut rx| async move {
        rx.recv().await.map(|line| (Ok(line), rx))
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
    /// The token of the request that may open a streamable-HTTP connection.
    static PRESENTED: Token;
}

/// The listener's streamable-HTTP side: its one router, and which token each of its
/// connections belongs to.
#[derive(Debug, Default)]
pub(in crate::listen) struct Streamable {
    router: std::sync::OnceLock<axum::Router>,
    owners: Mutex<HashMap<String, String>>,
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
            let pairing = Arc::downgrade(p);
            acp_router(move || component(&pairing, PRESENTED.try_with(Token::clone).ok()))
        })
        .clone();
    let conn = req
        .headers()
        .get("acp-connection-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let owners = &p.streamable.owners;
    if let Some(c) = &conn {
        let owner = owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(c)
            .cloned();
        if owner.as_deref() != Some(token.id.as_str()) {
            p.failed();
            return Err(fail(
                hyper::StatusCode::FORBIDDEN,
                "connection",
                "this connection is not this token's",
            ));
        }
    }
    let deleting = req.method() == hyper::Method::DELETE;
    let id = token.id.clone();
    let failed = || {
        fail(
            hyper::StatusCode::INTERNAL_SERVER_ERROR,
            "acp",
            "the ACP endpoint failed",
        )
    };
    let response = PRESENTED
        .scope(token, router.oneshot(req.map(axum::body::Body::new)))
        .await
        .map_err(|_| failed())?;
    let mut owned = owners.lock().unwrap_or_else(|e| e.into_inner());
    match (&conn, deleting) {
        (Some(c), true) => {
            owned.remove(c);
        }
        (None, _) => {
            if let Some(opened) = response
                .headers()
                .get("acp-connection-id")
                .and_then(|v| v.to_str().ok())
            {
                owned.insert(opened.to_string(), id);
            }
        }
        _ => {}
    }
    Ok(response)
}
