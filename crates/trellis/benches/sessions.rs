//! Several sessions at once (issue 30). The UI runs in a pseudo-terminal (`script`,
//! 120×40) twice in one sitting: with one session, then with eight (`trellis fan 8`),
//! every session streaming the demo's load of `CALLS` calls. Reported side by side:
//! - the echo of keys typed into the session in front while it streams (a key every
//!   20 ms, from writing it to the first output that carries it; a load of 10 000 calls
//!   streams in well under a second alone, so five runs are pooled): median, worst, and
//!   how many took longer than a 60 Hz frame (16.7 ms);
//! - the UI process's peak resident memory (`VmHWM`);
//! - the UI process's CPU time over 3 s once every session is idle.
//!
//! `cargo bench -p trellis --bench sessions` (add `-- one` or `-- eight` for one half)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

#[path = "common/pty.rs"]
mod pty;

/// Typed while the turns stream, in turn: the 64 Cyrillic letters, in no output of the demo
/// agent, one cell wide. So many, so that no two rows of a prompt wrapped over several are
/// alike: a prompt of two keys alternating scrolled a row up without any cell changing, and
/// the key was never echoed.
fn keys() -> Vec<String> {
    ('А'..='я').map(String::from).collect()
}
const CALLS: usize = 10_000;

struct Figures {
    echoes: Vec<Duration>,
    peak_kb: u64,
    idle_cpu: Duration,
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// The pid of `script`'s child (the UI, once the shell exec'd it).
fn child_of(parent: u32) -> Option<u32> {
    trellis_os::reaper::children_of(parent).into_iter().next()
}

/// User + system CPU time of `pid`.
fn cpu(pid: u32) -> Duration {
    trellis_os::usage::of_process(pid).map_or(Duration::ZERO, |u| u.user + u.system)
}

fn peak_kb(pid: u32) -> u64 {
    trellis_os::usage::of_process(pid).map_or(0, |u| u.max_rss_kib.max(0) as u64)
}

fn run(sessions: usize) -> Figures {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let dir = std::env::temp_dir().join(format!(
        "trellis-sessions-{}-{sessions}",
        std::process::id()
    ));
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(
        &repo,
        &[
            "-c",
            "user.email=b@b",
            "-c",
            "user.name=b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "b",
        ],
    );
    // `--here`: the one session runs in the repository itself (`fan` makes worktrees),
    // which the demo never writes into unasked; it only streams its load there.
    let agent = format!("{exe} agent demo --here --calls {CALLS} --lines 20");
    let what = if sessions == 1 {
        format!("--agent '{agent}'")
    } else {
        format!("fan {sessions} --agent '{agent}' load")
    };
    let line = format!(
        "stty rows 40 cols 120; exec {exe} {what} --permission allow-once --cwd {}",
        repo.display()
    );
    let mut pty = pty::Pty::start(&line, &dir);
    let started = pty.started;
    pty.wait_for(b"Enter send", started, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the UI never drew: {}", pty.all()));
    if sessions == 1 {
        pty.send(b"load\r");
    }
    let streaming = pty
        .wait_for(b"Generate chunk", started, Duration::from_secs(60))
        .expect("no stream");
    let ui = child_of(pty.child.id()).expect("the UI process");
    // Only keys typed while the session in front streams count. Alone, it ends at the last
    // call (the session stats' count). With eight, its count is drawn as the cells that
    // changed since the last frame (`9987` to `10001` shows no `10000`), and an edit comes
    // first: its end is the rail's word for it, `working` becoming `idle`.
    let count = CALLS.to_string();
    let end: &[u8] = if sessions == 1 {
        count.as_bytes()
    } else {
        b"idle"
    };
    let keys = keys();
    let echoes = pty.echoes(
        &keys.iter().map(String::as_str).collect::<Vec<_>>(),
        (end, streaming),
        Duration::from_millis(20),
        usize::MAX,
    );
    // Idle: every session done, then the UI's CPU over 3 s.
    let mut last = cpu(ui);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu(ui);
        if now - last <= Duration::from_millis(20) || Instant::now() > deadline {
            break;
        }
        last = now;
    }
    let before = cpu(ui);
    std::thread::sleep(Duration::from_secs(3));
    let idle_cpu = cpu(ui) - before;
    let peak = peak_kb(ui);
    pty.quit();
    let _ = std::fs::remove_dir_all(&dir);
    Figures {
        echoes,
        peak_kb: peak,
        idle_cpu,
    }
}

/// Five runs pooled: every echo, the highest peak, the most idle CPU.
fn pooled(sessions: usize) -> Figures {
    let mut all = Figures {
        echoes: Vec::new(),
        peak_kb: 0,
        idle_cpu: Duration::ZERO,
    };
    for _ in 0..5 {
        let f = run(sessions);
        all.echoes.extend(f.echoes);
        all.peak_kb = all.peak_kb.max(f.peak_kb);
        all.idle_cpu = all.idle_cpu.max(f.idle_cpu);
    }
    all
}

fn summary(f: Figures) -> String {
    let mut e = f.echoes;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let echo = if e.is_empty() {
        "the turn ended before a key was typed".to_string()
    } else {
        e.sort();
        format!(
            "echo median {:.1} ms, worst {:.1} ms, {} of {} over a frame",
            ms(e[e.len() / 2]),
            ms(e[e.len() - 1]),
            e.iter().filter(|d| ms(**d) > 1000.0 / 60.0).count(),
            e.len()
        )
    };
    format!(
        "{echo}; highest peak RSS {:.1} MB; most CPU over 3 s idle: {:.0} ms",
        f.peak_kb as f64 / 1024.0,
        ms(f.idle_cpu)
    )
}

fn main() {
    for tool in ["script", "git"] {
        if Command::new(tool).arg("--version").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "`{tool}` is needed"
            );
            eprintln!("SKIPPED: `{tool}` is needed");
            return;
        }
    }
    // `cargo bench` passes `--bench`; a word of ours picks one half.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |half: &str| only.is_empty() || only.iter().any(|o| o == half);
    for round in 1..=2 {
        if wanted("one") {
            eprintln!("round {round}, one session:    {}", summary(pooled(1)));
        }
        if wanted("eight") {
            eprintln!("round {round}, eight sessions: {}", summary(pooled(8)));
        }
    }
}
