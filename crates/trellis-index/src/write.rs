//! Writing searchable entries: the `entries` table and its full-text index together, with
//! plain statements (see the note on triggers in `schema`).

use rusqlite::{Transaction, params};

use crate::extract::{Doc, DocKind};

/// How much of a prompt is kept for listings (`first_prompt`).
const PROMPT_NOTE: usize = 300;

/// Adds one entry of `session` and its words.
/// Returns the entry's id.
pub(crate) fn insert(tx: &Transaction<'_>, session: i64, d: &Doc) -> rusqlite::Result<i64> {
    let note = match d.kind {
        // What the user wrote: its first paragraph, not a document it carries.
        DocKind::Prompt => Some(
            d.text
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .chars()
                .take(PROMPT_NOTE)
                .collect::<String>(),
        ),
        DocKind::Title => Some(d.text.clone()),
        _ => None,
    };
    tx.prepare_cached(
        "INSERT INTO entries(session, kind, turn, call_id, offset, back, span, note)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        session,
        d.kind.code(),
        d.turn,
        d.call_id,
        d.offset as i64,
        d.offset.saturating_sub(d.from) as i64,
        d.to.saturating_sub(d.offset) as i64,
        note
    ])?;
    let id = tx.last_insert_rowid();
    // A head only a call has: NULL, not '', costs a row nothing.
    let head = (!d.head.is_empty()).then_some(d.head.as_str());
    tx.prepare_cached("INSERT INTO entries_fts(rowid, text, head) VALUES (?1, ?2, ?3)")?
        .execute(params![id, d.text, head])?;
    Ok(id)
}

/// Removes the entries of `session` after the entry `last` (0: all of them), and their
/// words (one statement for all of them: the full-text index flushes once).
pub(crate) fn delete_after(tx: &Transaction<'_>, session: i64, last: i64) -> rusqlite::Result<()> {
    // Nothing to delete (a log read for the first time, a turn that ended where the last
    // read stopped) is the common case: the statement on the full-text index would write
    // its pending words all the same.
    let any = tx
        .prepare_cached("SELECT 1 FROM entries WHERE session = ?1 AND id > ?2 LIMIT 1")?
        .exists(params![session, last])?;
    if !any {
        return Ok(());
    }
    tx.prepare_cached(
        "DELETE FROM entries_fts WHERE rowid IN
         (SELECT id FROM entries WHERE session = ?1 AND id > ?2)",
    )?
    .execute(params![session, last])?;
    tx.prepare_cached("DELETE FROM entries WHERE session = ?1 AND id > ?2")?
        .execute(params![session, last])?;
    Ok(())
}

/// Removes every entry and every word.
pub(crate) fn clear(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "DELETE FROM entries; INSERT INTO entries_fts(entries_fts) VALUES('delete-all');",
    )
}
