#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::io::Write;
use trellis_core::tool_call::ToolContent;

fn up(t: f64, u: serde_json::Value) -> String {
    serde_json::json!({"t": t, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0",
        "method": "session/update", "params": {"sessionId": "S", "update": u}}})
    .to_string()
}

/// A log of `calls` finished calls, with a line that is not UTF-8 and blank lines.
fn long_log(calls: usize) -> tempfile::NamedTempFile {
    log_of(calls, "out")
}

/// [`long_log`], each call's output starting with `said`.
fn log_of(calls: usize, said: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    let mut w = std::io::BufWriter::new(f.as_file_mut());
    writeln!(w, "{}", serde_json::json!({"t": 0.0, "dir": "client_to_agent", "msg": {"jsonrpc": "2.0", "id": 1,
        "method": "session/prompt", "params": {"sessionId": "S", "prompt": [{"type": "text", "text": "go"}]}}})).unwrap();
    for i in 0..calls {
        let id = format!("c{i}");
        writeln!(
            w,
            "{}",
            up(
                1.0,
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": id,
            "title": format!("Call {i}"), "kind": "execute", "status": "in_progress"})
            )
        )
        .unwrap();
        writeln!(w, "{}", up(1.0, serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": format!("{said} {i}\nline 2\n")}}]}))).unwrap();
        if i == calls / 2 {
            w.write_all(b"\xff\xfe{\"t\": \n\n\r\n").unwrap();
        }
    }
    drop(w);
    f
}

#[test]
fn a_long_log_is_rebuilt_with_finished_chunks_out_of_memory() {
    let log = long_log(3000);
    let mut events = 0;
    let r = rebuild_log(log.path(), |fx| {
        if matches!(fx, Effect::Emit(_)) {
            events += 1;
        }
    })
    .unwrap();
    let s = &r.session;
    assert_eq!(s.ledger.len(), 3000);
    assert!(events >= 6000, "{events}");
    assert_eq!(r.unreadable, 1, "{:?}", r.problems);
    assert!(r.problems[0].starts_with("line 3004:"), "{:?}", r.problems);
    assert!(r.spill_error.is_none());
    let frozen = s.ledger.cold().unwrap().stats().0;
    assert!(frozen >= 2048, "{frozen} calls frozen");
    // A frozen call's output reads back from the log, the newest's is in memory.
    for i in [0, 5, 1499, 1500, 2999] {
        assert!(s.ledger.is_frozen(i) || i == 2999);
        let c = s.ledger.at(i);
        let ToolContent::Text { text } = &c.content[0] else {
            panic!("{:?}", c.content)
        };
        assert_eq!(*text.load(), format!("out {i}\nline 2\n"));
    }
}

/// A resumed session: its history rebuilt out of memory from the earlier log, its new
/// calls in its own log going on in the same store; both read back from their own log
/// once frozen.
#[test]
fn a_resumed_session_keeps_its_history_and_its_new_calls_out_of_memory() {
    let earlier = long_log(3000);
    let prev = rebuild_log(earlier.path(), |_| {}).unwrap().session;
    assert!(prev.ledger.cold().unwrap().stats().0 >= 2048);
    let s = Session::continuing(prev, Policy::Ask, "resumed".into());
    let now = log_of(3000, "new");
    let mut d = crate::Driver::offline(s);
    d.keep_output_in_log_within(now.path(), 1 << 20);
    let text = std::fs::read(now.path()).unwrap();
    for (n, line) in text.split(|b| *b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(line);
        trellis_core::log::apply_line(&mut d.session, n as u64 + 1, &line, |_| {});
        if n % 512 == 0 {
            d.session.ledger.settle();
        }
    }
    d.session.ledger.settle();
    let l = &d.session.ledger;
    assert_eq!(l.len(), 6000);
    assert!(
        l.cold().unwrap().stats().0 >= 4096,
        "{:?}",
        l.cold().unwrap().stats()
    );
    for (i, said) in [
        (0, "out 0"),
        (1499, "out 1499"),
        (2999, "out 2999"),
        (3000, "new 0"),
        (4500, "new 1500"),
        (5999, "new 2999"),
    ] {
        assert!(l.is_frozen(i) || i >= 4096, "{i}");
        let c = l.at(i);
        let ToolContent::Text { text } = &c.content[0] else {
            panic!("{:?}", c.content)
        };
        assert_eq!(*text.load(), format!("{said}\nline 2\n"), "call {i}");
    }
}

/// A recording shown while it is read: the driver folds the feed in slices, says how
/// far it got, and ends with the session the one-pass rebuild makes (unreadable lines
/// said once).
#[test]
fn a_fed_replay_ends_with_the_session_a_whole_rebuild_makes() {
    let log = long_log(3000);
    let whole = rebuild_log(log.path(), |_| {}).unwrap();
    let (session, spill, feed) = Feed::start(log.path()).unwrap();
    assert!(spill.is_none());
    assert_eq!(
        session.ledger.len(),
        0,
        "nothing is read before it is shown"
    );
    let mut d = crate::Driver::offline(session);
    d.replay(feed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (mut notes, mut seen) = (Vec::new(), Vec::new());
    while let Some(done) = d.loading() {
        seen.push(done);
        let incoming = rt.block_on(d.recv());
        d.handle(incoming, &mut notes);
    }
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    let (a, b) = (&d.session.ledger, &whole.session.ledger);
    assert_eq!(a.len(), b.len());
    for i in [0, 1499, 2999] {
        let (x, y) = (a.at(i), b.at(i));
        assert_eq!((&x.id, x.status, &x.title), (&y.id, y.status, &y.title));
    }
    assert!(
        a.cold().unwrap().stats().0 >= 2048,
        "finished chunks left memory"
    );
    let said: Vec<_> = notes
        .iter()
        .filter_map(|n| match n {
            crate::Note::Message(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("1 unreadable log lines (first: line 3004:"),
        "{said:?}"
    );
    // Events are not handed on one by one: the places they were about are, per slice.
    assert!(!notes.iter().any(|n| matches!(n, crate::Note::Event(_))));
    let mut touched: Vec<usize> = notes
        .iter()
        .filter_map(|n| match n {
            crate::Note::Touched(p) => Some(p.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    touched.sort_unstable();
    touched.dedup();
    assert_eq!(touched, (0..3000).collect::<Vec<_>>());
}

/// A log still being written, followed: history first (only marked), then each
/// record as news once it is whole, a line written in two pieces read once, what
/// the hub says in order, and the end when the hub says so.
#[test]
fn a_followed_log_is_history_then_news_and_a_half_line_waits_for_its_end() {
    let mut log = long_log(600);
    let (tx, rx) = std::sync::mpsc::channel();
    let (session, _, feed) = Feed::follow(log.path(), rx).unwrap();
    let (hub_tx, _hub_rx) = std::sync::mpsc::channel();
    let mut d = crate::Driver::offline(session);
    d.attach(feed, hub_tx);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut notes = Vec::new();
    let step = |d: &mut crate::Driver, notes: &mut Vec<crate::Note>| {
        let incoming = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(10), d.recv())
                .await
                .expect("the follower hands something over")
        });
        d.handle(incoming, notes);
    };
    while d.loading().is_some() {
        step(&mut d, &mut notes);
    }
    assert_eq!(d.session.ledger.len(), 600);
    assert!(!notes.iter().any(|n| matches!(n, crate::Note::Event(_))));
    notes.clear();
    // A new call, its line written in two pieces.
    let line = up(
        2.0,
        serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "late",
            "title": "Late", "kind": "execute", "status": "in_progress"}),
    );
    let (head, tail) = line.split_at(20);
    write!(log.as_file_mut(), "{head}").unwrap();
    tx.send(Wake::Grown).unwrap();
    tx.send(Wake::Said("hello from the hub".into())).unwrap();
    while !notes.iter().any(|n| matches!(n, crate::Note::Message(_))) {
        step(&mut d, &mut notes);
    }
    assert_eq!(d.session.ledger.len(), 600, "half a line is not a record");
    writeln!(log.as_file_mut(), "{tail}").unwrap();
    tx.send(Wake::Grown).unwrap();
    while d.session.ledger.len() == 600 {
        step(&mut d, &mut notes);
    }
    assert_eq!(d.session.ledger.at(600).title, "Late");
    assert!(
        notes.iter().any(|n| matches!(n, crate::Note::Event(e)
            if matches!(e.body, trellis_core::EventBody::ToolCallCreated { .. }))),
        "news comes as events"
    );
    tx.send(Wake::Ended).unwrap();
    while !notes.iter().any(|n| matches!(n, crate::Note::Closed)) {
        step(&mut d, &mut notes);
    }
    assert!(d.loading().is_none());
    assert_eq!(d.session.ledger.len(), 601);
}

/// Intents of an attached session go to its hub; nothing changes here first.
#[test]
fn an_attached_session_sends_its_intents_to_the_hub() {
    let log = long_log(1);
    let (_tx, rx) = std::sync::mpsc::channel();
    let (_, _, feed) = Feed::follow(log.path(), rx).unwrap();
    let (hub_tx, hub_rx) = std::sync::mpsc::channel();
    let mut d = crate::Driver::offline(Session::new(Policy::Ask));
    d.attach(feed, hub_tx);
    let mut notes = Vec::new();
    d.prompt("go on".into(), Vec::new());
    d.cancel(&mut notes);
    d.decide(
        "7".into(),
        trellis_core::Choice::Option("allow".into()),
        trellis_core::Decider::User,
        &mut notes,
    );
    let got: Vec<_> = hub_rx.try_iter().collect();
    assert_eq!(
        got,
        vec![
            crate::attached::Remote::Prompt {
                text: "go on".into(),
                files: Vec::new()
            },
            crate::attached::Remote::Cancel,
            crate::attached::Remote::Decide {
                request_id: "7".into(),
                choice: trellis_core::Choice::Option("allow".into()),
                reason: None,
            },
        ]
    );
    assert!(notes.is_empty() && d.attached() && d.ready());
}

#[test]
fn only_a_regular_file_is_read_as_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // A FIFO would block the open (no writer) or never end: refused at once.
    let e = rebuild_log(&fifo, |_| {}).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = rebuild_log(dir.path(), |_| {}).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

/// Counts the events an observer sees.
struct Seen(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl crate::Observer for Seen {
    fn event(&mut self, _: &trellis_core::Event, _: &trellis_core::Session) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn closed(&mut self) {}
}

/// A resumed session shown while its history is read: what is shown grows slice by
/// slice, the history reaches no observer (nor extensions, nor a connection), and once it
/// is in the session continues it: the calls archived, the divider last, finished chunks
/// out of memory in the store the new log's calls go on in.
#[test]
fn a_resumed_session_is_shown_while_its_history_is_read() {
    let earlier = long_log(3000);
    let now = log_of(0, "new");
    let (session, spill, feed) = Feed::start(earlier.path()).unwrap();
    assert!(spill.is_none());
    let mut d = crate::Driver::offline(session);
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    d.observe(Box::new(Seen(seen.clone())));
    d.resume(
        feed,
        crate::Resumed {
            policy: Policy::Ask,
            notice: "resumed from the earlier log".into(),
            log: now.path().to_path_buf(),
        },
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut notes = Vec::new();
    let mut slices = 0;
    while d.loading().is_some() {
        assert!(d.resuming());
        let incoming = rt.block_on(d.recv());
        d.handle(incoming, &mut notes);
        slices += 1;
    }
    assert!(!d.resuming());
    assert!(slices > 1, "read in slices: {slices}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the history is not this session's doing"
    );
    let s = &d.session;
    assert_eq!(s.ledger.len(), 3000);
    assert!(
        s.seeded,
        "a session/load's replay will not be applied twice"
    );
    assert!(
        matches!(s.transcript.last(), Some(trellis_core::transcript::Entry::Notice { text }) if text.contains("resumed")),
        "the divider is last"
    );
    assert_eq!(
        s.ledger.position("c7"),
        None,
        "the history's ids are archived"
    );
    let c = s.ledger.at(7);
    let ToolContent::Text { text } = &c.content[0] else {
        panic!("{:?}", c.content)
    };
    assert!(s.ledger.is_frozen(7));
    assert_eq!(*text.load(), "out 7\nline 2\n");
    assert!(
        d.output_held().is_some(),
        "the new log keeps this session's output"
    );
}
