//! One writer at a time per index file inside this process, handed on at once.
//!
//! SQLite lets one connection write at a time, and one that finds the file locked sleeps
//! and tries again (1, 2, 5 … 100 ms apart): eight sessions' index threads of one UI
//! following their logs left the lock unused for most of those sleeps. They now queue
//! here first, and the next one starts as soon as the last one commits. Another process
//! (a `trellis sessions` command, a second UI) is still waited for by SQLite's busy
//! timeout.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

#[derive(Default)]
struct Turnstile {
    busy: Mutex<bool>,
    freed: Condvar,
}

/// Held while writing; the next writer goes on when it is dropped.
pub(crate) struct Turn {
    of: Option<Arc<Turnstile>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(t) = self.of.take() {
            *lock(&t.busy) = false;
            t.freed.notify_one();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn turnstile(index: &Path) -> Arc<Turnstile> {
    static ALL: OnceLock<Mutex<HashMap<PathBuf, Arc<Turnstile>>>> = OnceLock::new();
    let mut all = lock(ALL.get_or_init(Mutex::default));
    all.entry(index.to_path_buf()).or_default().clone()
}

/// Waits up to `wait` for this process's other writers of `index` to be done. After
/// that, the caller goes on without its turn (SQLite's own lock still keeps the file
/// whole; it only waits less well).
pub(crate) fn take(index: &Path, wait: Duration) -> Turn {
    let t = turnstile(index);
    let busy = lock(&t.busy);
    let (mut busy, timed_out) = t
        .freed
        .wait_timeout_while(busy, wait, |b| *b)
        .unwrap_or_else(PoisonError::into_inner);
    if timed_out.timed_out() && *busy {
        return Turn { of: None };
    }
    *busy = true;
    drop(busy);
    Turn { of: Some(t) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_next_writer_goes_on_as_soon_as_the_last_is_done() {
        let path = Path::new("/nonexistent/index.sqlite");
        let first = take(path, Duration::from_secs(1));
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            let _second = take(path, Duration::from_secs(10));
            t.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        let waited = waiter.join().unwrap();
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        // Another file is its own queue.
        let _a = take(path, Duration::from_secs(1));
        let _b = take(
            Path::new("/nonexistent/other.sqlite"),
            Duration::from_millis(10),
        );
    }

    #[test]
    fn a_writer_that_keeps_its_turn_too_long_is_not_waited_for_ever() {
        let path = Path::new("/nonexistent/held.sqlite");
        let _held = take(path, Duration::from_secs(1));
        let t = Instant::now();
        let late = take(path, Duration::from_millis(50));
        assert!(late.of.is_none());
        assert!(t.elapsed() >= Duration::from_millis(50));
        // Its drop frees nothing it did not hold.
        drop(late);
        assert!(*lock(&turnstile(path).busy));
    }
}
