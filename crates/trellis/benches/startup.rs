//! Time from process start to the first frame: `trellis replay FIXTURE`, `trellis replay`
//! of a recording of 100 000 calls (1 000 000 with `TRELLIS_BENCH_MILLION=1`: about a minute
//! to record and 2 GB of log) and `trellis demo`, run in a pseudo-terminal (`script`) with
//! the hidden `--exit-after-first-frame`, so each sample is start → first frame drawn →
//! exit (teardown and `script` itself included, so the figure over-estimates).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};

fn run(args: &str) -> std::time::Duration {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = std::env::temp_dir().join(format!("trellis-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let start = Instant::now();
    let status = Command::new("script")
        .args([
            "-qec",
            &format!("{exe} {args} --exit-after-first-frame"),
            "/dev/null",
        ])
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("TERM", "xterm-256color")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    let took = start.elapsed();
    assert!(status.success());
    took
}

fn bench(c: &mut Criterion) {
    if Command::new("script").arg("--version").output().is_err() {
        // Under CI a missing tool is a failure, never a silent pass.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`script` (util-linux) is needed for a pseudo-terminal"
        );
        eprintln!("SKIPPED: `script` (util-linux) is needed for a pseudo-terminal");
        return;
    }
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let mut g = c.benchmark_group("start_to_first_frame");
    g.sample_size(20);
    g.bench_function("replay_fixture", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| run(&format!("replay {}", fixture.display())))
                .sum()
        })
    });
    let million = std::env::var("TRELLIS_BENCH_MILLION").as_deref() == Ok("1");
    for calls in [100_000usize]
        .into_iter()
        .chain(million.then_some(1_000_000))
    {
        let log = recording(calls);
        g.sample_size(10);
        g.bench_function(format!("replay_{calls}_calls"), |b| {
            b.iter_custom(|n| {
                (0..n)
                    .map(|_| run(&format!("replay {}", log.display())))
                    .sum()
            })
        });
        let _ = std::fs::remove_file(&log);
    }
    g.sample_size(20);
    let cwd = std::env::temp_dir().join(format!("trellis-startup-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&cwd).unwrap();
    g.bench_function("demo", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| run(&format!("demo --cwd {}", cwd.display())))
                .sum()
        })
    });
    g.finish();
}

/// A session of `calls` calls of 20 lines, recorded headless from the demo agent.
fn recording(calls: usize) -> std::path::PathBuf {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = std::env::temp_dir().join(format!("trellis-startup-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join(format!("{calls}.jsonl"));
    let status = Command::new(exe)
        .args(["run", "--format", "jsonl", "--permission", "allow-once"])
        .args(["--prompt", "load", "--agent"])
        .arg(format!("{exe} agent demo --calls {calls} --lines 20"))
        .arg("--cwd")
        .arg(&dir)
        .arg("--log")
        .arg(&log)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    log
}

criterion_group!(benches, bench);
criterion_main!(benches);
