//! Logging in (issue 12, item 3): an agent that needs a login before `session/new`. The UI
//! lends the terminal to a `terminal` method and retries; a headless run authenticates
//! with a method the agent handles itself, or says what to run.

use crate::prompts::demo_run;
use crate::tui::Tmux;

fn demo_with_login(file: &std::path::Path) -> String {
    format!(
        "{} agent demo --delay-ms 0 --login-file {}",
        env!("CARGO_BIN_EXE_trellis"),
        file.display()
    )
}

/// How many requests of `method` the client sent, in a session log.
fn requests(log: &str, method: &str) -> usize {
    crate::sent(log, method).len()
}

#[test]
fn headless_authenticates_with_a_method_the_agent_handles() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("logged-in");
    let agent = demo_with_login(&file);
    let o = demo_run(dir.path(), &["--agent", &agent, "--prompt", "fix the TODO"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(file.exists(), "authenticate logged the demo in");
    let log = std::fs::read_to_string(dir.path().join("session.jsonl")).unwrap();
    // Not advertised headless: the agent offered no terminal method.
    assert!(log.contains("\"auth\":{\"terminal\":false}"), "{log}");
    assert_eq!(requests(&log, "authenticate"), 1);
    assert_eq!(
        requests(&log, "session/new"),
        2,
        "tried, then again after the login"
    );
}

#[test]
fn headless_says_what_to_run_for_a_terminal_login() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!(
        "{} agent hostile terminal-login-anyway",
        env!("CARGO_BIN_EXE_trellis")
    );
    let o = demo_run(dir.path(), &["--agent", &agent, "--prompt", "hi"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("hostile terminal-login-anyway --login 'a b'` in a terminal"),
        "{stderr}"
    );
    assert!(stderr.contains("run `LOGIN_MODE=1 "), "{stderr}");
    // The method's name came from the agent: its escape sequence is shown, not sent.
    assert!(stderr.contains("Log in^[[2J here"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'));
    let log = std::fs::read_to_string(dir.path().join("session.jsonl")).unwrap();
    assert_eq!(
        requests(&log, "authenticate"),
        0,
        "never passed to authenticate"
    );
}

#[test]
fn the_ui_runs_a_terminal_login_and_sets_up_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("logged-in");
    let agent = demo_with_login(&file);
    // Setup must finish within 1 s — not counting the person's time at the login.
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("trellis")).unwrap();
    std::fs::write(
        config.join("trellis/config.toml"),
        "[connection]\nsetup_timeout = 1\n",
    )
    .unwrap();
    let (cwd, xdg) = (
        dir.path().to_str().unwrap(),
        format!("XDG_CONFIG_HOME={}", config.display()),
    );
    let args = [
        "--agent",
        &agent,
        "--permission",
        "allow-once",
        "--cwd",
        cwd,
    ];
    let Some(t) = Tmux::start_env(&[&xdg], &args, 110, 30) else {
        return;
    };
    // Outside the full screen: what asks, what runs, and the agent's own question.
    let s = t.wait_for("Type yes to log in:");
    assert!(
        s.contains("Trellis: the agent asks you to log in (Log in to the demo)."),
        "{s}"
    );
    assert!(s.contains("Answers one question in your terminal"), "{s}");
    assert!(s.contains("--login-file"), "{s}");
    assert!(
        s.contains("started by the client for its terminal method"),
        "the method's environment reached the login: {s}"
    );
    // The person takes longer than the 1 s setup timeout to answer: the timeout must be
    // paused meanwhile (this wait is the point of the test, not a guess at readiness).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    t.send(&["yes", "Enter"]);
    // Back in the full screen, the session set up after the login.
    let s = t.wait_for("login finished");
    assert!(file.exists());
    t.wait("the session set up", |s| s.contains("Demo Fast"));
    assert!(!s.contains("Type yes"), "{s}");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("There is no changelog yet");
    let log = t.log();
    assert!(log.contains("\"auth\":{\"terminal\":true}"), "advertised");
    assert_eq!(
        requests(&log, "authenticate"),
        0,
        "a terminal login is not authenticate"
    );
    assert_eq!(requests(&log, "session/new"), 2);
    assert!(log.contains("the agent asks for a login in the terminal"));
}

#[test]
fn a_failed_terminal_login_ends_the_setup_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("logged-in");
    let agent = demo_with_login(&file);
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", &agent], 110, 30) else {
        return;
    };
    t.wait_for("Type yes to log in:");
    t.send(&["no", "Enter"]);
    // The login exited with status 1: no second try, and the reason on screen.
    let s = t.wait_for("agent exited: the agent asks you to log in, and the login did not");
    assert!(!file.exists(), "{s}");
    assert_eq!(requests(&t.log(), "session/new"), 1);
}
