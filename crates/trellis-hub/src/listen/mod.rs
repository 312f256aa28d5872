//! The hub's loopback listener (`trellis serve --listen 127.0.0.1:PORT`): a small
//! approvals page and the JSON calls it makes (`api`), for a phone or a browser reaching
//! the machine through `ssh -L` or a tunnel the user runs, and ACP for any ACP client
//! (`acp`). It binds loopback addresses only; every call is carried to the hub's loop
//! exactly as a socket request is (the same exactly-once answers, the same operation ids).
//!
//! Who it answers (`guard`): requests naming a loopback host (or one the user allowed:
//! `--allow-host`), with a bearer token in the `Authorization` header and nowhere else,
//! checked against the token store on every call, scopes per call, failures counted per
//! credential. A phone gets its token by pairing: `trellis pair` asks the hub for a
//! single-use code (five minutes), shown as a QR code of the page's address with the code
//! in its fragment (never sent in a request line); the page exchanges it for an `approve`
//! token. Connections are bounded ([`crate::slots`]): an idle one makes room for a
//! newcomer.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use tokio::sync::mpsc;

pub(crate) mod acp;
mod api;
mod body;
mod guard;

use crate::call::Call;
use crate::tokens::Store;
use api::{Problem, fail};

pub use acp::check_message;
pub use guard::{host_name, valid_host_name};

/// Connections served at once.
const CONNECTIONS: usize = 32;
/// How long a newcomer waits for a place when every connection is at work.
const ADMIT_WAIT: Duration = Duration::from_secs(5);
/// Longest request body.
const BODY_LIMIT: usize = 64 * 1024;
/// How long a client has to send its request (and an idle connection may stay).
const READ_WAIT: Duration = Duration::from_secs(10);
/// How long the hub's loop has to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(30);
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
    failures: guard::Failures,
    /// Host names answered besides loopback ones (`--allow-host`).
    hosts: Vec<String>,
    next_id: std::sync::atomic::AtomicU64,
    /// The ACP clients attached to sessions (`/acp`).
    acp: acp::Attached,
    /// ACP over streamable HTTP: its router and its connections' tokens.
    streamable: acp::Streamable,
    /// The ACP connections held, by token.
    seats: acp::Seats,
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
/// the hub's loop through `calls`. `hosts`: names answered besides loopback ones (valid
/// DNS names, see [`valid_host_name`]).
pub fn listen(
    addr: SocketAddr,
    store: Store,
    hosts: Vec<String>,
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
    if let Some(bad) = hosts.iter().find(|h| !valid_host_name(h)) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{}: not a host name (letters, digits, - and .)",
                trellis_text::one_line(bad)
            ),
        ));
    }
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{addr}: {}", bind_failed(&e))))?;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let addr = listener.local_addr()?;
    let pairing = Arc::new(Pairing {
        store,
        calls,
        addr,
        codes: Mutex::new(Vec::new()),
        failures: guard::Failures::default(),
        hosts: hosts.iter().filter_map(|h| host_name(h)).collect(),
        next_id: std::sync::atomic::AtomicU64::new(1),
        acp: acp::Attached::default(),
        streamable: acp::Streamable::default(),
        seats: acp::Seats::default(),
    });
    let task = tokio::spawn(accept(listener, pairing.clone()));
    Ok(Listening {
        addr,
        pairing,
        task,
    })
}

/// What a newcomer is told when every connection is at work.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 38\r\nretry-after: 5\r\nconnection: close\r\n\r\nevery connection of the hub is at work";

async fn accept(listener: tokio::net::TcpListener, p: Arc<Pairing>) {
    // Every client of a loopback listener has the same address: one peer.
    let slots = crate::slots::Slots::new(CONNECTIONS, CONNECTIONS);
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors, most likely: never a busy loop.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // A phone that left without closing frees its slot within a minute.
        let _ = trellis_os::net::keepalive(&stream);
        let p = p.clone();
        let slots = slots.clone();
        tokio::spawn(async move {
            let Some(slot) = slots.admit(0, ADMIT_WAIT).await else {
                use tokio::io::AsyncWriteExt;
                let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(FULL)).await;
                return;
            };
            let slot = Arc::new(slot);
            let working = slot.clone();
            let service = hyper::service::service_fn(move |req| {
                let p = p.clone();
                // At work until its answer's body is written (a stream's, for as long as
                // it lasts).
                let busy = working.busy();
                async move { Ok::<_, Infallible>(serve(&p, req).await.map(|b| held(b, busy))) }
            });
            // Upgrades: an ACP client's WebSocket (`/acp`).
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(READ_WAIT)
                // A client that says it is done sending still gets its answer.
                .half_close(true)
                .keep_alive(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = slot.kicked() => {
                    // Its place is wanted. Between requests, or still sending a request
                    // head (nothing of it answered yet): closed at once. A request that
                    // began meanwhile is answered first.
                    if slot.working() {
                        conn.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(READ_WAIT, conn).await;
                    }
                }
            }
        });
    }
}

/// One request: to a name this listener answers, then `/acp` or the page.
async fn serve(
    p: &Arc<Pairing>,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<axum::body::Body> {
    if let Err(refused) = guard::host_allowed(&req, &p.hosts) {
        return refused.answer().map(axum::body::Body::new);
    }
    acp::route(p, req).await
}

/// `body`, holding `busy` until it is written (or dropped).
fn held(body: axum::body::Body, busy: crate::slots::Busy) -> axum::body::Body {
    body::Watched::body(body, move |_| {
        let _working = &busy;
    })
}

/// Why a listener's address could not be taken, with what to do when it is taken.
pub fn bind_failed(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            format!(
                "{e}: another server listens there; give another port, or port 0 for a free one"
            )
        }
        _ => e.to_string(),
    }
}
