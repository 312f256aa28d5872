//! The index file: its tables, and what happens to one that cannot be trusted.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

/// The schema this build writes (`PRAGMA user_version`). An index with another version
/// is not read: an older one is rebuilt, a newer one (a later Trellis) is set aside.
pub const SCHEMA: i64 = 11;

const TABLES: &str = r#"
CREATE TABLE sessions(
    n INTEGER PRIMARY KEY,        -- the key the other tables use (a few bytes, not 9)
    id TEXT NOT NULL UNIQUE,      -- short id: the first 8 hex digits of sha256(log path)
    path TEXT NOT NULL UNIQUE,    -- the log, the source of truth
    acp_id TEXT,
    agent TEXT,
    agent_title TEXT,
    agent_name TEXT,              -- the name the agent gives itself (agentInfo.name)
    worktree TEXT,                -- the label of the worktree of Trellis's it ran in
    command TEXT,
    cwd TEXT,
    title TEXT,
    started REAL,
    last_t REAL NOT NULL DEFAULT 0,
    end_reason TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    tokens_used INTEGER,
    tokens_size INTEGER,
    cost REAL,
    currency TEXT,
    continues TEXT,               -- the log this session continues
    continues_at INTEGER,         -- a fork: the turn of that log it was forked before
    handed_over INTEGER NOT NULL DEFAULT 0, -- a hand-off of that log to another agent
    launched_in TEXT,             -- where Trellis was started, when the session ran elsewhere
    head TEXT NOT NULL,           -- the first line's hash, and the file's device and inode: a
                                  -- log written anew under its name is read again
    size INTEGER NOT NULL,        -- bytes read (complete lines)
    mtime INTEGER NOT NULL,       -- of the file when read, nanoseconds
    checkpoint INTEGER NOT NULL,  -- everything before is indexed for good
    ck_turn INTEGER NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,      -- tool calls by final status (counted as they
    completed INTEGER NOT NULL DEFAULT 0,  -- are indexed: a listing of a thousand sessions
    failed INTEGER NOT NULL DEFAULT 0,     -- counts no rows)
    ck_calls INTEGER NOT NULL DEFAULT 0,   -- the same at the checkpoint, where a read of
    ck_completed INTEGER NOT NULL DEFAULT 0, -- the log goes on from
    ck_failed INTEGER NOT NULL DEFAULT 0,
    ck_entry INTEGER NOT NULL DEFAULT 0,   -- the session's last entry at the checkpoint
    ck_title TEXT                          -- the title last indexed before it
);
CREATE INDEX sessions_started ON sessions(started);
-- The searchable pieces of a session: prompts, messages, thoughts, titles, and one row
-- per tool call (its output is the text, its title, command and paths the head). Small
-- numbers where a row would repeat a word or a large offset: the index of a long turn is
-- mostly these rows.
CREATE TABLE entries(
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    kind INTEGER NOT NULL,        -- DocKind::code: 0 call, 1 prompt, 2 message, 3 thought, 4 title
    turn INTEGER NOT NULL,
    call_id TEXT,
    offset INTEGER NOT NULL,      -- the log line it starts at
    back INTEGER NOT NULL,        -- the stretch of log [offset - back, offset + span) its
    span INTEGER NOT NULL,        -- text is read from again for a snippet: the text is not kept
    note TEXT                     -- kept only for a prompt (its beginning) and a title
);
-- A session's entries in the order they were written, which is the order of the log: a
-- read that goes on from a checkpoint deletes those written after it (`id > ck_entry`).
-- (Keyed by the offset too, this index was 4% of the whole.)
CREATE INDEX entries_session ON entries(session);
-- The words and where they stand (a query's `foo-bar` is a phrase: positions make it
-- exact), not the text: it is the log's, read again for a hit's snippet (a second copy
-- made the index bigger than the log). Rows can be deleted (contentless_delete, which
-- needs the per-row sizes that columnsize=0 would leave out). A call's head is the second
-- column: the first's words, most of them, are then stored without a column number.
CREATE VIRTUAL TABLE entries_fts USING fts5(
    text, head, content='', contentless_delete=1,
    tokenize='unicode61 remove_diacritics 2'
);
-- Fewer, larger flushes of the in-memory term hash, and merges of 8 segments at a time:
-- bulk indexing (a first run over years of logs) is dominated by them.
INSERT INTO entries_fts(entries_fts, rank) VALUES('hashsize', 16777216);
INSERT INTO entries_fts(entries_fts, rank) VALUES('automerge', 8);
"#;
// No triggers keep `entries_fts` in step with `entries` (schema 1 had them): a statement
// with a trigger runs in a statement savepoint, and FTS5 writes its whole in-memory term
// hash to disk at every savepoint, so each row became a segment of its own and indexing
// spent most of its time flushing and merging them (30 MB/s of log instead of 60).
// `crate::write` inserts into both tables and deletes from both with plain statements.

/// How the file was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Usable as it is.
    Ready,
    /// Created empty (there was none, or it was older): every log must be read.
    Created,
    /// Could not be trusted and was moved aside to the given path, then created anew.
    SetAside { why: String, to: PathBuf },
}

/// Opens the index at `path`, creating it or setting an untrustworthy one aside.
///
/// Any number of processes may open it at once (parallel headless runs on a machine with
/// no index yet): whether to create, reset or set aside is decided under an exclusive lock
/// on a file beside the index, the schema is written inside an immediate transaction, and
/// no file is ever removed — one another process has just created and written its session
/// into would be lost with it.
pub fn open(path: &Path) -> crate::Result<(Connection, Found)> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _lock = Lock::take(path)?;
    let existed = path.exists();
    match check(path) {
        Ok(Some(conn)) => Ok((conn, Found::Ready)),
        Ok(None) => Ok((create(path)?, Found::Created)),
        Err(why) if existed => {
            let to = aside(path, &why);
            let conn = create(path)?;
            Ok((conn, Found::SetAside { why, to }))
        }
        Err(why) => Err(crate::Error::Io(std::io::Error::other(why))),
    }
}

/// The lock taken while an index is checked and created: `flock` on `<index>.lock`, a file
/// that is created once (never through a link) and never removed.
struct Lock {
    _held: trellis_os::lock::Held,
}

/// How long a process waits for another to finish checking or creating the index.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Lock {
    fn take(index: &Path) -> crate::Result<Lock> {
        let mut name = index.as_os_str().to_owned();
        name.push(".lock");
        let name = PathBuf::from(name);
        match trellis_os::lock::take_within(&name, LOCK_WAIT)? {
            Some(held) => Ok(Lock { _held: held }),
            None => Err(crate::Error::Io(std::io::Error::other(format!(
                "another Trellis has held {} for {} s",
                name.display(),
                LOCK_WAIT.as_secs()
            )))),
        }
    }
}

/// `Ok(Some)` for a usable index, `Ok(None)` for none, an empty one or an older one (made
/// anew in place by [`create`]), `Err(why)` for one that must not be touched.
fn check(path: &Path) -> Result<Option<Connection>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| format!("cannot open it ({e})"))?;
    tune(&conn).map_err(|e| format!("not a usable SQLite file ({e})"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| format!("not a usable SQLite file ({e})"))?;
    match version {
        SCHEMA => {
            // Its header and schema were read above and below; every page is read only
            // once damage was seen in use (see [`suspect`]): a check of the whole file
            // at every open cost each session time in proportion to all of history.
            let _: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
                .map_err(|e| format!("damaged ({e})"))?;
            if suspected(path) {
                full_check(&conn)?;
                let _ = std::fs::remove_file(marker(path));
            }
            Ok(Some(conn))
        }
        v if v > SCHEMA => Err(format!(
            "written by a newer Trellis (schema {v}, this one reads {SCHEMA})"
        )),
        _ => Ok(None),
    }
}

/// Reads every page (through a small cache, or a running session would hold the whole
/// index in memory for it).
fn full_check(conn: &Connection) -> Result<(), String> {
    let fail = |e: rusqlite::Error| format!("damaged ({e})");
    conn.pragma_update(None, "cache_size", CHECK_CACHE_KIB)
        .map_err(fail)?;
    let ok: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(fail)?;
    if ok != "ok" {
        return Err(format!("damaged ({ok})"));
    }
    conn.pragma_update(None, "cache_size", CACHE_KIB)
        .map_err(fail)?;
    Ok(())
}

/// The file beside the index that says damage was seen in use.
fn marker(index: &Path) -> PathBuf {
    let mut name = index.as_os_str().to_owned();
    name.push(".suspect");
    PathBuf::from(name)
}

fn suspected(index: &Path) -> bool {
    std::fs::symlink_metadata(marker(index)).is_ok()
}

/// Damage was seen in use (SQLite said the file is corrupt): the next open reads every
/// page, and sets the index aside if the check fails. The marker is created, never
/// written through (an existing one, or a link in its place, is left as it is).
pub fn suspect(index: &Path) {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let _ = opts.open(marker(index));
}

/// Page cache of a connection (negative: KiB). Small: the index is written while a
/// session runs, in its process, and searches touch few pages.
const CACHE_KIB: i64 = -8_000;
/// Page cache while the whole file is checked.
const CHECK_CACHE_KIB: i64 = -1_000;

fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", CACHE_KIB)?;
    // After a checkpoint the write-ahead log is cut back to this size (it otherwise stays
    // as large as it ever grew).
    conn.pragma_update(None, "journal_size_limit", WAL_LIMIT)?;
    Ok(())
}

/// The largest write-ahead log kept between writes, bytes.
const WAL_LIMIT: i64 = 32 << 20;

/// Opens (creating the file if there is none) and writes this schema into an index that
/// has none or an older one, inside one immediate transaction: a reader sees the old
/// tables or the new ones, never a file that vanished.
fn create(path: &Path) -> rusqlite::Result<Connection> {
    // The index holds what sessions said: made the user's alone (0600, whatever the
    // umask; SQLite gives its journal files the same mode). `create_new` follows no link.
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )?;
    // Pages FTS5's merges free can be given back to the file system (`Index::give_back`):
    // set before anything is written (the write-ahead log's mode is), or by the VACUUM
    // below for an older file.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    tune(&conn)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA {
        drop_all(&tx)?;
        tx.execute_batch(TABLES)?;
        tx.pragma_update(None, "user_version", SCHEMA)?;
    }
    tx.commit()?;
    if version != SCHEMA && version != 0 {
        // The older tables' pages are free but still in the file (an index of years of
        // logs: gigabytes): given back while the tables are empty, which is quick.
        conn.execute_batch("VACUUM")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    Ok(conn)
}

/// Drops every table, view and trigger an older schema left (a full-text table first:
/// dropping it drops its shadow tables).
fn drop_all(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let objects: Vec<(String, String, String)> = tx
        .prepare(
            "SELECT type, name, coalesce(sql, '') FROM sqlite_master
             WHERE type IN ('table', 'view', 'trigger') AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let quoted = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let order = |(kind, _, sql): &(String, String, String)| match kind.as_str() {
        "trigger" => 0,
        "view" => 1,
        _ if sql.starts_with("CREATE VIRTUAL") => 2,
        _ => 3,
    };
    let mut objects = objects;
    objects.sort_by_key(order);
    for (kind, name, _) in &objects {
        let what = match kind.as_str() {
            "trigger" => "TRIGGER",
            "view" => "VIEW",
            _ => "TABLE",
        };
        tx.execute_batch(&format!("DROP {what} IF EXISTS {}", quoted(name)))?;
    }
    Ok(())
}

/// Moves the index (and its WAL files) beside itself, under a name that says why.
fn aside(path: &Path, why: &str) -> PathBuf {
    let tag = if why.starts_with("written by a newer") {
        "newer"
    } else {
        "damaged"
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut to = path.as_os_str().to_owned();
    to.push(format!(".{tag}-{stamp}"));
    let to = PathBuf::from(to);
    for suffix in ["", "-wal", "-shm"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let mut dest = to.as_os_str().to_owned();
        dest.push(suffix);
        let _ = std::fs::rename(PathBuf::from(from), PathBuf::from(dest));
    }
    to
}
