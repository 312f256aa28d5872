//! The fault matrix: an agent killed mid-turn with requests and terminals open, a full
//! disk, a truncated log, Ctrl-C twice — and extensions that panic or hang through each of
//! them (driven through the session driver, with the hostile agent on the other side).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use trellis_core::Event;
use trellis_core::ext::{
    Capability, Claim, ExtError, Extension, Host, Manifest, PermissionAsk, Registration,
    SectionDecl,
};
use trellis_driver::{Connection, Driver, Note};
use trellis_ext_host::{Candidate, ExtHost, HostOptions};

pub(crate) fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_trellis")
}

/// Panics on every event, hangs when it should push its section; claims every permission request and then
/// hangs (never answers).
struct Chaos {
    events: Arc<AtomicUsize>,
}

impl Extension for Chaos {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "chaos".into(),
            version: "1".into(),
            description: "breaks on purpose".into(),
            capabilities: vec![
                Capability::Observe,
                Capability::InterceptPermissions,
                Capability::Ui,
            ],
            ui_only: false,
        }
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            sections: vec![SectionDecl {
                id: "c".into(),
                title: "Chaos".into(),
                max_rows: 3,
                collapsed: false,
            }],
            ..Registration::default()
        })
    }
    fn on_event(&mut self, _e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        self.events.fetch_add(1, Ordering::Relaxed);
        panic!("chaos in on_event")
    }
    fn on_permission(
        &mut self,
        _ask: &PermissionAsk,
        _h: &mut dyn Host,
    ) -> Result<Claim, ExtError> {
        // Claims, then never answers: the claim deadline hands the request on.
        Ok(Claim::Claim)
    }
    fn on_idle(&mut self, _h: &mut dyn Host) -> Result<(), ExtError> {
        // Hangs when it should push its section after events: frames never wait for it.
        if self.events.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(Duration::from_secs(30));
        }
        Ok(())
    }
}

/// A driver on `trellis agent hostile SCENARIO` with the chaos extension (claim timeout
/// 0.5 s) and the headless reject policy at the end of the chain.
fn driver(scenario: &str, cwd: &std::path::Path) -> Driver {
    let args = vec!["agent".into(), "hostile".into(), scenario.into()];
    driver_with(args, cwd, Box::new(trellis_acp::recorder::NullSink))
}

/// A session log on a full disk: every append fails.
struct FullDisk;

impl trellis_acp::LogSink for FullDisk {
    fn append(&mut self, _: &str) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(28))
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(28))
    }
}

/// A driver on `trellis ARGS` (a built-in agent) with the chaos extension.
fn driver_with(
    args: Vec<String>,
    cwd: &std::path::Path,
    sink: Box<dyn trellis_acp::LogSink>,
) -> Driver {
    let chaos = Candidate {
        ext: Box::new(Chaos {
            events: Arc::default(),
        }),
        builtin: true,
    };
    driver_for(args, cwd, sink, vec![chaos], HostOptions::default())
}

/// A driver on `trellis ARGS` with extensions `exts` (claim timeout 0.5 s).
pub(crate) fn driver_for(
    args: Vec<String>,
    cwd: &std::path::Path,
    sink: Box<dyn trellis_acp::LogSink>,
    exts: Vec<Candidate>,
    opts: HostOptions,
) -> Driver {
    trellis_ext_host::install_panic_guard();
    let spec = trellis_acp::AgentSpec {
        command: exe().into(),
        args,
        env: vec![],
        caps: trellis_acp::Caps::default(),
        auth_method: None,
        cwd: cwd.to_path_buf(),
        extra_roots: vec![],
        additional_directories: vec![],
        system_prompt: None,
        load_session: None,
        fork_session: None,
        keep_lines: false,
        bulk_reads: false,
        setup_timeout: Duration::from_secs(30),
        terminal_output_limit: 1 << 20,
        mcp_servers: vec![],
        traceparent: None,
        terminal_trace: None,
        before_turn: None,
        remote: None,
    };
    let (handle, rx) = trellis_acp::start(spec, sink);
    let (host, host_rx) = ExtHost::new(
        exts,
        HostOptions {
            permission_timeout: 0.5,
            failure_limit: 1000,
            ..opts
        },
    );
    let mut d = Driver::new(
        trellis_core::Session::new(trellis_core::Policy::Ask),
        Connection { handle, rx },
    );
    d.set_host(host, host_rx);
    d
}

/// Runs the driver like a headless front end until `stop` says so or the connection
/// closes; returns how many times each request was resolved.
async fn run(d: &mut Driver, limit: Duration, stop: impl Fn(&Driver) -> bool) -> Vec<usize> {
    run_saying(d, limit, stop, &mut Vec::new()).await
}

/// [`run`], collecting the messages the driver had for the user into `said`.
pub(crate) async fn run_saying(
    d: &mut Driver,
    limit: Duration,
    stop: impl Fn(&Driver) -> bool,
    said: &mut Vec<String>,
) -> Vec<usize> {
    let mut notes = Vec::new();
    let mut resolved = std::collections::HashMap::<String, usize>::new();
    let start = Instant::now();
    let mut prompted = false;
    loop {
        assert!(start.elapsed() < limit, "the session hung");
        let incoming = match tokio::time::timeout(Duration::from_millis(200), d.recv()).await {
            Ok(i) => i,
            Err(_) if d.closed() || stop(d) => break,
            Err(_) => continue,
        };
        d.handle(incoming, &mut notes);
        for note in std::mem::take(&mut notes) {
            match note {
                Note::Ready if !prompted => {
                    prompted = true;
                    d.prompt("go".into(), vec![]);
                }
                Note::Dialog { request_id } => d.decide(
                    request_id,
                    trellis_core::Choice::Verdict(trellis_core::Verdict::Reject),
                    trellis_core::Decider::Policy("reject".into()),
                    &mut notes,
                ),
                Note::Message(m) => said.push(m),
                Note::Event(ev) => {
                    if let trellis_core::EventBody::PermissionResolved { request_id, .. } = ev.body
                    {
                        *resolved.entry(request_id).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        if stop(d) {
            break;
        }
    }
    resolved.into_values().collect()
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn processes_with(marker: &str) -> Vec<String> {
    crate::hostile::processes_with(marker)
}

fn wait_gone(marker: &str) {
    let start = Instant::now();
    while !processes_with(marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left behind: {:?}",
            processes_with(marker)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn marker(d: &Driver, prefix: &str) -> Option<String> {
    let text = trellis_core::summary::transcript_text(&d.session);
    let at = text.find(prefix)?;
    Some(
        text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect(),
    )
}

#[test]
fn agent_killed_mid_turn_with_requests_and_a_terminal_open_under_a_broken_extension() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let mut d = driver("die-with-permissions", dir.path());
        let counts = run(&mut d, Duration::from_secs(60), |_| false).await;
        // Every request answered exactly once, none left open, though the extension
        // claimed them all and then hung (its claims timed out) and panicked on every event.
        assert!(d.session.open_permissions().is_empty());
        assert!(counts.iter().all(|n| *n == 1), "{counts:?}");
        let asked: usize = d.session.ledger.calls().map(|c| c.permissions.len()).sum();
        assert_eq!(asked, counts.len());
        assert!(d.session.agent_exited.is_some());
        let m = marker(&d, "trellis-die-").expect("the agent reported its terminal");
        wait_gone(&m);
        let status = d.host.as_ref().unwrap().status();
        assert!(
            !status.extensions[0].failures.is_empty(),
            "the panics are on record"
        );
    });
}

#[test]
fn closing_a_session_with_a_hanging_extension_stops_every_process_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let mut d = driver("linger", dir.path());
        run(&mut d, Duration::from_secs(60), |d| {
            marker(d, "trellis-linger-").is_some()
        })
        .await;
        let m = marker(&d, "trellis-linger-").unwrap();
        assert!(!processes_with(&m).is_empty());
        let start = Instant::now();
        let mut notes = Vec::new();
        d.close("stopped by SIGTERM", &mut notes).await;
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(d.closed());
        wait_gone(&m);
        assert!(d.session.open_permissions().is_empty());
    });
}

#[test]
fn a_full_disk_under_a_broken_extension_still_completes_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let args = ["agent", "demo", "--delay-ms", "0"]
            .map(String::from)
            .to_vec();
        let mut d = driver_with(args, dir.path(), Box::new(FullDisk));
        // The demo's edit asks permission: the extension claims it and hangs, the claim
        // times out, the policy answers; every log write fails meanwhile.
        let mut said = Vec::new();
        let counts = run_saying(
            &mut d,
            Duration::from_secs(60),
            |d| d.session.last_stop.is_some(),
            &mut said,
        )
        .await;
        assert_eq!(d.session.last_stop.as_deref(), Some("end_turn"));
        assert_eq!(counts, vec![1], "the edit's request, answered once");
        assert!(d.session.open_permissions().is_empty());
        // The user was told, and told what was lost.
        assert!(
            said.iter().any(|m| m.contains("session log write failed")),
            "{said:?}"
        );
        assert!(
            said.iter()
                .any(|m| m.contains("the session log is incomplete")),
            "{said:?}"
        );
    });
}

/// `trellis run` on the demo agent (allow-once, JSON Lines), its log at `log`.
fn demo_run(cwd: &std::path::Path, log: &std::path::Path) -> std::process::Output {
    let agent = format!("{} agent demo --delay-ms 0", exe());
    let (log, dir) = (log.to_str().unwrap(), cwd.to_str().unwrap());
    run_cli(
        &[
            "run",
            "--agent",
            &agent,
            "--prompt",
            "go",
            "--permission",
            "allow-once",
            "--format",
            "jsonl",
            "--log",
            log,
            "--cwd",
            dir,
        ],
        cwd,
    )
}

fn run_cli(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    std::process::Command::new(exe())
        .args(args)
        .current_dir(cwd)
        .env("XDG_DATA_HOME", cwd.join("data"))
        .env("XDG_CONFIG_HOME", cwd.join("config"))
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_is_reported_and_the_turn_completes() {
    let dir = tempfile::tempdir().unwrap();
    let out = demo_run(dir.path(), std::path::Path::new("/dev/full"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("session log write failed").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("No space left on device"), "{stderr}");
    // What was lost is stated.
    assert!(
        stderr.contains("the session log is incomplete:")
            && stderr.contains("records from record 1 on"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"type\":\"turn_ended\""));
}

#[test]
fn a_truncated_log_is_shown_and_replayed_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let out = demo_run(dir.path(), &log);
    assert!(out.status.success());
    let text = std::fs::read(&log).unwrap();
    // Cut two thirds in, in the middle of a record.
    let mut at = text.len() * 2 / 3;
    while text[at - 1] == b'\n' || text[at] == b'\n' {
        at += 1;
    }
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, &text[..at]).unwrap();
    let out = run_cli(&["log", "show", cut.to_str().unwrap()], dir.path());
    assert!(out.status.success());
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("Edit src/lib.rs"), "{shown}");
    assert!(!shown.contains("0 tool calls"), "{shown}");
    let problems = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        problems.lines().count(),
        1,
        "one cut line reported: {problems}"
    );
    // The UI replays it too.
    let Some(t) = crate::tui::Tmux::start(&["replay", cut.to_str().unwrap()]) else {
        return;
    };
    t.wait_for("Run the tests");
}

#[test]
fn ctrl_c_twice_stops_the_agent_and_every_process() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("{} agent hostile linger", exe());
    let mut child = std::process::Command::new(exe())
        .args([
            "run", "--agent", &agent, "--prompt", "go", "--format", "jsonl", "--cwd",
        ])
        .arg(dir.path())
        .arg("--log")
        .arg(dir.path().join("s.jsonl"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let log = dir.path().join("s.jsonl");
    let start = Instant::now();
    let m = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(at) = text.find("report: marker: ") {
            let m: String = text[at + 16..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !processes_with(&format!("{m}-terminal")).is_empty() {
                break m;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no marker");
        std::thread::sleep(Duration::from_millis(50));
    };
    for _ in 0..2 {
        std::process::Command::new("kill")
            .arg("-INT")
            .arg(child.id().to_string())
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "trellis did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_gone(&m);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("stopped by Ctrl-C"), "closing record");
}

/// A reader that stops reading the output (`trellis run … | head`): the session ends as
/// after a signal — the log closed with the reason, the agent stopped — and the run exits
/// 141, as a shell reports a process SIGPIPE ended; nothing more is written.
#[test]
fn a_closed_output_ends_the_session_and_exits_141() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    // A load no pipe holds, from an agent this test alone runs (its calls count is the mark).
    let agent = format!("{} agent demo --calls 23917 --lines 7 --delay-ms 0", exe());
    let log = dir.path().join("s.jsonl");
    let mut child = std::process::Command::new(exe())
        .args([
            "run", "--agent", &agent, "--prompt", "go", "--format", "jsonl",
        ])
        .args(["--permission", "allow-once", "--cwd"])
        .arg(dir.path())
        .arg("--log")
        .arg(&log)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    out.read_exact(&mut head).unwrap();
    drop(out);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "trellis did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.contains("the output was closed"), "{err}");
    wait_gone("23917");
    let text = std::fs::read_to_string(&log).unwrap();
    let ended: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["msg"]["type"] == "session_ended")
        .collect();
    assert_eq!(ended.len(), 1, "one closing record");
    assert_eq!(ended[0]["msg"]["reason"], "stopped: the output was closed");
}
