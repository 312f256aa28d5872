//! Memory and CPU per call as a session grows (issue 11, part 5): `trellis run` against
//! `trellis agent demo --calls N --lines 20`, headless, JSONL to /dev/null, for N = 10 000
//! and 100 000 (and 1 000 000 with `TRELLIS_BENCH_MILLION=1`: about a minute and 2 GB of
//! log). The figures are the client's own (getrusage in the client, `--stats`): peak RSS,
//! RSS per call above the 10 000-call run, and CPU per call. Three runs per size,
//! alternating sizes; the median CPU and the worst RSS are printed. When `TRELLIS_BASELINE`
//! names another `trellis` binary (e.g. a build of an earlier commit), it runs as the client
//! in alternation with this build (the agent is always this build's), and its table follows.
//!
//! `cargo bench -p trellis --bench memory`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

#[path = "common/load.rs"]
mod load;

struct Run {
    cpu_s: f64,
    rss_kb: u64,
    updates: u64,
}

fn run(client: &str, calls: usize) -> Run {
    let dir = std::env::temp_dir().join(format!("trellis-memory-{}-{calls}", std::process::id()));
    let v = load::run(client, (calls, 20), &dir, |cmd| {
        cmd.env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"));
    });
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        cpu_s: load::cpu(&v).as_secs_f64(),
        rss_kb: v["max_rss_kb"].as_u64().unwrap(),
        updates: v["updates"].as_u64().unwrap(),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once, quickly.
    if !std::env::args().any(|a| a == "--bench") {
        let r = run(env!("CARGO_BIN_EXE_trellis"), 1_000);
        assert!(r.updates >= 2_000);
        return;
    }
    let mut sizes = vec![10_000, 100_000];
    if std::env::var("TRELLIS_BENCH_MILLION").as_deref() == Ok("1") {
        sizes.push(1_000_000);
    }
    let mut clients = vec![("this build", env!("CARGO_BIN_EXE_trellis").to_string())];
    if let Ok(b) = std::env::var("TRELLIS_BASELINE") {
        clients.push(("baseline binary", b));
    }
    let rounds = 3;
    let mut results: Vec<Vec<Vec<Run>>> = clients
        .iter()
        .map(|_| sizes.iter().map(|_| Vec::new()).collect())
        .collect();
    for _ in 0..rounds {
        for (i, &n) in sizes.iter().enumerate() {
            for (c, (_, client)) in clients.iter().enumerate() {
                results[c][i].push(run(client, n));
            }
        }
    }
    for ((name, _), results) in clients.iter().zip(&mut results) {
        report(name, &sizes, results);
    }
}

fn report(name: &str, sizes: &[usize], results: &mut [Vec<Run>]) {
    eprintln!("{name}");
    eprintln!("calls      peak RSS   RSS/call above 10k   client CPU/call   updates");
    let base_rss = results[0].iter().map(|r| r.rss_kb).max().unwrap() as f64 * 1024.0;
    for (i, &n) in sizes.iter().enumerate() {
        let rs = &mut results[i];
        rs.sort_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s));
        let rss = rs.iter().map(|r| r.rss_kb).max().unwrap() as f64 * 1024.0;
        let per_call = if i == 0 {
            "—".to_string()
        } else {
            format!("{:.0} B", (rss - base_rss) / (n - sizes[0]) as f64)
        };
        let cpu = rs[rs.len() / 2].cpu_s;
        eprintln!(
            "{n:<10} {:>7.1} MB   {per_call:>19}   {:>12.2} µs   {}",
            rss / 1e6,
            cpu * 1e6 / n as f64,
            rs[0].updates
        );
    }
}
