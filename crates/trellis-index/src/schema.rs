//! The index file: its tables, and what happens to one that cannot be trusted.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

/// The schema this build writes (`PRAGMA user_version`). An index with another version
/// is not read: an older one is rebuilt, a newer one (a later Trellis) is set aside.
pub const SCHEMA: i64 = 2;

const TABLES: &str = r#"
CREATE TABLE sessions(
    id TEXT PRIMARY KEY,          -- short id: the first 8 hex digits of sha256(log path)
    path TEXT NOT NULL UNIQUE,    -- the log, the source of truth
    acp_id TEXT,
    agent TEXT,
    agent_title TEXT,
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
    head TEXT NOT NULL,           -- hash of the first line: a replaced file is read again
    size INTEGER NOT NULL,        -- bytes read (complete lines)
    mtime INTEGER NOT NULL,       -- of the file when read, nanoseconds
    checkpoint INTEGER NOT NULL,  -- everything before is indexed for good
    ck_turn INTEGER NOT NULL
);
CREATE INDEX sessions_started ON sessions(started);
CREATE TABLE calls(
    session TEXT NOT NULL,
    call_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    command TEXT,
    paths TEXT NOT NULL,
    offset INTEGER NOT NULL,
    PRIMARY KEY(session, call_id)
) WITHOUT ROWID;
CREATE INDEX calls_offset ON calls(session, offset);
CREATE TABLE entries(
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    turn INTEGER NOT NULL,
    call_id TEXT,
    offset INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX entries_offset ON entries(session, offset);
-- Hits come in log order, never ranked: no per-entry sizes kept (columnsize=0).
CREATE VIRTUAL TABLE entries_fts USING fts5(
    text, content='entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
    columnsize=0
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
pub fn open(path: &Path) -> Result<(Connection, Found), rusqlite::Error> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let existed = path.exists();
    match check(path) {
        Ok(Some(conn)) => return Ok((conn, Found::Ready)),
        Ok(None) => {}
        Err(why) if existed => {
            let to = aside(path, &why);
            let conn = create(path)?;
            return Ok((conn, Found::SetAside { why, to }));
        }
        Err(_) => {}
    }
    let conn = create(path)?;
    Ok((conn, Found::Created))
}

/// `Ok(Some)` for a usable index, `Ok(None)` for none or an older one (dropped),
/// `Err(why)` for one that must not be touched.
fn check(path: &Path) -> Result<Option<Connection>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open it ({e})"))?;
    tune(&conn).map_err(|e| format!("not a usable SQLite file ({e})"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| format!("not a usable SQLite file ({e})"))?;
    match version {
        SCHEMA => {
            // The check reads every page: through a small cache, or a running session
            // would hold the whole index in memory for it.
            conn.pragma_update(None, "cache_size", CHECK_CACHE_KIB)
                .map_err(|e| format!("not a usable SQLite file ({e})"))?;
            let ok: String = conn
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .map_err(|e| format!("damaged ({e})"))?;
            if ok != "ok" {
                return Err(format!("damaged ({ok})"));
            }
            conn.pragma_update(None, "cache_size", CACHE_KIB)
                .map_err(|e| format!("not a usable SQLite file ({e})"))?;
            Ok(Some(conn))
        }
        v if v > SCHEMA => Err(format!(
            "written by a newer Trellis (schema {v}, this one reads {SCHEMA})"
        )),
        _ => {
            drop(conn);
            remove(path);
            Ok(None)
        }
    }
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
    Ok(())
}

fn create(path: &Path) -> rusqlite::Result<Connection> {
    remove(path);
    let conn = Connection::open(path)?;
    tune(&conn)?;
    conn.execute_batch(&format!(
        "BEGIN; {TABLES} PRAGMA user_version = {SCHEMA}; COMMIT;"
    ))?;
    Ok(conn)
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
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
