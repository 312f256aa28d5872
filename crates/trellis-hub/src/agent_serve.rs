//! `trellis agent serve`: any agent that speaks ACP on stdio, served over WebSocket, one
//! agent process per connection — for an agent in a devcontainer, a VM or a sandbox,
//! dialed from the machine the user sits at (`--agent ws://…`, `[agents.X] url`).
//!
//! Who it answers: a WebSocket upgrade on `/acp` with a bearer token of scope `agent`
//! in its `Authorization` header (the token store of `trellis token`, checked at every
//! connection), and no `Origin` (a web page's request). It binds loopback addresses
//! unless TLS is given (a certificate and key from files) or the user says a proxy or
//! port forward of theirs is what reaches it.
//!
//! Each connection's agent runs in a process group of its own and ends with the
//! connection (and with this process: Linux's parent-death signal, then the group stop
//! sequence). Every queue and wait is bounded: the handshake, each message to the client
//! (one that stops reading is let go), the lines of an agent that writes faster than
//! its client reads, the connections at once.

// tungstenite's handshake callback returns its refusal (an HTTP response) by value.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message, handshake::server};

use crate::tokens::{Scope, Store};

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

/// How long a client has for the TLS and WebSocket handshakes.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);
/// How long a message to the client may wait (it stopped reading) before it is let go.
const WRITE_WAIT: Duration = Duration::from_secs(30);
/// Pings, and how long a client may send nothing at all before it is let go.
const PING_EVERY: Duration = Duration::from_secs(20);
const SILENCE: Duration = Duration::from_secs(60);
/// The longest message taken from a client, and line taken from the agent.
const MESSAGE_LIMIT: usize = (64 << 20) + (1 << 20);
/// Lines of an agent's stderr said per connection (the rest is counted).
const STDERR_LINES: usize = 200;
/// How long an agent has to end once its connection closed, before its group is stopped.
const GRACE: Duration = Duration::from_secs(1);

/// The listener while it runs.
pub struct Serving {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Runs until the task ends (never, unless the runtime stops).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
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
    let listener =
        std::net::TcpListener::bind(opts.addr).map_err(|e| format!("{}: {e}", opts.addr))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("{}: {e}", opts.addr))?;
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("{}: {e}", opts.addr))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("{}: {e}", opts.addr))?;
    let opts = Arc::new(opts);
    let task = tokio::spawn(accept(listener, opts, tls));
    Ok(Serving { addr, task })
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
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))
}

async fn accept(
    listener: tokio::net::TcpListener,
    opts: Arc<Options>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    // Handshakes are bounded apart from agents: a client that never finishes one holds
    // no agent's place, and a token is checked before any place is taken.
    let shaking = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
    let seats = Arc::new(tokio::sync::Semaphore::new(opts.max_agents.max(1)));
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
        let Ok(shake) = shaking.clone().try_acquire_owned() else {
            // Too many handshakes at once: this one is dropped unread.
            continue;
        };
        let (opts, tls, seats) = (opts.clone(), tls.clone(), seats.clone());
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let conn = next;
            let result = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            connection(stream, &opts, (conn, peer), shake, &seats).await
                        }
                        Ok(Err(e)) => Err(format!("TLS: {e}")),
                        Err(_) => Err("no TLS handshake in time".into()),
                    }
                }
                None => connection(tcp, &opts, (conn, peer), shake, &seats).await,
            };
            if let Err(why) = result {
                (opts.say)(format!("connection {conn} from {peer}: {why}"));
            }
        });
    }
}

/// Handshakes (TLS and WebSocket, the token checked) going on at once.
const HANDSHAKES: usize = 64;

fn refusal(status: tungstenite::http::StatusCode, why: &str) -> server::ErrorResponse {
    let mut r = server::ErrorResponse::new(Some(format!("{why}\n")));
    *r.status_mut() = status;
    r
}

/// What a refused handshake's error says, with its status when it has one.
fn refused(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Http(r) => r.status().to_string(),
        other => other.to_string(),
    }
}

/// Closes `ws` with `code` and `reason` (cut to what a close frame holds), politely and
/// within a bound.
async fn close<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>, code: CloseCode, reason: &str)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut cut = reason.to_string();
    while cut.len() > 120 {
        cut.pop();
    }
    let frame = tungstenite::protocol::CloseFrame {
        code,
        reason: cut.into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(Some(frame))).await;
}

/// Whether an upgrade request may have an agent: `/acp`, no web page's `Origin`, a live
/// token of scope `agent`.
fn admit(req: &server::Request, store: &Store) -> Result<(), server::ErrorResponse> {
    use tungstenite::http::StatusCode;
    if req.uri().path() != "/acp" || req.uri().query().is_some() {
        return Err(refusal(
            StatusCode::NOT_FOUND,
            "the agent is served on /acp",
        ));
    }
    if req.headers().contains_key("origin") {
        return Err(refusal(
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
        return Err(refusal(
            StatusCode::UNAUTHORIZED,
            "a token is needed (Authorization: Bearer …; trellis token new --scope agent)",
        ));
    };
    match store.check(secret) {
        Ok(Ok(token)) if token.grants(Scope::Agent) => Ok(()),
        Ok(Ok(_)) => Err(refusal(
            StatusCode::FORBIDDEN,
            "this token may not reach a served agent (scope agent)",
        )),
        Ok(Err(_)) => Err(refusal(
            StatusCode::UNAUTHORIZED,
            "the token is unknown or expired",
        )),
        Err(_) => Err(refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "the token store cannot be read",
        )),
    }
}

/// One client: the handshake, its agent, and the lines between them until either ends.
async fn connection<S>(
    stream: S,
    opts: &Options,
    (conn, peer): (u64, SocketAddr),
    shake: tokio::sync::OwnedSemaphorePermit,
    seats: &Arc<tokio::sync::Semaphore>,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MESSAGE_LIMIT))
        .max_frame_size(Some(MESSAGE_LIMIT))
        .max_write_buffer_size(MESSAGE_LIMIT * 2);
    let store = &opts.store;
    let check = |req: &server::Request, resp: server::Response| admit(req, store).map(|()| resp);
    let ws = tokio::time::timeout(
        HANDSHAKE_WAIT,
        tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)),
    )
    .await
    .map_err(|_| "no WebSocket handshake in time".to_string())?
    .map_err(|e| format!("refused: {}", refused(&e)))?;
    drop(shake);
    let mut ws = ws;
    // A place for its agent, or a close that says why there is none.
    let Ok(_seat) = seats.clone().try_acquire_owned() else {
        (opts.say)(format!(
            "connection {conn} from {peer} refused: {} agents run already (--max-agents)",
            opts.max_agents
        ));
        close(
            &mut ws,
            CloseCode::Again,
            "every agent of this server is at work: try again later",
        )
        .await;
        return Ok(());
    };
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
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = format!("cannot start the agent: {e}");
            close(&mut ws, CloseCode::Error, &why).await;
            return Err(why);
        }
    };
    let pid = child.id();
    if let Some(pid) = pid {
        trellis_os::reaper::own(pid);
    }
    (opts.say)(format!(
        "connection {conn} from {peer}: agent started (pid {})",
        pid.unwrap_or(0)
    ));
    let missing = || "the agent's stdio was not captured".to_string();
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    let say = opts.say.clone();
    let stderr_task = tokio::spawn(async move {
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
    let why = pump(ws, stdin, stdout).await;
    // The connection is over: the agent goes with it, and its whole group.
    let ended = async {
        let _ = child.wait().await;
    };
    if let Some(pid) = pid {
        trellis_os::group::stop(&[pid], GRACE, ended).await;
        let _ = child.wait().await;
        trellis_os::reaper::disown(pid);
        let _ = tokio::task::spawn_blocking(move || {
            trellis_os::group::stop_leftovers(pid, GRACE);
        })
        .await;
    }
    stderr_task.abort();
    (opts.say)(format!("connection {conn} from {peer}: closed ({why})"));
    Ok(())
}

/// Messages to the agent's stdin as lines, its stdout's lines to the client as
/// messages; pings. Why it ended.
async fn pump<S>(
    ws: tokio_tungstenite::WebSocketStream<S>,
    mut stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) -> String
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut stream) = ws.split();
    // The agent's lines, bounded: an agent that writes faster than its client reads
    // waits on its pipe.
    let (line_tx, mut line_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    let reader = tokio::spawn(async move {
        let mut r = tokio::io::BufReader::with_capacity(1 << 16, stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_line(&mut r, &mut buf).await {
                Ok(true) => {
                    if line_tx.send(std::mem::take(&mut buf)).await.is_err() {
                        return;
                    }
                }
                Ok(false) | Err(_) => return,
            }
        }
    });
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut heard = tokio::time::Instant::now();
    let why = loop {
        tokio::select! {
            msg = stream.next() => {
                heard = tokio::time::Instant::now();
                match msg {
                    Some(Ok(Message::Text(t))) => {
                        let mut line = t.as_bytes().to_vec();
                        for b in &mut line {
                            if *b == b'\n' || *b == b'\r' {
                                *b = b' ';
                            }
                        }
                        line.push(b'\n');
                        if stdin.write_all(&line).await.is_err() {
                            break "the agent closed its input".to_string();
                        }
                    }
                    Some(Ok(Message::Close(_))) | None => break "the client closed it".into(),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => break format!("the client's connection failed: {e}"),
                }
            }
            line = line_rx.recv() => {
                let Some(line) = line else {
                    let frame = tungstenite::protocol::CloseFrame {
                        code: CloseCode::Away,
                        reason: "the agent ended".into(),
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(2), sink.send(Message::Close(Some(frame)))).await;
                    break "the agent ended".into();
                };
                // The lines already read go out together, flushed once (a flush per line
                // cost more than the agent's own writing).
                let mut batch = vec![line];
                while batch.len() < 256 {
                    match line_rx.try_recv() {
                        Ok(l) => batch.push(l),
                        Err(_) => break,
                    }
                }
                let send = async {
                    for line in batch {
                        let text = String::from_utf8(line)
                            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                        sink.feed(Message::Text(text.into())).await?;
                    }
                    sink.flush().await
                };
                match tokio::time::timeout(WRITE_WAIT, send).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => break format!("the client's connection failed: {e}"),
                    Err(_) => break format!("the client read nothing for {} s", WRITE_WAIT.as_secs()),
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > SILENCE {
                    break format!("the client sent nothing for {} s", SILENCE.as_secs());
                }
                let sent = tokio::time::timeout(WRITE_WAIT, sink.send(Message::Ping(Vec::new().into()))).await;
                if !matches!(sent, Ok(Ok(()))) {
                    break "the client's connection failed".into();
                }
            }
        }
    };
    reader.abort();
    // The closing handshake is finished (a client's close answered), within a bound.
    let _ = tokio::time::timeout(Duration::from_secs(2), sink.close()).await;
    why
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
        let (take, done) = match memchr(avail) {
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

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}
