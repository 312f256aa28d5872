//! The same 100 000-call turn of the demo's load, its agent over stdio (Trellis starts it)
//! and over loopback WebSocket (`trellis agent serve` runs it, `trellis run` dials it),
//! alternating in one sitting. Figures, per transport: the client's own CPU and peak
//! memory (its `--stats` line), the agent's CPU, and — over WebSocket — the server's own
//! CPU (what serving adds to the agent: the pipe and the socket) from `/proc`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

const CALLS: usize = 100_000;
const LINES: usize = 20;
const ROUNDS: usize = 3;

struct Figures {
    client: Duration,
    rss_kb: u64,
    agent: Duration,
    server: Duration,
}

/// CPU of this process's waited-for children so far (user + system).
fn children_cpu() -> Duration {
    trellis_os::usage::this_process().children
}

/// A process's own CPU and its waited-for children's (Linux's `/proc`).
fn proc_cpu(pid: u32) -> (Duration, Duration) {
    let u = trellis_os::usage::of_process(pid).expect("the server's usage (Linux)");
    (u.user + u.system, u.children)
}

/// One run of `trellis run` against `agent`; its stats line.
fn run(agent: &str, dir: &Path, config: Option<&Path>, token: &str) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trellis"));
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.args([
        "run",
        "--stats",
        "--format",
        "jsonl",
        "--permission",
        "allow-once",
    ])
    .args(["--prompt", "load", "--agent", agent])
    .arg("--cwd")
    .arg(dir)
    .arg("--log")
    .arg(dir.join("session.jsonl"))
    .env("XDG_DATA_HOME", dir.join("data"))
    .env("BENCH_TOKEN", token);
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(dir.join("session.jsonl"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("stats line");
    serde_json::from_str(line).unwrap()
}

fn client_of(v: &serde_json::Value) -> Duration {
    Duration::from_secs_f64(v["cpu_user_s"].as_f64().unwrap() + v["cpu_sys_s"].as_f64().unwrap())
}

fn bench(c: &mut Criterion) {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("data");
    let token = Command::new(exe)
        .args(["token", "new", "--label", "bench", "--scope", "agent"])
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    let token = String::from_utf8_lossy(&token.stdout).trim().to_string();
    let load = format!("{exe} agent demo --calls {CALLS} --lines {LINES}");
    let mut server = Command::new(exe)
        .args(["agent", "serve", "--listen", "127.0.0.1:0", "--cwd"])
        .arg(dir)
        .arg("--")
        .args(load.split(' '))
        .env("XDG_DATA_HOME", &data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut first = String::new();
    said.read_line(&mut first).unwrap();
    let addr = first
        .split("ws://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    // What the server says next (one line per connection) is read, so it never blocks.
    std::thread::spawn(move || for _ in said.lines() {});
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!("[agents.box]\nurl = \"ws://{addr}/acp\"\ntoken = {{ env = \"BENCH_TOKEN\" }}\n"),
    )
    .unwrap();
    let http_config = dir.join("http.toml");
    std::fs::write(
        &http_config,
        format!("[agents.box]\nurl = \"http://{addr}/acp\"\ntoken = {{ env = \"BENCH_TOKEN\" }}\n"),
    )
    .unwrap();
    let stdio = |_: ()| {
        let before = children_cpu();
        let v = run(&load, dir, None, &token);
        let client = client_of(&v);
        Figures {
            client,
            rss_kb: v["max_rss_kb"].as_u64().unwrap(),
            // The agent is the client's child: counted with it once both were waited for.
            agent: (children_cpu() - before).saturating_sub(client),
            server: Duration::ZERO,
        }
    };
    let pid = server.id();
    let dialed = |config: &Path| {
        let (own, kids) = proc_cpu(pid);
        let v = run("box", dir, Some(config), &token);
        // The agent ends with the connection; the server waits for it.
        std::thread::sleep(Duration::from_millis(1500));
        let (own2, kids2) = proc_cpu(pid);
        Figures {
            client: client_of(&v),
            rss_kb: v["max_rss_kb"].as_u64().unwrap(),
            agent: kids2 - kids,
            server: own2 - own,
        }
    };
    let ws = |_: ()| dialed(&config);
    let (mut a, mut b, mut h) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        a.push(stdio(()));
        b.push(ws(()));
        h.push(dialed(&http_config));
    }
    let median = |v: &mut Vec<Figures>, f: fn(&Figures) -> Duration| {
        let mut x: Vec<Duration> = v.iter().map(f).collect();
        x.sort();
        x[x.len() / 2]
    };
    for (name, v) in [("stdio", &mut a), ("websocket", &mut b), ("http", &mut h)] {
        let rss = v.iter().map(|f| f.rss_kb).max().unwrap_or(0);
        eprintln!(
            "remote: {name:9} client CPU {:.2} s (median of {ROUNDS}), peak RSS {} MiB, agent CPU {:.2} s, server CPU {:.2} s",
            median(v, |f| f.client).as_secs_f64(),
            rss / 1024,
            median(v, |f| f.agent).as_secs_f64(),
            median(v, |f| f.server).as_secs_f64(),
        );
    }
    let ratio =
        median(&mut b, |f| f.client).as_secs_f64() / median(&mut a, |f| f.client).as_secs_f64();
    eprintln!("remote: the client's CPU over WebSocket is {ratio:.2}× its CPU over stdio");
    let ratio =
        median(&mut h, |f| f.client).as_secs_f64() / median(&mut a, |f| f.client).as_secs_f64();
    eprintln!("remote: the client's CPU over streamable HTTP is {ratio:.2}× its CPU over stdio");
    let mut g = c.benchmark_group("remote");
    g.sample_size(10);
    g.bench_function("websocket 100k calls (client CPU)", |bencher| {
        bencher.iter_custom(|n| (0..n).map(|_| ws(()).client).sum());
    });
    g.finish();
    let _ = server.kill();
    let _ = server.wait();
}

criterion_group!(benches, bench);
criterion_main!(benches);
