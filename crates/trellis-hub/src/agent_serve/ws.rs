//! A served agent over WebSocket: the upgrade, a place for its agent (or a close that
//! says why there is none), and the messages between the two until either ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Agent, MESSAGE_LIMIT, Server, as_line, read_line, refusal};

/// How long a message to the client may wait (it stopped reading) before it is let go.
const WRITE_WAIT: Duration = Duration::from_secs(30);
/// Pings, and how long a client may send nothing at all before it is let go.
const PING_EVERY: Duration = Duration::from_secs(20);
const SILENCE: Duration = Duration::from_secs(60);

type Socket = tokio_tungstenite::WebSocketStream<hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>>;

/// Answers an (admitted) upgrade request; the connection runs once it is upgraded.
pub(super) fn upgrade(
    server: &Arc<Server>,
    mut req: hyper::Request<hyper::body::Incoming>,
    (conn, peer): (u64, SocketAddr),
) -> hyper::Response<axum::body::Body> {
    let headers = req.headers();
    let version = headers
        .get("sec-websocket-version")
        .and_then(|v| v.to_str().ok());
    let key = headers.get("sec-websocket-key").map(|k| k.as_bytes());
    let (Some(key), Some("13"), true) = (key, version, req.method() == hyper::Method::GET) else {
        return refusal(
            hyper::StatusCode::BAD_REQUEST,
            "not a WebSocket upgrade this server can take (GET, version 13, a key)",
        );
    };
    let accept = tungstenite::handshake::derive_accept_key(key);
    let upgraded = hyper::upgrade::on(&mut req);
    let server = server.clone();
    tokio::spawn(async move {
        let Ok(io) = upgraded.await else {
            return;
        };
        let config = tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MESSAGE_LIMIT))
            .max_frame_size(Some(MESSAGE_LIMIT))
            .max_write_buffer_size(MESSAGE_LIMIT * 2);
        let ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
            hyper_util::rt::TokioIo::new(io),
            tungstenite::protocol::Role::Server,
            Some(config),
        )
        .await;
        if let Err(why) = connection(ws, &server, (conn, peer)).await {
            (server.opts.say)(format!("connection {conn} from {peer}: {why}"));
        }
    });
    let mut r = hyper::Response::new(axum::body::Body::empty());
    *r.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(
        hyper::header::UPGRADE,
        hyper::header::HeaderValue::from_static("websocket"),
    );
    h.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(v) = hyper::header::HeaderValue::from_str(&accept) {
        h.insert("sec-websocket-accept", v);
    }
    r
}

/// Closes `ws` with `code` and `reason` (cut to what a close frame holds), politely and
/// within a bound.
async fn close(ws: &mut Socket, code: CloseCode, reason: &str) {
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

/// One client: a place for its agent, its agent, and the lines between them until either
/// ends.
async fn connection(
    mut ws: Socket,
    server: &Server,
    (conn, peer): (u64, SocketAddr),
) -> Result<(), String> {
    let opts = &server.opts;
    let Ok(_seat) = server.seats.clone().try_acquire_owned() else {
        (opts.say)(format!(
            "connection {conn} from {peer}: refused: 503 Service Unavailable: every agent runs already ({} of --max-agents)",
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
    let (agent, stdin, stdout) = match Agent::start(opts, conn) {
        Ok(started) => started,
        Err(why) => {
            close(&mut ws, CloseCode::Error, &why).await;
            return Err(why);
        }
    };
    (opts.say)(format!(
        "connection {conn} from {peer}: agent started (pid {})",
        agent.pid.unwrap_or(0)
    ));
    let mut why = pump(ws, stdin, stdout, server.stopping.subscribe()).await;
    let mut agent = agent;
    if let Some(how) = agent.how_it_ended().await {
        why = format!("{why}: {how}");
    }
    agent.stop().await;
    (opts.say)(format!("connection {conn} from {peer}: closed ({why})"));
    Ok(())
}

/// Messages to the agent's stdin as lines, its stdout's lines to the client as
/// messages; pings. Why it ended.
async fn pump(
    ws: Socket,
    mut stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> String {
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
            () = stopped(&mut stopping) => {
                let frame = tungstenite::protocol::CloseFrame {
                    code: CloseCode::Away,
                    reason: "the server is stopping".into(),
                };
                let _ = tokio::time::timeout(Duration::from_secs(2), sink.send(Message::Close(Some(frame)))).await;
                break "the server is stopping".into();
            }
            msg = stream.next() => {
                heard = tokio::time::Instant::now();
                match msg {
                    Some(Ok(Message::Text(t))) => {
                        let line = as_line(t.as_bytes());
                        if stdin.write_all(&line).await.is_err() {
                            // It ended (it reads no more): its client is told so.
                            let frame = tungstenite::protocol::CloseFrame {
                                code: CloseCode::Away,
                                reason: "the agent ended".into(),
                            };
                            let _ = tokio::time::timeout(Duration::from_secs(2), sink.send(Message::Close(Some(frame)))).await;
                            break "the agent ended".to_string();
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

/// Resolves once the server stops (never, if it cannot tell).
async fn stopped(rx: &mut tokio::sync::watch::Receiver<bool>) {
    loop {
        let now = *rx.borrow_and_update();
        if now {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
