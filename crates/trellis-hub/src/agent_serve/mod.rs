//! `trellis agent serve`: any agent that speaks ACP on stdio, served over WebSocket and
//! streamable HTTP, one agent process per connection — for an agent in a devcontainer,
//! a VM or a sandbox, dialed from the machine the user sits at (`--agent ws://…` or
//! `http://…`, `[agents.X] url`).
//!
//! Who it answers: requests on `/acp` with a bearer token of scope `agent` in their
//! `Authorization` header (the token store of `trellis token`, checked at every request),
//! and no `Origin` (a web page's request). A WebSocket upgrade is one connection; over
//! streamable HTTP, the `POST` of `initialize` opens one, and every later request of it
//! (`Acp-Connection-Id`) must bring the same token. It binds loopback addresses unless
//! TLS is given (a certificate and key from files) or the user says a proxy or port
//! forward of theirs is what reaches it.
//!
//! Each connection's agent runs in a process group of its own and ends with the
//! connection (and with this process: Linux's parent-death signal, then the group stop
//! sequence). Every queue and wait is bounded: TCP connections at once, the handshake
//! and each request's head and body, each message to the client (one that stops reading
//! is let go), the lines of an agent that writes faster than its client reads, the
//! agents at once, a streamable-HTTP connection its client left.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::tokens::{Scope, Store};

mod http;
mod ws;

/// What `trellis agent serve` was asked.
pub struct Options {
    pub addr: SocketAddr,
    /// The agent's command line.
    pub command: Vec<String>,
    /// Where the agent runs (its working directory).
    pub cwd: PathBuf,
    pub store: Store,
    /// A certificate chain and key (PEM files): TLS on every connection.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// A proxy or port forward of the user's reaches this address (a non-loopback one
    /// without TLS).
    pub proxied: bool,
    /// Agents (connections) at once.
    pub max_agents: usize,
    /// Where what is worth saying goes (the terminal `serve` runs in): connections,
    /// refusals, each agent's stderr (one line each, made safe by the caller).
    pub say: Arc<dyn Fn(String) + Send + Sync>,
}

/// How long a client has for the TLS handshake, and for each request's head.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);
/// The longest message taken from a client, and line taken from the agent.
const MESSAGE_LIMIT: usize = (64 << 20) + (1 << 20);
/// Lines of an agent's stderr said per connection (the rest is counted).
const STDERR_LINES: usize = 200;
/// How long an agent has to end once its connection closed, before its group is stopped.
const GRACE: Duration = Duration::from_secs(1);
/// TCP connections at once that hold no agent yet (a handshake, a request's head).
const HANDSHAKES: usize = 64;
/// TCP connections at once per agent a client may hold: a WebSocket, or streamable
/// HTTP's requests and streams.
const PER_AGENT: usize = 4;

/// The listener while it runs.
pub struct Serving {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    server: Arc<Server>,
}

impl Serving {
    /// Runs until the task ends (never, unless the runtime stops).
    pub async fn wait(self) {
        let _ = self.task.await;
    }

    /// Stops serving: no new connection is taken, every client is told the server is
    /// stopping (a WebSocket's close, the end of a streamable-HTTP connection's streams
    /// once what its agent sent is delivered), and every agent is stopped. Waits at most
    /// `grace` for them; how many were still running then.
    pub async fn stop(self, grace: Duration) -> usize {
        self.task.abort();
        let _ = self.server.stopping.send(true);
        for (_, w) in self
            .server
            .streamable
            .owners()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            w.end();
        }
        let all = self.server.opts.max_agents.max(1);
        let seats = self.server.seats.clone();
        let (conns, open) = (
            self.server.connections.clone(),
            connections_for(self.server.opts.max_agents),
        );
        let _ = tokio::time::timeout(grace, async {
            while seats.available_permits() < all {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // Then the connections: a streamable-HTTP stream's end is written by its
            // connection's task, which the process's end would cut short (the client
            // saw its connection lost, not ended).
            while conns.available_permits() < open {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        all - seats.available_permits().min(all)
    }
}

/// What every connection of the server shares.
struct Server {
    opts: Options,
    /// One per agent running (a WebSocket's, or a streamable-HTTP connection's).
    seats: Arc<tokio::sync::Semaphore>,
    streamable: http::Streamable,
    /// Set when the server stops: every WebSocket is closed saying so.
    stopping: tokio::sync::watch::Sender<bool>,
    /// One per TCP connection open (see [`accept`]): a stop waits for them to be done, so
    /// that what each was told (a stream's end) is written before the process goes.
    connections: Arc<tokio::sync::Semaphore>,
}

/// The TCP connections a server takes at once.
fn connections_for(max_agents: usize) -> usize {
    HANDSHAKES + PER_AGENT * max_agents.max(1)
}

/// Checks what `opts` asks for and binds its address; the agents are served within the
/// runtime.
pub fn serve(opts: Options) -> Result<Serving, String> {
    if opts.command.is_empty() {
        return Err("no agent to serve: give its command after --".into());
    }
    let tls = match &opts.tls {
        Some((cert, key)) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(server_config(
            cert, key,
        )?))),
        None => None,
    };
    if !opts.addr.ip().is_loopback() && tls.is_none() && !opts.proxied {
        return Err(format!(
            "{}: another machine could reach the agent unencrypted; serve loopback addresses (127.0.0.1), or give --tls-cert and --tls-key, or --proxied when a proxy or port forward of yours is what reaches this address",
            opts.addr
        ));
    }
    let listener = std::net::TcpListener::bind(opts.addr)
        .map_err(|e| format!("{}: {}", opts.addr, crate::listen::bind_failed(&e)))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("{}: {e}", opts.addr))?;
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("{}: {e}", opts.addr))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("{}: {e}", opts.addr))?;
    let server = Arc::new(Server {
        seats: Arc::new(tokio::sync::Semaphore::new(opts.max_agents.max(1))),
        connections: Arc::new(tokio::sync::Semaphore::new(connections_for(
            opts.max_agents,
        ))),
        streamable: http::Streamable::default(),
        stopping: tokio::sync::watch::channel(false).0,
        opts,
    });
    tokio::spawn(http::sweep(Arc::downgrade(&server)));
    let task = tokio::spawn(accept(listener, server.clone(), tls));
    Ok(Serving { addr, task, server })
}

/// The TLS server side from a certificate chain and key in PEM files.
fn server_config(cert: &PathBuf, key: &PathBuf) -> Result<rustls::ServerConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

async fn accept(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    // TCP connections are bounded apart from agents: a client that never finishes a
    // handshake holds no agent's place, and a token is checked before any place is taken.
    let connections = server.connections.clone();
    let mut next = 0u64;
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors, most likely: never a busy loop.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        next += 1;
        // A client whose machine vanished (a laptop closed) ends its agent within a
        // minute, not when the agent next writes.
        let _ = trellis_os::net::keepalive(&tcp);
        let Ok(held) = connections.clone().try_acquire_owned() else {
            // Too many at once: this one is dropped unread.
            continue;
        };
        let (server, tls) = (server.clone(), tls.clone());
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let from = (next, peer);
            let result = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => requests(stream, &server, from).await,
                        Ok(Err(e)) if e.to_string().contains("InvalidContentType") => Err(
                            "TLS: the client did not speak TLS (it dialed ws:// or http://?)"
                                .into(),
                        ),
                        Ok(Err(e)) => Err(format!("TLS: {e}")),
                        Err(_) => Err("no TLS handshake in time".into()),
                    }
                }
                None => requests(tcp, &server, from).await,
            };
            drop(held);
            if let Err(why) = result {
                (server.opts.say)(format!("connection {next} from {peer}: {why}"));
            }
        });
    }
}

/// Serves the HTTP requests of one TCP connection: a WebSocket upgrade, or streamable
/// HTTP's `POST`, `GET` and `DELETE`.
async fn requests<S>(stream: S, server: &Arc<Server>, from: (u64, SocketAddr)) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let srv = server.clone();
    let served = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let any = served.clone();
    let service = hyper::service::service_fn(move |req| {
        let srv = srv.clone();
        any.store(true, std::sync::atomic::Ordering::Relaxed);
        async move { Ok::<_, std::convert::Infallible>(route(&srv, req, from).await) }
    });
    hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HANDSHAKE_WAIT)
        .max_buf_size(1 << 16)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .with_upgrades()
        .await
        .or_else(|e| {
            // A connection kept for more requests and left idle is closed without a
            // word; one that never made a request is said.
            let none_yet = !served.load(std::sync::atomic::Ordering::Relaxed);
            if e.is_timeout() && none_yet {
                Err("no request in time".into())
            } else if e.is_parse() && none_yet {
                // Most often a TLS handshake: said, or the client's user never learns
                // why its dial failed here.
                Err(if tls_hello(&e) {
                    "the client did not speak HTTP (it dialed wss:// or https://? this server has no TLS: dial ws:// or http://, or serve with --tls-cert)".into()
                } else {
                    format!("not an HTTP request ({e})")
                })
            } else {
                // A client that went away between requests: nothing to say.
                Ok(())
            }
        })
}

/// Whether a parse error is hyper's at a first byte no HTTP method starts with (a TLS
/// record's 0x16 is one).
fn tls_hello(e: &hyper::Error) -> bool {
    let said = e.to_string();
    said.contains("invalid HTTP method") || said.contains("invalid token")
}

/// Whether the request is a WebSocket upgrade.
fn upgrading(req: &hyper::Request<hyper::body::Incoming>) -> bool {
    req.headers()
        .get(hyper::header::UPGRADE)
        .and_then(|u| u.to_str().ok())
        .is_some_and(|u| u.eq_ignore_ascii_case("websocket"))
}

/// One request: refused, unless it is on `/acp` with a token that may reach an agent;
/// then a WebSocket, or streamable HTTP.
async fn route(
    server: &Arc<Server>,
    req: hyper::Request<hyper::body::Incoming>,
    (conn, peer): (u64, SocketAddr),
) -> hyper::Response<axum::body::Body> {
    let token = match admit(&req, &server.opts.store) {
        Ok(token) => token,
        Err((status, why)) => {
            (server.opts.say)(format!(
                "connection {conn} from {peer}: refused: {status}: {why}"
            ));
            return refusal(status, why);
        }
    };
    if upgrading(&req) {
        ws::upgrade(server, req, (conn, peer))
    } else {
        http::request(server, token, req, (conn, peer)).await
    }
}

/// Why a request was refused, kept with the answer for the server's own line about it.
#[derive(Clone)]
struct Refused(String);

/// A refusal that says why, in words, and closes the TCP connection.
fn refusal(status: hyper::StatusCode, why: &str) -> hyper::Response<axum::body::Body> {
    let mut r = hyper::Response::new(axum::body::Body::from(format!("{why}\n")));
    *r.status_mut() = status;
    r.extensions_mut().insert(Refused(why.to_string()));
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    r
}

/// Whether a request may reach an agent: `/acp`, no web page's `Origin`, a live token of
/// scope `agent` (its id, for the requests of one streamable-HTTP connection to agree).
fn admit<B>(
    req: &hyper::Request<B>,
    store: &Store,
) -> Result<String, (hyper::StatusCode, &'static str)> {
    use hyper::StatusCode;
    if req.uri().path() != "/acp" {
        return Err((StatusCode::NOT_FOUND, "the agent is served on /acp"));
    }
    if req.uri().query().is_some() {
        return Err((
            StatusCode::BAD_REQUEST,
            "/acp takes no query (a token goes in the Authorization header, never in a URL)",
        ));
    }
    if req.headers().contains_key("origin") {
        return Err((
            StatusCode::FORBIDDEN,
            "a request from a web page is not served",
        ));
    }
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        })
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(secret) = bearer else {
        // An Authorization header of another shape is said as such: the client did send
        // something, only not `Bearer TOKEN`.
        let why = if req.headers().contains_key("authorization") {
            "the Authorization header is not \"Bearer TOKEN\" (an entry's token = { … } sends it so)"
        } else {
            "a token is needed (Authorization: Bearer …; trellis token new --scope agent)"
        };
        return Err((StatusCode::UNAUTHORIZED, why));
    };
    match store.check(secret) {
        Ok(Ok(token)) if token.grants(Scope::Agent) => Ok(token.id),
        Ok(Ok(_)) => Err((
            StatusCode::FORBIDDEN,
            "this token's scope is not agent: it may not reach a served agent (trellis token new --scope agent)",
        )),
        Ok(Err(_)) => Err((StatusCode::UNAUTHORIZED, "the token is unknown or expired")),
        Err(_) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "the token store cannot be read",
        )),
    }
}

/// One connection's agent process: started in a group of its own, its stderr said.
struct Agent {
    child: tokio::process::Child,
    pid: Option<u32>,
    stderr: tokio::task::JoinHandle<()>,
}

impl Agent {
    /// Starts the agent of connection `conn`: it, and its stdin and stdout.
    fn start(
        opts: &Options,
        conn: u64,
    ) -> Result<
        (
            Agent,
            tokio::process::ChildStdin,
            tokio::process::ChildStdout,
        ),
        String,
    > {
        let mut cmd = tokio::process::Command::new(&opts.command[0]);
        cmd.args(&opts.command[1..])
            .current_dir(&opts.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // It dies with this process (Linux's parent-death signal); elsewhere its group is
        // stopped when the connection or the server ends.
        trellis_os::priority::die_with_parent(cmd.as_std_mut());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the agent: {e}"))?;
        let pid = child.id();
        if let Some(pid) = pid {
            trellis_os::reaper::own(pid);
        }
        let missing = || "the agent's stdio was not captured".to_string();
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let say = opts.say.clone();
        let stderr = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            let mut n = 0usize;
            while let Ok(Some(line)) = lines.next_line().await {
                n += 1;
                if n <= STDERR_LINES {
                    say(format!("connection {conn}: agent: {line}"));
                }
            }
            if n > STDERR_LINES {
                say(format!(
                    "connection {conn}: agent: … {} more lines of stderr left out",
                    n - STDERR_LINES
                ));
            }
        });
        Ok((Agent { child, pid, stderr }, stdin, stdout))
    }

    /// How the agent ended, if it has (waiting a moment for it): its exit code, or a
    /// signal's end.
    async fn how_it_ended(&mut self) -> Option<String> {
        let status = tokio::time::timeout(Duration::from_millis(300), self.child.wait())
            .await
            .ok()?
            .ok()?;
        Some(match status.code() {
            Some(code) => format!("exit code {code}"),
            None => "ended by a signal".into(),
        })
    }

    /// The connection is over: the agent goes with it, and its whole group.
    async fn stop(mut self) {
        let child = &mut self.child;
        if let Some(pid) = self.pid {
            let ended = async {
                let _ = child.wait().await;
            };
            trellis_os::group::stop(&[pid], GRACE, ended).await;
            let _ = self.child.wait().await;
            trellis_os::reaper::disown(pid);
            let _ = tokio::task::spawn_blocking(move || {
                trellis_os::group::stop_leftovers(pid, GRACE);
            })
            .await;
        }
        self.stderr.abort();
    }
}

/// One line of the agent's output into `buf` (without its end); `false` at the end. A
/// line longer than [`MESSAGE_LIMIT`] is cut there (the client records it as oversized).
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match avail.iter().position(|&c| c == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        let room = MESSAGE_LIMIT.saturating_sub(buf.len());
        buf.extend_from_slice(&avail[..take.min(room)]);
        r.consume(take);
        if done {
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
    }
}

/// A message from a client as one line for the agent's stdin (a line break inside it,
/// only whitespace between JSON tokens when it is valid, becomes a space).
fn as_line(text: &[u8]) -> Vec<u8> {
    let mut line = text.to_vec();
    for b in &mut line {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    line.push(b'\n');
    line
}
