//! An agent that runs elsewhere, dialed over streamable HTTP (`http://`, `https://`): the
//! transport of the ACP SDK's HTTP server (and of `trellis agent serve`).
//!
//! - `initialize` is `POST`ed alone; its answer is the response's body, and the response
//!   names the connection (`Acp-Connection-Id`).
//! - Every later message is a `POST` naming the connection, and its session
//!   (`Acp-Session-Id`) when it has one; the server answers `202`.
//! - What the agent sends comes on server-sent-event streams (`GET`): one for the
//!   connection, one per session — opened when a message names the session, or when
//!   `session/new` or `session/fork` is answered with it.
//! - Closing is a `DELETE` of the connection.
//!
//! As over WebSocket, the events become lines on the pipe a local agent's stdout would be
//! (one path for the log, backpressure and oversized lines), and every wait is bounded:
//! each connect and TLS handshake, `initialize` (the agent's setup timeout), each other
//! `POST`, the head of each stream, the size of each event. The streams carry no pings:
//! a server gone without closing its TCP connections is noticed when a `POST` fails.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Bytes;
use tokio::io::AsyncWriteExt;

use crate::remote::{Link, MESSAGE_LIMIT, RemoteSpec, Target, lose, one_line, refusal_hint};

mod events;
use events::stream;

/// How long one `POST` (but `initialize`'s) may take before the connection is taken as
/// lost.
const POST_WAIT: Duration = Duration::from_secs(30);
/// Batches of events on their way to the pipe.
const BATCHES: usize = 64;
/// Messages to the agent waiting for their `POST`.
const OUTGOING: usize = 64;

type Body = http_body_util::Full<Bytes>;
type Sender = hyper::client::conn::http1::SendRequest<Body>;

/// A byte stream to the server: TCP, or TLS over it.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// What the parts of one connection share.
struct Shared {
    spec: RemoteSpec,
    target: Target,
    /// The URL's path (and query) and `host[:port]`, for each request.
    path: String,
    authority: String,
    /// How long a connect (and TLS handshake) may take.
    wait: Duration,
    /// The connection's id, once `initialize` is answered.
    id: Mutex<Option<String>>,
    /// Sessions whose stream is open (or opening).
    sessions: Mutex<HashSet<String>>,
    /// Ids (as JSON) of `session/new` and `session/fork` requests not answered yet.
    opening: Mutex<HashSet<String>>,
    /// Batches of lines for the pipe.
    lines: tokio::sync::mpsc::Sender<Vec<u8>>,
    lost: Arc<Mutex<Option<String>>>,
    over: AtomicBool,
    ended: tokio::sync::Notify,
    streams: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Shared {
    fn shown(&self) -> &str {
        &self.target.shown
    }

    /// The connection is over (lost, or closed by Trellis): the pipe closes.
    fn end(&self) {
        self.over.store(true, Ordering::Release);
        self.ended.notify_waiters();
        self.ended.notify_one();
    }

    fn lose(&self, why: String) {
        lose(&self.lost, why);
        self.end();
    }

    /// A request to the URL's path with the configured headers (values kept sensitive).
    fn request(&self, method: hyper::Method) -> Result<hyper::http::request::Builder, String> {
        let mut b = hyper::Request::builder()
            .method(method)
            .uri(self.path.as_str())
            .header(hyper::header::HOST, self.authority.as_str());
        for (n, v) in crate::remote::headers(&self.spec)? {
            b = b.header(n, v);
        }
        if let Some(id) = self.id.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
            b = b.header("acp-connection-id", id);
        }
        Ok(b)
    }

    /// A new HTTP/1.1 connection to the server (its task runs it).
    async fn open(&self) -> Result<Sender, String> {
        let shown = self.shown();
        let tcp = tokio::time::timeout(
            self.wait,
            tokio::net::TcpStream::connect((self.target.host.as_str(), self.target.port)),
        )
        .await
        .map_err(|_| format!("{shown}: no answer within {} s", self.wait.as_secs_f32()))?
        .map_err(|e| format!("cannot reach {shown}: {e}"))?;
        if !self.target.tls
            && !self.spec.plaintext
            && tcp.peer_addr().is_ok_and(|a| !a.ip().is_loopback())
        {
            return Err(format!(
                "{shown} is not on this machine: plain http:// is refused there (see plaintext)"
            ));
        }
        let _ = tcp.set_nodelay(true);
        // A stream of events can be silent for as long as the agent thinks: a host gone
        // is noticed by the probes, not by the next message.
        let _ = trellis_os::net::keepalive(&tcp);
        let io: Box<dyn Io> = if self.target.tls {
            Box::new(
                crate::tls::connect(
                    (&self.target.host, shown),
                    &self.spec.ca,
                    tcp,
                    self.wait,
                    &[b"http/1.1"],
                )
                .await?,
            )
        } else {
            Box::new(tcp)
        };
        let (sender, conn) =
            hyper::client::conn::http1::handshake::<_, Body>(hyper_util::rt::TokioIo::new(io))
                .await
                .map_err(|e| format!("{shown}: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

/// Dials the agent at `spec` (an `http://` or `https://` URL): the pipe its messages are
/// written to as lines, and the link.
pub(crate) async fn dial(
    spec: &RemoteSpec,
    target: Target,
    setup: Duration,
    wait: Duration,
) -> Result<(std::fs::File, Link), String> {
    let uri: hyper::Uri = spec
        .url
        .parse()
        .map_err(|e| format!("{}: not a URL ({e})", target.shown))?;
    let path = uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let authority = uri
        .authority()
        .map(|a| a.as_str().rsplit('@').next().unwrap_or("").to_string())
        .unwrap_or_default();
    let (tx, file) = crate::remote::pipe()?;
    let (lines_tx, lines_rx) = tokio::sync::mpsc::channel(BATCHES);
    let lost: Arc<Mutex<Option<String>>> = Arc::default();
    let shared = Arc::new(Shared {
        spec: spec.clone(),
        target,
        path,
        authority,
        wait,
        id: Mutex::new(None),
        sessions: Mutex::default(),
        opening: Mutex::default(),
        lines: lines_tx,
        lost: lost.clone(),
        over: AtomicBool::new(false),
        ended: tokio::sync::Notify::new(),
        streams: Mutex::default(),
    });
    // The first connection now: an address nobody answers, or a certificate refused, is
    // said before anything is sent.
    let poster = shared.open().await?;
    let (out_tx, out_rx) = tokio::sync::mpsc::channel::<String>(OUTGOING);
    let reader = tokio::spawn(to_pipe(shared.clone(), lines_rx, tx));
    let writer = tokio::spawn(post_all(shared, poster, out_rx, setup));
    Ok((
        file,
        Link {
            out: Some(out_tx),
            reader,
            writer,
            lost,
        },
    ))
}

/// The events' lines into the pipe the transport reads, until the connection is over;
/// then its streams go, and the pipe closes.
async fn to_pipe(
    shared: Arc<Shared>,
    mut lines: tokio::sync::mpsc::Receiver<Vec<u8>>,
    mut pipe: tokio::net::unix::pipe::Sender,
) {
    loop {
        let ended = shared.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if shared.over.load(Ordering::Acquire) {
            break;
        }
        tokio::select! {
            batch = lines.recv() => {
                let Some(batch) = batch else { break };
                if pipe.write_all(&batch).await.is_err() {
                    // The transport reads no further (the session is over).
                    break;
                }
            }
            () = &mut ended => break,
        }
    }
    // What already came is the transport's still.
    while let Ok(batch) = lines.try_recv() {
        if pipe.write_all(&batch).await.is_err() {
            break;
        }
    }
    for s in shared
        .streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain(..)
    {
        s.abort();
    }
}

/// What Trellis sends, each message one `POST`; `initialize` first, its answer the
/// connection's first line. The channel closing (the session's end) deletes the
/// connection.
async fn post_all(
    shared: Arc<Shared>,
    mut poster: Sender,
    mut out: tokio::sync::mpsc::Receiver<String>,
    setup: Duration,
) {
    loop {
        let line = tokio::select! {
            line = out.recv() => line,
            () = shared.ended.notified() => return,
        };
        let Some(line) = line else {
            delete(&shared, &mut poster).await;
            shared.end();
            return;
        };
        if shared.over.load(Ordering::Acquire) {
            return;
        }
        if poster.is_closed() {
            // The server closed the idle connection: another one.
            match shared.open().await {
                Ok(p) => poster = p,
                Err(why) => return shared.lose(why),
            }
        }
        let first = shared
            .id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none();
        let sent = if first {
            initialize(&shared, &mut poster, line, setup).await
        } else {
            post(&shared, &mut poster, line).await
        };
        if let Err(why) = sent {
            return shared.lose(why);
        }
    }
}

/// What a message says about where it goes: its method, id and session.
#[derive(serde::Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    method: Option<&'a str>,
    id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    params: Option<PeekParams<'a>>,
    #[serde(borrow)]
    result: Option<PeekParams<'a>>,
}

#[derive(serde::Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<std::borrow::Cow<'a, str>>,
}

/// Sends `req` on `poster` within `wait`: the response's status, headers and body (at
/// most [`MESSAGE_LIMIT`]).
async fn exchange(
    shared: &Shared,
    poster: &mut Sender,
    req: hyper::Request<Body>,
    wait: Duration,
) -> Result<(hyper::StatusCode, hyper::HeaderMap, Bytes), String> {
    let shown = shared.shown();
    let go = async {
        poster
            .ready()
            .await
            .map_err(|e| format!("the connection to {shown} was lost: {e}"))?;
        let resp = poster.send_request(req).await.map_err(|e| {
            if e.to_string().contains("invalid HTTP version") {
                format!(
                    "{shown}: it did not answer in plain HTTP (does it serve TLS there? then dial https://)"
                )
            } else {
                format!("the connection to {shown} was lost: {e}")
            }
        })?;
        let (parts, body) = resp.into_parts();
        let body = http_body_util::Limited::new(body, MESSAGE_LIMIT)
            .collect()
            .await
            .map_err(|e| format!("{shown} sent an answer too large to take or broken: {e}"))?
            .to_bytes();
        Ok((parts.status, parts.headers, body))
    };
    tokio::time::timeout(wait, go).await.map_err(|_| {
        format!(
            "{shown} did not answer a request within {} s: the connection is taken as lost",
            wait.as_secs()
        )
    })?
}

/// A refusal of the server's in words: its status, what it said (one line, bounded),
/// else a hint.
fn refused(shared: &Shared, status: hyper::StatusCode, body: &[u8]) -> String {
    shared
        .spec
        .refused
        .store(status.as_u16(), std::sync::atomic::Ordering::Relaxed);
    let shown = shared.shown();
    let said = one_line(&String::from_utf8_lossy(&body[..body.len().min(300)]))
        .trim()
        .to_string();
    format!(
        "{shown} refused the connection: {status}{}",
        refusal_hint(&said, status.as_u16(), &shared.spec)
    )
}

/// `initialize`, answered in the response (within the agent's setup timeout): the
/// answer becomes the first line, and the connection's stream opens.
async fn initialize(
    shared: &Arc<Shared>,
    poster: &mut Sender,
    line: String,
    setup: Duration,
) -> Result<(), String> {
    let req = shared
        .request(hyper::Method::POST)?
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json")
        .body(Body::new(Bytes::from(line)))
        .map_err(|e| e.to_string())?;
    let (status, headers, body) = exchange(shared, poster, req, setup).await?;
    if !status.is_success() {
        return Err(refused(shared, status, &body));
    }
    let id = headers
        .get("acp-connection-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 200)
        .map(str::to_string);
    let mut first = body.to_vec();
    flatten(&mut first, 0);
    first.push(b'\n');
    let _ = shared.lines.send(first).await;
    let Some(id) = id else {
        // An answer that refuses the connection (an error) names none: it ends here.
        return Err(format!(
            "{} answered initialize without naming a connection",
            shared.shown()
        ));
    };
    *shared.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
    stream(shared, None);
    Ok(())
}

/// One message after `initialize`: `POST`ed with its session; a session not heard of
/// gets its stream first, a `session/new` or `session/fork` is watched for its answer.
async fn post(shared: &Arc<Shared>, poster: &mut Sender, line: String) -> Result<(), String> {
    let peek = serde_json::from_str::<Peek<'_>>(&line).ok();
    let session = peek
        .as_ref()
        .filter(|p| p.method.is_some())
        .and_then(|p| p.params.as_ref())
        .and_then(|p| p.session_id.as_deref())
        .map(str::to_string);
    if let Some(p) = &peek
        && let (Some("session/new" | "session/fork"), Some(id)) = (p.method, p.id)
    {
        shared
            .opening
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.get().to_string());
    }
    let mut req = shared
        .request(hyper::Method::POST)?
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json");
    if let Some(s) = &session {
        let v = hyper::header::HeaderValue::from_str(s)
            .map_err(|_| "a session id that cannot go in a header".to_string())?;
        req = req.header("acp-session-id", v);
        stream(shared, Some(s.clone()));
    }
    let req = req
        .body(Body::new(Bytes::from(line)))
        .map_err(|e| e.to_string())?;
    let (status, _, body) = exchange(shared, poster, req, POST_WAIT).await?;
    if status.is_success() {
        return Ok(());
    }
    let said = one_line(&String::from_utf8_lossy(&body[..body.len().min(300)]));
    Err(format!(
        "{} refused a message: {status}{}",
        shared.shown(),
        if said.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", said.trim())
        }
    ))
}

/// Ends the connection on the server (bounded; whatever it answers).
async fn delete(shared: &Shared, poster: &mut Sender) {
    if shared
        .id
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_none()
    {
        return;
    }
    let Ok(req) = shared
        .request(hyper::Method::DELETE)
        .and_then(|b| b.body(Body::default()).map_err(|e| e.to_string()))
    else {
        return;
    };
    let _ = exchange(shared, poster, req, Duration::from_secs(2)).await;
}

/// Line breaks in a message (only whitespace between JSON tokens, when it is valid)
/// become spaces from `from` on, so it stays one line.
fn flatten(buf: &mut [u8], from: usize) {
    let mut i = from;
    while let Some(j) = memchr::memchr2(b'\n', b'\r', &buf[i..]) {
        buf[i + j] = b' ';
        i += j + 1;
    }
}
