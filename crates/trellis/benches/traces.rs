//! What exporting traces costs a headless run: `trellis run` against `trellis agent demo
//! --calls 10000 --lines 20`, JSONL to /dev/null, the client's own CPU (getrusage), with
//! OTLP export off and on (to a collector in this process that answers every request at
//! once), alternating in pairs, side by side in one sitting. Target: on ≤ 1.05 × off.
//! Two cores carry the agent and the client: a run's CPU varies by ±10 % from one run to
//! the next, so the figure is taken over many pairs of a longer load, as the median of
//! each pair's ratio (which cancels the machine's drift) beside the ratio of medians.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/load.rs"]
mod load;

const CALLS: usize = 50_000;
/// Pairs of runs (off, on) per sitting.
const PAIRS: usize = 11;
const LINES: usize = 20;

/// A collector that takes every request and answers 200; returns its URL.
fn sink() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        r.read_line(&mut h).unwrap();
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0u8; len];
                    r.read_exact(&mut body).unwrap();
                    w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                        .unwrap();
                }
            });
        }
    });
    url
}

/// One whole run: (client CPU, updates, spans exported).
fn run(endpoint: Option<&str>) -> (Duration, u64, u64) {
    let dir = std::env::temp_dir().join(format!("trellis-trace-bench-{}", std::process::id()));
    let summary = dir.join("summary.json");
    let _ = std::fs::remove_file(&summary);
    let v = load::run(env!("CARGO_BIN_EXE_trellis"), (CALLS, LINES), &dir, |cmd| {
        cmd.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_TRACES_EXPORTER");
        if let Some(e) = endpoint {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", e);
        }
        cmd.arg("--summary").arg(&summary);
    });
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    (
        load::cpu(&v),
        v["updates"].as_u64().unwrap(),
        s["trace_export"]["exported"].as_u64().unwrap_or(0),
    )
}

fn bench(c: &mut Criterion) {
    let url = sink();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    let mut exported = 0;
    for i in 0..PAIRS {
        // Which goes first alternates, so neither always runs on a warmer machine.
        let (a, b) = if i % 2 == 0 {
            let a = run(None);
            (a, run(Some(&url)))
        } else {
            let b = run(Some(&url));
            (run(None), b)
        };
        exported = b.2;
        ratios.push(b.0.as_secs_f64() / a.0.as_secs_f64());
        off.push(a);
        on.push(b);
    }
    let median = |v: &mut Vec<(Duration, u64, u64)>| {
        v.sort_by_key(|r| r.0);
        v[v.len() / 2]
    };
    let (a, b) = (median(&mut off), median(&mut on));
    ratios.sort_by(f64::total_cmp);
    let per = |r: (Duration, u64, u64)| r.0.as_secs_f64() * 1e6 / r.1 as f64;
    eprintln!(
        "traces: client CPU per update, export off {:.2} µs, on {:.2} µs (ratio of medians {:.3}×; median of {PAIRS} pair ratios {:.3}×, quartiles {:.3}–{:.3}; target ≤ 1.05×); {} spans exported per run",
        per(a),
        per(b),
        b.0.as_secs_f64() / a.0.as_secs_f64(),
        ratios[PAIRS / 2],
        ratios[PAIRS / 4],
        ratios[3 * PAIRS / 4],
        exported
    );
    let mut g = c.benchmark_group("traces");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("run_demo_50000x20_export_on_client_cpu", |bch| {
        bch.iter_custom(|iters| (0..iters).map(|_| run(Some(&url)).0).sum())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
