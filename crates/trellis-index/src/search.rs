//! Full-text search. The index holds each entry's words (`entries_fts`, no positions, no
//! text); a hit's text is read again from its log ([`crate::reread`]) to cut its snippet.
//!
//! A query word of one token is looked up as it is. A word of several (`foo-bar`,
//! `src/main.rs`) must match as a phrase, which an index without positions cannot tell:
//! its tokens are looked up each, and every candidate's text is matched against the query
//! as written, by SQLite, in a small table of its own (`temp.snips`, with positions). The
//! words are split into tokens by that same tokenizer (through `fts5vocab`), never by
//! code of ours that could disagree with it.

use rusqlite::{params_from_iter, types::Value as Sql};

use crate::query::{Hit, Scope, fts_query};
use crate::{Index, Result};

/// A candidate: the hit it would be, its row in the index, and the stretch of log its
/// text is in.
type Candidate = (Hit, i64, (u64, u64));

/// Candidates fetched at a time while a phrase's hits are checked.
const PAGE: usize = 64;
/// The most candidates checked for one search (a phrase of common tokens that seldom
/// stand together would otherwise read every log).
const CHECK_MAX: usize = 4096;

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
        let Some(exact) = fts_query(query, prefix) else {
            return Ok(Vec::new());
        };
        self.scratch_tables()?;
        let words = self.tokens(query)?;
        // A word with no token matches nothing alone and is ignored beside others, as in
        // FTS5 itself.
        if words.iter().all(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let phrase = words.iter().any(|w| w.len() > 1);
        let mut terms = Vec::new();
        for (i, w) in words.iter().enumerate() {
            for (j, t) in w.iter().enumerate() {
                // `*` follows the query's last word, and so its last token.
                let star = prefix && i + 1 == words.len() && j + 1 == w.len();
                terms.push(format!(
                    "\"{}\"{}",
                    t.replace('"', "\"\""),
                    if star { "*" } else { "" }
                ));
            }
        }
        let loose = terms.join(" ");
        let mut hits = Vec::new();
        let mut before = i64::MAX;
        let mut checked = 0;
        loop {
            let page = if phrase { PAGE } else { limit - hits.len() };
            let found = self.candidates(&loose, scope, cwd, before, page)?;
            let n = found.len();
            if let Some((_, id, _)) = found.last() {
                before = *id;
            }
            checked += n;
            for hit in self.cut(&exact, found, phrase)? {
                if hits.len() < limit {
                    hits.push(hit);
                }
            }
            if !phrase || hits.len() >= limit || n < page || checked >= CHECK_MAX {
                break;
            }
        }
        Ok(hits)
    }

    /// The tables a search works in, on this connection only (`temp`).
    fn scratch_tables(&self) -> Result<()> {
        self.conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.snips USING fts5(text, {TOKENIZER});
             CREATE VIRTUAL TABLE IF NOT EXISTS temp.words USING fts5(word, {TOKENIZER});
             CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_v
                 USING fts5vocab(temp, words, instance);"
        ))?;
        Ok(())
    }

    /// The tokens of each whitespace-separated word of `query`, as the index's tokenizer
    /// makes them (folded: lower case, no diacritics).
    fn tokens(&self, query: &str) -> Result<Vec<Vec<String>>> {
        let words: Vec<&str> = query.split_whitespace().collect();
        self.conn.execute_batch("DELETE FROM temp.words;")?;
        {
            let mut put = self
                .conn
                .prepare_cached("INSERT INTO temp.words(rowid, word) VALUES (?1, ?2)")?;
            for (i, w) in words.iter().enumerate() {
                put.execute(rusqlite::params![i as i64, w])?;
            }
        }
        let mut out = vec![Vec::new(); words.len()];
        let mut st = self
            .conn
            .prepare_cached("SELECT doc, term FROM temp.words_v ORDER BY doc, offset")?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        for (doc, term) in rows {
            if let Some(w) = out.get_mut(doc.max(0) as usize) {
                w.push(term);
            }
        }
        self.conn.execute_batch("DELETE FROM temp.words;")?;
        Ok(out)
    }

    /// Up to `page` entries matching `loose` below row `before`, newest first, with the
    /// stretch of log their text is in.
    fn candidates(
        &self,
        loose: &str,
        scope: Option<Scope>,
        cwd: Option<&str>,
        before: i64,
        page: usize,
    ) -> Result<Vec<Candidate>> {
        let mut sql = String::from(
            "SELECT s.id, s.path, s.title, s.agent, s.cwd, s.started, e.kind, e.turn,
                    e.call_id, e.offset, e.start, e.stop, e.id
             FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid
                  JOIN sessions s ON s.n = e.session
             WHERE entries_fts MATCH ? AND entries_fts.rowid < ?",
        );
        let mut args: Vec<Sql> = vec![Sql::Text(loose.to_string()), Sql::Integer(before)];
        if let Some(scope) = scope {
            let marks = vec!["?"; scope.kinds().len()].join(", ");
            sql.push_str(&format!(" AND e.kind IN ({marks})"));
            args.extend(scope.kinds().iter().map(|k| Sql::Text(k.to_string())));
        }
        if let Some(cwd) = cwd {
            sql.push_str(" AND (s.cwd = ? OR s.launched_in = ?)");
            args.push(Sql::Text(cwd.to_string()));
            args.push(Sql::Text(cwd.to_string()));
        }
        sql.push_str(&format!(" ORDER BY entries_fts.rowid DESC LIMIT {page}"));
        let mut st = self.conn.prepare_cached(&sql)?;
        let found = st
            .query_map(params_from_iter(args), |r| {
                let at = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                Ok((
                    Hit {
                        session: r.get(0)?,
                        path: r.get(1)?,
                        title: r.get(2)?,
                        agent: r.get(3)?,
                        cwd: r.get(4)?,
                        started: r.get(5)?,
                        kind: r.get(6)?,
                        turn: r.get(7)?,
                        call_id: r.get(8)?,
                        offset: at(9)?,
                        snippet: String::new(),
                    },
                    r.get::<_, i64>(12)?,
                    (at(10)?, at(11)?),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(found)
    }

    /// Each candidate's snippet: its text read again from its log, matched by SQLite
    /// against the query as written, so the snippet is what FTS5 cuts from the text. With
    /// `phrase`, a candidate whose text does not match is no hit; otherwise one whose log
    /// no longer holds its text is kept, with no snippet.
    fn cut(&self, exact: &str, found: Vec<Candidate>, phrase: bool) -> Result<Vec<Hit>> {
        self.conn.execute_batch("DELETE FROM temp.snips;")?;
        let mut hits = Vec::with_capacity(found.len());
        {
            let mut put = self
                .conn
                .prepare_cached("INSERT INTO temp.snips(rowid, text) VALUES (?1, ?2)")?;
            for (i, (hit, _, (from, to))) in found.into_iter().enumerate() {
                let want = crate::reread::Wanted {
                    kind: &hit.kind,
                    call_id: hit.call_id.as_deref(),
                    offset: hit.offset,
                    from,
                    to,
                };
                if let Some(text) = crate::reread::text(std::path::Path::new(&hit.path), &want) {
                    put.execute(rusqlite::params![i as i64, text])?;
                }
                hits.push(Some(hit));
            }
        }
        let mut st = self.conn.prepare_cached(
            "SELECT rowid, snippet(snips, 0, char(2), char(3), '…', 16)
             FROM temp.snips WHERE snips MATCH ?1",
        )?;
        let snips = st
            .query_map([exact], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut matched = vec![false; hits.len()];
        for (i, snippet) in snips {
            let i = i.max(0) as usize;
            if let Some(Some(h)) = hits.get_mut(i) {
                h.snippet = snippet;
                matched[i] = true;
            }
        }
        self.conn.execute_batch("DELETE FROM temp.snips;")?;
        Ok(hits
            .into_iter()
            .zip(matched)
            .filter_map(|(h, m)| if m || !phrase { h } else { None })
            .collect())
    }
}
