//! Finished chunks of calls out of memory (`trellis_core::cold`): what a frozen call
//! reads back as, finding it by id, changing it again, and a spill that fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::json;
use trellis_core::bulk::BulkSource;
use trellis_core::cold::{CHUNK, Cold, MemorySpill, Spill};
use trellis_core::tool_call::{ToolCallPatch, ToolContent};
use trellis_core::{Ledger, ToolStatus};

/// The in-memory spill, and a disk that fills up on demand.
#[derive(Default)]
struct MemSpill {
    bytes: MemorySpill,
    fail: std::sync::atomic::AtomicBool,
}

impl Spill for MemSpill {
    fn put(&self, b: &[u8]) -> std::io::Result<u64> {
        if self.fail.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(std::io::Error::other("disk full"));
        }
        self.bytes.put(b)
    }
    fn get(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        self.bytes.get(at, len)
    }
}

/// The "log": the text frame `seq` brought is `out <seq>`.
struct Log;
impl BulkSource for Log {
    fn text(&self, seq: u64, item: usize) -> Option<String> {
        Some(format!("out {seq}/{item}\n"))
    }
}

fn patch(v: serde_json::Value) -> ToolCallPatch {
    serde_json::from_str(&v.to_string()).unwrap()
}

/// `n` calls, each announced (frame 2i) and completed with output (frame 2i+1); every
/// tenth belongs to subagent "kid" and reuses the parent's id.
fn ledger(n: usize) -> (Ledger, Arc<Cold>, Arc<MemSpill>) {
    let spill = Arc::new(MemSpill::default());
    let cold = Cold::new(spill.clone(), Arc::new(Log));
    let mut l = Ledger::default();
    l.set_cold(cold.clone());
    let kid: Arc<str> = Arc::from("kid");
    for i in 0..n {
        let owner = (i % 10 == 9).then_some((0, &kid));
        let id = if owner.is_some() {
            format!("c{}", i - 9)
        } else {
            format!("c{i}")
        };
        let a = l.apply_in(
            owner,
            &mut patch(
                json!({"toolCallId": id, "title": format!("T{i}"), "kind": "execute",
                "status": "in_progress", "rawInput": {"n": i}}),
            ),
            true,
            i as f64,
            1,
        );
        l.push_frame(a.index, 2 * i as u64);
        let a = l.apply_in(
            owner,
            &mut patch(json!({"toolCallId": id, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": format!("out {}/0\n", 2 * i + 1)}}]})),
            false,
            i as f64 + 0.5,
            1,
        );
        l.push_frame(a.index, 2 * i as u64 + 1);
        l.seal(a.index);
    }
    (l, cold, spill)
}

#[test]
fn a_frozen_call_reads_back_as_it_was_and_is_found_by_its_id() {
    let n = 5 * CHUNK + 7;
    let (mut l, cold, _) = ledger(n);
    let before: Vec<_> = l.calls().map(|c| (*c).clone()).collect();
    let frozen = l.settle();
    // All but the newest two chunks (the last one partial) left memory.
    assert_eq!(frozen, 4 * CHUNK);
    assert!(l.is_frozen(0) && l.is_frozen(4 * CHUNK - 1) && !l.is_frozen(4 * CHUNK));
    assert_eq!(cold.stats(), (4 * CHUNK, None));
    for (i, b) in before.iter().enumerate() {
        let c = l.at(i);
        assert_eq!(*c, *b, "call {i}");
        assert_eq!(c.position, i);
        assert_eq!(c.status_history, b.status_history);
        assert_eq!(c.rev, b.rev);
        assert_eq!(c.subagent, b.subagent);
        assert_eq!(&*l.frames(i), &[2 * i as u64, 2 * i as u64 + 1]);
        let ToolContent::Text { text } = &c.content[0] else {
            panic!("text")
        };
        assert_eq!(text.len(), format!("out {}/0\n", 2 * i + 1).len());
        assert_eq!(text.output_lines(), 1);
        if i < 4 * CHUNK {
            assert!(
                !text.is_held(),
                "a frozen call's output is read from the log"
            );
        }
        assert_eq!(*text.load(), format!("out {}/0\n", 2 * i + 1));
    }
    // By id: the session's own and the subagent's (the same id, another call).
    assert_eq!(l.position("c0"), Some(0));
    assert_eq!(l.position_in(Some(0), "c0"), Some(9));
    assert_eq!(l.position("c1030"), Some(1030));
    assert_eq!(l.position("c9"), None, "c9 is the subagent's only");
    assert_eq!(l.position("nope"), None);
    assert_eq!(cold.find(Some("kid"), "c0"), Some(9));
    assert!(cold.holds(9, Some("kid"), "c0") && !cold.holds(9, None, "c0"));
    // A call read alone and one of its decoded chunk are the same call.
    let chunk = cold.chunk(1).unwrap();
    assert_eq!(*chunk.calls[7], *l.at(CHUNK + 7));
    assert_eq!(chunk.frames[7], &*l.frames(CHUNK + 7));
    // In order, both ways, frozen or not.
    let ids: Vec<_> = l.calls().rev().map(|c| c.position).collect();
    assert_eq!(ids, (0..n).rev().collect::<Vec<_>>());
    assert!(l.open().is_empty());
    assert_eq!(l.calls().len(), n);
    // Counted without decoding: the frozen chunks' tallies and the calls in memory.
    let t = l.tally();
    assert_eq!((t.calls, t.count(ToolStatus::Completed)), (n, n));
    let bytes: usize = (0..n).map(|i| format!("out {}/0\n", 2 * i + 1).len()).sum();
    assert_eq!(t.output_bytes, bytes);
}

/// Calls are written for the spill as they finish; one that changed after that is written
/// again when its chunk freezes, whatever changed: a field, its frames, its texts' home.
#[test]
fn a_call_changed_after_it_was_sealed_freezes_as_it_is_then() {
    let (mut l, _, _) = ledger(4 * CHUNK);
    // A later frame about a finished call (its title).
    let a = l.apply_in(
        None,
        &mut patch(json!({"toolCallId": "c3", "title": "renamed"})),
        false,
        9.0,
        1,
    );
    l.push_frame(a.index, 100_000);
    // A change with no frame (as a permission record or an anomaly mark makes).
    l.at_mut(5).anomalies.push("ran_unasked".into());
    // A frame that touched it and changed nothing.
    l.push_frame(7, 100_001);
    let before: Vec<_> = l.calls().map(|c| (*c).clone()).collect();
    let frames: Vec<Vec<u64>> = (0..before.len()).map(|i| l.frames(i).to_vec()).collect();
    assert_eq!(l.settle(), 2 * CHUNK);
    for i in [1, 3, 5, 7, 8] {
        let c = l.at(i);
        assert!(l.is_frozen(i));
        assert_eq!(*c, before[i], "call {i}");
        assert_eq!(c.rev, before[i].rev, "call {i}");
        assert_eq!(*l.frames(i), *frames[i], "call {i}");
    }
    assert_eq!(l.at(3).title, "renamed");
    assert_eq!(l.at(5).anomalies, ["ran_unasked"]);
    assert_eq!(*l.frames(7), [14, 15, 100_001]);
}

#[test]
fn a_frozen_call_changed_again_comes_back_into_memory_and_freezes_again() {
    let (mut l, cold, _) = ledger(4 * CHUNK);
    l.settle();
    assert!(l.is_frozen(5));
    // A late update to a frozen call (by id) and a status the client sets.
    let a = l.apply(
        patch(json!({"toolCallId": "c5", "title": "renamed"})),
        false,
        99.0,
        2,
    );
    assert_eq!((a.index, a.created), (5, false));
    assert!(!l.is_frozen(5), "thawed to be changed");
    l.push_frame(5, 777);
    assert_eq!(l.at(5).title, "renamed");
    assert_eq!(&*l.frames(5), &[10, 11, 777]);
    // Still found by id while in memory, and the neighbours too.
    assert_eq!(l.position("c6"), Some(6));
    assert_eq!(l.position_in(Some(0), "c0"), Some(9));
    // A call re-opened is not frozen again until it finishes.
    l.at_mut(6).set_status(ToolStatus::InProgress, 100.0);
    assert_eq!(l.settle(), 0);
    assert_eq!(l.open(), vec![6]);
    assert_eq!(l.tally().count(ToolStatus::InProgress), 1);
    l.at_mut(6).set_status(ToolStatus::Completed, 101.0);
    assert_eq!(l.settle(), CHUNK);
    assert_eq!(l.at(5).title, "renamed");
    assert_eq!(&*l.frames(5), &[10, 11, 777]);
    assert_eq!(l.position("c5"), Some(5));
    assert_eq!(cold.stats().0, 2 * CHUNK);
    // A clone freezes on its own: the original's store is not changed by it.
    let mut copy = l.clone();
    copy.at_mut(7).title = "copy".into();
    assert_eq!(l.at(7).title, "T7");
    assert_eq!(copy.at(7).title, "copy");
}

#[test]
fn a_spill_that_fails_keeps_the_calls_in_memory() {
    let (mut l, cold, spill) = ledger(4 * CHUNK);
    spill.fail.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(l.settle(), 0);
    assert!(!l.is_frozen(0));
    let (n, why) = cold.stats();
    assert_eq!(n, 0);
    assert!(why.unwrap().contains("disk full"));
    assert_eq!(l.at(3).title, "T3");
    assert_eq!(l.position("c3"), Some(3));
}

/// A spill that counts what is read back.
#[derive(Default)]
struct CountingSpill {
    bytes: MemorySpill,
    reads: std::sync::atomic::AtomicUsize,
}

impl Spill for CountingSpill {
    fn put(&self, b: &[u8]) -> std::io::Result<u64> {
        self.bytes.put(b)
    }
    fn get(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.bytes.get(at, len)
    }
}

/// A turn's calls are counted from its chunks' tallies — the same counts as reading them
/// one by one from the end — and at most the chunk where the turn begins is read back.
#[test]
fn a_turns_calls_are_counted_without_reading_its_frozen_chunks_back() {
    let spill = Arc::new(CountingSpill::default());
    let cold = Cold::new(spill.clone(), Arc::new(Log));
    let mut l = Ledger::default();
    l.set_cold(cold);
    // Turn 1 ends inside the second chunk; turn 2 runs over several more; turn 3 is short
    // and shares its first chunk with turn 2.
    let turns = [(1, CHUNK + 100), (2, 4 * CHUNK + 30), (3, 40)];
    let mut i = 0;
    for (turn, n) in turns {
        for _ in 0..n {
            let id = format!("c{i}");
            let status = if i % 7 == 0 { "failed" } else { "completed" };
            l.apply(
                patch(json!({"toolCallId": id, "kind": "execute", "status": "in_progress"})),
                true,
                i as f64,
                turn,
            );
            let a = l.apply(
                patch(json!({"toolCallId": id, "status": status})),
                false,
                i as f64 + 0.5,
                turn,
            );
            if i % 11 == 0 {
                l.get_mut(&id).unwrap().anomalies.push("ran unasked".into());
            }
            l.seal(a.index);
            i += 1;
        }
        l.settle();
    }
    let by_hand = |turn: u32| {
        let mut n = (0, 0, 0);
        for c in l.calls().rev().take_while(|c| c.turn == turn) {
            n.0 += 1;
            n.1 += usize::from(c.status == ToolStatus::Failed);
            n.2 += usize::from(!c.anomalies.is_empty());
        }
        n
    };
    let want3 = by_hand(3);
    assert_eq!(want3.0, 40);
    spill.reads.store(0, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(l.turn_tally(3), want3);
    // Turn 3's calls are all in memory: nothing read back.
    assert_eq!(spill.reads.load(std::sync::atomic::Ordering::Relaxed), 0);
    // Turn 2 as it was counted before turn 3 came: its last run of calls is turn 3's now,
    // so asked for turn 2 the count is none; the run of turn 2 alone, through a ledger
    // that ends with it, is checked with a turn that ends in a frozen chunk below.
    assert_eq!(l.turn_tally(2), (0, 0, 0));
    assert_eq!(l.turn_tally(2), by_hand(2));
    // A ledger that ends with a long turn, most of it frozen.
    let spill = Arc::new(CountingSpill::default());
    let mut l = Ledger::default();
    l.set_cold(Cold::new(spill.clone(), Arc::new(Log)));
    for (k, turn) in std::iter::repeat_n(1, CHUNK + 100)
        .chain(std::iter::repeat_n(2, 5 * CHUNK + 30))
        .enumerate()
    {
        let id = format!("c{k}");
        let status = if k % 7 == 0 { "failed" } else { "completed" };
        l.apply(
            patch(json!({"toolCallId": id, "status": "in_progress"})),
            true,
            0.0,
            turn,
        );
        let a = l.apply(
            patch(json!({"toolCallId": id, "status": status})),
            false,
            0.5,
            turn,
        );
        if k % 11 == 0 {
            l.get_mut(&id).unwrap().anomalies.push("ran unasked".into());
        }
        l.seal(a.index);
    }
    l.settle();
    assert!(l.is_frozen(2 * CHUNK) && l.is_frozen(CHUNK));
    let reads = || spill.reads.load(std::sync::atomic::Ordering::Relaxed);
    spill.reads.store(0, std::sync::atomic::Ordering::Relaxed);
    let got = l.turn_tally(2);
    // Only the chunk where turn 2 begins (shared with turn 1) was read back.
    assert_eq!(reads(), 1);
    let mut want = (0, 0, 0);
    for c in l.calls().rev().take_while(|c| c.turn == 2) {
        want.0 += 1;
        want.1 += usize::from(c.status == ToolStatus::Failed);
        want.2 += usize::from(!c.anomalies.is_empty());
    }
    assert_eq!(want.0, 5 * CHUNK + 30);
    assert!(
        reads() > 3,
        "reading them one by one reads the frozen chunks back"
    );
    assert_eq!(got, want);
}
