#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use trellis_agents::logs::{log_text, turn_text};
use trellis_index::{Found, Index, ListFilter, Scope, session_id};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

struct Setup {
    _dir: tempfile::TempDir,
    sessions: PathBuf,
    index: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let index = dir.path().join("index.sqlite");
    Setup {
        sessions,
        index,
        _dir: dir,
    }
}

#[test]
fn sessions_are_listed_with_their_facts_and_found_by_their_words() {
    let s = setup();
    let a = s.sessions.join("2026-11-30/100000-demo-1.jsonl");
    let b = s.sessions.join("2026-12-01/100000-claude-2.jsonl");
    write(&a, &log_text("demo", "/p/one", 1_000.0, 2, "zanzibar"));
    write(&b, &log_text("claude", "/p/two", 2_000.0, 3, "quokka"));
    let (mut ix, found) = Index::open(&s.index).unwrap();
    assert_eq!(found, Found::Created);
    let up = ix.refresh(&s.sessions).unwrap();
    assert_eq!(up.logs, 2);

    let all = ix.list(&ListFilter::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].agent.as_deref(), Some("claude"), "newest first");
    let one = &all[1];
    assert_eq!(one.id, session_id(&a));
    assert_eq!(one.cwd.as_deref(), Some("/p/one"));
    assert_eq!(one.acp_id.as_deref(), Some("acp-demo"));
    assert_eq!(one.title.as_deref(), Some("Build demo"));
    assert_eq!(one.turns, 2);
    assert_eq!(
        (one.calls.total, one.calls.completed, one.calls.failed),
        (2, 1, 1)
    );
    let only = ix
        .list(&ListFilter {
            cwd: Some("/p/two".into()),
            ..ListFilter::default()
        })
        .unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].turns, 3);

    // A word that appears only in terminal output.
    let hits = ix.search("quokka", None, None, false, 20).unwrap();
    assert_eq!(hits.len(), 3, "{hits:#?}");
    assert!(hits.iter().all(|h| h.kind == "output"
        && h.session == session_id(&b)
        && h.call_id.as_deref().is_some_and(|c| c.starts_with("call-"))));
    assert!(hits[0].snippet.contains("\u{2}quokka\u{3}"), "{hits:?}");
    // Scopes.
    assert!(
        ix.search("quokka", Some(Scope::Prompts), None, false, 20)
            .unwrap()
            .is_empty()
    );
    let prompts = ix
        .search("turn 3", Some(Scope::Prompts), None, false, 20)
        .unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].turn, 3);
    // Chunks are joined into one message.
    let msgs = ix
        .search("build now", Some(Scope::Messages), None, false, 20)
        .unwrap();
    assert_eq!(msgs.len(), 5);
    let tools = ix
        .search("--turn", Some(Scope::Tools), Some("/p/one"), false, 20)
        .unwrap();
    assert_eq!(tools.len(), 2, "commands are searchable, limited to a cwd");
    // Prefix search, and text FTS5 would read as syntax.
    assert_eq!(ix.search("zanz", None, None, true, 20).unwrap().len(), 2);
    for odd in ["\"", "a OR", "NEAR(", "-x", "col:x", "*", "'"] {
        ix.search(odd, None, None, true, 20).unwrap();
    }
}

/// The full-text index holds exactly the words of the entries table: FTS5 compares them
/// (`integrity-check` with rank 1 reads the external content too).
fn words_match_entries(index: &Path) {
    let c = rusqlite::Connection::open(index).unwrap();
    c.execute(
        "INSERT INTO entries_fts(entries_fts, rank) VALUES('integrity-check', 1)",
        [],
    )
    .expect("the full-text index and the entries disagree");
}

#[test]
fn a_growing_log_is_read_from_its_last_turn_end() {
    let s = setup();
    let a = s.sessions.join("2026-11-30/100000-demo-1.jsonl");
    write(&a, &log_text("demo", "/p", 1.0, 1, "alpha"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    let first = ix.refresh(&s.sessions).unwrap();
    // Unchanged: nothing read.
    assert_eq!(ix.refresh(&s.sessions).unwrap().bytes, 0);

    // A second turn, its last line not written yet (a session still running, a crash).
    let second = turn_text("demo", 2, "beta");
    let cut = second.len() - 20;
    append(&a, &second[..cut]);
    let up = ix.update(&a).unwrap();
    assert!(
        up.bytes < second.len() as u64,
        "read from the checkpoint only: {up:?} vs first {first:?}"
    );
    assert_eq!(ix.search("beta", None, None, false, 9).unwrap().len(), 1);
    let row = ix.session(&session_id(&a)).unwrap();
    assert_eq!(row.turns, 2);
    let calls = |ix: &Index| {
        let c = ix.session(&session_id(&a)).unwrap().calls;
        (c.total, c.completed, c.failed)
    };
    assert_eq!(calls(&ix), (2, 1, 1));
    // The rest of the line arrives: the open turn is read again, not twice, and its
    // calls counted again, not twice.
    words_match_entries(&s.index);
    append(&a, &second[cut..]);
    ix.update(&a).unwrap();
    words_match_entries(&s.index);
    assert_eq!(calls(&ix), (2, 1, 1));
    assert_eq!(ix.search("beta", None, None, false, 9).unwrap().len(), 1);
    // Per turn: the prompt, the message, the call; the title, sent every turn, once.
    assert_eq!(ix.search("build", None, None, false, 99).unwrap().len(), 7);
    let titles = ix
        .search("demo", Some(Scope::Messages), None, false, 99)
        .unwrap();
    assert_eq!(titles.iter().filter(|h| h.kind == "title").count(), 1);

    // The same as reading it whole.
    let whole = |ix: &Index| {
        let mut h: Vec<_> = ix
            .search("build", None, None, false, 99)
            .unwrap()
            .into_iter()
            .map(|h| (h.kind, h.turn, h.call_id, h.offset))
            .collect();
        h.sort();
        h
    };
    let before = whole(&ix);
    ix.reindex(&s.sessions).unwrap();
    assert_eq!(whole(&ix), before);
    assert_eq!(calls(&ix), (2, 1, 1));
    words_match_entries(&s.index);
}

#[test]
fn a_replaced_or_deleted_log_is_noticed() {
    let s = setup();
    let a = s.sessions.join("2026-11-30/100000-demo-1.jsonl");
    write(&a, &log_text("demo", "/p", 1.0, 2, "alpha"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    // Another session written under the same name, longer than the first.
    write(&a, &log_text("other", "/q", 5.0, 3, "gamma"));
    ix.refresh(&s.sessions).unwrap();
    assert!(ix.search("alpha", None, None, false, 9).unwrap().is_empty());
    assert_eq!(ix.search("gamma", None, None, false, 9).unwrap().len(), 3);
    words_match_entries(&s.index);
    std::fs::remove_file(&a).unwrap();
    assert_eq!(ix.refresh(&s.sessions).unwrap().gone, 1);
    words_match_entries(&s.index);
    assert!(ix.list(&ListFilter::default()).unwrap().is_empty());
    assert!(ix.search("gamma", None, None, false, 9).unwrap().is_empty());
}

#[test]
fn a_damaged_or_newer_index_is_set_aside_and_rebuilt() {
    let s = setup();
    let a = s.sessions.join("2026-11-30/100000-demo-1.jsonl");
    write(&a, &log_text("demo", "/p", 1.0, 1, "alpha"));
    // Not a database at all.
    std::fs::write(&s.index, b"this is not SQLite, just garbage bytes").unwrap();
    let (mut ix, found) = Index::open(&s.index).unwrap();
    let Found::SetAside { why, to } = found else {
        panic!("{found:?}")
    };
    assert!(why.contains("not a usable"), "{why}");
    assert_eq!(
        std::fs::read(&to).unwrap(),
        b"this is not SQLite, just garbage bytes"
    );
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(ix.search("alpha", None, None, false, 9).unwrap().len(), 1);
    drop(ix);

    // Written by a later Trellis.
    {
        let c = rusqlite_version_bump(&s.index);
        assert!(c);
    }
    let (ix, found) = Index::open(&s.index).unwrap();
    assert!(
        matches!(&found, Found::SetAside { why, .. } if why.contains("newer")),
        "{found:?}"
    );
    assert!(ix.list(&ListFilter::default()).unwrap().is_empty());
    drop(ix);

    // Older (schema 1 kept its words in step by triggers; schema 4 a copy of every
    // text): dropped and made anew, and the file gives back their room.
    {
        let c = rusqlite::Connection::open(&s.index).unwrap();
        c.execute_batch("CREATE TABLE old_texts(t BLOB)").unwrap();
        c.execute("INSERT INTO old_texts VALUES (zeroblob(8000000))", [])
            .unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
    }
    assert!(std::fs::metadata(&s.index).unwrap().len() > 8_000_000);
    let (mut ix, found) = Index::open(&s.index).unwrap();
    assert_eq!(found, Found::Created);
    assert!(std::fs::metadata(&s.index).unwrap().len() < 1_000_000);
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(ix.search("alpha", None, None, false, 9).unwrap().len(), 1);
    drop(ix);

    // Deleted: created again, and filled from the logs.
    std::fs::remove_file(&s.index).unwrap();
    let (mut ix, found) = Index::open(&s.index).unwrap();
    assert_eq!(found, Found::Created);
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(ix.list(&ListFilter::default()).unwrap().len(), 1);
}

/// Marks the index as written by schema version 99.
fn rusqlite_version_bump(path: &Path) -> bool {
    let c = rusqlite::Connection::open(path).unwrap();
    c.pragma_update(None, "user_version", 99).is_ok()
}

#[test]
fn ids_resolve_by_prefix_and_path() {
    let s = setup();
    let a = s.sessions.join("a/1.jsonl");
    write(&a, &log_text("demo", "/p", 1.0, 1, "alpha"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    let id = session_id(&a);
    assert_eq!(ix.session(&id[..3]).unwrap().id, id);
    assert_eq!(ix.session(&a.to_string_lossy()).unwrap().id, id);
    assert!(matches!(
        ix.session("zzzz"),
        Err(trellis_index::Error::NotFound(_))
    ));
}

#[test]
fn hostile_lines_are_skipped() {
    let s = setup();
    let a = s.sessions.join("a/1.jsonl");
    let mut text = log_text("demo", "/p", 1.0, 1, "alpha");
    text.push_str("not json at all\n\n{\"t\": 1e999, \"dir\": 5}\n{\"dir\":\"agent_to_client\",\"msg\":{\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\"}}}}\n");
    text.push_str(&"[".repeat(100_000));
    text.push('\n');
    write(&a, &text);
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(ix.search("alpha", None, None, false, 9).unwrap().len(), 1);
}

#[test]
fn a_registered_log_outside_the_sessions_directory_is_read_by_the_next_refresh() {
    let s = setup();
    let elsewhere = s._dir.path().join("elsewhere/run.jsonl");
    write(&elsewhere, &log_text("demo", "/p", 1.0, 1, "alpha"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    // A session registers its log when it starts, and may be killed before reading it.
    ix.register(&elsewhere).unwrap();
    ix.register(&elsewhere).unwrap();
    assert!(ix.search("alpha", None, None, false, 9).unwrap().is_empty());
    let up = ix.refresh(&s.sessions).unwrap();
    assert_eq!(up.logs, 1);
    assert_eq!(ix.search("alpha", None, None, false, 9).unwrap().len(), 1);
    assert_eq!(ix.session(&session_id(&elsewhere)).unwrap().turns, 1);
}

#[test]
fn many_openers_of_a_new_index_lose_nobody() {
    // Sixteen openers at the same instant on a machine with no index (then with a
    // damaged one), each registering its own session: none may remove a file another has
    // just created and written into. Each opener has its own connection and lock
    // descriptor, as separate processes would.
    const OPENERS: usize = 16;
    for round in 0..8 {
        let s = setup();
        if round % 2 == 1 {
            std::fs::write(&s.index, vec![0x5a; 8192]).unwrap();
        }
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(OPENERS));
        let threads: Vec<_> = (0..OPENERS)
            .map(|i| {
                let (index, barrier) = (s.index.clone(), barrier.clone());
                let log = s.sessions.join(format!("run-{i}.jsonl"));
                write(&log, &log_text("demo", &format!("/p/{i}"), 1.0, 1, "w"));
                std::thread::spawn(move || {
                    barrier.wait();
                    let (mut ix, _) = Index::open(&index).unwrap();
                    ix.register(&log).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Without a refresh: only what was registered.
        let c = rusqlite::Connection::open(&s.index).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, OPENERS as i64, "round {round}");
    }
}

/// Opening does not read the whole file (that cost every session time in proportion to
/// all of history): damage inside it is found in use, said by the error, and the next open
/// checks every page and sets the file aside.
#[test]
fn damage_found_in_use_is_checked_at_the_next_open_and_set_aside() {
    let s = setup();
    let a = s.sessions.join("2026-11-30/100000-demo-1.jsonl");
    write(&a, &log_text("demo", "/p", 1.0, 400, "alpha"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    drop(ix);
    // The back half of the file (words, not the schema at its start) overwritten.
    let mut bytes = std::fs::read(&s.index).unwrap();
    let len = bytes.len();
    assert!(len > 64 << 10, "a small index: {len} bytes");
    bytes[len / 2..].fill(0x5a);
    std::fs::write(&s.index, &bytes).unwrap();

    let (ix, found) = Index::open(&s.index).unwrap();
    assert_eq!(found, Found::Ready, "the header and schema are intact");
    let err = ix
        .search("alpha", None, None, false, 1000)
        .and_then(|_| ix.list(&ListFilter::default()))
        .expect_err("the damaged pages are read");
    assert!(err.is_damage(), "{err}");
    drop(ix);
    trellis_index::suspect(&s.index);
    let (mut ix, found) = Index::open(&s.index).unwrap();
    assert!(
        matches!(&found, Found::SetAside { why, .. } if why.contains("damaged")),
        "{found:?}"
    );
    ix.refresh(&s.sessions).unwrap();
    assert!(!ix.search("alpha", None, None, false, 9).unwrap().is_empty());
    // The check was done once: the next open trusts the new file.
    drop(ix);
    assert_eq!(Index::open(&s.index).unwrap().1, Found::Ready);
}

/// A log written anew under its name (an editor's save, `sed -i`: a new file renamed over
/// the old) is read again from its start, even when its size and first line are the same:
/// a word taken out of an early turn is no longer found.
#[test]
fn a_log_written_anew_is_read_again_from_its_start() {
    let s = setup();
    let log = s.sessions.join("2026-12-06/100000-demo-1.jsonl");
    write(&log, &log_text("demo", "/p/one", 1_000.0, 3, "zanzibar"));
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(
        ix.search("zanzibar", None, None, false, 9).unwrap().len(),
        3
    );
    // The same length, the same first line: only the word differs.
    let text = std::fs::read_to_string(&log)
        .unwrap()
        .replace("zanzibar", "xxxxxxxx");
    let tmp = log.with_extension("tmp");
    std::fs::write(&tmp, &text).unwrap();
    std::fs::rename(&tmp, &log).unwrap();
    ix.refresh(&s.sessions).unwrap();
    assert!(
        ix.search("zanzibar", None, None, false, 9)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        ix.search("xxxxxxxx", None, None, false, 9).unwrap().len(),
        3
    );
    // Its calls counted from its start again, not on top of the first reading's.
    let all = ix.list(&ListFilter::default()).unwrap();
    assert_eq!(all[0].calls.total, 3, "{:?}", all[0].calls);
}

/// A call id announced again after its call ended (an agent that counts its ids from the
/// start again, in a new process after a reconnection) is a new call: counted apart,
/// as the session's ledger shows it.
#[test]
fn an_id_announced_again_is_counted_as_a_new_call() {
    let s = setup();
    let a = s.sessions.join("2026-12-06/100000-demo-1.jsonl");
    let mut text = log_text("demo", "/p/one", 1_000.0, 1, "zanzibar");
    text.push_str(&turn_text("demo", 1, "zanzibar"));
    write(&a, &text);
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    let all = ix.list(&ListFilter::default()).unwrap();
    assert_eq!(all[0].calls.total, 2, "{:?}", all[0].calls);
}

/// An edit's call is found by what it took out as well as by what it put in, and a call
/// whose diff is only in its permission request (an edit the user rejected) by that diff.
#[test]
fn an_edit_is_found_by_its_removed_lines_and_a_rejected_one_by_its_request() {
    let s = setup();
    let a = s.sessions.join("2026-12-07/100000-demo-1.jsonl");
    let rec = |t: f64, dir: &str, msg: serde_json::Value| {
        format!("{}\n", serde_json::json!({"t": t, "dir": dir, "msg": msg}))
    };
    let upd = |u: serde_json::Value| {
        serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": "s", "update": u}})
    };
    let diff = |path: &str, old: &str, new: &str| serde_json::json!([{"type": "diff", "path": path, "oldText": old, "newText": new}]);
    let mut text = log_text("demo", "/p", 1.0, 0, "x");
    text += &rec(
        0.1,
        "client_to_agent",
        serde_json::json!({"jsonrpc": "2.0", "id": "p1", "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "tidy up"}]}}),
    );
    // Allowed: announced with its diff, then completed.
    text += &rec(
        0.2,
        "agent_to_client",
        upd(
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "e1",
            "title": "Edit lib.rs", "kind": "edit", "status": "in_progress",
            "content": diff("/p/lib.rs", "fn a() {}\n// TODO: walrus overflow\nfn b() {}\n",
                            "fn a() {}\nfn b() {}\n")}),
        ),
    );
    text += &rec(
        0.3,
        "agent_to_client",
        upd(
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "e1",
            "status": "completed"}),
        ),
    );
    // Rejected: its diff only in the permission request.
    text += &rec(
        0.4,
        "agent_to_client",
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
            "params": {"sessionId": "s", "options": [],
                "toolCall": {"toolCallId": "e2", "title": "Edit main.rs", "kind": "edit",
                    "content": diff("/p/main.rs", "old line\n", "narwhal_checked_add(b)\n")}}}),
    );
    text += &rec(
        0.5,
        "agent_to_client",
        upd(
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "e2",
            "status": "failed"}),
        ),
    );
    text += &rec(
        0.6,
        "agent_to_client",
        serde_json::json!({"jsonrpc": "2.0", "id": "p1", "result": {"stopReason": "end_turn"}}),
    );
    write(&a, &text);
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    let removed = ix.search("walrus-overflow", None, None, false, 9).unwrap();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(
        (removed[0].kind.as_str(), removed[0].call_id.as_deref()),
        ("output", Some("e1"))
    );
    assert!(
        removed[0].snippet.contains("\u{2}walrus overflow\u{3}"),
        "{removed:?}"
    );
    let rejected = ix
        .search("narwhal_checked_add", None, None, false, 9)
        .unwrap();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].call_id.as_deref(), Some("e2"));
    let row = ix.list(&ListFilter::default()).unwrap();
    assert_eq!(
        (
            row[0].calls.total,
            row[0].calls.completed,
            row[0].calls.failed
        ),
        (2, 1, 1)
    );
}

/// A record whose keys and strings are written with escapes (`\u0074itle` for `title`)
/// is read like any other: the parse borrows from the line where it can and unescapes
/// where it must.
#[test]
fn records_written_with_escapes_are_read_like_any_other() {
    let s = setup();
    let a = s.sessions.join("2026-12-07/100000-demo-2.jsonl");
    let mut text = log_text("demo", "/p", 1.0, 0, "x");
    text += r#"{"t":0.1,"dir":"client_to_agent","msg":{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"look around"}]}}}
{"t":0.2,"dir":"\u0061gent_to_client","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","\u0074itle":"Run \u0067repper","status":"completed","rawOutput":{"out\u0070ut":"quokka\u0020found"}}}}}
{"t":0.3,"dir":"agent_to_client","msg":{"jsonrpc":"2.0","id":"p1","result":{"stopReason":"end_turn"}}}
"#;
    write(&a, &text);
    let (mut ix, _) = Index::open(&s.index).unwrap();
    ix.refresh(&s.sessions).unwrap();
    assert_eq!(ix.search("quokka", None, None, false, 9).unwrap().len(), 1);
    assert_eq!(ix.search("grepper", None, None, false, 9).unwrap().len(), 1);
    let all = ix.list(&ListFilter::default()).unwrap();
    assert_eq!(all[0].calls.total, 1, "{:?}", all[0].calls);
}
