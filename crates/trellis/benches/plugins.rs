//! Plugins under load: `trellis run` against the 10 000-call demo load (20 lines each),
//! headless, without plugins and with three Python plugins subscribed to every event. The
//! measured value is the agent's end time: the session time of the `turn_ended` event
//! (plugins must not slow the session down; they catch up on their own queues). Wall time
//! to exit is printed beside it. Samples alternate between the two clients.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

const CALLS: usize = 10_000;
const LINES: usize = 20;

/// Three packages of a plugin that counts every event.
fn plugins(dir: &Path) -> Vec<PathBuf> {
    (1..=3)
        .map(|i| {
            let p = dir.join(format!("counter-{i}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(
                p.join("plugin.json"),
                format!(
                    r#"{{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "counter-{i}",
                    "extensions": {{"dev.trellis": {{"command": ["python3", "./plugin.py"], "capabilities": ["observe"]}}}}}}"#
                ),
            )
            .unwrap();
            std::fs::write(
                p.join("plugin.py"),
                "from collections import Counter\nfrom trellis_plugin import Plugin\n\
                 plugin = Plugin()\nseen = Counter()\n\n\
                 @plugin.on()\ndef count(event, host):\n    seen[event['type']] += 1\n\n\
                 plugin.run()\n",
            )
            .unwrap();
            p
        })
        .collect()
}

/// One run: (agent end time, wall time to exit).
fn run(dir: &Path, with: &[PathBuf]) -> (Duration, Duration) {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let mut cmd = Command::new(exe);
    cmd.args([
        "run",
        "--format",
        "jsonl",
        "--permission",
        "allow-once",
        "--prompt",
        "load",
        "--agent",
    ])
    .arg(format!("{exe} agent demo --calls {CALLS} --lines {LINES}"))
    .arg("--cwd")
    .arg(dir)
    .arg("--log")
    .arg(dir.join("session.jsonl"))
    .env("XDG_DATA_HOME", dir.join("data"))
    .env("XDG_CONFIG_HOME", dir.join("config"));
    for p in with {
        cmd.arg("--plugin").arg(p);
    }
    let start = Instant::now();
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let wall = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ended = stdout
        .lines()
        .find(|l| l.contains("\"type\":\"turn_ended\""))
        .expect("turn_ended");
    let v: serde_json::Value = serde_json::from_str(ended).unwrap();
    if !with.is_empty() {
        // The plugins really were there, and saw everything.
        assert!(
            stdout.contains("\"name\":\"counter-3\""),
            "plugins not loaded"
        );
    }
    (Duration::from_secs_f64(v["t"].as_f64().unwrap()), wall)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("trellis-bench-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with = plugins(&dir);
    // Side by side, alternating: the figures to compare. This machine's run-to-run noise
    // is large (the same client varies by ±30%), so many pairs, and both the median and
    // the least disturbed run (the minimum) are reported.
    let pairs: usize = std::env::var("TRELLIS_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    let (mut a, mut b, mut wa, mut wb) = (vec![], vec![], vec![], vec![]);
    for _ in 0..pairs {
        let (t, w) = run(&dir, &[]);
        a.push(t);
        wa.push(w);
        let (t, w) = run(&dir, &with);
        b.push(t);
        wb.push(w);
    }
    let min = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
    let (na, nb) = (min(&a), min(&b));
    let (ma, mb) = (median(a), median(b));
    let pct = |x: Duration, y: Duration| (y.as_secs_f64() / x.as_secs_f64() - 1.0) * 100.0;
    eprintln!(
        "agent end time, {CALLS} calls, {pairs} alternating pairs: median no plugins {:.3} s, three plugins {:.3} s ({:+.1}%); minimum {:.3} s vs {:.3} s ({:+.1}%); wall to exit (median) {:.3} s vs {:.3} s",
        ma.as_secs_f64(),
        mb.as_secs_f64(),
        pct(ma, mb),
        na.as_secs_f64(),
        nb.as_secs_f64(),
        pct(na, nb),
        median(wa).as_secs_f64(),
        median(wb).as_secs_f64()
    );
    let mut g = c.benchmark_group("demo_load_agent_end_time");
    g.sample_size(10);
    g.bench_function("no_plugins", |bn| {
        bn.iter_custom(|iters| (0..iters).map(|_| run(&dir, &[]).0).sum())
    });
    g.bench_function("three_python_plugins", |bn| {
        bn.iter_custom(|iters| (0..iters).map(|_| run(&dir, &with).0).sum())
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
