//! Full-text search. The index holds each entry's words and their places
//! (`entries_fts`), not its text: a hit's text is read again from its log
//! ([`crate::reread`]), and SQLite cuts its snippet there, matching the same query in a
//! small table of its own (`temp.snips`), so the snippet is the one FTS5 would have cut
//! from a stored copy.

use rusqlite::{params_from_iter, types::Value as Sql};

use crate::doc::DocKind;
use crate::query::{Hit, Scope, fts_query};
use crate::{Index, Result};

/// A hit, and the stretch of log its text is in.
type Candidate = (Hit, (u64, u64));

/// The tokenizer of the index and of the tables that check it.
const TOKENIZER: &str = "tokenize='unicode61 remove_diacritics 2'";

impl Index {
    /// Full-text search, newest indexed first. `prefix`: the last word may be the start
    /// of a longer one.
    pub fn search(
        &self,
        query: &str,
        scope: Option<Scope>,
        cwd: Option<&str>,
        prefix: bool,
        limit: usize,
    ) -> Result<Vec<Hit>> {
        let Some(mut q) = fts_query(query, prefix) else {
            return Ok(Vec::new());
        };
        if let Some(column) = scope.and_then(Scope::column) {
            q = format!("{column} : ({q})");
        }
        self.conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.snips USING fts5(text, head, {TOKENIZER});"
        ))?;
        let found = self.candidates(&q, scope, cwd, limit)?;
        self.cut(&q, found)
    }

    /// Up to `limit` entries matching `q`, newest first, with the stretch of log their
    /// text is in.
    fn candidates(
        &self,
        q: &str,
        scope: Option<Scope>,
        cwd: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let mut sql = String::from(
            "SELECT s.id, s.path, s.title, s.agent, s.cwd, s.started, e.kind, e.turn,
                    e.call_id, e.offset, e.back, e.span
             FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid
                  JOIN sessions s ON s.n = e.session
             WHERE entries_fts MATCH ?",
        );
        let mut args: Vec<Sql> = vec![Sql::Text(q.to_string())];
        if let Some(scope) = scope {
            let marks = vec!["?"; scope.kinds().len()].join(", ");
            sql.push_str(&format!(" AND e.kind IN ({marks})"));
            args.extend(scope.kinds().iter().map(|k| Sql::Integer(k.code())));
        }
        if let Some(cwd) = cwd {
            sql.push_str(" AND (s.cwd = ? OR s.launched_in = ?)");
            args.push(Sql::Text(cwd.to_string()));
            args.push(Sql::Text(cwd.to_string()));
        }
        sql.push_str(&format!(" ORDER BY entries_fts.rowid DESC LIMIT {limit}"));
        let mut st = self.conn.prepare_cached(&sql)?;
        let found = st
            .query_map(params_from_iter(args), |r| {
                let at = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                let kind = DocKind::of_code(r.get(6)?).unwrap_or(DocKind::Call);
                let offset = at(9)?;
                Ok((
                    Hit {
                        session: r.get(0)?,
                        path: r.get(1)?,
                        title: r.get(2)?,
                        agent: r.get(3)?,
                        cwd: r.get(4)?,
                        started: r.get(5)?,
                        kind: kind.as_str().to_string(),
                        turn: r.get(7)?,
                        call_id: r.get(8)?,
                        offset,
                        snippet: String::new(),
                    },
                    (
                        offset.saturating_sub(at(10)?),
                        offset.saturating_add(at(11)?),
                    ),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(found)
    }

    /// Each hit's snippet: its text read again from its log, matched by SQLite against
    /// the same query. A hit whose log no longer holds its text keeps no snippet.
    fn cut(&self, q: &str, found: Vec<Candidate>) -> Result<Vec<Hit>> {
        self.conn.execute_batch("DELETE FROM temp.snips;")?;
        let mut hits = Vec::with_capacity(found.len());
        {
            let mut put = self
                .conn
                .prepare_cached("INSERT INTO temp.snips(rowid, text, head) VALUES (?1, ?2, ?3)")?;
            for (i, (hit, (from, to))) in found.into_iter().enumerate() {
                let want = crate::reread::Wanted {
                    kind: &hit.kind,
                    call_id: hit.call_id.as_deref(),
                    offset: hit.offset,
                    from,
                    to,
                };
                if let Some(d) = crate::reread::doc(std::path::Path::new(&hit.path), &want) {
                    let head = (!d.head.is_empty()).then_some(d.head);
                    put.execute(rusqlite::params![i as i64, d.text, head])?;
                }
                hits.push(hit);
            }
        }
        let mut st = self.conn.prepare_cached(
            "SELECT rowid, snippet(snips, 0, char(2), char(3), '…', 16),
                    snippet(snips, 1, char(2), char(3), '…', 16)
             FROM temp.snips WHERE snips MATCH ?1",
        )?;
        let snips = st
            .query_map([q], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        for (i, text, head) in snips {
            if let Some(h) = hits.get_mut(i.max(0) as usize) {
                if h.kind == DocKind::Call.as_str() {
                    let (part, snippet) = part_of_call(text, head.unwrap_or_default());
                    h.kind = part.to_string();
                    h.snippet = snippet;
                } else {
                    h.snippet = text;
                }
            }
        }
        // A call whose log no longer holds it: its hit says only that a call matched.
        for h in &mut hits {
            if h.kind == DocKind::Call.as_str() {
                h.kind = "tool".to_string();
            }
        }
        self.conn.execute_batch("DELETE FROM temp.snips;")?;
        Ok(hits)
    }
}

/// Which part of a tool call a hit is in, given the snippets FTS5 cut from its output
/// and from its head (title, command, paths): `tool` and the head's snippet when the
/// query's words are marked there at least as often as in the output, `output` and the
/// output's otherwise.
pub fn part_of_call(text: String, head: String) -> (&'static str, String) {
    let marks = |s: &str| s.matches('\u{2}').count();
    let (in_head, in_text) = (marks(&head), marks(&text));
    if in_head > 0 && in_head >= in_text {
        ("tool", head)
    } else {
        ("output", text)
    }
}
