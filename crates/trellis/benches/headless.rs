//! `trellis run` against `trellis agent demo --calls 10000 --lines 20`, headless, JSONL to
//! /dev/null. Each sample is one whole run; the measured value is the client's own CPU time
//! (user + system, from getrusage in the client), so the agent's work is not counted.
//! Per-update cost and peak memory are printed beside criterion's figures, side by side
//! for three clients in alternating runs: with the built-in extensions (the default),
//! with every extension disabled in the config, and — when `TRELLIS_BASELINE` names
//! another `trellis` binary (e.g. a build of an earlier commit) — that binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "common/load.rs"]
mod load;

const CALLS: usize = 10_000;
const LINES: usize = 20;

struct Stats {
    cpu: Duration,
    updates: u64,
    rss_kb: u64,
    output_bytes: u64,
}

/// A config that disables every built-in extension.
fn no_extensions(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("no-extensions.toml");
    let text: String = ["follow", "permissions", "stats", "cards", "redact"]
        .iter()
        .map(|n| format!("[extensions.{n}]\nenabled = false\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn one_run() -> Stats {
    run_with(env!("CARGO_BIN_EXE_trellis"), false)
}

fn run_with(client: &str, without_extensions: bool) -> Stats {
    let dir = std::env::temp_dir().join(format!("trellis-bench-{}", std::process::id()));
    let v = load::run(client, (CALLS, LINES), &dir, |cmd| {
        if without_extensions {
            std::fs::create_dir_all(&dir).unwrap();
            cmd.arg("--config").arg(no_extensions(&dir));
        }
    });
    Stats {
        cpu: load::cpu(&v),
        updates: v["updates"].as_u64().unwrap(),
        rss_kb: v["max_rss_kb"].as_u64().unwrap(),
        output_bytes: v["output_bytes"].as_u64().unwrap(),
    }
}

fn bench(c: &mut Criterion) {
    // Five whole runs of each client first, alternating, for the per-update and memory
    // figures (median and worst).
    let baseline = std::env::var("TRELLIS_BASELINE").ok();
    let mut runs: Vec<Stats> = Vec::new();
    let mut bare: Vec<Stats> = Vec::new();
    let mut base: Vec<Stats> = Vec::new();
    for _ in 0..5 {
        runs.push(one_run());
        bare.push(run_with(env!("CARGO_BIN_EXE_trellis"), true));
        if let Some(b) = &baseline {
            base.push(run_with(b, false));
        }
    }
    runs.sort_by_key(|s| s.cpu);
    let per_update = |s: &Stats| s.cpu.as_secs_f64() * 1e6 / s.updates as f64;
    for (name, v) in [
        ("without extensions", &mut bare),
        ("baseline binary", &mut base),
    ] {
        if v.is_empty() {
            continue;
        }
        v.sort_by_key(|s| s.cpu);
        eprintln!(
            "headless ({name}): client CPU per update: median {:.2} µs (best {:.2}, worst {:.2}); peak RSS {:.1} MB (worst)",
            per_update(&v[v.len() / 2]),
            per_update(&v[0]),
            per_update(&v[v.len() - 1]),
            v.iter().map(|s| s.rss_kb).max().unwrap_or(0) as f64 / 1024.0
        );
    }
    let median = &runs[runs.len() / 2];
    let rss_max = runs.iter().map(|s| s.rss_kb).max().unwrap_or(0);
    eprintln!(
        "headless (with built-in extensions): {} updates per run; client CPU per update: median {:.2} µs (best {:.2}, worst {:.2}); \
         peak RSS {:.1} MB (worst of 5) for {:.1} MB of output held (target ≤ {:.1} MB)",
        median.updates,
        per_update(median),
        per_update(&runs[0]),
        per_update(&runs[runs.len() - 1]),
        rss_max as f64 / 1024.0,
        median.output_bytes as f64 / 1e6,
        2.0 * median.output_bytes as f64 / 1e6 + 30.0,
    );
    let first = runs.swap_remove(0);
    let mut g = c.benchmark_group("headless");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(first.updates));
    g.bench_function("run_demo_10000x20_client_cpu", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| one_run().cpu).sum())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
