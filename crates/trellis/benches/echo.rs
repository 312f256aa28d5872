//! The echo of a typed key while a big turn streams (issue 32, item 12): the UI runs in a
//! pseudo-terminal (`script`, 120×40) on `trellis agent demo --calls 300000 --lines 20`;
//! once the turn streams, a key is typed every 150 ms, and its echo is the time from
//! writing the key to the first output that carries it. The median and the worst echo are
//! printed for each run (three runs), and, when `TRELLIS_BASELINE` names another `trellis`
//! binary, the same for it in alternating runs. A 60 Hz frame is 16.7 ms.
//!
//! `cargo bench -p trellis --bench echo`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Typed while the turn streams: in no output of the demo agent, one cell wide.
const KEY: &str = "Ж";
const KEYS: usize = 40;
/// Long enough that every key is typed while the turn streams.
const CALLS: usize = 300_000;

/// Output as read, each chunk with the moment it was read.
type Chunks = Vec<(Instant, Vec<u8>)>;

fn run(client: &str) -> Vec<Duration> {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = std::env::temp_dir().join(format!("trellis-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = format!("{exe} agent demo --calls {CALLS} --lines 20");
    let line = format!(
        "stty rows 40 cols 120; exec {client} --agent '{agent}' --permission allow-once --cwd {}",
        dir.display()
    );
    let started = Instant::now();
    let mut child = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Every chunk of output with the moment it was read.
    let seen: Arc<Mutex<Chunks>> = Arc::default();
    let mut out = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push((Instant::now(), buf[..n].to_vec()));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let wait_for = |what: &[u8], after: Instant, limit: Duration| -> Option<Instant> {
        let start = Instant::now();
        loop {
            if let Some(t) = seen
                .lock()
                .unwrap()
                .iter()
                .filter(|(t, _)| *t >= after)
                .find(|(_, b)| b.windows(what.len()).any(|w| w == what))
                .map(|(t, _)| *t)
            {
                return Some(t);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    wait_for(b"Type a prompt", started, Duration::from_secs(20)).unwrap_or_else(|| {
        let all: Vec<u8> = seen
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect();
        panic!("the UI never drew: {}", String::from_utf8_lossy(&all))
    });
    stdin.write_all(b"load\r").unwrap();
    stdin.flush().unwrap();
    wait_for(b"Generate chunk", Instant::now(), Duration::from_secs(20)).expect("no stream");
    let mut echoes = Vec::new();
    for _ in 0..KEYS {
        std::thread::sleep(Duration::from_millis(150));
        let at = Instant::now();
        stdin.write_all(KEY.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let t = wait_for(KEY.as_bytes(), at, Duration::from_secs(5)).expect("no echo");
        echoes.push(t - at);
        // Only keys typed while the turn streams count: it ends at the last call
        // (the session stats' count).
        if wait_for(CALLS.to_string().as_bytes(), started, Duration::ZERO)
            .is_some_and(|end| end <= at)
        {
            echoes.pop();
            break;
        }
    }
    // Ctrl-C twice quits.
    stdin.write_all(b"\x03").unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let _ = stdin.write_all(b"\x03");
    let _ = stdin.flush();
    drop(stdin);
    let _ = child.wait();
    let _ = reader.join();
    let _ = std::fs::remove_dir_all(&dir);
    echoes
}

fn summary(mut e: Vec<Duration>) -> String {
    if e.is_empty() {
        return "the turn ended before a key was typed".into();
    }
    e.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "median {:.1} ms, worst {:.1} ms, over one 60 Hz frame: {} of {} keys typed while it streamed",
        ms(e[e.len() / 2]),
        ms(e[e.len() - 1]),
        e.iter().filter(|d| ms(**d) > 1000.0 / 60.0).count(),
        e.len()
    )
}

fn main() {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`script` (util-linux) is needed for a pseudo-terminal"
        );
        eprintln!("SKIPPED: `script` (util-linux) is needed for a pseudo-terminal");
        return;
    }
    let this = env!("CARGO_BIN_EXE_trellis").to_string();
    let baseline = std::env::var("TRELLIS_BASELINE").ok();
    for round in 1..=3 {
        eprintln!("run {round}, this build: {}", summary(run(&this)));
        if let Some(b) = &baseline {
            eprintln!("run {round}, baseline:   {}", summary(run(b)));
        }
    }
}
