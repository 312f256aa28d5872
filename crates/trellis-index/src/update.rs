//! Reading a log into the index: once (a `trellis sessions` command, a refresh), or
//! following it while its session runs ([`Follow`]), so that the index keeps pace with a
//! long turn instead of reading all of it when the turn ends.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::extract::{CallRow, Doc, DocKind, Extractor, Facts, Sink};
use crate::{Result, Updated, read, session_id, write};

/// A log being followed: the extractor that read it so far, with what is still open in
/// it (the turn's unfinished calls and message), and where it stopped. Valid while the
/// index says the log was last read to `at` by this reader; otherwise dropped, and the
/// log is read again from its last turn end.
pub struct Follow {
    ex: Extractor,
    at: u64,
    head: String,
    checkpoint: (u64, u32),
}

/// The `mtime` of a log a [`Follow`] read last, leaving what was open out of the index
/// (any other reader reads it again, and its own mark, a real time or -1 for a log that
/// ended mid-line, tells the follower that its state no longer fits).
const FOLLOWED: i64 = -2;

/// What a read of a log found, for its `sessions` row.
struct Row<'a> {
    id: &'a str,
    key: &'a str,
    facts: &'a Facts,
    turns: u32,
    head: &'a str,
    /// Bytes read (complete lines).
    size: u64,
    /// The file's; -1 when it ended mid-line, [`FOLLOWED`]: read again next time.
    mtime: i64,
    checkpoint: (u64, u32),
    progress: Progress,
}

/// What a read keeps count of as it goes: as it stands, and as it stood at the checkpoint
/// (where the next read goes on from, forgetting what came after it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Progress {
    now: Tally,
    at_checkpoint: Tally,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Tally {
    /// Tool calls by final status: all, completed, failed.
    calls: [i64; 3],
    /// The id of the session's last entry: the entries after a checkpoint are those with
    /// larger ids (they were written after everything before it).
    last_entry: i64,
    /// The title last indexed (a title sent again is not indexed again).
    title: Option<String>,
}

impl Progress {
    /// The session's, as its row and its entries have them; `title`: the last title the
    /// extractor handed over.
    fn of(
        tx: &rusqlite::Transaction<'_>,
        session: i64,
        title: Option<String>,
    ) -> rusqlite::Result<Progress> {
        let (calls, at_checkpoint) = Progress::counts(tx, session)?;
        let last_entry = tx
            .prepare_cached("SELECT coalesce(max(id), 0) FROM entries WHERE session = ?1")?
            .query_row([session], |r| r.get(0))?;
        Ok(Progress {
            now: Tally {
                calls,
                last_entry,
                title,
            },
            at_checkpoint,
        })
    }

    /// The session's row: its calls counted so far, and what stood at its checkpoint.
    fn counts(tx: &rusqlite::Transaction<'_>, session: i64) -> rusqlite::Result<([i64; 3], Tally)> {
        tx.prepare_cached(
            "SELECT calls, completed, failed, ck_calls, ck_completed, ck_failed, ck_entry,
                     ck_title
                 FROM sessions WHERE n = ?1",
        )?
        .query_row([session], |r| {
            Ok((
                [r.get(0)?, r.get(1)?, r.get(2)?],
                Tally {
                    calls: [r.get(3)?, r.get(4)?, r.get(5)?],
                    last_entry: r.get(6)?,
                    title: r.get(7)?,
                },
            ))
        })
    }

    fn count(&mut self, status: &str) {
        let calls = &mut self.now.calls;
        calls[0] += 1;
        match status {
            "completed" => calls[1] += 1,
            "failed" => calls[2] += 1,
            _ => {}
        }
    }
}

/// The file, its length, modification time and head hash.
struct Opened {
    file: std::fs::File,
    len: u64,
    mtime: i64,
    head: String,
}

fn open(log: &Path) -> Result<Option<Opened>> {
    // A FIFO or device where a log was is skipped, never waited on.
    let Some(mut file) = trellis_os::fd::open_regular(log)? else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or_default();
    // The first line's hash and which file it is: a log written anew in its place (an
    // editor's save, `sed -i`) is read again from its start, not from its last turn end.
    let (dev, ino) = trellis_os::fd::identity(&meta);
    let head = format!("{}:{dev:x}:{ino:x}", head_hash(&mut file)?);
    Ok(Some(Opened {
        file,
        len: meta.len(),
        mtime,
        head,
    }))
}

/// What the index knows of the log: size, mtime, head, checkpoint, turn at it.
type Known = (i64, i64, String, i64, i64);

fn known(tx: &rusqlite::Transaction<'_>, key: &str) -> Result<Option<Known>> {
    // Cached statements: a refresh runs these once per log, for thousands of logs.
    Ok(tx
        .prepare_cached(
            "SELECT size, mtime, head, checkpoint, ck_turn FROM sessions WHERE path = ?1",
        )?
        .query_row([key], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?)
}

/// Indexes what is new in one log: nothing when it did not change, from its last
/// checkpoint when it grew, all of it when it is new, shrank or was replaced. What is
/// still open at its end (a call not finished) is indexed as it stands.
pub(crate) fn once(tx: &rusqlite::Transaction<'_>, log: &Path) -> Result<Updated> {
    let key = log.to_string_lossy().into_owned();
    let Some(o) = open(log)? else {
        return Ok(Updated::default());
    };
    let known = known(tx, &key)?;
    if let Some((size, mt, h, _, _)) = &known
        && *size == o.len as i64
        && *mt == o.mtime
        && *h == o.head
    {
        return Ok(Updated::default());
    }
    let id = session_id(log);
    let (n, mut ex, from) = restart(tx, &id, &key, known.as_ref(), &o)?;
    let progress = Progress::of(tx, n, ex.last_title.clone())?;
    let mut sink = SqlSink::new(tx, n, from, (from, ex.turn()), progress);
    let mut file = o.file;
    file.seek(SeekFrom::Start(from))?;
    let end = read::read_into(file, from, o.len, &mut ex, &mut sink, true)?;
    let (checkpoint, progress) = sink.done()?;
    upsert(
        tx,
        &Row {
            id: &id,
            key: &key,
            facts: &ex.facts,
            turns: ex.turn(),
            head: &o.head,
            size: end,
            // A file that ended mid-line is read again next time.
            mtime: if end == o.len { o.mtime } else { -1 },
            checkpoint,
            progress,
        },
    )?;
    Ok(Updated {
        logs: 1,
        bytes: end - from,
        gone: 0,
    })
}

/// Reads what the log gained since `state` last read it, leaving what is still open in
/// the extractor; with `last` (the session is over), what is open is indexed as it stands
/// and the log is recorded as read. A state that no longer fits (another process read
/// the log, the log was replaced) is dropped and the log read from its last turn end.
pub(crate) fn follow(
    tx: &rusqlite::Transaction<'_>,
    log: &Path,
    state: &mut Option<Follow>,
    last: bool,
) -> Result<Updated> {
    let key = log.to_string_lossy().into_owned();
    let Some(o) = open(log)? else {
        *state = None;
        return Ok(Updated::default());
    };
    let known = known(tx, &key)?;
    let id = session_id(log);
    let fits = |st: &Follow| {
        st.head == o.head
            && o.len >= st.at
            && known.as_ref().is_some_and(|(size, mt, h, _, _)| {
                *size == st.at as i64 && *mt == FOLLOWED && *h == o.head
            })
    };
    let mut st = match state.take().filter(fits) {
        Some(st) => st,
        None => {
            let (_, ex, from) = restart(tx, &id, &key, known.as_ref(), &o)?;
            let turn = ex.turn();
            Follow {
                ex,
                at: from,
                head: o.head.clone(),
                checkpoint: (from, turn),
            }
        }
    };
    let n = session_key(tx, &id, &key)?;
    let from = st.at;
    let progress = Progress::of(tx, n, st.ex.last_title.clone())?;
    let mut sink = SqlSink::new(tx, n, from, st.checkpoint, progress);
    let mut file = o.file;
    file.seek(SeekFrom::Start(from))?;
    let end = read::read_into(file, from, o.len, &mut st.ex, &mut sink, last)?;
    let (checkpoint, progress) = sink.done()?;
    st.checkpoint = checkpoint;
    st.at = end;
    upsert(
        tx,
        &Row {
            id: &id,
            key: &key,
            facts: &st.ex.facts,
            turns: st.ex.turn(),
            head: &o.head,
            size: end,
            mtime: match (last, end == o.len) {
                (true, true) => o.mtime,
                (true, false) => -1,
                (false, _) => FOLLOWED,
            },
            checkpoint: st.checkpoint,
            progress,
        },
    )?;
    if !last {
        *state = Some(st);
    }
    Ok(Updated {
        logs: 1,
        bytes: end - from,
        gone: 0,
    })
}

/// Makes ready to read the log again from its last checkpoint (or from its start, when it
/// is new, shrank or was replaced): what was indexed past that point is deleted, and an
/// extractor resumes there. Returns the session's key, the extractor and the offset.
fn restart(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    key: &str,
    known: Option<&Known>,
    o: &Opened,
) -> Result<(i64, Extractor, u64)> {
    let resumed = match known {
        Some((_, _, h, ck, turn)) if *h == o.head && o.len as i64 >= *ck => {
            Some((*ck as u64, *turn as u32))
        }
        _ => None,
    };
    let n = session_key(tx, id, key)?;
    let (from, turn, facts, at) = match resumed {
        Some((from, turn)) => (from, turn, facts(tx, id)?, Progress::counts(tx, n)?.1),
        None => (0, 0, Facts::default(), Tally::default()),
    };
    // What came after the checkpoint is read again: its entries deleted, its calls
    // counted again.
    write::delete_after(tx, n, at.last_entry)?;
    tx.prepare_cached(
        "UPDATE sessions SET calls = ?2, completed = ?3, failed = ?4, ck_calls = ?2,
             ck_completed = ?3, ck_failed = ?4, ck_entry = ?5, ck_title = ?6
         WHERE n = ?1",
    )?
    .execute(params![
        n,
        at.calls[0],
        at.calls[1],
        at.calls[2],
        at.last_entry,
        at.title
    ])?;
    let mut ex = Extractor::resuming(turn);
    ex.facts = facts;
    ex.last_title = at.title;
    Ok((n, ex, from))
}

/// Writes the session's row.
fn upsert(tx: &rusqlite::Transaction<'_>, row: &Row<'_>) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO sessions(id, path, acp_id, agent, agent_title, command, cwd, title,
             started, last_t, end_reason, turns, tokens_used, tokens_size, cost, currency,
             continues, head, size, mtime, checkpoint, ck_turn, launched_in, agent_name,
             worktree, continues_at, handed_over, calls, completed, failed, ck_calls,
             ck_completed, ck_failed, ck_entry, ck_title)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
             ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31,
             ?32, ?33, ?34, ?35)
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
             agent_name = excluded.agent_name, worktree = excluded.worktree,
             continues_at = excluded.continues_at, handed_over = excluded.handed_over,
             calls = excluded.calls, completed = excluded.completed,
             failed = excluded.failed, ck_calls = excluded.ck_calls,
             ck_completed = excluded.ck_completed, ck_failed = excluded.ck_failed,
             ck_entry = excluded.ck_entry, ck_title = excluded.ck_title",
    )?
    .execute(params![
        row.id,
        row.key,
        row.facts.acp_id,
        row.facts.agent,
        row.facts.agent_title,
        row.facts.command,
        row.facts.cwd,
        row.facts.title,
        row.facts.started,
        row.facts.last_t,
        row.facts.end_reason,
        row.turns,
        row.facts.tokens_used,
        row.facts.tokens_size,
        row.facts.cost,
        row.facts.currency,
        row.facts.continues,
        row.head,
        row.size as i64,
        row.mtime,
        row.checkpoint.0 as i64,
        row.checkpoint.1,
        row.facts.launched_in,
        row.facts.agent_name,
        row.facts.worktree,
        row.facts.continues_at,
        row.facts.handed_over,
        row.progress.now.calls[0],
        row.progress.now.calls[1],
        row.progress.now.calls[2],
        row.progress.at_checkpoint.calls[0],
        row.progress.at_checkpoint.calls[1],
        row.progress.at_checkpoint.calls[2],
        row.progress.at_checkpoint.last_entry,
        row.progress.at_checkpoint.title,
    ])?;
    Ok(())
}

/// The key (`sessions.n`) of the session `id` logged at `path`, its row made if there is
/// none yet (the rest of the row is written once the log is read).
fn session_key(tx: &rusqlite::Transaction<'_>, id: &str, path: &str) -> Result<i64> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO sessions(id, path, head, size, mtime, checkpoint, ck_turn)
         VALUES (?1, ?2, '', -1, -1, 0, 0)",
    )?
    .execute(params![id, path])?;
    Ok(tx
        .prepare_cached("SELECT n FROM sessions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))?)
}

fn facts(conn: &Connection, id: &str) -> Result<Facts> {
    {
        Ok(conn
            .prepare_cached(
                "SELECT acp_id, agent, agent_title, command, cwd, title, started, last_t,
                    end_reason, tokens_used, tokens_size, cost, currency, continues, launched_in,
                    agent_name, worktree, continues_at, handed_over
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
                    continues_at: r.get(17)?,
                    handed_over: r.get(18)?,
                    bad_lines: 0,
                })
            })?)
    }
}

struct SqlSink<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    /// The session's key (`sessions.n`).
    session: i64,
    checkpoint: (u64, u32),
    progress: Progress,
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

impl<'a> SqlSink<'a> {
    fn new(
        tx: &'a rusqlite::Transaction<'a>,
        session: i64,
        from: u64,
        checkpoint: (u64, u32),
        progress: Progress,
    ) -> SqlSink<'a> {
        SqlSink {
            tx,
            session,
            checkpoint,
            progress,
            err: None,
            committed_at: from,
        }
    }

    /// The last checkpoint and what was counted, or the first error.
    fn done(self) -> Result<((u64, u32), Progress)> {
        match self.err {
            Some(e) => Err(e.into()),
            None => Ok((self.checkpoint, self.progress)),
        }
    }

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
        let mut id = None;
        self.run(|tx| {
            id = Some(write::insert(tx, session, &d)?);
            Ok(())
        });
        if let Some(id) = id {
            self.progress.now.last_entry = id;
        }
        if d.kind == DocKind::Title {
            self.progress.now.title = Some(d.text);
        }
        self.commit_at(d.offset);
    }

    fn call(&mut self, c: CallRow) {
        self.progress.count(&c.status);
    }

    fn checkpoint(&mut self, offset: u64, turn: u32) {
        self.checkpoint = (offset, turn);
        self.progress.at_checkpoint = self.progress.now.clone();
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
