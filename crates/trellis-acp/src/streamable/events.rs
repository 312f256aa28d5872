//! The server-sent-event streams of one connection: the connection's own, and one per
//! session, each read until it ends into batches for the pipe; an answer to `session/new`
//! or `session/fork` on them opens the stream of the session it names.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::FutureExt;
use http_body_util::BodyExt;

use super::{Body, Peek, Shared, refused};

/// Opens the stream of `session` (none: the connection's), unless it is open.
pub(super) fn stream(shared: &Arc<Shared>, session: Option<String>) {
    if let Some(s) = &session
        && !shared
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(s.clone())
    {
        return;
    }
    let task = tokio::spawn({
        let shared = shared.clone();
        async move {
            let why = events(&shared, session.as_deref()).await;
            if !shared.over.load(Ordering::Acquire) {
                shared.lose(why);
            }
        }
    });
    shared
        .streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(task);
}

/// Reads one stream of events until it ends: why it did.
async fn events(shared: &Arc<Shared>, session: Option<&str>) -> String {
    let shown = shared.shown().to_string();
    let mut sender = match shared.open().await {
        Ok(s) => s,
        Err(why) => return why,
    };
    let mut req = match shared.request(hyper::Method::GET) {
        Ok(r) => r.header(hyper::header::ACCEPT, "text/event-stream"),
        Err(why) => return why,
    };
    if let Some(s) = session {
        match hyper::header::HeaderValue::from_str(s) {
            Ok(v) => req = req.header("acp-session-id", v),
            Err(_) => return "a session id that cannot go in a header".into(),
        }
    }
    let Ok(req) = req.body(Body::default()) else {
        return "a request that cannot be made".into();
    };
    let head = async {
        sender.ready().await?;
        sender.send_request(req).await
    };
    let resp = match tokio::time::timeout(shared.wait, head).await {
        Err(_) => {
            return format!(
                "{shown} did not open a stream within {} s",
                shared.wait.as_secs()
            );
        }
        Ok(Err(e)) => return format!("the connection to {shown} was lost: {e}"),
        Ok(Ok(r)) => r,
    };
    if !resp.status().is_success() {
        let status = resp.status();
        let body = http_body_util::Limited::new(resp.into_body(), 4096)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return refused(shared, status, &body);
    }
    let mut body = resp.into_body();
    let mut sse = crate::sse::Sse::default();
    loop {
        // The frames that have already arrived go to the pipe together (a write per
        // event cost more than the rest of the path).
        let mut batch = Vec::new();
        let mut end = None;
        let mut next = Some(body.frame().await);
        while let Some(frame) = next.take() {
            match frame {
                None => {
                    end = Some(format!("{shown} ended the connection"));
                    break;
                }
                Some(Err(e)) => {
                    end = Some(format!("the connection to {shown} was lost: {e}"));
                    break;
                }
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data()
                        && let Err(why) = sse.feed(&data, &mut batch)
                    {
                        return format!("{shown} {why}: the connection was closed");
                    }
                }
            }
            if batch.len() < GATHER {
                next = body.frame().now_or_never();
            }
        }
        if session.is_none() && !batch.is_empty() {
            opened_sessions(shared, &batch);
        }
        if !batch.is_empty() && shared.lines.send(batch).await.is_err() {
            return "the session is over".into();
        }
        if let Some(why) = end {
            return why;
        }
    }
}

/// How much of the events already arrived is gathered before one batch goes to the pipe.
const GATHER: usize = 256 << 10;

/// The connection's stream answers `session/new` and `session/fork`: the sessions they
/// name get their streams.
fn opened_sessions(shared: &Arc<Shared>, batch: &[u8]) {
    for line in batch.split(|&b| b == b'\n') {
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(line) else {
            continue;
        };
        let (None, Some(id), Some(result)) = (peek.method, peek.id, peek.result) else {
            continue;
        };
        let asked = shared
            .opening
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id.get());
        if let (true, Some(s)) = (asked, result.session_id) {
            stream(shared, Some(s.into_owned()));
        }
    }
}
