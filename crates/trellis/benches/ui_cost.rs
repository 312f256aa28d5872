//! What the UI costs against headless on the same stream (issue 47, item 11): the demo's
//! load of `CALLS` calls (20 output lines each), once through `trellis run --format jsonl`
//! to nowhere (the client's own CPU, `--stats`), once through the UI in a pseudo-terminal
//! (`script`, 120×40; the UI process's CPU from the prompt to the moment it is idle again,
//! its session index caught up). Rounds alternate the two; the UI's CPU is also given by
//! thread, so the index thread's share (work a headless run leaves to the next
//! `trellis sessions`) is seen apart, and the UI is also set against the headless run and
//! the `trellis sessions list` that indexes its log after it.
//!
//! `cargo bench -p trellis --bench ui_cost`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "common/load.rs"]
mod load;
// Keys are not typed here.
#[allow(dead_code)]
#[path = "common/pty.rs"]
mod pty;

const CALLS: usize = 100_000;

fn cpu(pid: u32) -> Duration {
    trellis_os::usage::of_process(pid).map_or(Duration::ZERO, |u| u.user + u.system)
}

/// Each thread's CPU so far, by thread id, with its name.
fn threads(pid: u32) -> BTreeMap<u32, (String, Duration)> {
    trellis_os::usage::threads_of(pid)
        .into_iter()
        .map(|(tid, name, t)| (tid, (name, t)))
        .collect()
}

/// Samples `pid`'s threads every 20 ms until told to stop, keeping each thread's last
/// figure: threads that end (a log reader of the index) are counted too.
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<BTreeMap<u32, (String, Duration)>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handle = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut seen = BTreeMap::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    seen.extend(threads(pid));
                    std::thread::sleep(Duration::from_millis(20));
                }
                seen.extend(threads(pid));
                seen
            }
        });
        Sampler { stop, handle }
    }

    /// CPU by thread name.
    fn finish(self) -> BTreeMap<String, Duration> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut by_name = BTreeMap::new();
        for (_, (name, t)) in self.handle.join().unwrap() {
            *by_name.entry(name).or_default() += t;
        }
        by_name
    }
}

/// The headless run's CPU, and that of the indexing it leaves to the next `trellis
/// sessions` command (run here at once, as a user looking at their history would).
fn headless(dir: &std::path::Path) -> (Duration, Duration) {
    let exe = env!("CARGO_BIN_EXE_trellis");
    // Where a session's log goes by default, so that `trellis sessions` finds it.
    let log = dir.join("data/trellis/sessions/2026-12-07/000000-demo-1.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let v = load::run_logged(exe, (CALLS, 20), dir, &log, |cmd| {
        cmd.env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"));
    });
    let before = trellis_os::usage::this_process().children;
    let listed = Command::new(exe)
        .args(["sessions", "list", "--all", "--json"])
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let index = trellis_os::usage::this_process().children - before;
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        rows[0]["calls"]["total"], CALLS,
        "the run's session indexed, its calls counted: {rows}"
    );
    let _ = std::fs::remove_file(&log);
    (load::cpu(&v), index)
}

fn ui(dir: &std::path::Path) -> (Duration, BTreeMap<String, Duration>) {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls {CALLS} --lines 20");
    let line = format!(
        "stty rows 40 cols 120; exec {exe} --agent '{agent}' --permission allow-once --cwd {}",
        dir.display()
    );
    let mut pty = pty::Pty::start(&line, dir);
    let started = pty.started;
    pty.wait_for(b"Type a prompt", started, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the UI never drew: {}", pty.all()));
    let ui = trellis_os::reaper::children_of(pty.child.id())
        .into_iter()
        .next()
        .expect("the UI process");
    let before = cpu(ui);
    let by_thread_before: BTreeMap<String, Duration> =
        threads(ui)
            .into_values()
            .fold(BTreeMap::new(), |mut m, (n, t)| {
                *m.entry(n).or_default() += t;
                m
            });
    let sampler = Sampler::start(ui);
    pty.send(b"load\r");
    pty.wait_for(b"Generate chunk", Instant::now(), Duration::from_secs(60))
        .expect("no stream");
    // The turn is over and the UI idle again: nothing spent for half a second (a turn
    // that streams keeps it busy without a pause).
    let mut last = cpu(ui);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = cpu(ui);
        if now - last <= Duration::from_millis(10) {
            break;
        }
        last = now;
    }
    let spent = cpu(ui) - before;
    let mut by_thread = sampler.finish();
    for (name, t) in &by_thread_before {
        if let Some(v) = by_thread.get_mut(name) {
            *v = v.saturating_sub(*t);
        }
    }
    pty.quit();
    (spent, by_thread)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`script` (util-linux) is needed for a pseudo-terminal"
        );
        eprintln!("SKIPPED: `script` (util-linux) is needed for a pseudo-terminal");
        return;
    }
    let dir = std::env::temp_dir().join(format!("trellis-ui-cost-{}", std::process::id()));
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (h, later) = headless(&dir);
        let (u, by) = ui(&dir);
        let index = by
            .iter()
            .filter(|(n, _)| n.starts_with("session-index") || n.starts_with("index-reader"))
            .map(|(_, t)| *t)
            .sum::<Duration>();
        let top: Vec<String> = {
            let mut v: Vec<_> = by.iter().filter(|(_, t)| !t.is_zero()).collect();
            v.sort_by(|a, b| b.1.cmp(a.1));
            v.iter()
                .take(6)
                .map(|(n, t)| format!("{n} {:.2}", t.as_secs_f64()))
                .collect()
        };
        let r = u.as_secs_f64() / h.as_secs_f64();
        ratios.push(r);
        eprintln!(
            "round {round}: headless {:.2} s, UI {:.2} s ({r:.2}x; without its index thread \
             {:.2}x; against headless and its indexing by the next `trellis sessions`, \
             {:.2} s more, {:.2}x); UI threads: {}",
            h.as_secs_f64(),
            u.as_secs_f64(),
            (u.saturating_sub(index)).as_secs_f64() / h.as_secs_f64(),
            later.as_secs_f64(),
            u.as_secs_f64() / (h + later).as_secs_f64(),
            top.join(", ")
        );
    }
    ratios.sort_by(f64::total_cmp);
    eprintln!("median UI/headless: {:.2}x", ratios[ratios.len() / 2]);
    let _ = std::fs::remove_dir_all(&dir);
}
