//! Reading the index: sessions, full-text search, one session's facts.

use rusqlite::{Row, params_from_iter, types::Value as Sql};
use serde::Serialize;

use crate::doc::DocKind;
use crate::{Error, Index, Result};

/// A session as `sessions list` and `show` report it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionRow {
    pub id: String,
    pub path: String,
    pub acp_id: Option<String>,
    pub agent: Option<String>,
    pub agent_title: Option<String>,
    /// The name the agent gives itself (`agentInfo.name`).
    pub agent_name: Option<String>,
    /// The label of the worktree of Trellis's it ran in.
    pub worktree: Option<String>,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub title: Option<String>,
    /// The beginning of the first prompt (a title when the agent gave none).
    pub first_prompt: Option<String>,
    /// Seconds since the Unix epoch.
    pub started: Option<f64>,
    /// Seconds since the Unix epoch of the last record.
    pub ended: Option<f64>,
    pub end_reason: Option<String>,
    pub turns: u32,
    pub calls: CallCounts,
    pub tokens_used: Option<i64>,
    pub tokens_size: Option<i64>,
    pub cost: Option<f64>,
    pub currency: Option<String>,
    /// The log of the session this one continues.
    pub continues: Option<String>,
    /// A fork: the turn of that session it was forked before.
    pub continues_at: Option<u32>,
    /// A hand-off of that session to another agent (a brief, no transcript).
    pub handed_over: bool,
    /// The directory Trellis was started in, when the session ran elsewhere (the demo's
    /// scratch workspace, `--cwd`).
    pub launched_in: Option<String>,
    /// Bytes of log indexed.
    pub bytes: u64,
}

/// Tool calls by final status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CallCounts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    /// Pending, in progress or cancelled when the session's turn ended.
    pub other: u64,
}

/// Which sessions `list` returns.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only sessions that ran in this directory, or were started from it.
    pub cwd: Option<String>,
    /// Only sessions that ran in this directory or below it.
    pub within: Option<String>,
    /// Only this agent: as the session named it (a preset, a program), or as it names
    /// itself (`agentInfo`'s name, its last `/` part, or its title); any case.
    pub agent: Option<String>,
    /// Only sessions where a prompt was sent.
    pub prompted: bool,
    /// Only sessions started at or after (Unix seconds).
    pub since: Option<f64>,
    pub limit: Option<usize>,
}

/// Where a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Prompts,
    Messages,
    Tools,
    Output,
}

impl Scope {
    /// The kinds of entry it looks in.
    pub(crate) fn kinds(self) -> &'static [DocKind] {
        match self {
            Scope::Prompts => &[DocKind::Prompt],
            Scope::Messages => &[DocKind::Message, DocKind::Thought, DocKind::Title],
            Scope::Tools | Scope::Output => &[DocKind::Call],
        }
    }

    /// The column of `entries_fts` it looks in, when it is one part of a call.
    pub(crate) fn column(self) -> Option<&'static str> {
        match self {
            Scope::Tools => Some("head"),
            Scope::Output => Some("text"),
            Scope::Prompts | Scope::Messages => None,
        }
    }
}

/// One search result: where it is, and a snippet. In `snippet`, `\u{2}` and `\u{3}`
/// open and close each match (a front end turns them into highlighting; the rest is text
/// from the log, to be sanitized before it is shown).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub session: String,
    pub path: String,
    pub title: Option<String>,
    pub agent: Option<String>,
    pub cwd: Option<String>,
    pub started: Option<f64>,
    /// `prompt`, `message`, `thought`, `title`, or for a tool call the part of it the
    /// query was found in: `tool` (its title, command or paths) or `output`.
    pub kind: String,
    pub turn: u32,
    pub call_id: Option<String>,
    /// Byte offset of the log line the hit starts at.
    pub offset: u64,
    pub snippet: String,
}

const SESSION_COLUMNS: &str = "s.id, s.path, s.acp_id, s.agent, s.agent_title, s.command,
    s.cwd, s.title, s.started, s.last_t, s.end_reason, s.turns, s.tokens_used,
    s.tokens_size, s.cost, s.currency, s.continues, s.size,
    s.calls, s.completed, s.failed,
    (SELECT e.note FROM entries e
     WHERE e.session = s.n AND e.kind = 1 ORDER BY e.id LIMIT 1),
    s.launched_in, s.agent_name, s.worktree, s.continues_at, s.handed_over";

fn session_row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let started: Option<f64> = r.get(8)?;
    let last_t: f64 = r.get(9)?;
    let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
    let (total, completed, failed) = (n(18)?, n(19)?, n(20)?);
    Ok(SessionRow {
        id: r.get(0)?,
        path: r.get(1)?,
        acp_id: r.get(2)?,
        agent: r.get(3)?,
        agent_title: r.get(4)?,
        command: r.get(5)?,
        cwd: r.get(6)?,
        title: r.get(7)?,
        first_prompt: r.get(21)?,
        started,
        ended: started.map(|s| s + last_t),
        end_reason: r.get(10)?,
        turns: r.get(11)?,
        tokens_used: r.get(12)?,
        tokens_size: r.get(13)?,
        cost: r.get(14)?,
        currency: r.get(15)?,
        continues: r.get(16)?,
        continues_at: r
            .get::<_, Option<i64>>(25)?
            .and_then(|t| u32::try_from(t).ok()),
        handed_over: r.get(26)?,
        launched_in: r.get(22)?,
        agent_name: r.get(23)?,
        worktree: r.get(24)?,
        bytes: r.get::<_, i64>(17)?.max(0) as u64,
        calls: CallCounts {
            total,
            completed,
            failed,
            other: total.saturating_sub(completed + failed),
        },
    })
}

/// A plain query made safe for FTS5: every word becomes a quoted phrase (so `-`, `:`,
/// quotes and operators in it are just text); all must match. With `prefix`, the last
/// word also matches longer words (search as you type).
pub fn fts_query(q: &str, prefix: bool) -> Option<String> {
    let words: Vec<String> = q
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    let mut out = words.join(" ");
    if out.is_empty() {
        return None;
    }
    if prefix {
        out.push('*');
    }
    Some(out)
}

/// The conditions of a [`ListFilter`] (` AND …` each) and their values.
fn where_of(f: &ListFilter) -> (String, Vec<Sql>) {
    let mut sql = String::new();
    let mut args: Vec<Sql> = Vec::new();
    if let Some(cwd) = &f.cwd {
        sql.push_str(" AND (s.cwd = ? OR s.launched_in = ?)");
        args.push(Sql::Text(cwd.clone()));
        args.push(Sql::Text(cwd.clone()));
    }
    if let Some(dir) = &f.within {
        let dir = dir.trim_end_matches('/');
        sql.push_str(" AND (s.cwd = ? OR substr(s.cwd, 1, ?) = ?)");
        args.push(Sql::Text(dir.to_string()));
        let below = format!("{dir}/");
        args.push(Sql::Integer(below.chars().count() as i64));
        args.push(Sql::Text(below));
    }
    if let Some(a) = &f.agent {
        sql.push_str(
            " AND (lower(s.agent) = lower(?) OR lower(s.agent_title) = lower(?)
                   OR lower(s.agent_name) = lower(?)
                   OR substr(lower(s.agent_name), -(length(?) + 1)) = '/' || lower(?))",
        );
        for _ in 0..5 {
            args.push(Sql::Text(a.clone()));
        }
    }
    if f.prompted {
        sql.push_str(" AND s.turns > 0");
    }
    if let Some(t) = f.since {
        sql.push_str(" AND s.started >= ?");
        args.push(Sql::Real(t));
    }
    (sql, args)
}

impl Index {
    /// Sessions, newest first.
    pub fn list(&self, f: &ListFilter) -> Result<Vec<SessionRow>> {
        let (filter, args) = where_of(f);
        let mut sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE 1{filter}");
        sql.push_str(" ORDER BY s.started DESC, s.path DESC");
        if let Some(n) = f.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let mut st = self.conn.prepare(&sql)?;
        let rows = st
            .query_map(params_from_iter(args), session_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// How many sessions [`Index::list`] would give without its limit.
    pub fn count(&self, f: &ListFilter) -> Result<usize> {
        let (filter, args) = where_of(f);
        let sql = format!("SELECT count(*) FROM sessions s WHERE 1{filter}");
        let n: i64 = self
            .conn
            .query_row(&sql, params_from_iter(args), |r| r.get(0))?;
        Ok(n.max(0) as usize)
    }

    /// The session named by `id`: a whole id, a unique prefix of one, or a log path.
    pub fn session(&self, id: &str) -> Result<SessionRow> {
        let by_path = crate::session_id(std::path::Path::new(id));
        let pattern = format!("{}%", id.replace(['%', '_'], ""));
        let mut st = self.conn.prepare(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s
             WHERE s.id = ?1 OR s.path = ?2 OR s.id LIKE ?3 ORDER BY s.id"
        ))?;
        let rows = st
            .query_map(rusqlite::params![by_path, id, pattern], session_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if let Some(exact) = rows.iter().find(|r| r.id == id || r.path == id) {
            return Ok(exact.clone());
        }
        match rows.len() {
            0 => Err(Error::NotFound(id.to_string())),
            1 => Ok(rows.into_iter().next().unwrap_or_default()),
            _ => Err(Error::Ambiguous(
                id.to_string(),
                rows.into_iter().map(|r| r.id).collect(),
            )),
        }
    }

    /// Sessions continuing `path` (the newest first).
    pub fn continuations(&self, path: &str) -> Result<Vec<SessionRow>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.continues = ?1
             ORDER BY s.started DESC"
        ))?;
        let rows = st
            .query_map([path], session_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}
