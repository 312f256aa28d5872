//! How an ACP client's WebSocket reaches its facade: the listener hands an authorised
//! `/acp` upgrade to a router of the SDK's transport made for that one request, whose one
//! component is the facade (`Lines` over two channels).

use std::sync::{Arc, Mutex};

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
        if req.method() != hyper::Method::GET || !websocket {
            return Err(fail(
                hyper::StatusCode::METHOD_NOT_ALLOWED,
                "websocket_only",
                "ACP here is served over WebSocket (GET /acp with an upgrade)",
            ));
        }
        let token = crate::listen::authorize(p, &req, Scope::Read)?;
        upgrade(p, token, req).await
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
    let conn = p.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed) | CONN_BIT;
    let pairing = p.clone();
    // The factory runs once, for this request's one connection.
    let parts = Mutex::new(Some(token));
    let factory = move || {
        let token = parts.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (to_facade, from_client) = mpsc::unbounded_channel::<String>();
        let (to_client, from_facade) = mpsc::channel::<String>(TO_CLIENT);
        if let Some(token) = token {
            tokio::spawn(facade(pairing.clone(), token, conn, from_client, to_client));
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
    };
    let router = agent_client_protocol_http::AcpHttpServer::new(factory)
        .with_options(
            agent_client_protocol_http::ServerOptions::default()
                .with_path("/acp")
                .with_health_endpoint(false),
        )
        .into_router();
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
