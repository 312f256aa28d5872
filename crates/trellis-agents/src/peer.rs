//! A small synchronous JSON-RPC peer over stdio for the built-in agents.
//!
//! Invariants: one writer (the caller), one reader thread feeding a queue; messages that
//! arrive while waiting for a specific answer are kept in arrival order for later.

use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

/// What came from the client.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A JSON value (request, notification or response).
    Message(Value),
    /// The client closed our stdin.
    Closed,
}

pub struct Peer {
    out: Box<dyn Write + Send>,
    rx: Receiver<Value>,
    backlog: VecDeque<Value>,
    next_id: i64,
    closed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("the client closed the connection")]
    Closed,
    #[error("client answered with an error: {0}")]
    Rpc(Value),
    /// Said once: the error is the message, not also its source (printed with its causes,
    /// the reason came twice).
    #[error("write failed: {0}")]
    Io(io::Error),
}

impl From<io::Error> for PeerError {
    fn from(e: io::Error) -> Self {
        PeerError::Io(e)
    }
}

impl Peer {
    /// A peer on this process's stdin/stdout.
    pub fn stdio() -> Peer {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stdin = io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        Peer {
            out: Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
            rx,
            backlog: VecDeque::new(),
            next_id: 0,
            closed: false,
        }
    }

    /// Writes one raw line (no validation) and flushes.
    pub fn send_raw(&mut self, line: &str) -> io::Result<()> {
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    /// Writes one message, buffered (call [`Peer::flush`] or any flushing method after).
    pub fn send_buffered(&mut self, v: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn send(&mut self, v: &Value) -> io::Result<()> {
        self.send_buffered(v)?;
        self.flush()
    }

    pub fn notify(&mut self, method: &str, params: Value) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    pub fn respond(&mut self, id: &Value, result: Value) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    pub fn respond_error(&mut self, id: &Value, code: i64, message: &str) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    }

    /// A fresh id for a request of ours.
    pub fn next_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends a request and waits for its answer; other messages are kept for later.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, PeerError> {
        let id = self.next_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let answer =
            self.wait_for(|v| v.get("method").is_none() && v.get("id") == Some(&json!(id)))?;
        match answer.get("error") {
            Some(e) => Err(PeerError::Rpc(e.clone())),
            None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Waits for the first message matching `pred` (from the backlog first).
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Result<Value, PeerError> {
        if let Some(pos) = self.backlog.iter().position(&pred)
            && let Some(v) = self.backlog.remove(pos)
        {
            return Ok(v);
        }
        loop {
            match self.recv_raw(None) {
                Incoming::Message(v) if pred(&v) => return Ok(v),
                Incoming::Message(v) => self.backlog.push_back(v),
                Incoming::Closed => return Err(PeerError::Closed),
            }
        }
    }

    /// Waits up to `timeout` for the first message matching `pred` (backlog first); others
    /// are kept for later. `None` when nothing matched in time or the client is gone.
    pub fn wait_for_timeout(
        &mut self,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Value> {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos);
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.recv_raw(Some(left)) {
                Incoming::Message(v) if pred(&v) => return Some(v),
                Incoming::Message(v) => self.backlog.push_back(v),
                Incoming::Closed => return None,
            }
        }
    }

    /// Writes raw bytes (no validation, no newline added) and flushes.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()
    }

    /// The next message in arrival order (backlog first); `timeout` None waits forever.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Option<Incoming> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(Incoming::Message(v));
        }
        match self.recv_raw(timeout) {
            Incoming::Message(v) => Some(Incoming::Message(v)),
            Incoming::Closed if timeout.is_some() && !self.closed => None,
            Incoming::Closed => Some(Incoming::Closed),
        }
    }

    fn recv_raw(&mut self, timeout: Option<Duration>) -> Incoming {
        if self.closed {
            return Incoming::Closed;
        }
        let r = match timeout {
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => self.rx.recv_timeout(d),
        };
        match r {
            Ok(v) => Incoming::Message(v),
            Err(RecvTimeoutError::Timeout) => Incoming::Closed,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                Incoming::Closed
            }
        }
    }

    /// True (and consumes it) if a `session/cancel` has arrived; waits up to `wait`.
    pub fn cancelled(&mut self, wait: Duration) -> bool {
        let is_cancel = |v: &Value| v.get("method") == Some(&json!("session/cancel"));
        if let Some(pos) = self.backlog.iter().position(is_cancel) {
            self.backlog.remove(pos);
            return true;
        }
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.recv_raw(Some(left)) {
                Incoming::Message(v) if is_cancel(&v) => return true,
                Incoming::Message(v) => self.backlog.push_back(v),
                Incoming::Closed => return self.closed,
            }
            if left.is_zero() {
                return false;
            }
        }
    }
}
