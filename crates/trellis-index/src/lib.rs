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
pub mod extract;
pub mod outside_logs;
mod query;
mod read;
mod schema;
mod write;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

pub use background::Background;
pub use extract::{CallRow, Doc, DocKind, Extractor, Facts, Sink};
pub use query::{CallCounts, Hit, ListFilter, Scope, SessionRow};
pub use schema::{Found, SCHEMA, suspect};

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
    /// `bulk` (16 MB) for commands that read many logs, else 1 MB for a running session,
    /// which indexes in its own process (the setting is the index file's, so each user
    /// sets it), with a 2 MB page cache instead of 8. Indexing the small way is slower
    /// (it runs in the background).
    pub fn set_bulk(&self, bulk: bool) -> Result<()> {
        let bytes: i64 = if bulk { 16 << 20 } else { 1 << 20 };
        let cache_kib: i64 = if bulk { -8_000 } else { -2_000 };
        self.conn.pragma_update(None, "cache_size", cache_kib)?;
        self.conn.execute(
            "INSERT INTO entries_fts(entries_fts, rank) VALUES('hashsize', ?1)",
            [bytes],
        )?;
        Ok(())
    }

    /// Forgets everything and reads every log again.
    pub fn reindex(&mut self, sessions_dir: &Path) -> Result<Updated> {
        let known = self.known_paths()?;
        let tx = self.write_tx()?;
        write::clear(&tx)?;
        tx.execute_batch("DELETE FROM calls; DELETE FROM sessions;")?;
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
        let done = update_in(&tx, log)?;
        tx.commit()?;
        Ok(done)
    }

    /// Updates several logs, committing about every 64 MB read (one transaction per
    /// small log would cost more than reading it).
    fn update_all(&mut self, logs: &[PathBuf]) -> Result<Updated> {
        let _ = self.set_bulk(true);
        let mut done = Updated::default();
        let mut tx = self.write_tx()?;
        let mut since = 0;
        for log in logs {
            let d = match update_in(&tx, log) {
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
        Ok(done)
    }
}

fn update_in(tx: &rusqlite::Transaction<'_>, log: &Path) -> Result<Updated> {
    {
        let key = log.to_string_lossy().into_owned();
        let mut file = std::fs::File::open(log)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(Updated::default());
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64)
            .unwrap_or_default();
        let head = head_hash(&mut file)?;
        // Cached statements: a refresh runs these once per log, for thousands of logs.
        let known: Option<(i64, i64, String, i64, i64)> = tx
            .prepare_cached(
                "SELECT size, mtime, head, checkpoint, ck_turn FROM sessions WHERE path = ?1",
            )?
            .query_row([&key], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let id = session_id(log);
        let (from, turn, facts) = match known {
            Some((size, mt, h, _, _)) if size == meta.len() as i64 && mt == mtime && h == head => {
                return Ok(Updated::default());
            }
            Some((_, _, h, ck, turn)) if h == head && meta.len() as i64 >= ck => {
                (ck as u64, turn as u32, facts(tx, &id)?)
            }
            _ => (0, 0, Facts::default()),
        };
        file.seek(SeekFrom::Start(from))?;
        write::delete_from(tx, &id, from)?;
        tx.prepare_cached("DELETE FROM calls WHERE session = ?1 AND offset >= ?2")?
            .execute(params![id, from as i64])?;
        let mut ex = Extractor::resuming(turn);
        ex.facts = facts;
        ex.last_title = tx
            .prepare_cached(
                "SELECT text FROM entries WHERE session = ?1 AND kind = 'title' AND offset < ?2
                 ORDER BY offset DESC LIMIT 1",
            )?
            .query_row(params![id, from as i64], |r| r.get(0))
            .optional()?;
        let mut sink = SqlSink {
            tx,
            session: &id,
            checkpoint: (from, turn),
            err: None,
            committed_at: from,
        };
        let end = read::read_into(file, from, meta.len(), &mut ex, &mut sink)?;
        if let Some(e) = sink.err {
            return Err(e.into());
        }
        let (ck, ck_turn) = sink.checkpoint;
        let f = &ex.facts;
        tx.prepare_cached(
            "INSERT INTO sessions(id, path, acp_id, agent, agent_title, command, cwd, title,
                 started, last_t, end_reason, turns, tokens_used, tokens_size, cost, currency,
                 continues, head, size, mtime, checkpoint, ck_turn, launched_in, agent_name,
                 worktree)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)
             ON CONFLICT(id) DO UPDATE SET path = excluded.path, acp_id = excluded.acp_id,
                 agent = excluded.agent, agent_title = excluded.agent_title,
                 command = excluded.command, cwd = excluded.cwd, title = excluded.title,
                 started = excluded.started, last_t = excluded.last_t,
                 end_reason = excluded.end_reason, turns = excluded.turns,
                 tokens_used = excluded.tokens_used, tokens_size = excluded.tokens_size,
                 cost = excluded.cost, currency = excluded.currency,
                 continues = excluded.continues, head = excluded.head, size = excluded.size,
                 mtime = excluded.mtime, checkpoint = excluded.checkpoint,
                 ck_turn = excluded.ck_turn, launched_in = excluded.launched_in,
                 agent_name = excluded.agent_name, worktree = excluded.worktree",
        )?
        .execute(params![
            id,
            key,
            f.acp_id,
            f.agent,
            f.agent_title,
            f.command,
            f.cwd,
            f.title,
            f.started,
            f.last_t,
            f.end_reason,
            ex.turn(),
            f.tokens_used,
            f.tokens_size,
            f.cost,
            f.currency,
            f.continues,
            head,
            end as i64,
            // A file that ended mid-line is read again next time.
            if end == meta.len() { mtime } else { -1 },
            ck as i64,
            ck_turn,
            f.launched_in,
            f.agent_name,
            f.worktree,
        ])?;
        Ok(Updated {
            logs: 1,
            bytes: end - from,
            gone: 0,
        })
    }
}

impl Index {
    /// Makes a log known to the index without reading it (a running session's, before
    /// its first turn ends): the next update or refresh reads it.
    pub fn register(&mut self, log: &Path) -> Result<()> {
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
        write::delete_from(&tx, &id, 0)?;
        tx.execute("DELETE FROM calls WHERE session = ?1", [&id])?;
        tx.execute("DELETE FROM sessions WHERE id = ?1", [&id])?;
        tx.commit()?;
        Ok(())
    }
}

fn facts(conn: &Connection, id: &str) -> Result<Facts> {
    {
        Ok(conn
            .prepare_cached(
                "SELECT acp_id, agent, agent_title, command, cwd, title, started, last_t,
                    end_reason, tokens_used, tokens_size, cost, currency, continues, launched_in,
                    agent_name, worktree
             FROM sessions WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok(Facts {
                    acp_id: r.get(0)?,
                    agent: r.get(1)?,
                    agent_title: r.get(2)?,
                    command: r.get(3)?,
                    cwd: r.get(4)?,
                    title: r.get(5)?,
                    started: r.get(6)?,
                    last_t: r.get(7)?,
                    end_reason: r.get(8)?,
                    tokens_used: r.get(9)?,
                    tokens_size: r.get(10)?,
                    cost: r.get(11)?,
                    currency: r.get(12)?,
                    continues: r.get(13)?,
                    launched_in: r.get(14)?,
                    agent_name: r.get(15)?,
                    worktree: r.get(16)?,
                    bad_lines: 0,
                })
            })?)
    }
}

struct SqlSink<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    session: &'a str,
    checkpoint: (u64, u32),
    err: Option<rusqlite::Error>,
    /// Log offset up to which rows are committed (see [`COMMIT_EVERY`]).
    committed_at: u64,
}

/// Bytes of log whose rows are committed at once while one log is read. A long turn (a
/// hundred thousand calls) was one transaction, and the write-ahead log grew to hold all
/// of it (271 MB beside a 14 MB index). Committing part of a log is safe: the session's
/// row and checkpoint are written only at the end, and the next read of the log deletes
/// everything past its checkpoint before reading it again.
const COMMIT_EVERY: u64 = 16 << 20;

impl SqlSink<'_> {
    fn run(&mut self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>) {
        if self.err.is_none()
            && let Err(e) = f(self.tx)
        {
            self.err = Some(e);
        }
    }

    /// Commits what is written so far once [`COMMIT_EVERY`] bytes of log were read since
    /// the last commit, and goes on in a new transaction (taking the write lock at once).
    fn commit_at(&mut self, offset: u64) {
        if offset >= self.committed_at + COMMIT_EVERY {
            self.committed_at = offset;
            self.run(|tx| tx.execute_batch("COMMIT; BEGIN IMMEDIATE"));
        }
    }
}

impl Sink for SqlSink<'_> {
    fn doc(&mut self, d: Doc) {
        let session = self.session;
        self.run(|tx| write::insert(tx, session, &d));
        self.commit_at(d.offset);
    }

    fn call(&mut self, c: CallRow) {
        let session = self.session;
        self.run(|tx| {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO calls(session, call_id, turn, title, kind, status,
                     command, paths, offset)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                session,
                c.call_id,
                c.turn,
                c.title,
                c.kind,
                c.status,
                c.command,
                c.paths.join("\n"),
                c.offset as i64
            ])?;
            Ok(())
        });
    }

    fn checkpoint(&mut self, offset: u64, turn: u32) {
        self.checkpoint = (offset, turn);
    }
}

/// A hash of the file's first line (its header): a log replaced by another is noticed.
fn head_hash(file: &mut std::fs::File) -> std::io::Result<String> {
    let mut buf = vec![0u8; 4096];
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    let end = memchr::memchr(b'\n', &buf[..n]).unwrap_or(n);
    let digest = Sha256::digest(&buf[..end]);
    Ok(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
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
