//! An agent that runs elsewhere, dialed over WebSocket (`ws://`, `wss://`); what every
//! dialed agent's connection is ([`Link`], [`RemoteSpec`]). Streamable HTTP
//! (`http://`, `https://`) is `crate::streamable`'s.
//!
//! The connection's text messages become lines on a pipe that is read exactly as a local
//! agent's stdout is (the recorder, the log, backpressure, oversized lines: one path for
//! every agent), and the lines Trellis sends become text messages. Every wait is bounded:
//! the dial, the TLS and WebSocket handshakes, each write, and the silence of a peer that
//! no longer answers pings.
//!
//! Plain `ws://` (and `http://`) is dialed only to this machine unless the spec says the user accepts an
//! unencrypted connection. Header values (tokens) are never printed, logged or passed on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_tungstenite::tungstenite::{self, http};
use trellis_core::wire::Dir;

use crate::recorder::{More, Recorder};

mod pump;
pub(crate) use crate::target::one_line;
pub use crate::target::{
    Target, credential_value, holds_trellis_token, is_loopback, named_like_credential, shown_url,
};

/// Where and how to reach an agent that runs elsewhere.
#[derive(Clone)]
pub struct RemoteSpec {
    /// `ws://` or `wss://`, its path included.
    pub url: String,
    /// Sent with the WebSocket upgrade (an `Authorization` among them): never shown.
    pub headers: Vec<(String, String)>,
    /// The user accepts plain `ws://` to another machine (the session then crosses the
    /// network unencrypted).
    pub plaintext: bool,
    /// Certificates (PEM) trusted besides the public roots: a private CA's, or a
    /// self-signed agent's.
    pub ca: Vec<std::path::PathBuf>,
    /// The session's directory as the agent sees it (sent in `session/new`); none: the
    /// local one.
    pub cwd: Option<String>,
    /// The agent works on this machine's files (`files = "shared"`): it is offered them,
    /// and its edits are this machine's to check point and rewind.
    pub shared_files: bool,
    /// The shared directories as the agent names them and here (`files = "shared"` with
    /// `paths`): its paths are mapped to this machine's.
    pub paths: trellis_core::path_map::PathMap,
    /// A lost connection is dialed again and the session taken up (a UI's or a hub's
    /// session); else the loss ends the session (a headless run, which ends with a turn
    /// that did not end well anyway).
    pub redial: bool,
    /// The HTTP status the agent's end refused a dial with (0: none yet), shared by the
    /// spec's clones: a headless run refused for its token or its URL (401, 403, 404)
    /// exits as for a config error, since dialing again cannot help.
    pub refused: std::sync::Arc<std::sync::atomic::AtomicU16>,
}

impl std::fmt::Debug for RemoteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSpec")
            .field("url", &self.url)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(k, _)| format!("{k}: (hidden)"))
                    .collect::<Vec<_>>(),
            )
            .field("plaintext", &self.plaintext)
            .field("ca", &self.ca)
            .field("cwd", &self.cwd)
            .field("shared_files", &self.shared_files)
            .field("paths", &self.paths)
            .field("redial", &self.redial)
            .finish()
    }
}

/// How long the dial, and each handshake, may take (less when the agent's setup timeout
/// is shorter).
const DIAL_WAIT: Duration = Duration::from_secs(15);

/// How long the dial, and each handshake, may take for an agent whose setup timeout is
/// `setup`.
pub(crate) fn dial_wait(setup: Duration) -> Duration {
    DIAL_WAIT.min(setup)
}
/// Messages to the agent waiting for the connection.
const OUTGOING: usize = 64;
/// The largest message taken from the agent: a longer line than a local agent may write
/// is recorded as oversized, as a local agent's is; past this the connection ends.
pub const MESSAGE_LIMIT: usize = crate::lines::MAX_LINE + (1 << 20);

/// The connection to a remote agent as the transport holds it.
pub(crate) struct Link {
    /// Messages to the agent (closed: the writer says goodbye and ends).
    pub out: Option<tokio::sync::mpsc::Sender<String>>,
    pub reader: tokio::task::JoinHandle<()>,
    pub writer: tokio::task::JoinHandle<()>,
    /// Why the connection ended, when not by Trellis's own close.
    pub lost: Arc<Mutex<Option<String>>>,
}

/// Dials the agent at `spec`; the pipe its messages are written to as lines, and the
/// link.
pub(crate) async fn dial(
    spec: &RemoteSpec,
    recorder: &Recorder,
    setup: Duration,
) -> Result<(std::fs::File, Link), String> {
    let target = Target::of(&spec.url, spec.plaintext)?;
    let shown = target.shown.clone();
    let wait = dial_wait(setup);
    let tcp = tokio::time::timeout(
        wait,
        tokio::net::TcpStream::connect((target.host.as_str(), target.port)),
    )
    .await
    .map_err(|_| format!("{shown}: no answer within {} s", wait.as_secs_f32()))?
    .map_err(|e| format!("cannot reach {shown}: {e}"))?;
    // A host that was named, not given as an address: what it resolved to must still
    // be this machine when no encryption is asked for.
    if !target.tls && !spec.plaintext && tcp.peer_addr().is_ok_and(|a| !a.ip().is_loopback()) {
        return Err(format!(
            "{shown} is not on this machine: plain ws:// is refused there (see plaintext)"
        ));
    }
    let _ = tcp.set_nodelay(true);
    let _ = trellis_os::net::keepalive(&tcp);
    let request = upgrade_request(spec)?;
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MESSAGE_LIMIT))
        .max_frame_size(Some(MESSAGE_LIMIT))
        .max_write_buffer_size(MESSAGE_LIMIT * 2);
    let (pipe, link) = if target.tls {
        let tls =
            crate::tls::connect((&target.host, &target.shown), &spec.ca, tcp, wait, &[]).await?;
        let ws = handshake(spec, request, tls, config, &shown, wait).await?;
        pump::bridge(ws, recorder, shown)?
    } else {
        let ws = handshake(spec, request, tcp, config, &shown, wait).await?;
        pump::bridge(ws, recorder, shown)?
    };
    Ok((pipe, link))
}

/// The upgrade request: the URL and the configured headers (values kept sensitive).
fn upgrade_request(spec: &RemoteSpec) -> Result<http::Request<()>, String> {
    use tungstenite::client::IntoClientRequest;
    let mut req = spec
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("{}: {e}", shown_url(&spec.url)))?;
    for (n, v) in headers(spec)? {
        req.headers_mut().insert(n, v);
    }
    Ok(req)
}

/// The configured headers (an `Authorization` among them), their values kept sensitive.
pub(crate) fn headers(
    spec: &RemoteSpec,
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, String> {
    header_pairs(&spec.headers)
}

/// `pairs` as headers, or which one cannot be one (checked when the config is read, so
/// a bad entry is said before anything is dialed; the value is never in the message).
pub fn header_pairs(
    pairs: &[(String, String)],
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, String> {
    let mut seen = std::collections::HashSet::new();
    pairs
        .iter()
        .map(|(name, value)| {
            if crate::target::holds_trellis_token(name) {
                return Err("a header's name holds a Trellis token: a token goes in `token`".into());
            }
            let n = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                // Said up to what is wrong, never whole: a pasted `Name: value` line
                // would print its value.
                let ok: String = name_prefix(name).chars().take(40).collect();
                format!("header name \"{ok}…\": not a header name (a name is letters, digits and -; its value goes after =)")
            })?;
            if RESERVED.iter().any(|r| n.as_str() == *r) || n.as_str().starts_with("sec-websocket-") {
                return Err(format!("header {name}: Trellis sets it for the connection itself"));
            }
            if !seen.insert(n.clone()) {
                return Err(format!("header {name}: given twice (names are the same in any case)"));
            }
            let mut v = http::HeaderValue::from_str(value.trim())
                .map_err(|_| format!("header {name}: its value is not valid in a header"))?;
            v.set_sensitive(true);
            Ok((n, v))
        })
        .collect()
}

/// The longest start of `name` that can be in a header name (HTTP's token characters):
/// what of a bad name may be said (a pasted `Name: value` stops before its value).
pub fn name_prefix(name: &str) -> &str {
    let end = name
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)))
        .unwrap_or(name.len());
    &name[..end]
}

/// Headers the connection's own (HTTP/1.1 and the WebSocket handshake, ACP's ids on
/// streamable HTTP): an entry's would replace them or be sent twice.
const RESERVED: [&str; 10] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "acp-connection-id",
    "acp-session-id",
];

/// The pipe a dialed agent's messages are written to as lines: its writing end, and the
/// reading end the transport reads as a local agent's stdout.
pub(crate) fn pipe() -> Result<(tokio::net::unix::pipe::Sender, std::fs::File), String> {
    let (tx, rx) = tokio::net::unix::pipe::pipe().map_err(|e| format!("no pipe: {e}"))?;
    let fd = rx
        .into_nonblocking_fd()
        .map_err(|e| format!("no pipe: {e}"))?;
    Ok((tx, std::fs::File::from(fd)))
}

/// The WebSocket handshake over `stream`, bounded; a refusal says what the agent's end
/// answered.
async fn handshake<S>(
    spec: &RemoteSpec,
    request: http::Request<()>,
    stream: S,
    config: tungstenite::protocol::WebSocketConfig,
    shown: &str,
    wait: Duration,
) -> Result<tokio_tungstenite::WebSocketStream<S>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let shake = tokio_tungstenite::client_async_with_config(request, stream, Some(config));
    match tokio::time::timeout(wait, shake).await {
        Err(_) => Err(format!(
            "{shown}: no WebSocket answer within {} s",
            wait.as_secs_f32()
        )),
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(tungstenite::Error::Http(resp))) => {
            let status = resp.status();
            // What the agent's end said, when it said something (one line, bounded).
            let said: String = resp
                .body()
                .as_deref()
                .map(|b| one_line(&String::from_utf8_lossy(&b[..b.len().min(300)])))
                .unwrap_or_default()
                .trim()
                .to_string();
            spec.refused
                .store(status.as_u16(), std::sync::atomic::Ordering::Relaxed);
            Err(format!(
                "{shown} refused the connection: {status}{}",
                refusal_hint(&said, status.as_u16(), spec)
            ))
        }
        Ok(Err(e)) if e.to_string().contains("invalid HTTP version") => Err(format!(
            "{shown}: it did not answer in plain HTTP (does it serve TLS there? then dial wss://)"
        )),
        Ok(Err(e)) => Err(format!("{shown}: the WebSocket handshake failed: {e}")),
    }
}

/// What follows a refusal's status: what the agent's end said, else what to check.
pub(crate) fn refusal_hint(said: &str, status: u16, spec: &RemoteSpec) -> String {
    let mut hint = match (said.is_empty(), status) {
        (false, _) => format!(": {said}"),
        (true, 401 | 403) => ": check the agent's token".into(),
        (true, 404) => ": check the URL's path (trellis agent serve answers on /acp)".into(),
        _ => String::new(),
    };
    let token_sent = spec
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if status == 401 && !token_sent {
        hint.push_str(
            " (no token was sent: give the agent's entry [agents.NAME] a token = { env = \"…\" } or { file = \"…\" }; a URL given alone with --agent carries none)",
        );
    }
    hint
}

/// Says why the connection ended (the first reason only).
pub(crate) fn lose(lost: &Mutex<Option<String>>, why: String) {
    let mut l = lost.lock().unwrap_or_else(|e| e.into_inner());
    if l.is_none() {
        *l = Some(why);
    }
}

/// The sink of the lines Trellis sends a remote agent: each is recorded, then queued for
/// the connection (waiting while [`OUTGOING`] are queued).
pub(crate) fn outgoing(
    tx: tokio::sync::mpsc::Sender<String>,
    tap: Recorder,
) -> impl futures::Sink<String, Error = std::io::Error> + Send {
    futures::sink::unfold(
        tx,
        move |tx: tokio::sync::mpsc::Sender<String>, line: String| {
            let tap = tap.clone();
            async move {
                tap.line(Dir::ClientToAgent, &line, More::No);
                tx.send(line).await.map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the connection is closed")
                })?;
                Ok::<_, std::io::Error>(tx)
            }
        },
    )
}

impl Link {
    /// Closes the connection (what was queued goes first) and waits, at most `grace`,
    /// for the agent's end to close too; why it ended, if it was not this close.
    pub async fn finish(&mut self, grace: Duration) -> Option<String> {
        // Lost before Trellis closed it: that is why the session ended.
        let before = self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.out = None;
        let deadline = tokio::time::Instant::now() + grace;
        if tokio::time::timeout_at(deadline, &mut self.writer)
            .await
            .is_err()
        {
            self.writer.abort();
        }
        if tokio::time::timeout_at(deadline, &mut self.reader)
            .await
            .is_err()
        {
            self.reader.abort();
        }
        // What happened once Trellis closed it (the agent's end closing too, or resetting)
        // is no failure of the agent's.
        before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_header_name_is_said_only_up_to_what_is_wrong() {
        assert_eq!(name_prefix("X-Team"), "X-Team");
        assert_eq!(name_prefix("X-Team: trl_secret"), "X-Team");
        assert_eq!(name_prefix("ключ"), "");
        assert_eq!(name_prefix("a~b ключ"), "a~b");
        let e = header_pairs(&[("X-Team: sk-live-123".into(), "v".into())]).unwrap_err();
        assert!(e.contains("\"X-Team…\"") && !e.contains("sk-live"), "{e}");
    }

    #[test]
    fn header_values_are_hidden_from_debug_output() {
        let spec = RemoteSpec {
            url: "wss://h.example/acp".into(),
            headers: vec![("Authorization".into(), "Bearer trl_secret".into())],
            plaintext: false,
            ca: Vec::new(),
            cwd: None,
            shared_files: false,
            paths: Default::default(),
            redial: true,
            refused: Default::default(),
        };
        let shown = format!("{spec:?}");
        assert!(!shown.contains("trl_secret"), "{shown}");
        assert!(upgrade_request(&spec).unwrap().headers()["authorization"].is_sensitive());
    }
}
