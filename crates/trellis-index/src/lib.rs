//! Session history (SPEC H1–H4): an SQLite index, with FTS5 full-text search, derived
//! from the JSONL session logs. The logs stay the source of truth: the index can be
//! deleted at any time and is rebuilt from them; one that is damaged or written by a
//! newer Trellis is set aside, never trusted.
//!
//! A log is read once: the index remembers, per log, the offset of its last turn end (a
//! checkpoint) and reads only what follows when the file grows. A line cut short at the
//! end of a file (a session still writing, a crash) is left for the next read.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod background;
mod content;
mod doc;
pub mod extract;
pub mod outside_logs;
mod query;
mod read;
mod reread;
mod schema;
mod search;
mod update;
mod write;
mod writers;

use std::path::{Path, PathBuf};

/// How long a session's read waits for the other sessions of this process writing into
/// the same index (SQLite's busy timeout, 5 s, then waits for other processes).
const FOLLOW_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// The full-text index's in-memory term hash, in bytes: for a command reading many logs,
/// and for a running session's reads (see [`Index::set_bulk`]). The sessions of one
/// process write in turn (`writers`), and the hash is emptied at each commit, so one is
/// full at a time. 1 MB flushed a small segment to disk so often that merging them was a
/// quarter of the writing: the eight sessions of a `fan 8` were caught up 0.9–1.3 s after
/// their turns ended, 0.6 s with 4 MB (8 MB did no better).
const BULK_HASH: i64 = 16 << 20;
const SMALL_HASH: i64 = 4 << 20;
/// Pages of write-ahead log (of 4 KiB: its kept size, 32 MiB) from which a running
/// session's commit copies it into the file itself (see [`Index::following`]).
const FOLLOW_CHECKPOINT_AT: i64 = 8192;

/// Sets the term hash's size when the file says another: the setting is the file's, and
/// writing it takes the write lock. Written on every read of a running session, it made
/// the eight sessions of a `fan 8` wait for each other outside their turns, in SQLite's
/// busy handler (up to 100 ms a try), so that a log went unread for over a second.
fn hash_size(conn: &Connection, bytes: i64) -> Result<()> {
    let now: Option<i64> = conn
        .prepare_cached("SELECT v FROM entries_fts_config WHERE k = 'hashsize'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if now != Some(bytes) {
        conn.prepare_cached("INSERT INTO entries_fts(entries_fts, rank) VALUES('hashsize', ?1)")?
            .execute([bytes])?;
    }
    Ok(())
}

pub use background::Background;
pub use extract::{CallRow, Doc, DocKind, Extractor, Facts, Sink};
pub use query::{CallCounts, Hit, ListFilter, Scope, SessionRow, fts_query};
pub use schema::{Found, SCHEMA, suspect};
pub use search::part_of_call;
pub use update::Follow;

/// The index file's name in Trellis's data directory.
pub const FILE: &str = "index.sqlite";

#[derive(Debug)]
pub enum Error {
    Sql(rusqlite::Error),
    Io(std::io::Error),
    /// No indexed session matches.
    NotFound(String),
    /// Several sessions match an id prefix.
    Ambiguous(String, Vec<String>),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Sql(e) => write!(f, "session index: {e}"),
            Error::Io(e) => write!(f, "{e}"),
            Error::NotFound(id) => write!(f, "no session {id:?} (see `trellis sessions list`)"),
            Error::Ambiguous(id, ids) => {
                write!(f, "{id:?} names several sessions: {}", ids.join(", "))
            }
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// SQLite found the file damaged: the next open checks it whole (see [`suspect`]).
    pub fn is_damage(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        matches!(self, Error::Sql(rusqlite::Error::SqliteFailure(e, _))
            if matches!(e.code, DatabaseCorrupt | NotADatabase))
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Sql(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// What one update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Updated {
    /// Logs read (wholly or from their checkpoint).
    pub logs: usize,
    /// Bytes of log read.
    pub bytes: u64,
    /// Logs no longer on disk, dropped from the index.
    pub gone: usize,
}

impl std::ops::AddAssign for Updated {
    fn add_assign(&mut self, o: Updated) {
        self.logs += o.logs;
        self.bytes += o.bytes;
        self.gone += o.gone;
    }
}

#[derive(Debug)]
pub struct Index {
    conn: Connection,
    path: PathBuf,
}

/// The short id of the session logged at `path`.
pub fn session_id(path: &Path) -> String {
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl Index {
    /// Opens (or creates) the index at `path`; `Found` says whether it was usable.
    pub fn open(path: &Path) -> Result<(Index, Found)> {
        let (conn, found) = schema::open(path)?;
        Ok((
            Index {
                conn,
                path: path.to_path_buf(),
            },
            found,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A transaction that writes: it takes the write lock at once (waiting up to the busy
    /// timeout). A deferred one that read first would fail without waiting when another
    /// process wrote meanwhile (its snapshot cannot become a writer).
    fn write_tx(&mut self) -> Result<rusqlite::Transaction<'_>> {
        Ok(self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
    }

    /// Brings the index up to date with every log under `sessions_dir` (recursively),
    /// every log recorded elsewhere (`--log FILE`, see [`outside_logs`]) and every other log
    /// it already knows; drops logs that are gone.
    pub fn refresh(&mut self, sessions_dir: &Path) -> Result<Updated> {
        let mut logs = self.logs_outside(sessions_dir);
        collect_logs(sessions_dir, &mut logs, 0);
        let known = self.known_paths()?;
        let mut done = Updated::default();
        for p in &known {
            let path = PathBuf::from(p);
            if !path.is_file() {
                self.forget(p)?;
                done.gone += 1;
            } else if !path.starts_with(sessions_dir) {
                logs.push(path);
            }
        }
        logs.sort();
        logs.dedup();
        done += self.update_all(&logs)?;
        Ok(done)
    }

    /// The logs recorded outside `sessions_dir`.
    fn logs_outside(&self, sessions_dir: &Path) -> Vec<PathBuf> {
        let mut logs = outside_logs::recorded(&self.path);
        logs.retain(|p| !p.starts_with(sessions_dir));
        logs
    }

    /// Every log the index knows.
    fn known_paths(&self) -> Result<Vec<String>> {
        let mut st = self.conn.prepare("SELECT path FROM sessions")?;
        let paths = st
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(paths)
    }

    /// How much of the full-text index's work is held in memory between flushes to disk:
    /// `bulk` (16 MB) for commands that read many logs, else 4 MB for a running session,
    /// which indexes in its own process (the setting is the index file's, so each user
    /// sets it), with a 2 MB page cache instead of 8. Indexing the small way is slower
    /// (it runs in the background).
    pub fn set_bulk(&self, bulk: bool) -> Result<()> {
        let cache_kib: i64 = if bulk { -8_000 } else { -2_000 };
        self.conn.pragma_update(None, "cache_size", cache_kib)?;
        // A write: in turn with this process's other writers (see `writers`).
        let _turn = writers::take(&self.path, FOLLOW_WAIT);
        hash_size(&self.conn, if bulk { BULK_HASH } else { SMALL_HASH })
    }

    /// Makes this connection one that follows a running session's log: the small cache and
    /// term hash ([`Index::set_bulk`]), and the write-ahead log copied into the file by
    /// [`Index::follow`] after its turn rather than by the commit that fills it: that copy
    /// ends with a sync to disk, which waited behind the sessions' own writes and held
    /// up the next session's read (the eight of a `fan 8` were caught up 0.1–0.2 s
    /// later). A copy made while the next session writes cannot start the log over, so
    /// a commit still copies once the log passes [`FOLLOW_CHECKPOINT_AT`] pages: without
    /// that, it grew to 120 MB beside a 63 MB index; with it, 39 MB at most.
    pub fn following(&self) -> Result<()> {
        self.set_bulk(false)?;
        self.conn
            .pragma_update(None, "wal_autocheckpoint", FOLLOW_CHECKPOINT_AT)?;
        Ok(())
    }

    /// Forgets everything and reads every log again.
    pub fn reindex(&mut self, sessions_dir: &Path) -> Result<Updated> {
        let known = self.known_paths()?;
        let tx = self.write_tx()?;
        write::clear(&tx)?;
        tx.execute_batch("DELETE FROM sessions;")?;
        tx.commit()?;
        let mut logs = self.logs_outside(sessions_dir);
        collect_logs(sessions_dir, &mut logs, 0);
        logs.extend(
            known
                .into_iter()
                .map(PathBuf::from)
                .filter(|p| p.is_file() && !p.starts_with(sessions_dir)),
        );
        logs.sort();
        logs.dedup();
        self.update_all(&logs)
    }

    /// Indexes what is new in one log: nothing when it did not change, from its last
    /// checkpoint when it grew, all of it when it is new, shrank or was replaced.
    pub fn update(&mut self, log: &Path) -> Result<Updated> {
        let tx = self.write_tx()?;
        let done = update::once(&tx, log)?;
        tx.commit()?;
        if done.bytes > 0 {
            self.give_back();
        }
        Ok(done)
    }

    /// Reads what `log` gained since `state` last read it, keeping what is still open in
    /// `state` (a running session's log, read while its turn goes on: see
    /// [`update::follow`]). With `last`, the session is over and the log is read to its
    /// end for good.
    pub fn follow(
        &mut self,
        log: &Path,
        state: &mut Option<Follow>,
        last: bool,
    ) -> Result<Updated> {
        let done = {
            // The sessions of one process follow their logs into one index: in turn,
            // handed on at once (see `writers`).
            let _turn = writers::take(&self.path, FOLLOW_WAIT);
            let tx = self.write_tx()?;
            hash_size(&tx, SMALL_HASH)?;
            let done = update::follow(&tx, log, state, last)?;
            tx.commit()?;
            done
        };
        // Copied into the file after the turn, while the next session writes (see
        // [`Index::following`]). Best effort: one busy now is done by the next.
        if done.bytes > 0 || last {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        }
        if last {
            self.give_back();
        }
        Ok(done)
    }

    /// Gives the pages FTS5's merges freed back to the file system once they are more
    /// than a hundredth of the file (a 100 000-call turn left 6%): between the reads of a
    /// running session they are used again, but an index whose sessions are over would
    /// keep them. Best effort: a file another process is writing is left for next time.
    fn give_back(&self) {
        let pages = |what: &str| {
            self.conn
                .query_row(&format!("PRAGMA {what}"), [], |r| r.get::<_, i64>(0))
                .unwrap_or(0)
        };
        let (free, all) = (pages("freelist_count"), pages("page_count"));
        if free < 64 || free * 100 < all {
            return;
        }
        // Each row of the pragma is a page given back.
        if let Ok(mut st) = self.conn.prepare("PRAGMA incremental_vacuum")
            && let Ok(mut rows) = st.query([])
        {
            while let Ok(Some(_)) = rows.next() {}
        }
    }

    /// Updates several logs, committing about every 64 MB read (one transaction per
    /// small log would cost more than reading it).
    fn update_all(&mut self, logs: &[PathBuf]) -> Result<Updated> {
        let _ = self.set_bulk(true);
        let mut done = Updated::default();
        let mut tx = self.write_tx()?;
        let mut since = 0;
        for log in logs {
            let d = match update::once(&tx, log) {
                Ok(d) => d,
                // A log that went away meanwhile, or cannot be read: skipped.
                Err(Error::Io(_)) => continue,
                Err(e) => return Err(e),
            };
            since += d.bytes;
            done += d;
            if since > 64 << 20 {
                tx.commit()?;
                tx = self.write_tx()?;
                since = 0;
            }
        }
        tx.commit()?;
        if done.bytes > 0 {
            self.give_back();
        }
        Ok(done)
    }
}

impl Index {
    /// Makes a log known to the index without reading it (a running session's, before
    /// its first turn ends): the next update or refresh reads it.
    pub fn register(&mut self, log: &Path) -> Result<()> {
        let _turn = writers::take(&self.path, FOLLOW_WAIT);
        self.conn.execute(
            "INSERT OR IGNORE INTO sessions(id, path, head, size, mtime, checkpoint, ck_turn)
             VALUES (?1, ?2, '', -1, -1, 0, 0)",
            params![session_id(log), log.to_string_lossy()],
        )?;
        Ok(())
    }

    /// Drops a session from the index (the log is left alone, but no longer recorded as
    /// a log elsewhere).
    pub fn forget(&mut self, path: &str) -> Result<()> {
        outside_logs::forget(&self.path, Path::new(path));
        let id = session_id(Path::new(path));
        let tx = self.write_tx()?;
        let n: Option<i64> = tx
            .query_row("SELECT n FROM sessions WHERE id = ?1", [&id], |r| r.get(0))
            .optional()?;
        if let Some(n) = n {
            write::delete_after(&tx, n, 0)?;
            tx.execute("DELETE FROM sessions WHERE n = ?1", [n])?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Every `*.jsonl` under `dir` (a few levels deep; links are not followed).
fn collect_logs(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() && depth < 3 {
            collect_logs(&p, out, depth + 1);
        } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}
