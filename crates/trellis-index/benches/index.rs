//! The session index: how fast logs are indexed (MB of log per second), and how long a
//! search takes over 1 000 sessions (median and 95th percentile).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trellis_agents::logs::{load_log, log_text};
use trellis_index::{Index, Scope};

fn indexing(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sessions/d/load.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    // `CALLS=100000` for a longer turn (the index of a long one is a little larger: more
    // distinct words, and more pages its merges free).
    let calls: usize = std::env::var("CALLS").map_or(10_000, |v| v.parse().unwrap());
    let text = load_log(calls, 20, 1.0);
    std::fs::write(&log, &text).unwrap();
    let mut g = c.benchmark_group("index");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function(format!("demo_load_{calls}_calls"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let path = dir.path().join(format!("ix-{i}.sqlite"));
                let (mut ix, _) = Index::open(&path).unwrap();
                let t = Instant::now();
                ix.update(&log).unwrap();
                total += t.elapsed();
                drop(ix);
                for s in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{s}", path.display()));
                }
            }
            total
        })
    });
    // As a running session's index thread reads its log: followed as it grows (here a
    // read per 4 MiB written), with the session's small term hash.
    let grown = dir.path().join("sessions/d/grown.jsonl");
    g.bench_function(format!("demo_load_{calls}_calls_followed"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let path = dir.path().join(format!("fx-{i}.sqlite"));
                let (mut ix, _) = Index::open(&path).unwrap();
                ix.set_bulk(false).unwrap();
                std::fs::write(&grown, "").unwrap();
                let mut state = None;
                let bytes = text.as_bytes();
                let mut at = 0;
                while at < bytes.len() {
                    let end = (at + (4 << 20)).min(bytes.len());
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&grown)
                        .unwrap();
                    std::io::Write::write_all(&mut f, &bytes[at..end]).unwrap();
                    drop(f);
                    at = end;
                    let t = Instant::now();
                    ix.follow(&grown, &mut state, at == bytes.len()).unwrap();
                    total += t.elapsed();
                }
                drop(ix);
                for s in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{s}", path.display()));
                }
            }
            total
        })
    });
    // The share of the time that is reading the log (no database): a sink that only
    // counts what it is given.
    struct Count(usize);
    impl trellis_index::Sink for Count {
        fn doc(&mut self, d: trellis_index::Doc) {
            self.0 += d.text.len();
        }
        fn call(&mut self, _: trellis_index::CallRow) {
            self.0 += 1;
        }
        fn checkpoint(&mut self, _: u64, _: u32) {}
    }
    g.bench_function(format!("demo_load_{calls}_calls_extract_only"), |b| {
        b.iter(|| {
            let mut ex = trellis_index::Extractor::default();
            let mut sink = Count(0);
            let mut at = 0u64;
            for line in text.split_inclusive('\n') {
                let next = at + line.len() as u64;
                ex.feed(line.trim_end().as_bytes(), at, next, &mut sink);
                at = next;
            }
            ex.finish(&mut sink);
            sink.0
        })
    });
    g.finish();
    // The index's size against the log's (the target: at most 0.2×).
    let path = dir.path().join("size.sqlite");
    let (mut ix, _) = Index::open(&path).unwrap();
    ix.update(&log).unwrap();
    drop(ix);
    report_size(&format!("a {calls}-call turn"), &path, text.len());
}

/// Prints the index file's size (with its write-ahead log) against `log_bytes`.
fn report_size(what: &str, index: &std::path::Path, log_bytes: usize) {
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", index.display())).ok())
        .map(|m| m.len())
        .sum();
    eprintln!(
        "index of {what}: {:.1} MB for {:.1} MB of log: {:.3}x",
        size as f64 / 1e6,
        log_bytes as f64 / 1e6,
        size as f64 / log_bytes as f64
    );
}

fn searching(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    // 1 000 sessions in 50 directories, 20 turns each; a rare word in a few outputs.
    let words = [
        "tokio", "serde", "axum", "clap", "rayon", "regex", "hyper", "tower",
    ];
    let mut bytes = 0;
    for i in 0..1000usize {
        let w = if i.is_multiple_of(97) {
            "xylophone"
        } else {
            words[i % words.len()]
        };
        let text = log_text(
            &format!("agent{}", i % 4),
            &format!("/home/dev/project-{}", i % 50),
            1e9 + i as f64,
            20,
            w,
        );
        bytes += text.len();
        let p = sessions.join(format!("d{}/{i}.jsonl", i % 30));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (mut ix, _) = Index::open(&dir.path().join("index.sqlite")).unwrap();
    let t = Instant::now();
    ix.refresh(&sessions).unwrap();
    let took = t.elapsed();
    eprintln!(
        "indexed 1000 logs ({:.1} MB) in {:.2} s: {:.0} MB/s",
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        bytes as f64 / 1e6 / took.as_secs_f64()
    );
    report_size("1000 logs", &dir.path().join("index.sqlite"), bytes);
    let queries: &[(&str, Option<Scope>, bool)] = &[
        ("xylophone", None, false),
        ("tokio", None, false),
        ("build", None, false),
        ("cargo build", Some(Scope::Tools), false),
        ("turn 7", Some(Scope::Prompts), false),
        ("compil", None, true),
        ("warning unused", Some(Scope::Output), false),
    ];
    let mut times = Vec::new();
    for _ in 0..30 {
        for (q, scope, prefix) in queries {
            let t = Instant::now();
            let hits = ix.search(q, *scope, None, *prefix, 50).unwrap();
            times.push(t.elapsed());
            assert!(!hits.is_empty(), "{q}");
        }
    }
    times.sort();
    eprintln!(
        "search over 1000 sessions, {} queries: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        times.len(),
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() * 95 / 100].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
    let mut g = c.benchmark_group("search_1000_sessions");
    for (q, scope, prefix) in queries {
        g.bench_function(q.replace(' ', "_"), |b| {
            b.iter(|| ix.search(q, *scope, None, *prefix, 50).unwrap())
        });
    }
    g.finish();
}

/// Eight sessions of 20 000 calls each write their logs at once (`fan 8`), each followed
/// by its session's index thread; how long after the turns end is each caught up, against
/// reading each whole turn once it ended (what the index thread did before it followed).
fn keeping_pace(_: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let text = load_log(20_000, 20, 1.0);
    let fan = 8;
    let run = |follow: bool, tag: &str| -> (Duration, u64) {
        let index = dir.path().join(format!("{tag}.sqlite"));
        let logs: Vec<_> = (0..fan)
            .map(|i| sessions.join(format!("{tag}-{i}.jsonl")))
            .collect();
        for l in &logs {
            std::fs::write(l, "").unwrap();
        }
        let mut bg: Vec<_> = if follow {
            logs.iter()
                .map(|l| trellis_index::Background::start(index.clone(), &sessions, l.clone()))
                .collect()
        } else {
            Vec::new()
        };
        // The sessions write in 1 MiB pieces, about 16 MiB a second each.
        use std::io::Write;
        let mut files: Vec<_> = logs
            .iter()
            .map(|l| std::fs::OpenOptions::new().append(true).open(l).unwrap())
            .collect();
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut end = (at + (1 << 20)).min(bytes.len());
            while end < bytes.len() && bytes[end - 1] != b'\n' {
                end += 1;
            }
            for f in &mut files {
                f.write_all(&bytes[at..end]).unwrap();
            }
            at = end;
            std::thread::sleep(Duration::from_millis(60));
        }
        let t = Instant::now();
        if follow {
            for b in &mut bg {
                assert!(b.finish(Duration::from_secs(120)).is_none());
            }
        } else {
            let (mut ix, _) = Index::open(&index).unwrap();
            ix.set_bulk(false).unwrap();
            for l in &logs {
                ix.update(l).unwrap();
            }
        }
        let took = t.elapsed();
        let size = std::fs::metadata(&index).map_or(0, |m| m.len());
        (took, size)
    };
    let (whole, _) = run(false, "whole");
    let (followed, size) = run(true, "followed");
    eprintln!(
        "fan {fan} x 20 000 calls ({:.0} MB of log each): caught up {:.2} s after the turns \
         ended when followed, {:.2} s reading each turn at its end; index {:.1} MB ({:.3}x)",
        text.len() as f64 / 1e6,
        followed.as_secs_f64(),
        whole.as_secs_f64(),
        size as f64 / 1e6,
        size as f64 / (fan * text.len()) as f64
    );
}

criterion_group!(benches, indexing, searching, keeping_pace);
criterion_main!(benches);
