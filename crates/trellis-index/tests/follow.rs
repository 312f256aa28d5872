//! A running session's log is followed (each read goes on where the last stopped, with
//! what is still open kept in memory): the index it ends with is the one a single read of
//! the whole log makes, whatever the log was cut at between reads (mid-turn, mid-line),
//! and whoever else read the log meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;

use trellis_agents::logs::{load_log, log_text};
use trellis_index::{Follow, Hit, Index, ListFilter, SessionRow};

fn the_log() -> String {
    let mut text = log_text("demo", "/p/one", 1.0e9, 5, "walrus");
    // A long turn of finished calls after it.
    let load = load_log(40, 3, 1.0e9);
    text.extend(load.lines().skip(1).map(|l| format!("{l}\n")));
    text
}

const QUERIES: &[&str] = &[
    "walrus", "build", "cargo", "turn", "chunk", "generate", "quick", "demo", "gen 7",
];

fn state_of(ix: &Index) -> (Vec<SessionRow>, Vec<Vec<Hit>>) {
    let rows = ix.list(&ListFilter::default()).unwrap();
    let hits = QUERIES
        .iter()
        .map(|q| ix.search(q, None, None, false, 10_000).unwrap())
        .collect();
    (rows, hits)
}

/// Compares two states, saying where they differ in a few lines.
fn same(
    got: &(Vec<SessionRow>, Vec<Vec<Hit>>),
    want: &(Vec<SessionRow>, Vec<Vec<Hit>>),
    how: &str,
) {
    assert_eq!(got.0, want.0, "{how}: the session rows");
    for (q, (g, w)) in QUERIES.iter().zip(got.1.iter().zip(&want.1)) {
        let key = |h: &Hit| {
            (
                h.kind.clone(),
                h.offset,
                h.call_id.clone(),
                h.snippet.clone(),
            )
        };
        let g: Vec<_> = g.iter().map(key).collect();
        let w: Vec<_> = w.iter().map(key).collect();
        let mut seen = std::collections::HashSet::new();
        let twice: Vec<_> = g.iter().filter(|x| !seen.insert(*x)).take(3).collect();
        let extra: Vec<_> = g.iter().filter(|x| !w.contains(x)).take(3).collect();
        let missing: Vec<_> = w.iter().filter(|x| !g.contains(x)).take(3).collect();
        assert!(
            g == w,
            "{how}: {q:?}: {} hits, not {}; extra {extra:?}; missing {missing:?}; twice {twice:?}",
            g.len(),
            w.len()
        );
    }
}

fn once(dir: &Path, log: &Path) -> (Vec<SessionRow>, Vec<Vec<Hit>>) {
    let (mut ix, _) = Index::open(&dir.join("once.sqlite")).unwrap();
    ix.update(log).unwrap();
    state_of(&ix)
}

/// Appends `text` to `log` in pieces cut at `cuts` (byte positions), following after each.
fn grow_and_follow(ix: &mut Index, log: &Path, text: &str, cuts: &[usize], other: Option<&Path>) {
    std::fs::write(log, "").unwrap();
    let mut state: Option<Follow> = None;
    let mut at = 0;
    for (i, &cut) in cuts.iter().chain([text.len()].iter()).enumerate() {
        let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
        f.write_all(&text.as_bytes()[at..cut]).unwrap();
        at = cut;
        ix.follow(log, &mut state, false).unwrap();
        // Someone else (a `trellis sessions` command) reads the log meanwhile.
        if let Some(other) = other.filter(|_| i % 3 == 1) {
            let (mut o, _) = Index::open(other).unwrap();
            o.update(log).unwrap();
        }
    }
    ix.follow(log, &mut state, true).unwrap();
    assert!(state.is_none(), "the last read keeps nothing");
}

#[test]
fn following_ends_where_one_read_would() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let text = the_log();
    std::fs::write(&log, &text).unwrap();
    let want = once(dir.path(), &log);
    assert!(want.1.iter().all(|h| !h.is_empty()), "{:?}", want.1);
    // Cut everywhere: at line ends, inside lines, inside a turn, at its end.
    for step in [97usize, 1000, 4096, 20_000] {
        let cuts: Vec<usize> = (1..text.len() / step).map(|k| k * step).collect();
        let ix_path = dir.path().join(format!("f{step}.sqlite"));
        let (mut ix, _) = Index::open(&ix_path).unwrap();
        grow_and_follow(&mut ix, &log, &text, &cuts, None);
        same(&state_of(&ix), &want, &format!("read every {step} bytes"));
    }
}

#[test]
fn another_reader_meanwhile_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let text = the_log();
    std::fs::write(&log, &text).unwrap();
    let want = once(dir.path(), &log);
    let ix_path = dir.path().join("shared.sqlite");
    let (mut ix, _) = Index::open(&ix_path).unwrap();
    let cuts: Vec<usize> = (1..40).map(|k| k * text.len() / 40).collect();
    grow_and_follow(&mut ix, &log, &text, &cuts, Some(&ix_path));
    same(&state_of(&ix), &want, "with another reader");
}

/// While a turn goes on, what it finished is already found.
#[test]
fn a_turn_under_way_is_searchable_before_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let text = load_log(50, 2, 1.0e9);
    // Everything but the turn's end.
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(&log, &text[..cut]).unwrap();
    let (mut ix, _) = Index::open(&dir.path().join("i.sqlite")).unwrap();
    let mut state = None;
    ix.follow(&log, &mut state, false).unwrap();
    assert_eq!(
        ix.search("generate", None, None, false, 999).unwrap().len(),
        50
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(&text.as_bytes()[cut..]).unwrap();
    ix.follow(&log, &mut state, false).unwrap();
    assert_eq!(
        ix.search("generate", None, None, false, 999).unwrap().len(),
        50
    );
    assert_eq!(ix.list(&ListFilter::default()).unwrap()[0].calls.total, 50);
}

/// The pages FTS5's merges free while a long turn is followed are given back once the
/// session is over: the file is not left a twentieth empty.
#[test]
fn a_session_over_leaves_no_free_pages_behind() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let text = load_log(8_000, 20, 1.0e9);
    std::fs::write(&log, "").unwrap();
    let index = dir.path().join("i.sqlite");
    let (mut ix, _) = Index::open(&index).unwrap();
    ix.set_bulk(false).unwrap();
    let mut state = None;
    let pieces = 12;
    for k in 1..=pieces {
        let (from, to) = ((k - 1) * text.len() / pieces, k * text.len() / pieces);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(&text.as_bytes()[from..to]).unwrap();
        ix.follow(&log, &mut state, k == pieces).unwrap();
    }
    let c = rusqlite::Connection::open(&index).unwrap();
    let pragma = |p: &str| {
        c.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    assert_eq!(pragma("auto_vacuum"), 2, "incremental");
    let (free, all) = (pragma("freelist_count"), pragma("page_count"));
    assert!(all > 600, "{all} pages: merges happened");
    assert!(free < 64 || free * 100 < all, "{free} of {all} pages free");
}

/// A running session's reads use the smaller term hash, whatever the last command of
/// another process (a `trellis sessions`, reading many logs) left in the file.
#[test]
fn a_running_sessions_reads_set_their_own_term_hash_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, the_log()).unwrap();
    let index = dir.path().join("i.sqlite");
    let hash = || {
        rusqlite::Connection::open(&index)
            .unwrap()
            .query_row(
                "SELECT v FROM entries_fts_config WHERE k = 'hashsize'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
    };
    let (mut following, _) = Index::open(&index).unwrap();
    following.set_bulk(false).unwrap();
    assert_eq!(hash(), 4 << 20);
    let (other, _) = Index::open(&index).unwrap();
    other.set_bulk(true).unwrap();
    assert_eq!(hash(), 16 << 20);
    let mut state = None;
    following.follow(&log, &mut state, false).unwrap();
    assert_eq!(hash(), 4 << 20);
}

/// A running session's reads copy what they wrote into the index file itself after their
/// turn (the commit no longer does until the write-ahead log is large): each read's rows
/// are in the file, not only in the log beside it.
#[test]
fn a_running_sessions_reads_reach_the_file_itself() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s/a.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, the_log()).unwrap();
    let index = dir.path().join("i.sqlite");
    let (mut ix, _) = Index::open(&index).unwrap();
    ix.following().unwrap();
    let mut state = None;
    ix.follow(&log, &mut state, false).unwrap();
    // The file as it is on disk, without its write-ahead log.
    let url = format!("file:{}?immutable=1", index.display());
    let file = rusqlite::Connection::open_with_flags(
        url,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let entries: i64 = file
        .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
        .unwrap();
    assert!(entries > 0, "nothing in the file itself");
}
