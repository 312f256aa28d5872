//! The bounds of ACP clients: how many connections a token (and everyone) may hold, and
//! how much a streamable-HTTP connection may have on its way to its client.
//!
//! The SDK's streamable-HTTP transport queues what goes to a client without a bound (its
//! mailboxes wait for a stream the client may never open). So the facade's lines reach
//! the transport through a [`Window`]: at most [`WINDOW`] bytes handed over and not yet
//! taken by the client (counted as the responses' bodies are written), and a client that
//! leaves the window full for [`STALL`] is let go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::log::STALL;

/// ACP connections one token may hold at once.
pub(super) const PER_TOKEN: usize = 8;
/// ACP connections the listener holds at once.
pub(super) const ALL: usize = 32;

/// Bytes a streamable-HTTP connection may have handed to the transport and its client
/// not taken yet.
pub(super) const WINDOW: u64 = 1 << 20;

/// Bytes a streamable-HTTP client may have sent that its facade has not read yet (more:
/// it is told to slow down).
pub(super) const INBOUND: u64 = 4 << 20;

/// How long a streamable-HTTP connection may go without a request and without a stream
/// open before it is ended (a client that crashed, or forgot to `DELETE`): its place, and
/// the control of a session it held, go with it.
pub(crate) const ABANDONED: Duration = Duration::from_secs(120);

/// The listener's ACP connections, by token.
#[derive(Debug, Default, Clone)]
pub(in crate::listen) struct Seats(Arc<Mutex<HashMap<String, usize>>>);

/// One connection's place (given back when dropped).
#[derive(Debug)]
pub(super) struct Seat {
    seats: Seats,
    token: String,
}

/// Why a connection found no place.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Full {
    Token,
    All,
}

impl Seats {
    /// A place for a connection of `token`, if it and the listener have room.
    pub(super) fn take(&self, token: &str) -> Result<Seat, Full> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.get(token).copied().unwrap_or(0) >= PER_TOKEN {
            return Err(Full::Token);
        }
        if held.values().sum::<usize>() >= ALL {
            return Err(Full::All);
        }
        *held.entry(token.to_string()).or_default() += 1;
        Ok(Seat {
            seats: self.clone(),
            token: token.to_string(),
        })
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut held = self.seats.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.token) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.token);
            }
        }
    }
}

/// What one streamable-HTTP connection has on its way, both ways.
#[derive(Debug)]
pub(crate) struct Window {
    /// How long the window may stay full before the client is let go.
    stall: std::time::Duration,
    /// Bytes of lines handed to the transport.
    given: AtomicU64,
    /// Bytes of its responses' bodies written toward the client.
    taken: AtomicU64,
    room: Notify,
    /// Bytes of the client's messages not yet read by its facade.
    inbound: AtomicU64,
    /// The connection's facade ended (or is to end: see `gone`).
    closed: AtomicBool,
    /// Woken when the connection is ended from outside (abandoned).
    gone: Notify,
    /// When the client last made a request of it.
    last: Mutex<Instant>,
    /// Its responses whose bodies are being written (a stream open counts).
    open: AtomicUsize,
}

impl Default for Window {
    fn default() -> Window {
        Window::within(STALL)
    }
}

impl Window {
    fn within(stall: std::time::Duration) -> Window {
        Window {
            stall,
            given: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            room: Notify::new(),
            inbound: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            gone: Notify::new(),
            last: Mutex::new(Instant::now()),
            open: AtomicUsize::new(0),
        }
    }

    /// The client made a request of the connection.
    pub(crate) fn touch(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether the client left the connection: no request for [`ABANDONED`], no stream
    /// open.
    pub(crate) fn abandoned(&self) -> bool {
        self.open.load(Ordering::Acquire) == 0
            && self
                .last
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed()
                > ABANDONED
    }

    /// Ends the connection from outside: its component's stream ends, and the transport
    /// with it.
    pub(crate) fn end(&self) {
        self.close();
        self.gone.notify_waiters();
        self.gone.notify_one();
    }

    /// Resolves once the connection is ended from outside.
    pub(crate) async fn ended(&self) {
        loop {
            let gone = self.gone.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            if self.is_closed() {
                return;
            }
            gone.await;
        }
    }

    /// Waits (at most [`STALL`]) until the window has room, then counts `bytes` as
    /// handed over: `false` when the client left it full that long.
    pub(crate) async fn admit(&self, bytes: usize) -> bool {
        let wait = async {
            loop {
                let room = self.room.notified();
                tokio::pin!(room);
                room.as_mut().enable();
                let given = self.given.load(Ordering::Acquire);
                if given < self.taken.load(Ordering::Acquire) + WINDOW {
                    return;
                }
                room.await;
            }
        };
        if tokio::time::timeout(self.stall, wait).await.is_err() {
            return false;
        }
        self.given.fetch_add(bytes as u64, Ordering::AcqRel);
        true
    }

    /// `bytes` of a response's body went toward the client.
    pub(crate) fn took(&self, bytes: usize) {
        self.taken.fetch_add(bytes as u64, Ordering::AcqRel);
        self.room.notify_waiters();
    }

    /// Counts `bytes` sent by the client, unless more than [`INBOUND`] wait already.
    pub(crate) fn receive(&self, bytes: usize) -> bool {
        let bytes = bytes as u64;
        self.inbound
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < INBOUND).then_some(n + bytes)
            })
            .is_ok()
    }

    /// `bytes` of the client's were read by its facade (or never reached it).
    pub(crate) fn received(&self, bytes: usize) {
        let _ = self
            .inbound
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(bytes as u64))
            });
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// Streamable-HTTP connections by id: the token that opened each, and its window.
pub(crate) type Owners = Mutex<HashMap<String, (String, Arc<Window>)>>;

/// Ends the connections of `owners` their clients left (see [`Window::abandoned`]) and
/// forgets those that ended, every [`ABANDONED`]/8, for as long as `holder` gives them.
pub(crate) async fn sweep<T>(holder: std::sync::Weak<T>, owners: impl Fn(&T) -> &Owners) {
    let mut every = tokio::time::interval(ABANDONED / 8);
    loop {
        every.tick().await;
        let Some(h) = holder.upgrade() else {
            return;
        };
        owners(&h)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, (_, w)| {
                if w.abandoned() {
                    w.end();
                }
                !w.is_closed()
            });
    }
}

/// A response body of a connection being written (see [`Window::abandoned`]).
struct Open(Arc<Window>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// `body`, counting what of it is written toward the client against `window`, and open
/// while it is written.
pub(crate) fn counted(body: axum::body::Body, window: Arc<Window>) -> axum::body::Body {
    window.open.fetch_add(1, Ordering::AcqRel);
    let open = Open(window);
    crate::listen::body::Watched::body(body, move |bytes| open.0.took(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_its_share_and_everyone_the_whole() {
        let seats = Seats::default();
        let mine: Vec<Seat> = (0..PER_TOKEN).map(|_| seats.take("a").unwrap()).collect();
        assert_eq!(seats.take("a").unwrap_err(), Full::Token);
        let mut others = Vec::new();
        for i in 0.. {
            match seats.take(&format!("t{i}")) {
                Ok(s) => others.push(s),
                Err(full) => {
                    assert_eq!(full, Full::All);
                    break;
                }
            }
        }
        assert_eq!(mine.len() + others.len(), ALL);
        drop(mine);
        assert!(
            seats.take("a").is_ok(),
            "places come back with their connections"
        );
    }

    #[tokio::test]
    async fn a_full_window_waits_for_the_client_then_gives_up() {
        let stall = std::time::Duration::from_millis(200);
        let w = Arc::new(Window::within(stall));
        assert!(w.admit(WINDOW as usize).await);
        // Full: the next line waits for the client to take some.
        let waiting = {
            let w = w.clone();
            tokio::spawn(async move { w.admit(10).await })
        };
        tokio::time::sleep(stall / 2).await;
        w.took(100);
        assert!(waiting.await.unwrap(), "room once the client took some");
        assert!(w.admit(100).await);
        // Full again, and nobody reads: let go after the stall.
        assert!(!w.admit(10).await);
    }

    #[tokio::test]
    async fn a_connection_left_without_a_stream_is_ended() {
        let w = Arc::new(Window::default());
        assert!(!w.abandoned(), "just made");
        let Some(long_ago) = Instant::now().checked_sub(ABANDONED * 2) else {
            return;
        };
        *w.last.lock().unwrap() = long_ago;
        // A stream open keeps it, whatever the time.
        let body = counted(axum::body::Body::empty(), w.clone());
        assert!(!w.abandoned(), "a stream is open");
        drop(body);
        // Dropping the body is a sign of life too.
        assert!(!w.abandoned());
        *w.last.lock().unwrap() = long_ago;
        assert!(w.abandoned());
        let waiting = {
            let w = w.clone();
            tokio::spawn(async move { w.ended().await })
        };
        w.end();
        waiting.await.unwrap();
        assert!(w.is_closed());
    }

    #[test]
    fn what_a_client_sends_is_bounded_until_read() {
        let w = Window::default();
        assert!(w.receive(INBOUND as usize - 1));
        assert!(w.receive(10), "one message may cross the bound");
        assert!(!w.receive(1));
        w.received(INBOUND as usize);
        assert!(w.receive(1));
    }
}
