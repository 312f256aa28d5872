//! The index keeps words, not text: a hit's snippet is cut from its text read again from
//! the log. These tests hold it to what a full copy of the text would give — the same
//! hits and the same snippets — on recorded sessions of real agents, on Trellis's own
//! logs, on terminal output that comes before its call, and on a call whose updates span
//! more log than is read again for one hit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use trellis_agents::logs::{load_log, log_text};
use trellis_index::{CallRow, Doc, Extractor, Index, Sink};

/// Every document of a log, as the extractor gives them reading it whole.
fn docs_of(text: &str) -> Vec<Doc> {
    struct All(Vec<Doc>);
    impl Sink for All {
        fn doc(&mut self, d: Doc) {
            self.0.push(d);
        }
        fn call(&mut self, _: CallRow) {}
        fn checkpoint(&mut self, _: u64, _: u32) {}
    }
    let mut ex = Extractor::default();
    let mut all = All(Vec::new());
    let mut at = 0u64;
    for line in text.split_inclusive('\n') {
        let next = at + line.len() as u64;
        if line.ends_with('\n') {
            ex.feed(&line.as_bytes()[..line.len() - 1], at, next, &mut all);
        }
        at = next;
    }
    ex.finish(&mut all);
    all.0
}

/// (log, kind, offset, call, snippet) of every hit, in a set.
type Found = BTreeSet<(String, String, u64, Option<String>, String)>;

/// What FTS5 finds in a full copy of every document of `logs`.
fn oracle(logs: &[(PathBuf, String)], query: &str) -> Found {
    oracle_as(logs, query, false)
}

fn oracle_as(logs: &[(PathBuf, String)], query: &str, prefix: bool) -> Found {
    let db = Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE VIRTUAL TABLE f USING fts5(text, head, log UNINDEXED, kind UNINDEXED,
             offset UNINDEXED, call UNINDEXED, tokenize='unicode61 remove_diacritics 2');",
    )
    .unwrap();
    for (path, text) in logs {
        for d in docs_of(text) {
            db.execute(
                "INSERT INTO f(text, head, log, kind, offset, call)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![
                    d.text,
                    d.head,
                    path.to_str().unwrap(),
                    d.kind.as_str(),
                    d.offset as i64,
                    d.call_id
                ],
            )
            .unwrap();
        }
    }
    let q = trellis_index::fts_query(query, prefix).unwrap();
    let mut st = db
        .prepare(
            "SELECT log, kind, offset, call, snippet(f, 0, char(2), char(3), '…', 16),
                    snippet(f, 1, char(2), char(3), '…', 16)
             FROM f WHERE f MATCH ?1",
        )
        .unwrap();
    st.query_map([q], |r| {
        let (mut kind, mut snippet) = (r.get::<_, String>(1)?, r.get::<_, String>(4)?);
        // A call's hit names the part of it that matched.
        if kind == "call" {
            let (part, s) = trellis_index::part_of_call(snippet, r.get(5)?);
            (kind, snippet) = (part.to_string(), s);
        }
        Ok((
            r.get::<_, String>(0)?,
            kind,
            r.get::<_, i64>(2)? as u64,
            r.get::<_, Option<String>>(3)?,
            snippet,
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

fn searched(ix: &Index, query: &str) -> Found {
    searched_as(ix, query, false)
}

fn searched_as(ix: &Index, query: &str, prefix: bool) -> Found {
    ix.search(query, None, None, prefix, 100_000)
        .unwrap()
        .into_iter()
        .map(|h| (h.path, h.kind, h.offset, h.call_id, h.snippet))
        .collect()
}

/// A few words of every document: the queries.
fn queries(logs: &[(PathBuf, String)]) -> Vec<String> {
    let mut words = BTreeSet::new();
    for (_, text) in logs {
        for d in docs_of(text) {
            for w in format!("{}\n{}", d.head, d.text)
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 3)
                .step_by(5)
                .take(6)
            {
                words.insert(w.to_lowercase());
            }
        }
    }
    // Words of several tokens: as they stand in the text (a phrase that is there), and
    // two tokens far apart joined as one (a phrase that, mostly, is not).
    let mut phrases = BTreeSet::new();
    for (_, text) in logs {
        for d in docs_of(text) {
            let all = format!("{}\n{}", d.head, d.text);
            let toks: Vec<&str> = all
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            for w in toks.windows(2).step_by(11).take(3) {
                phrases.insert(format!("{}-{}", w[0], w[1]));
            }
            if toks.len() > 9 {
                phrases.insert(format!("{}/{}", toks[1], toks[9]));
            }
        }
    }
    let mut q: Vec<String> = words.into_iter().collect();
    q.extend(phrases);
    // Two-word queries too (each word must match).
    let pairs: Vec<String> = q.windows(2).step_by(7).map(|w| w.join(" ")).collect();
    q.extend(pairs);
    q
}

fn index_of(dir: &Path, logs: &[(PathBuf, String)]) -> Index {
    let sessions = dir.join("sessions");
    for (path, text) in logs {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let (mut ix, _) = Index::open(&dir.join("index.sqlite")).unwrap();
    ix.refresh(&sessions).unwrap();
    ix
}

fn fixture(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/acp");
    std::fs::read_to_string(root.join(name)).unwrap()
}

#[test]
fn hits_and_snippets_are_those_of_the_full_text() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("sessions/2026-12-06");
    let mut logs: Vec<(PathBuf, String)> = [
        "claude-agent-acp-0.23.1.jsonl",
        "claude-code-acp-0.16.2-fs-terminal.jsonl",
        "codex-acp-2.6.0.jsonl",
        "opencode-1.18.33.jsonl",
        "opencode-1.18.33-rejected.jsonl",
    ]
    .iter()
    .map(|f| (s.join(f), fixture(f)))
    .collect();
    logs.push((
        s.join("demo.jsonl"),
        log_text("demo", "/p/one", 1.0e9, 4, "quokka"),
    ));
    logs.push((s.join("load.jsonl"), load_log(300, 6, 2.0e9)));
    logs.push((s.join("terminal.jsonl"), terminal_first()));
    let ix = index_of(dir.path(), &logs);
    // A word right after a colour code is a word, and snippets show no codes.
    let failed = ix.search("failed", None, None, false, 9).unwrap();
    assert!(
        failed
            .iter()
            .any(|h| h.snippet.contains("\u{2}FAILED\u{3} tests")),
        "{failed:?}"
    );
    assert!(
        failed.iter().all(|h| !h.snippet.contains('\u{1b}')),
        "{failed:?}"
    );
    let qs = queries(&logs);
    assert!(qs.len() > 50, "{}", qs.len());
    let mut compared = 0;
    for q in &qs {
        let want = oracle(&logs, q);
        let got = searched(&ix, q);
        assert_eq!(got, want, "query {q:?}");
        compared += want.len();
        // As typed: the last word cut short.
        let cut: String = q
            .chars()
            .take(q.chars().count().saturating_sub(2).max(1))
            .collect();
        assert_eq!(
            searched_as(&ix, &cut, true),
            oracle_as(&logs, &cut, true),
            "prefix query {cut:?}"
        );
    }
    assert!(compared > 500, "{compared} hits compared");
    // Some joined tokens stand apart in the text: a phrase finds fewer entries than its
    // words (both words are there, the phrase is not).
    let dropped = qs
        .iter()
        .filter(|q| q.contains('/'))
        .filter(|q| searched(&ix, &q.replace('/', " ")).len() > searched(&ix, q).len())
        .count();
    assert!(
        dropped > 5,
        "{dropped} phrases found fewer entries than their words"
    );
    // The limit keeps the newest hits.
    for q in qs.iter().filter(|q| q.contains('-')).take(20) {
        let all = ix.search(q, None, None, false, 100_000).unwrap();
        let few = ix.search(q, None, None, false, 3).unwrap();
        assert_eq!(few, all.into_iter().take(3).collect::<Vec<_>>(), "{q}");
    }
}

/// A terminal's output recorded before the call that shows it: the call's text starts
/// at the output, not at the call.
fn terminal_first() -> String {
    let rec = |t: f64, dir: &str, msg: serde_json::Value| {
        format!("{}\n", serde_json::json!({"t": t, "dir": dir, "msg": msg}))
    };
    let upd = |u: serde_json::Value| {
        serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": "s", "update": u}})
    };
    let mut s = String::new();
    s += &rec(
        0.1,
        "client_to_agent",
        serde_json::json!({"jsonrpc": "2.0", "id": "p1", "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "compile the walrus"}]}}),
    );
    s += &rec(
        0.2,
        "client",
        serde_json::json!({"type": "terminal_output", "terminal_id": "t1",
                           "data": "error: the narwhal is unhappy about walrus\n\u{1b}[31mFAILED\u{1b}[0m tests::tusk\n"}),
    );
    s += &rec(
        0.3,
        "agent_to_client",
        upd(
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "c1",
            "title": "cargo build", "kind": "execute", "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": "t1"}]}),
        ),
    );
    s += &rec(
        0.4,
        "agent_to_client",
        upd(
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                               "status": "failed"}),
        ),
    );
    s += &rec(
        0.5,
        "agent_to_client",
        serde_json::json!({"jsonrpc": "2.0", "id": "p1", "result": {"stopReason": "end_turn"}}),
    );
    s
}

/// A call whose announcement and last update are further apart than what is read again
/// for one hit: its text is found at the two ends of its stretch.
#[test]
fn a_call_across_a_long_turn_still_has_its_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions/2026-12-06/long.jsonl");
    let mut text = load_log(0, 0, 1.0e9);
    // load_log(0, …) is a prompt and its end: put a long call inside the turn.
    let end = text.trim_end().rfind('\n').unwrap() + 1;
    let (head, tail) = text.split_at(end);
    let (head, tail) = (head.to_string(), tail.to_string());
    let upd = |u: serde_json::Value| {
        format!(
            "{}\n",
            serde_json::json!({"t": 0.5, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0",
                "method": "session/update", "params": {"sessionId": "demo", "update": u}}})
        )
    };
    text = head;
    text += &upd(
        serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "long",
        "title": "watch the aardvark", "kind": "execute", "status": "in_progress"}),
    );
    let filler = load_log(4000, 20, 1.0e9);
    let filler: String = filler
        .lines()
        .skip(2)
        .take(8000)
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(filler.len() as u64 > 5 << 20, "{}", filler.len());
    text += &filler;
    text += &upd(
        serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "long",
        "status": "completed", "content": [{"type": "content", "content": {"type": "text",
        "text": "the aardvark finally left the building"}}]}),
    );
    text += &tail;
    let logs = vec![(path, text)];
    let ix = index_of(dir.path(), &logs);
    for q in ["aardvark", "building", "watch"] {
        let want = oracle(&logs, q);
        assert!(!want.is_empty(), "{q}");
        assert_eq!(searched(&ix, q), want, "query {q:?}");
    }
}

/// A phrase whose words stand, apart, in thousands of newer entries is still found in
/// an older one where they stand together (the index keeps where words are).
#[test]
fn an_old_phrase_is_found_behind_thousands_of_its_words_apart() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("sessions/2026-12-06");
    // Older: "fox quick" together, in a prompt.
    let old = log_text("demo", "/p/old", 1.0e9, 1, "walrus")
        .replace("please build turn 1", "the old note says fox quick");
    // Newer: 6 000 outputs with "quick" and "fox", never side by side.
    let logs = vec![
        (s.join("a-old.jsonl"), old),
        (s.join("b-new.jsonl"), load_log(6_000, 2, 2.0e9)),
    ];
    let ix = index_of(dir.path(), &logs);
    let hits = ix.search("fox-quick", None, None, false, 20).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].snippet.contains("\u{2}fox quick\u{3}"), "{hits:?}");
    assert_eq!(
        ix.search("quick-fox", None, None, false, 20).unwrap().len(),
        0
    );
}
