//! A hub's socket, served: connections from this user only (the peer's uid checked on
//! each), request lines bounded, every request handed to the hub's loop with a channel
//! for its answer. A client that sends too much, stops reading or takes too long is
//! dropped; the hub never waits on one. Places are bounded in all and per process
//! ([`crate::slots`]): an idle connection goes after [`IDLE`], or at once when a newcomer
//! needs its place.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

pub use crate::call::{Call, Reply};
use crate::place::{HubFiles, try_hold};
use crate::watch::Follow;
use crate::wire::{Body, REQUEST_LIMIT, Request, Response};

/// Connections served at once.
const CONNECTIONS: usize = 32;
/// Connections one process may hold at once.
const PER_PROCESS: usize = 16;
/// How long a connection may wait without sending a request.
pub const IDLE: Duration = Duration::from_secs(60);
/// How long a request line may take to arrive once begun.
const LINE_WAIT: Duration = Duration::from_secs(10);
/// How long a newcomer waits for a place when every connection is at work.
const ADMIT_WAIT: Duration = Duration::from_secs(5);
/// How long a connection may take to write an answer.
const WRITE_WAIT: Duration = Duration::from_secs(5);
/// How long the hub's loop has to answer a request.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// How many mutations' outcomes are kept for retries.
const OUTCOMES_KEPT: usize = 256;

/// The answers to a hub's last mutations by operation id: a retry with the same id gets
/// the first outcome instead of acting twice.
#[derive(Debug, Default)]
pub struct Outcomes(std::collections::VecDeque<(String, Body)>);

impl Outcomes {
    /// The first outcome of operation `op`, if it was carried out lately.
    pub fn find(&self, op: &str) -> Option<&Body> {
        self.0.iter().find(|(o, _)| o == op).map(|(_, b)| b)
    }

    /// Keeps the outcome of operation `op` (the oldest kept goes).
    pub fn keep(&mut self, op: String, body: Body) {
        if self.0.len() >= OUTCOMES_KEPT {
            self.0.pop_front();
        }
        self.0.push_back((op, body));
    }
}

/// A hub's socket while it is served: its name is held, and its socket file is removed
/// when this goes.
#[derive(Debug)]
pub struct Served {
    pub files: HubFiles,
    pub calls: mpsc::Receiver<Call>,
    /// The loopback listener, when the hub was asked for one.
    #[cfg(feature = "listen")]
    pub listening: Option<crate::listen::Listening>,
    /// Where a listener started later finds its tokens (a hub of its own only).
    #[cfg(feature = "listen")]
    store: Option<crate::tokens::Store>,
    /// The listener's pairing, as the socket's connections see it (set when it starts).
    pairing: PairingSlot,
    tx: mpsc::Sender<Call>,
    _held: crate::place::Held,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Where its listener listens, if it has one.
    pub fn listening_on(&self) -> Option<std::net::SocketAddr> {
        #[cfg(feature = "listen")]
        return self.listening.as_ref().map(|l| l.addr);
        #[cfg(not(feature = "listen"))]
        None
    }

    /// Starts the loopback listener on `addr` now (a hub that serves already, asked by
    /// `trellis serve --listen`): `Ok((addr, false))` where it listens, `Ok((addr, true))`
    /// when it listened already (on `addr`).
    pub fn listen(
        &mut self,
        addr: std::net::SocketAddr,
        hosts: Vec<String>,
    ) -> std::io::Result<(std::net::SocketAddr, bool)> {
        #[cfg(feature = "listen")]
        {
            if let Some(l) = &self.listening {
                return Ok((l.addr, true));
            }
            let Some(store) = self.store.clone() else {
                return Err(std::io::Error::other(
                    "this Trellis takes no listener (only a hub of its own does: trellis serve)",
                ));
            };
            let l = crate::listen::listen(addr, store, hosts, self.tx.clone())?;
            self.pairing.set(l.pairing.clone());
            let at = l.addr;
            self.listening = Some(l);
            Ok((at, false))
        }
        #[cfg(not(feature = "listen"))]
        {
            let _ = (addr, hosts, &self.tx, &self.pairing);
            Err(std::io::Error::other(
                "this build has no listener (cargo feature `listen`)",
            ))
        }
    }
}

/// The listener's pairing, shared with every connection of the socket: empty until a
/// listener starts (at once, or later through [`Served::listen`]).
#[derive(Debug, Clone, Default)]
struct PairingSlot(
    #[cfg(feature = "listen")]
    std::sync::Arc<std::sync::RwLock<Option<std::sync::Arc<crate::listen::Pairing>>>>,
);

impl PairingSlot {
    #[cfg(feature = "listen")]
    fn set(&self, p: std::sync::Arc<crate::listen::Pairing>) {
        if let Ok(mut slot) = self.0.write() {
            *slot = Some(p);
        }
    }

    #[cfg(feature = "listen")]
    fn get(&self) -> Option<std::sync::Arc<crate::listen::Pairing>> {
        self.0.read().ok().and_then(|p| p.clone())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.files.sock);
        let _ = std::fs::remove_file(&self.files.lock);
    }
}

/// Serves hub `name` in `dir` (within a Tokio runtime). Fails when a live hub has that
/// name; a dead one's files are replaced.
pub fn serve(dir: &std::path::Path, name: &str) -> std::io::Result<Served> {
    serve_listening(dir, name, None, None)
}

/// A loopback address to listen on too, the tokens it accepts, and the host names it
/// answers besides loopback ones (`--allow-host`).
#[derive(Debug, Clone)]
pub struct Listen {
    pub addr: std::net::SocketAddr,
    pub store: crate::tokens::Store,
    pub hosts: Vec<String>,
}

/// [`serve`], and the loopback listener on `listen` when given (a feature of the build:
/// without it, asking for one is an error). `store`: the tokens of a listener started
/// later ([`Served::listen`]); a hub without one takes none.
pub fn serve_listening(
    dir: &std::path::Path,
    name: &str,
    listen: Option<Listen>,
    #[cfg_attr(not(feature = "listen"), allow(unused_variables))] store: Option<
        crate::tokens::Store,
    >,
) -> std::io::Result<Served> {
    let files = HubFiles::new(dir, name);
    let held = try_hold(&files)?.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("a running Trellis serves the hub {name}"),
        )
    })?;
    // We hold the name: a socket file there is a dead hub's.
    if std::fs::symlink_metadata(&files.sock).is_ok() {
        std::fs::remove_file(&files.sock)?;
    }
    let listener = UnixListener::bind(&files.sock)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&files.sock, std::fs::Permissions::from_mode(0o600))?;
    }
    let (tx, calls) = mpsc::channel(64);
    #[cfg(feature = "listen")]
    let listening = match listen {
        Some(l) => Some(crate::listen::listen(l.addr, l.store, l.hosts, tx.clone())?),
        None => None,
    };
    #[cfg(not(feature = "listen"))]
    if listen.is_some() {
        return Err(std::io::Error::other(
            "this build has no listener (cargo feature `listen`)",
        ));
    }
    let pairing = PairingSlot::default();
    #[cfg(feature = "listen")]
    if let Some(l) = &listening {
        pairing.set(l.pairing.clone());
    }
    let task = tokio::spawn(accept(listener, tx.clone(), pairing.clone()));
    Ok(Served {
        files,
        calls,
        #[cfg(feature = "listen")]
        listening,
        #[cfg(feature = "listen")]
        store,
        pairing,
        tx,
        _held: held,
        task,
    })
}

async fn accept(listener: UnixListener, tx: mpsc::Sender<Call>, pairing: PairingSlot) {
    let slots = crate::slots::Slots::new(CONNECTIONS, PER_PROCESS);
    let mut next_conn = 0u64;
    let me = trellis_os::uid();
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors, most likely: never a busy loop.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // This user only, checked on every connection.
        let Ok(cred) = stream.peer_cred() else {
            continue;
        };
        if cred.uid() != me {
            continue;
        }
        let tx = tx.clone();
        let pairing = pairing.clone();
        let slots = slots.clone();
        next_conn += 1;
        let conn = next_conn;
        tokio::spawn(async move {
            let peer = cred.pid().map_or(0, |p| u64::from(p.unsigned_abs()));
            let Some(slot) = slots.admit(peer, ADMIT_WAIT).await else {
                let _ = write_line(
                    &mut stream,
                    &Response::error(
                        0,
                        "busy",
                        format!(
                            "the hub's {CONNECTIONS} connections are all at work (or this process holds {PER_PROCESS}): try again"
                        ),
                    ),
                )
                .await;
                return;
            };
            let _ = connection(stream, cred.pid(), conn, tx.clone(), pairing, &slot).await;
            drop(slot);
            // Whatever this connection claimed goes with it.
            let (reply, _) = oneshot::channel();
            let hangup = Request {
                id: 0,
                op: crate::wire::Op::Hangup,
                client: String::new(),
                operation_id: None,
                attachment: None,
            };
            let _ = tx
                .send(Call {
                    request: hangup,
                    pid: None,
                    conn,
                    reply,
                })
                .await;
        });
    }
}

/// One client: request lines in, answers out, in order.
async fn connection(
    mut stream: UnixStream,
    pid: Option<i32>,
    conn: u64,
    tx: mpsc::Sender<Call>,
    pairing: PairingSlot,
    slot: &crate::slots::Slot,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let line = &line[..line.len() - 1];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let busy = slot.busy();
            let reply = match serde_json::from_slice::<Request>(line) {
                // Pairing codes belong to the listener, not to any session.
                Ok(Request {
                    id,
                    op: crate::wire::Op::Pair,
                    ..
                }) => Reply::Once(pair(id, &pairing)),
                Ok(request) => {
                    let id = request.id;
                    let (reply, rx) = oneshot::channel();
                    if tx
                        .send(Call {
                            request,
                            pid,
                            conn,
                            reply,
                        })
                        .await
                        .is_err()
                    {
                        return Ok(());
                    }
                    match tokio::time::timeout(ANSWER_WAIT, rx).await {
                        Ok(Ok(r)) => r,
                        _ => Reply::Once(Response::error(
                            id,
                            "busy",
                            "the hub did not answer in time",
                        )),
                    }
                }
                Err(e) => Reply::Once(Response::error(
                    0,
                    "bad_request",
                    format!("not a request: {e}"),
                )),
            };
            match reply {
                Reply::Once(answer) => write_line(&mut stream, &answer).await?,
                Reply::Follow(answer, follow) => {
                    write_line(&mut stream, &answer).await?;
                    // The connection is the follower's from now on (at work while it
                    // follows: never let go for a newcomer).
                    return follow_on(stream, answer.id, follow).await;
                }
            }
            drop(busy);
        }
        if buf.len() > REQUEST_LIMIT {
            return Err(std::io::Error::other("request too long"));
        }
        // Nothing begun: it may wait IDLE; a line begun comes whole within LINE_WAIT.
        let wait = if buf.is_empty() { IDLE } else { LINE_WAIT };
        let n = tokio::select! {
            _ = slot.kicked() => return Ok(()),
            read = tokio::time::timeout(wait, stream.read(&mut chunk)) => match read {
                Ok(r) => r?,
                Err(_) => return Ok(()),
            },
        };
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A new pairing code of the hub's listener, if it has one.
#[cfg(feature = "listen")]
fn pair(id: u64, pairing: &PairingSlot) -> Response {
    match pairing.get().map(|p| p.new_code()) {
        Some(Ok((_, url))) => Response {
            id,
            body: Body::Paired {
                url,
                expires_s: crate::listen::PAIR_TTL.as_secs(),
            },
        },
        Some(Err(e)) => Response::error(id, "busy", e.to_string()),
        None => no_listener(id),
    }
}

#[cfg(not(feature = "listen"))]
fn pair(id: u64, _: &PairingSlot) -> Response {
    no_listener(id)
}

fn no_listener(id: u64) -> Response {
    Response::error(
        id,
        "no_listener",
        "this hub has no listener (trellis serve --listen 127.0.0.1:0 gives it one)",
    )
}

/// Writes one line; a client that stops reading is dropped, never waited on.
async fn write_line(stream: &mut UnixStream, answer: &Response) -> std::io::Result<()> {
    let mut out = serde_json::to_vec(answer).unwrap_or_default();
    out.push(b'\n');
    tokio::time::timeout(WRITE_WAIT, stream.write_all(&out))
        .await
        .map_err(|_| std::io::Error::other("the client stopped reading"))?
}

/// Pushes a followed session's progress (the latest each time) until the session ends
/// or the follower goes; the follower's lease of control goes with its connection.
async fn follow_on(mut stream: UnixStream, id: u64, follow: Follow) -> std::io::Result<()> {
    // The lease and the attachment's id live as long as this connection.
    let Follow {
        mut progress,
        lease: _lease,
        attachment: _attachment,
    } = follow;
    let mut chunk = [0u8; 512];
    let mut first = true;
    loop {
        let gone = if first {
            first = false;
            false
        } else {
            tokio::select! {
                r = progress.changed() => r.is_err(),
                // A follower says nothing more; its end (or an error) ends the follow.
                r = stream.read(&mut chunk) => match r {
                    Ok(0) | Err(_) => return Ok(()),
                    Ok(_) => continue,
                },
            }
        };
        let mut now = progress.borrow_and_update().clone();
        now.ended |= gone;
        let ended = now.ended;
        write_line(
            &mut stream,
            &Response {
                id,
                body: Body::Progress(now),
            },
        )
        .await?;
        if ended {
            return Ok(());
        }
    }
}
