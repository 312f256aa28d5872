//! Keeping the index up to date while a session runs: a thread that follows the session's
//! log ([`crate::Follow`]: each read goes on where the last stopped), reading when it is
//! told a turn ended, every second while a turn writes more than a MiB, and once more
//! when the session closes. Requests that pile up while it works are served by one read.
//!
//! The session can always be found again from its log: one in the sessions directory by
//! the scan every `trellis sessions` command makes, one elsewhere through the pointer
//! written here before anything else ([`crate::outside_logs`]). What failed (the pointer, the
//! index) is kept and told at the end ([`Background::finish`]), never silently dropped.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Index;

/// How often a running turn's log is looked at (more often while it grows: a read that
/// starts later leaves more to read at the turn's end), and by how much it must have
/// grown to be read before the turn ends.
const POLL: Duration = Duration::from_millis(250);
const POLL_GROWING: Duration = Duration::from_millis(100);
const FOLLOW_AT: u64 = 1 << 20;

#[derive(Debug)]
pub struct Background {
    tx: Option<Sender<()>>,
    done: Receiver<()>,
    problem: Arc<Mutex<Problem>>,
    log: PathBuf,
}

/// What went wrong, by the step that failed (a later success of the same step clears it).
#[derive(Debug, Default)]
struct Problem {
    pointer: Option<String>,
    index: Option<String>,
}

fn lock(p: &Mutex<Problem>) -> std::sync::MutexGuard<'_, Problem> {
    match p.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Background {
    /// Starts the thread for the log at `log`, indexing into the file `index`; a log
    /// outside `sessions_dir` is recorded at once, and registered in the index first
    /// thing on the thread.
    pub fn start(index: PathBuf, sessions_dir: &Path, log: PathBuf) -> Background {
        Background::with(index, sessions_dir, log, true)
    }

    /// Like [`Background::start`], but only registers the log: its content is read by the
    /// next `trellis sessions` command, not while the session runs. For headless runs,
    /// whose machines (a CI runner, a pod) rarely search their history and should not pay
    /// for it during the run.
    pub fn register_only(index: PathBuf, sessions_dir: &Path, log: PathBuf) -> Background {
        Background::with(index, sessions_dir, log, false)
    }

    fn with(index: PathBuf, sessions_dir: &Path, log: PathBuf, content: bool) -> Background {
        // The index is shared by every directory: its paths are absolute.
        let log = std::path::absolute(&log).unwrap_or(log);
        let problem = Arc::new(Mutex::new(Problem::default()));
        if !log.starts_with(sessions_dir)
            && let Err(e) = crate::outside_logs::remember(&index, &log)
        {
            lock(&problem).pointer = Some(format!(
                "its log is outside the sessions directory and could not be recorded ({e})"
            ));
        }
        let (tx, rx) = channel::<()>();
        let (done_tx, done) = channel();
        let shared = problem.clone();
        let spawned = std::thread::Builder::new()
            .name("session-index".into())
            .spawn({
                let log = log.clone();
                move || serve(index, log, rx, done_tx, shared, content)
            });
        if let Err(e) = &spawned {
            lock(&problem).index = Some(format!("the indexing thread did not start ({e})"));
        }
        Background {
            tx: spawned.ok().map(|_| tx),
            done,
            problem,
            log,
        }
    }

    /// The session's log, as the index knows it (absolute).
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// A turn ended: read what the log gained.
    pub fn touch(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(());
        }
    }

    /// The session is over: one last read, waited for at most `wait` (the next
    /// `trellis sessions` command catches up with whatever is left). Returns what is
    /// wrong, if anything: why the session may be missing from the history for now.
    pub fn finish(&mut self, wait: Duration) -> Option<String> {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(());
            drop(tx);
            let _ = self.done.recv_timeout(wait);
        }
        let p = lock(&self.problem);
        match (&p.pointer, &p.index) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        }
    }
}

fn serve(
    index: PathBuf,
    log: PathBuf,
    rx: Receiver<()>,
    done: Sender<()>,
    problem: Arc<Mutex<Problem>>,
    content: bool,
) {
    // The session's own work comes first: indexing runs on CPU time it leaves.
    trellis_os::priority::idle_this_thread(trellis_os::priority::LOWEST);
    let report = |r: crate::Result<()>, what: &str| {
        if let Err(e) = &r
            && e.is_damage()
        {
            crate::suspect(&index);
        }
        lock(&problem).index = r.err().map(|e| format!("{what}: {e}"));
    };
    let open = || -> crate::Result<Index> {
        let (mut ix, _) = Index::open(&index)?;
        ix.register(&log)?;
        if content {
            // In the session's process: the smaller cache and term hash (each read sets
            // the hash again, in its turn, when another process changed it).
            let _ = ix.following();
        }
        Ok(ix)
    };
    // The log is known to the index from the start: whatever this thread does not get
    // to read (the session killed, the last read cut short at exit) the next
    // `trellis sessions` command reads.
    let mut ix = match open() {
        Ok(ix) => Some(ix),
        Err(e) => {
            report(Err(e), "the session index could not register it");
            None
        }
    };
    // What the log had when it was last read: a turn that goes on is read again once it
    // has grown by FOLLOW_AT, so that the end of a long turn leaves little to read.
    let mut state: Option<crate::Follow> = None;
    let mut read_len = 0u64;
    // The log's length when last looked at, and whether it had grown then.
    let mut seen_len = 0u64;
    let mut growing = false;
    loop {
        let last = match rx.recv_timeout(if growing { POLL_GROWING } else { POLL }) {
            Ok(()) => {
                // Everything asked meanwhile is served by this one read.
                let mut closed = false;
                loop {
                    match rx.try_recv() {
                        Ok(()) => {}
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            closed = true;
                            break;
                        }
                    }
                }
                closed
            }
            Err(RecvTimeoutError::Timeout) => {
                let len = std::fs::metadata(&log).map_or(0, |m| m.len());
                growing = len != seen_len;
                seen_len = len;
                if !content || len < read_len + FOLLOW_AT {
                    continue;
                }
                false
            }
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if ix.is_none() {
            match open() {
                Ok(i) => ix = Some(i),
                Err(e) => report(Err(e), "the session index could not register it"),
            }
        }
        if let Some(i) = ix.as_mut().filter(|_| content) {
            read_len = std::fs::metadata(&log).map_or(read_len, |m| m.len());
            // A failure here (a locked or full disk) is caught up later by the next
            // read or `trellis sessions`; the session is never disturbed.
            report(
                i.follow(&log, &mut state, last).map(|_| ()),
                "the session index could not read it",
            );
            // The term hash the read freed goes back to the system, not kept by this
            // thread while it waits (see `trim_c_heap`).
            trellis_os::usage::trim_c_heap();
        }
        if last {
            break;
        }
    }
    let _ = done.send(());
}
