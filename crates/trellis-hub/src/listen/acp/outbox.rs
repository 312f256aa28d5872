//! What waits for one ACP client to read it: bounded in messages and in bytes, so a
//! client that stops reading holds at most [`BYTES`] of the hub's memory here, and is let
//! go once what it left unread has waited [`STALL`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::log::STALL;

/// Messages waiting for one client.
const MESSAGES: usize = 256;

/// Bytes waiting for one client (a larger message takes all of them, alone).
pub(super) const BYTES: u32 = 4 << 20;

/// A message on its way to a client, with the room it takes (given back when dropped:
/// once the message is written to the client, or handed to what bounds it from there).
#[derive(Debug)]
pub(super) struct Out {
    pub line: String,
    _room: OwnedSemaphorePermit,
}

/// The sending side, shared by everything that writes to one client.
#[derive(Debug, Clone)]
pub(super) struct Outbox {
    tx: mpsc::Sender<Out>,
    bytes: Arc<Semaphore>,
    stall: Duration,
}

/// A client's outbox and what its writer reads.
pub(super) fn outbox() -> (Outbox, mpsc::Receiver<Out>) {
    outbox_within(STALL)
}

/// [`outbox`], letting a client go after `stall` instead.
fn outbox_within(stall: Duration) -> (Outbox, mpsc::Receiver<Out>) {
    let (tx, rx) = mpsc::channel(MESSAGES);
    let bytes = Arc::new(Semaphore::new(BYTES as usize));
    (Outbox { tx, bytes, stall }, rx)
}

fn room(line: &str) -> u32 {
    u32::try_from(line.len())
        .unwrap_or(u32::MAX)
        .clamp(1, BYTES)
}

impl Outbox {
    /// Queues `line`, waiting at most [`STALL`] for room: `false` when the client is gone
    /// or left that much unread (it is to be let go).
    pub(super) async fn send(&self, line: String) -> bool {
        let queued = async {
            let permit = self
                .bytes
                .clone()
                .acquire_many_owned(room(&line))
                .await
                .ok()?;
            self.tx
                .send(Out {
                    line,
                    _room: permit,
                })
                .await
                .ok()
        };
        matches!(tokio::time::timeout(self.stall, queued).await, Ok(Some(())))
    }

    /// Queues `line` if there is room now (what may be lost when a client falls behind:
    /// news of another client leaving).
    pub(super) fn try_send(&self, line: String) -> bool {
        let Ok(permit) = self.bytes.clone().try_acquire_many_owned(room(&line)) else {
            return false;
        };
        self.tx
            .try_send(Out {
                line,
                _room: permit,
            })
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_bound_what_waits_and_a_reader_frees_them() {
        let (out, mut rx) = outbox_within(Duration::from_millis(100));
        let big = "x".repeat((BYTES / 2) as usize);
        assert!(out.send(big.clone()).await);
        assert!(out.send(big.clone()).await);
        // Full by bytes long before by messages: the third waits, then gives up.
        assert!(!out.send("y".into()).await);
        assert!(!out.try_send("y".into()));
        let first = rx.recv().await.expect("queued");
        assert_eq!(first.line.len(), big.len());
        drop(first);
        assert!(out.send("y".into()).await, "room once the reader took one");
        // A line larger than the whole bound goes alone, never waits forever.
        while rx.try_recv().is_ok() {}
        assert!(out.send("z".repeat(BYTES as usize * 2)).await);
        assert!(!out.try_send("w".into()));
    }
}
