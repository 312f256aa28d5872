//! `trellis run --strict`: exit 9 when the turn ended but a call failed or a permission
//! request was refused; the other exit codes are unchanged.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_trellis");
    Command::new(exe)
        .arg("run")
        .args(args)
        .arg("--cwd")
        .arg(dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn strict_exits_9_on_a_failed_call_or_a_refused_permission() {
    // The demo's "fix the TODO" has a failing test run: 0 without --strict, 9 with it.
    let plain = run(&["--prompt", "fix the TODO", "--permission", "allow-once"]);
    assert_eq!(
        code(&plain),
        0,
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let strict = run(&[
        "--prompt",
        "fix the TODO",
        "--permission",
        "allow-once",
        "--strict",
    ]);
    let err = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(code(&strict), 9, "{err}");
    assert!(
        err.contains("--strict: 1 failed call(s), 0 refused permission request(s)"),
        "{err}"
    );
    // Refused by the policy: counted too.
    let refused = run(&[
        "--prompt",
        "fix the TODO",
        "--permission",
        "reject",
        "--strict",
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(code(&refused), 9, "{err}");
    assert!(err.contains("1 refused permission request(s)"), "{err}");
}

#[test]
fn strict_is_0_on_a_clean_turn() {
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls 3 --lines 2");
    let o = run(&[
        "--prompt",
        "load",
        "--agent",
        &agent,
        "--permission",
        "allow-once",
        "--strict",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
}
