//! A dialed WebSocket's message pump: the agent's messages become lines written into the
//! pipe the transport reads (gathered into few writes), the lines Trellis sends become
//! messages, and pings go both ways; a peer silent too long, a write that waits too long
//! or a message past the limit ends the connection with its reason.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Link, OUTGOING, lose, one_line, pipe};
use crate::recorder::Recorder;

/// How long one message to the agent may wait for the connection (its peer stopped
/// reading) before the connection is taken as lost.
const WRITE_WAIT: Duration = Duration::from_secs(30);
/// Pings to the agent's end, and how long it may send nothing at all (not even the pong
/// every WebSocket peer sends by itself) before the connection is taken as lost.
const PING_EVERY: Duration = Duration::from_secs(20);
const SILENCE: Duration = Duration::from_secs(60);

/// Runs the connection: its messages to a pipe as lines (what the transport reads), the
/// outgoing lines to it as messages, pings both ways.
pub(super) fn bridge<S>(
    ws: tokio_tungstenite::WebSocketStream<S>,
    recorder: &Recorder,
    shown: String,
) -> Result<(std::fs::File, Link), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (tx, file) = pipe()?;
    let (sink, stream) = ws.split();
    let (out_tx, out_rx) = tokio::sync::mpsc::channel::<String>(OUTGOING);
    let lost: Arc<Mutex<Option<String>>> = Arc::default();
    let heard = Arc::new(Mutex::new(tokio::time::Instant::now()));
    let reader = tokio::spawn(read_messages(
        stream,
        tx,
        recorder.clone(),
        lost.clone(),
        heard.clone(),
        shown.clone(),
    ));
    let writer = tokio::spawn(write_messages(
        sink,
        out_rx,
        lost.clone(),
        heard,
        shown.clone(),
    ));
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

/// What ends the reading of a connection.
enum End {
    /// Lost (the reason is kept in `lost`).
    Lost,
}

/// How much of the agent's messages is gathered before one write into the pipe: the
/// messages that have already arrived go in one write, not one each (a write per
/// message cost more than the rest of the path).
const GATHER: usize = 256 << 10;

/// The agent's messages, one line each, into the pipe the transport reads. A message is
/// one JSON-RPC message: line breaks in it (only whitespace between JSON tokens, when it
/// is valid) become spaces, so it stays one line.
async fn read_messages<S>(
    mut stream: futures::stream::SplitStream<tokio_tungstenite::WebSocketStream<S>>,
    mut pipe: tokio::net::unix::pipe::Sender,
    recorder: Recorder,
    lost: Arc<Mutex<Option<String>>>,
    heard: Arc<Mutex<tokio::time::Instant>>,
    shown: String,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::FutureExt;
    let mut binary = 0u64;
    let mut buf: Vec<u8> = Vec::with_capacity(GATHER);
    loop {
        let next = match tokio::time::timeout(SILENCE, stream.next()).await {
            Ok(n) => n,
            Err(_) => {
                lose(
                    &lost,
                    format!(
                        "{shown} sent nothing for {} s, not even an answer to a ping: the connection is taken as lost",
                        SILENCE.as_secs()
                    ),
                );
                break;
            }
        };
        *heard.lock().unwrap_or_else(|e| e.into_inner()) = tokio::time::Instant::now();
        let mut end = take(next, &mut buf, (&recorder, &lost, &shown), &mut binary);
        // What else has arrived already goes in the same write.
        while end.is_none() && buf.len() < GATHER {
            match stream.next().now_or_never() {
                Some(next) => end = take(next, &mut buf, (&recorder, &lost, &shown), &mut binary),
                None => break,
            }
        }
        if !buf.is_empty() && pipe.write_all(&buf).await.is_err() {
            // The transport reads no further (the session is over).
            break;
        }
        buf.clear();
        if end.is_some() {
            break;
        }
    }
}

/// Appends message `next` to `buf` as a line (or says why the connection ended).
fn take(
    next: Option<Result<Message, tungstenite::Error>>,
    buf: &mut Vec<u8>,
    (recorder, lost, shown): (&Recorder, &Mutex<Option<String>>, &str),
    binary: &mut u64,
) -> Option<End> {
    let text = match next {
        Some(Ok(Message::Text(t))) => t,
        Some(Ok(Message::Binary(_))) => {
            *binary += 1;
            if *binary == 1 {
                recorder.warn(format!(
                    "{shown} sent a binary message; ACP messages are text: it was left out"
                ));
            }
            return None;
        }
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => return None,
        Some(Ok(Message::Close(frame))) => {
            let why = frame.map(|f| one_line(&f.reason)).filter(|r| !r.is_empty());
            lose(
                lost,
                match why {
                    Some(r) => format!("{shown} closed the connection: {r}"),
                    None => format!("{shown} closed the connection"),
                },
            );
            return Some(End::Lost);
        }
        Some(Err(tungstenite::Error::Capacity(e))) => {
            lose(
                lost,
                format!(
                    "{shown} sent a message too large to take ({e}): the connection was closed"
                ),
            );
            return Some(End::Lost);
        }
        Some(Err(e)) => {
            lose(lost, format!("the connection to {shown} was lost: {e}"));
            return Some(End::Lost);
        }
        None => {
            lose(lost, format!("the connection to {shown} was lost"));
            return Some(End::Lost);
        }
    };
    let start = buf.len();
    buf.extend_from_slice(text.as_bytes());
    let mut i = start;
    while let Some(j) = memchr::memchr2(b'\n', b'\r', &buf[i..]) {
        buf[i + j] = b' ';
        i += j + 1;
    }
    buf.push(b'\n');
    None
}

/// Lines from Trellis to the agent, each one text message; pings while nothing else is
/// sent. The channel closing (the session's end) closes the connection politely.
async fn write_messages<S>(
    mut sink: futures::stream::SplitSink<tokio_tungstenite::WebSocketStream<S>, Message>,
    mut out: tokio::sync::mpsc::Receiver<String>,
    lost: Arc<Mutex<Option<String>>>,
    heard: Arc<Mutex<tokio::time::Instant>>,
    shown: String,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    loop {
        let msg = tokio::select! {
            line = out.recv() => match line {
                Some(line) => Message::Text(line.into()),
                None => {
                    let _ = tokio::time::timeout(Duration::from_secs(2), sink.send(Message::Close(None))).await;
                    return;
                }
            },
            _ = ping.tick() => {
                let quiet = heard.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
                if quiet > SILENCE {
                    return;
                }
                Message::Ping(Vec::new().into())
            }
        };
        match tokio::time::timeout(WRITE_WAIT, sink.send(msg)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                lose(&lost, format!("the connection to {shown} was lost: {e}"));
                return;
            }
            Err(_) => {
                lose(
                    &lost,
                    format!(
                        "{shown} took no message for {} s: the connection is taken as lost",
                        WRITE_WAIT.as_secs()
                    ),
                );
                return;
            }
        }
    }
}
