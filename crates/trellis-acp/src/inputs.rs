//! The queue from the connection to the driver, with backpressure on the agent.
//!
//! An agent can write far faster than a session can be reduced (a load generator sends
//! 10 000 calls in a quarter of a second); an unbounded queue then holds every decoded
//! frame at once. The agent's reader waits instead while more than [`HIGH`] actions are
//! queued, until the driver has taken the queue down to [`LOW`]: the pipe fills and the
//! agent waits on it, as it would on any slow reader.
//!
//! Invariants: only the agent's reader waits (client records and the SDK never do), and
//! never on a queue nobody reads any more (dropping [`Inputs`] opens the gate for good);
//! a reader that checks the gate cannot miss the wake-up (it registers first).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use trellis_core::update::Action;

use crate::login::Login;

/// From the connection to the driver. Actions are the hot path and stay unboxed (a box
/// per frame would cost an allocation per update); the other variants are rare.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Input {
    /// A reducer action (frames and client records, in log order).
    Action(Action),
    /// A line of the agent's stderr.
    Stderr(String),
    /// Something went wrong on our side that the user should see.
    Warning(String),
    /// What became of the MCP servers offered at setup.
    Mcp(Vec<crate::mcp::McpOffer>),
    /// The agent wants the user to log in by running it in the terminal: the front end
    /// runs the login and answers [`crate::client::Command::LoginDone`]; setup waits (its timeout too).
    Login(Login),
    /// The agent forked its own session (`session/fork`): it remembers the conversation,
    /// so no transcript needs to be carried to it.
    Forked,
    /// The session is set up; prompts may be sent.
    Ready,
    /// The connection is over; `error` says why if it was not a clean shutdown.
    Closed { error: Option<String> },
}

/// What travels on the queue: one input, or the actions of one read of the agent's
/// output together (one send and one wake-up for a read's lines, not one per line).
/// A single input stays unboxed, as [`Input`]'s actions do.
#[allow(clippy::large_enum_variant)]
enum Queued {
    One(Input),
    Many(Vec<Input>),
}

/// The sending side of the queue to the driver.
#[derive(Clone)]
pub struct Sender(UnboundedSender<Queued>);

/// The queue's receiving side, until [`crate::Recorder::inputs`] makes it [`Inputs`].
pub struct Receiver(UnboundedReceiver<Queued>);

/// A queue to the driver.
pub fn channel() -> (Sender, Receiver) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (Sender(tx), Receiver(rx))
}

impl Sender {
    /// Queues `input`; false once nobody reads the queue any more.
    pub fn send(&self, input: Input) -> bool {
        self.0.send(Queued::One(input)).is_ok()
    }

    /// Queues `inputs` in order, as one.
    pub(crate) fn send_all(&self, mut inputs: Vec<Input>) {
        let _ = match inputs.len() {
            0 => return,
            1 => self.0.send(Queued::One(inputs.remove(0))),
            _ => self.0.send(Queued::Many(inputs)),
        };
    }
}

/// Actions queued above which the agent's reader waits.
pub const HIGH: usize = 2048;
/// Actions queued at which it reads again.
pub const LOW: usize = 512;

/// How many actions are queued, shared by the recorder (which adds) and [`Inputs`].
#[derive(Default)]
pub struct Backlog {
    queued: AtomicUsize,
    closed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    pub(crate) fn sent(&self, n: usize) {
        self.queued.fetch_add(n, Ordering::AcqRel);
    }

    fn took(&self) {
        let before = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(1))
            })
            .unwrap_or(0);
        if before == LOW + 1 {
            self.drained.notify_waiters();
        }
    }

    /// Actions queued now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Waits while the queue is above [`HIGH`] (until it is down to [`LOW`]).
    pub async fn room(&self) {
        loop {
            let wake = self.drained.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            if self.closed.load(Ordering::Acquire) || self.queued() <= HIGH {
                return;
            }
            wake.await;
        }
    }
}

/// What the connection reports, in order (see [`Input`]).
pub struct Inputs {
    rx: UnboundedReceiver<Queued>,
    /// The rest of the read being taken.
    read: std::vec::IntoIter<Input>,
    backlog: Arc<Backlog>,
}

impl Inputs {
    pub(crate) fn new(rx: Receiver, backlog: Arc<Backlog>) -> Inputs {
        Inputs {
            rx: rx.0,
            read: Vec::new().into_iter(),
            backlog,
        }
    }

    /// The first of what came, the rest of a read kept for the next calls.
    fn first(&mut self, q: Queued) -> Option<Input> {
        match q {
            Queued::One(i) => Some(i),
            Queued::Many(v) => {
                self.read = v.into_iter();
                self.read.next()
            }
        }
    }

    fn took(&self, input: &Input) {
        if matches!(input, Input::Action(_)) {
            self.backlog.took();
        }
    }

    /// The next input; `None` once the connection is gone and everything was taken.
    pub async fn recv(&mut self) -> Option<Input> {
        let input = match self.read.next() {
            Some(i) => i,
            None => {
                let q = self.rx.recv().await?;
                self.first(q)?
            }
        };
        self.took(&input);
        Some(input)
    }

    pub fn try_recv(&mut self) -> Result<Input, TryRecvError> {
        let input = match self.read.next() {
            Some(i) => i,
            None => {
                let q = self.rx.try_recv()?;
                self.first(q).ok_or(TryRecvError::Empty)?
            }
        };
        self.took(&input);
        Ok(input)
    }

    pub fn is_empty(&self) -> bool {
        self.read.len() == 0 && self.rx.is_empty()
    }
}

impl Drop for Inputs {
    fn drop(&mut self) {
        self.backlog.closed.store(true, Ordering::Release);
        self.backlog.drained.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn action() -> Input {
        Input::Warning(String::new())
    }

    #[tokio::test]
    async fn the_reader_waits_above_high_until_the_queue_is_down_to_low() {
        let (tx, rx) = channel();
        let backlog = Arc::new(Backlog::default());
        let mut inputs = Inputs::new(rx, backlog.clone());
        let a = || {
            Input::Action(trellis_core::update::Action::Local {
                t: 0.0,
                record: Box::new(trellis_core::LocalRecord::StderrElided { lines: 0, bytes: 0 }),
            })
        };
        for _ in 0..HIGH + 10 {
            assert!(tx.send(a()));
        }
        assert!(tx.send(action()));
        backlog.sent(HIGH + 10);
        let b = backlog.clone();
        let waiter = tokio::spawn(async move { b.room().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "above HIGH: the reader waits");
        for _ in 0..HIGH + 10 - LOW - 1 {
            inputs.try_recv().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "not yet down to LOW");
        inputs.recv().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken at LOW")
            .unwrap();
        // A warning is not counted.
        assert_eq!(backlog.queued(), LOW);
    }

    #[tokio::test]
    async fn a_queue_nobody_reads_never_holds_the_reader() {
        let (_tx, rx) = channel();
        let backlog = Arc::new(Backlog::default());
        let inputs = Inputs::new(rx, backlog.clone());
        backlog.sent(HIGH * 2);
        let b = backlog.clone();
        let waiter = tokio::spawn(async move { b.room().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(inputs);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("released when the queue is dropped")
            .unwrap();
        // And a later check does not wait at all.
        tokio::time::timeout(Duration::from_secs(5), backlog.room())
            .await
            .unwrap();
    }
}
