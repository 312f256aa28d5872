//! One headless run of the demo's load, as the benches that measure `trellis run` take it:
//! `client` (a `trellis` binary) against `trellis agent demo --calls CALLS --lines LINES`,
//! JSONL to nowhere, `--stats` on, the session log in `dir` (removed after). `setup` adds
//! what a bench varies (a config, the environment, a summary file). Returns the stats line.

use std::path::Path;
use std::process::{Command, Stdio};

#[allow(dead_code)]
pub fn run(
    client: &str,
    load: (usize, usize),
    dir: &Path,
    setup: impl FnOnce(&mut Command),
) -> serde_json::Value {
    let log = dir.join("session.jsonl");
    let stats = run_logged(client, load, dir, &log, setup);
    let _ = std::fs::remove_file(&log);
    stats
}

/// [`run`], its session log written to `log` and kept.
#[allow(dead_code)]
pub fn run_logged(
    client: &str,
    (calls, lines): (usize, usize),
    dir: &Path,
    log: &Path,
    setup: impl FnOnce(&mut Command),
) -> serde_json::Value {
    let exe = env!("CARGO_BIN_EXE_trellis");
    std::fs::create_dir_all(dir).unwrap();
    let mut cmd = Command::new(client);
    cmd.args([
        "run",
        "--stats",
        "--format",
        "jsonl",
        "--permission",
        "allow-once",
    ])
    .args(["--prompt", "load", "--agent"])
    .arg(format!("{exe} agent demo --calls {calls} --lines {lines}"))
    .arg("--cwd")
    .arg(dir)
    .arg("--log")
    .arg(log);
    // After `run`: its own options, and the global ones.
    setup(&mut cmd);
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
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

/// The client's own CPU (user + system) of a stats line.
pub fn cpu(v: &serde_json::Value) -> std::time::Duration {
    std::time::Duration::from_secs_f64(
        v["cpu_user_s"].as_f64().unwrap() + v["cpu_sys_s"].as_f64().unwrap(),
    )
}
