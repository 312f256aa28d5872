//! The echo of a typed key while a big turn streams (issue 32, item 12): the UI runs in a
//! pseudo-terminal (`script`, 120×40) on `trellis agent demo --calls 300000 --lines 20`;
//! once the turn streams, a key is typed every 150 ms, and its echo is the time from
//! writing the key to the first output that carries it. The median and the worst echo are
//! printed for each run (three runs), and, when `TRELLIS_BASELINE` names another `trellis`
//! binary, the same for it in alternating runs. A 60 Hz frame is 16.7 ms.
//!
//! `cargo bench -p trellis --bench echo`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

#[path = "common/pty.rs"]
mod pty;

/// Typed while the turn streams: in no output of the demo agent, one cell wide.
const KEY: &str = "Ж";
const KEYS: usize = 40;
/// Long enough that every key is typed while the turn streams.
const CALLS: usize = 300_000;

fn run(client: &str) -> Vec<Duration> {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = std::env::temp_dir().join(format!("trellis-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = format!("{exe} agent demo --calls {CALLS} --lines 20");
    let line = format!(
        "stty rows 40 cols 120; exec {client} --agent '{agent}' --permission allow-once --cwd {}",
        dir.display()
    );
    let mut pty = pty::Pty::start(&line, &dir);
    let started = pty.started;
    pty.wait_for(b"Type a prompt", started, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the UI never drew: {}", pty.all()));
    pty.send(b"load\r");
    pty.wait_for(b"Generate chunk", Instant::now(), Duration::from_secs(20))
        .expect("no stream");
    // Only keys typed while the turn streams count: it ends at the last call (the
    // session stats' count).
    let echoes = pty.echoes(
        &[KEY],
        (CALLS.to_string().as_bytes(), pty.started),
        Duration::from_millis(150),
        KEYS,
    );
    // Ctrl-C twice quits.
    pty.quit();
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
