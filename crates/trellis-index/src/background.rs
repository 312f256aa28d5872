//! Keeping the index up to date while a session runs: a thread that reads the session's
//! log again (from its last checkpoint) whenever it is told a turn ended, and once more
//! when the session closes. Requests that pile up while it works are served by one read.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use crate::Index;

#[derive(Debug)]
pub struct Background {
    tx: Option<Sender<()>>,
    done: Receiver<()>,
}

impl Background {
    /// Starts the thread for the log at `log`, indexing into the file `index`; the log is
    /// registered in the index at once.
    pub fn start(index: PathBuf, log: PathBuf) -> Background {
        let (tx, rx) = channel::<()>();
        let (done_tx, done) = channel();
        let spawned = std::thread::Builder::new()
            .name("session-index".into())
            .spawn(move || serve(index, log, rx, done_tx));
        Background {
            tx: spawned.ok().map(|_| tx),
            done,
        }
    }

    /// A turn ended: read what the log gained.
    pub fn touch(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(());
        }
    }

    /// The session is over: one last read, waited for at most `wait` (the next
    /// `trellis sessions` command catches up with whatever is left).
    pub fn finish(&mut self, wait: Duration) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(());
            drop(tx);
            let _ = self.done.recv_timeout(wait);
        }
    }
}

fn serve(index: PathBuf, log: PathBuf, rx: Receiver<()>, done: Sender<()>) {
    // The log is known to the index from the start: whatever this thread does not get
    // to read (the session killed, the last read cut short at exit) the next
    // `trellis sessions` command reads, also for a log outside the sessions directory.
    let mut ix: Option<Index> = Index::open(&index).ok().map(|(i, _)| i);
    if let Some(i) = ix.as_mut() {
        let _ = i.register(&log);
    }
    while rx.recv().is_ok() {
        // Everything asked meanwhile is served by this one read.
        while rx.try_recv().is_ok() {}
        if ix.is_none() {
            ix = Index::open(&index).ok().map(|(i, _)| i);
        }
        if let Some(i) = ix.as_mut() {
            // In the session's process: the small in-memory term hash.
            let _ = i.set_bulk(false);
            // A failure here (a locked or full disk) is caught up later by the next
            // read or `trellis sessions`; the session is never disturbed.
            let _ = i.update(&log);
        }
    }
    let _ = done.send(());
}
