//! The trust boundary, end to end: `trellis run` against `trellis agent hostile SCENARIO`,
//! an agent that misbehaves one way per scenario. Every run is bounded (a hang fails the
//! test instead of blocking the suite); each test checks what Trellis did and what the
//! agent saw (its `report:` lines).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use trellis_core::{Policy, Session};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_trellis")
}

struct Hostile {
    dir: tempfile::TempDir,
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

impl Hostile {
    fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    fn outside(&self) -> &Path {
        self.dir.path()
    }
    fn log(&self) -> String {
        let bytes = std::fs::read(self.dir.path().join("session.jsonl")).unwrap();
        String::from_utf8(bytes).expect("the session log is UTF-8")
    }
    fn events(&self) -> Vec<Value> {
        crate::jsonl(&self.stdout)
    }
    /// The agent's `report: WHAT: OUTCOME` lines, from its messages.
    fn report(&self, what: &str) -> String {
        let text: String = self
            .events()
            .iter()
            .filter(|e| e["type"] == "message_chunk")
            .filter_map(|e| e["text"].as_str().map(str::to_string))
            .collect();
        let key = format!("report: {what}: ");
        text.lines()
            .find_map(|l| l.strip_prefix(&key).map(str::to_string))
            .unwrap_or_else(|| panic!("no report {what:?} in {text}"))
    }
    fn rebuilt(&self) -> Session {
        let mut s = Session::new(Policy::Ask);
        let problems = trellis_core::log::rebuild(&mut s, self.log().lines(), |_| {});
        assert!(problems.is_empty(), "{problems:?}");
        s
    }
    /// Every permission request in the log was answered exactly once.
    fn assert_answered_once(&self) {
        let s = self.rebuilt();
        assert!(
            s.open_permissions().is_empty(),
            "{:?}",
            s.open_permissions()
        );
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for e in self.events() {
            if e["type"] == "permission_resolved" {
                *seen.entry(e["request_id"].to_string()).or_default() += 1;
            }
        }
        assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    }
}

/// Runs `trellis run` against the scenario; fails the test if it takes longer than
/// `limit`.
fn hostile(scenario: &str, extra: &[&str], config: &str, limit: Duration) -> Hostile {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config_file = dir.path().join("config.toml");
    std::fs::write(&config_file, config).unwrap();
    let mut child = Command::new(exe())
        .arg("--config")
        .arg(&config_file)
        .args(["run", "--prompt", "go", "--agent"])
        .arg(format!("{} agent hostile {scenario}", exe()))
        .args(if extra.contains(&"--format") {
            &[][..]
        } else {
            &["--format", "jsonl"][..]
        })
        .arg("--cwd")
        .arg(&work)
        .arg("--log")
        .arg(dir.path().join("session.jsonl"))
        .args(extra)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(&mut child, limit, scenario);
    Hostile {
        dir,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// `trellis run` against the scenario in the background (JSON Lines on a pipe; read it
/// with [`wait_bounded`]), its data directory beside `log`.
fn spawn_run(scenario: &str, cwd: &Path, log: &Path) -> std::process::Child {
    Command::new(exe())
        .args(["run", "--format", "jsonl", "--prompt", "go", "--agent"])
        .arg(format!("{} agent hostile {scenario}", exe()))
        .arg("--cwd")
        .arg(cwd)
        .arg("--log")
        .arg(log)
        .env("XDG_DATA_HOME", log.with_file_name("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn wait_bounded(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::Output {
    // Drain the pipes on threads so a chatty run never blocks on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).unwrap();
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).unwrap();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: trellis hung (still running after {limit:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn planted_links_and_escaping_paths_never_write_outside() {
    let h = hostile("write-escape", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(h.report("write notes"), "ok");
    for what in [
        "write through file link",
        "write through dir link",
        "write through dangling link",
        "write with dotdot",
        "write absolute outside",
        "write via proc root",
        "write with nul",
        "write relative",
        "read through file link",
        "terminal cwd outside",
    ] {
        assert!(
            h.report(what).starts_with("error: "),
            "{what}: {}",
            h.report(what)
        );
    }
    // The user is told what the agent tried.
    assert!(
        h.stderr.contains("refused the agent's request: path")
            && h.stderr.contains("is outside the session roots"),
        "{}",
        h.stderr
    );
    // Outside the cwd nothing changed; the written file is a regular file.
    assert_eq!(
        std::fs::read_to_string(h.outside().join("escaped.txt")).unwrap(),
        "untouched\n"
    );
    assert!(!h.outside().join("dangling-new.txt").exists());
    let notes = std::fs::symlink_metadata(h.cwd().join("notes.txt")).unwrap();
    assert!(notes.is_file());
    assert_eq!(
        std::fs::read_to_string(h.cwd().join("notes.txt")).unwrap(),
        "PWNED\n"
    );
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(h.cwd())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".trellis.tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_fifo_or_directory_is_refused_at_once_and_the_session_goes_on() {
    let h = hostile("fifo", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(h.report("mkfifo"), "true");
    assert!(
        h.report("read fifo").contains("a FIFO"),
        "{}",
        h.report("read fifo")
    );
    assert!(h.report("read directory").contains("a directory"));
    assert!(
        h.stderr.contains("is not a regular file (a FIFO)"),
        "{}",
        h.stderr
    );
    assert_eq!(h.report("read plain file"), "ok");
}

#[test]
fn blank_lines_between_messages_do_not_hang_the_turn() {
    let h = hostile("blank-lines", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    let ended: Vec<_> = h
        .events()
        .into_iter()
        .filter(|e| e["type"] == "turn_ended")
        .collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["stop_reason"], "end_turn");
    let s = h.rebuilt();
    assert!(trellis_core::summary::transcript_text(&s).contains("one two three"));
}

#[test]
fn invalid_utf8_on_stdout_is_logged_losslessly_and_the_session_goes_on() {
    let h = hostile("bad-utf8", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(
        h.stderr.matches("not valid UTF-8").count(),
        1,
        "{}",
        h.stderr
    );
    let text = trellis_core::summary::transcript_text(&h.rebuilt());
    assert!(
        text.contains("caf\u{fffd} \u{fffd}\u{fffd} bytes and then more text"),
        "{text}"
    );
    // The line as received is in the log, in base64.
    let log = h.log();
    let rec: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v.get("b64").is_some())
        .expect("a record with the bytes");
    let b64 = rec["b64"].as_str().unwrap();
    let bytes = decode(b64);
    let sent = b"caf\xe9 \xff\xfe bytes";
    assert!(bytes.windows(sent.len()).any(|w| w == sent), "{bytes:?}");
}

fn decode(s: &str) -> Vec<u8> {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let vals: Vec<u32> = s
        .bytes()
        .filter(|b| *b != b'=')
        .map(|b| T.iter().position(|t| *t == b).unwrap() as u32)
        .collect();
    let mut out = Vec::new();
    for chunk in vals.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, v)| n | (v << (18 - 6 * i)));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[test]
fn stderr_is_always_drained_and_the_log_keeps_head_and_tail() {
    let h = hostile("stderr-flood", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    let log = h.log();
    assert!(log.len() < 3 << 20, "log is {} bytes", log.len());
    assert!(log.contains("bad byte \u{fffd} on stderr"));
    assert!(log.contains("\"type\":\"stderr_elided\""));
    assert!(log.contains("the last stderr line"));
    assert!(h.stderr.contains("left out"), "{}", h.stderr);
}

#[test]
fn requests_with_odd_ids_get_an_error_and_an_escaped_id_is_answered() {
    let h = hostile("odd-ids", &["--permission", "allow-once"], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    for id in ["1.5", "1180591620717411303424", "true", "[1]", "{}"] {
        assert!(h.report(&format!("id {id}")).starts_with("error "), "{id}");
    }
    assert!(h.report("nested 100000 deep").starts_with("error "));
    assert!(
        h.report("escaped id").contains("\"optionId\":\"yes\""),
        "{}",
        h.report("escaped id")
    );
    h.assert_answered_once();
}

#[test]
fn updates_and_requests_for_another_session_or_none_are_refused() {
    let h = hostile(
        "foreign-session",
        &["--permission", "allow-once"],
        "",
        LIMIT,
    );
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert!(
        !h.stdout.contains("GHOST"),
        "foreign text reached the transcript"
    );
    assert!(
        h.report("permission for another session")
            .starts_with("error: ")
    );
    assert!(
        h.report("permission without session")
            .starts_with("error: ")
    );
    assert!(h.report("own permission").contains("\"optionId\":\"yes\""));
    assert!(h.stderr.contains("without a sessionId"), "{}", h.stderr);
    assert!(h.stderr.contains("another session someone-else"));
    assert!(h.stderr.contains("refused permission request"));
    // Only the session's own request reached the permission chain.
    let asked = h
        .events()
        .iter()
        .filter(|e| e["type"] == "permission_requested")
        .count();
    assert_eq!(asked, 1);
    h.assert_answered_once();
}

#[test]
fn requests_without_usable_options_are_cancelled_with_a_warning() {
    let h = hostile("empty-options", &["--permission", "allow-once"], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(
        h.report("empty options"),
        r#"{"outcome":{"outcome":"cancelled"}}"#
    );
    assert_eq!(
        h.report("unknown kinds"),
        r#"{"outcome":{"outcome":"cancelled"}}"#
    );
    assert_eq!(h.stderr.matches("no option of a known kind").count(), 2);
    assert!(h.log().contains("no usable options"));
    h.assert_answered_once();
}

#[test]
fn an_agent_dying_with_requests_in_flight_leaves_none_open() {
    // Requests are decided by an allow rule for one of them only; the rest wait for a
    // dialog nobody can show... headless, the policy answers. Either way each is answered
    // exactly once and none is left open when the agent dies.
    let h = hostile("die-with-permissions", &[], "", LIMIT);
    assert_eq!(h.code, Some(7), "{}", h.stderr);
    h.assert_answered_once();
    let s = h.rebuilt();
    let asked: usize = s.ledger.calls().map(|c| c.permissions.len()).sum();
    assert_eq!(asked, 200);
}

#[test]
fn an_agent_that_never_sets_up_times_out_with_a_clear_error() {
    for scenario in ["hang-init", "hang-session"] {
        let h = hostile(scenario, &[], "[connection]\nsetup_timeout = 1\n", LIMIT);
        assert_eq!(h.code, Some(7), "{scenario}: {}", h.stderr);
        assert!(
            h.stderr.contains("did not finish setting up") && h.stderr.contains("within 1 s"),
            "{scenario}: {}",
            h.stderr
        );
    }
}

#[test]
fn terminal_output_is_capped_without_a_limit_from_the_agent() {
    let h = hostile("terminal-flood", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(h.report("terminal output bytes"), "1048576 truncated=true");
    let log = h.log();
    assert!(log.len() < 6 << 20, "log is {} bytes", log.len());
    assert!(log.contains("bytes of output not kept in the session log"));
    // The configured limit applies.
    let h = hostile(
        "terminal-flood",
        &[],
        "[connection]\nterminal_output_limit = 1000\n",
        LIMIT,
    );
    assert_eq!(h.report("terminal output bytes"), "1000 truncated=true");
}

#[test]
fn escape_sequences_from_the_agent_never_reach_the_terminal() {
    let h = hostile("escapes", &["--format", "text"], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    for out in [&h.stdout, &h.stderr] {
        assert!(
            !out.contains('\x1b') && !out.contains('\x07') && !out.contains('\u{9b}'),
            "{out:?}"
        );
    }
    assert!(h.stdout.contains("^[]0;PWNED-TITLE^G"), "{}", h.stdout);
    assert!(h.stdout.contains("^[]52;c;"));
    // `log show` prints the same log safely.
    let log = h.dir.path().join("session.jsonl");
    let out = Command::new(exe())
        .args(["log", "show"])
        .arg(&log)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(shown.contains("^[]0;PWNED-TITLE^G"), "{shown}");
    assert!(!shown.contains('\x1b') && !shown.contains('\x07') && !shown.contains('\u{9b}'));
}

/// Processes whose command line holds `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<String> {
    crate::procs::with_cmdline(marker)
}

#[test]
fn sigterm_and_sighup_stop_the_agent_and_every_process_it_started() {
    // `escape-group` leaves the process groups on purpose (setsid, a double fork): what
    // leaves them is reparented to Trellis and stopped when it ends.
    for (scenario, prefix, children) in [
        ("linger", "trellis-linger-", ["terminal", "child"]),
        ("escape-group", "trellis-escape-", ["terminal", "daemon"]),
    ] {
        for sig in ["TERM", "HUP"] {
            let dir = tempfile::tempdir().unwrap();
            let work = dir.path().join("work");
            std::fs::create_dir_all(&work).unwrap();
            let mut child = spawn_run(scenario, &work, &dir.path().join("session.jsonl"));
            // Wait until the agent reports its marker (its processes are running then).
            let log = dir.path().join("session.jsonl");
            let start = Instant::now();
            let marker = loop {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if let Some(at) = text.find(prefix) {
                    let digits: String = text[at + prefix.len()..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    let m = format!("{prefix}{digits}");
                    if children
                        .iter()
                        .all(|c| !processes_with(&format!("{m}-{c}")).is_empty())
                    {
                        break m;
                    }
                }
                assert!(
                    start.elapsed() < LIMIT,
                    "the lingering agent never started: {text}"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            let status = Command::new("kill")
                .arg(format!("-{sig}"))
                .arg(child.id().to_string())
                .status()
                .unwrap();
            assert!(status.success());
            let out = wait_bounded(&mut child, LIMIT, scenario);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&format!("SIG{sig}")), "{stderr}");
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(
                text.contains(&format!("stopped by SIG{sig}")),
                "no closing record"
            );
            // Nothing Trellis started outlives it: the agent, its child, the terminal.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !processes_with(&marker).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(
                processes_with(&marker).is_empty(),
                "{:?}",
                processes_with(&marker)
            );
        }
    }
}

#[test]
fn a_fallback_that_asks_is_answered_by_on_ask_on_the_record() {
    // Nobody to ask in a headless run: --on-ask deny (the default) refuses on the record.
    let h = hostile(
        "ignore-refusal",
        &[],
        "[permissions]\npolicy = \"rules\"\nfallback = \"ask\"\n",
        LIMIT,
    );
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert!(h.stderr.contains("nobody to ask"), "{}", h.stderr);
    assert!(
        h.log()
            .contains("\"decider\":{\"by\":\"policy\",\"name\":\"--on-ask deny\"}"),
        "{}",
        h.log()
    );
    h.assert_answered_once();
    // --on-ask fail: refused, and the run stops with 13.
    let h = hostile(
        "ignore-refusal",
        &["--on-ask", "fail"],
        "[permissions]\npolicy = \"rules\"\nfallback = \"ask\"\n",
        LIMIT,
    );
    assert_eq!(h.code, Some(13), "{}", h.stderr);
    assert!(h.log().contains("stopped after a permission denial"));
    h.assert_answered_once();
}

#[test]
fn bad_globs_and_unknown_kinds_in_rules_name_file_line_and_key() {
    for (rule, wants) in [
        (
            "kind = \"edits\"",
            ":5: permissions.rule.kind: unknown tool kind `edits`",
        ),
        (
            "path = \"src/[a\"",
            ":5: permissions.rule.path: bad glob `src/[a`",
        ),
        (
            "command = \"{a,b\"",
            ":5: permissions.rule.command: bad glob `{a,b`",
        ),
    ] {
        let config = format!(
            "[permissions]\npolicy = \"rules\"\n[[permissions.rule]]\naction = \"allow\"\n{rule}\n"
        );
        let h = hostile("fifo", &[], &config, LIMIT);
        assert_eq!(h.code, Some(2), "{}", h.stderr);
        assert!(h.stderr.contains(wants), "{rule}: {}", h.stderr);
    }
}

#[test]
fn ctrl_c_during_setup_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let mut child = spawn_run("hang-init", dir.path(), &log);
    // Setup is under way once `initialize` is on record (the agent never answers it).
    let start = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("\"initialize\"")) {
        assert!(start.elapsed() < LIMIT, "initialize was never sent");
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    let out = wait_bounded(&mut child, Duration::from_secs(10), "ctrl-c during setup");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopping the agent"), "{stderr}");
}

#[test]
fn orphans_adopted_from_terminals_are_reaped_while_the_session_runs() {
    let h = hostile("orphans", &[], "", LIMIT);
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(h.report("zombies"), "0");
}

/// An agent that runs what was refused (issue 12, item 8): each such call is flagged
/// `ran_after_refusal` once, as an event, on its line and in the closing line.
#[test]
fn calls_run_after_a_refusal_are_flagged() {
    let h = hostile(
        "ignore-refusal",
        &["--permission", "reject"],
        "",
        Duration::from_secs(20),
    );
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    let flagged: Vec<(String, String)> = h
        .events()
        .iter()
        .filter(|e| e["type"] == "anomaly")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap().to_string(),
                e["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(flagged.len(), 2, "{flagged:?}");
    assert_eq!(flagged[0], ("c-refused".into(), "ran_after_refusal".into()));
    // Ran before the answer reached it, or (when the answer went out first) after the
    // refusal: flagged either way.
    assert_eq!(flagged[1].0, "c-eager");
    assert!(
        ["ran_while_asking", "ran_after_refusal"].contains(&flagged[1].1.as_str()),
        "{flagged:?}"
    );
    let text = hostile(
        "ignore-refusal",
        &["--permission", "reject", "--format", "text"],
        "",
        Duration::from_secs(20),
    );
    assert!(
        text.stdout.contains("rm -rf build")
            && text.stdout.contains("⚑ ran after refusal")
            && text.stdout.contains("2 anomalous (⚑)"),
        "{}",
        text.stdout
    );
    // Rebuilt from the log: the same findings.
    let s = h.rebuilt();
    assert_eq!(s.counters.anomalies, 2);
}

/// A setting the agent never answers (`--set`, issue 12, item 1) holds the run only for
/// the setup timeout: then it ends before any prompt, exit 2, saying why.
#[test]
fn a_setting_the_agent_never_answers_ends_the_run_in_time() {
    let h = hostile(
        "hang-settings",
        &["--set", "model=b"],
        "[connection]\nsetup_timeout = 1\n",
        Duration::from_secs(20),
    );
    assert_eq!(h.code, Some(2), "{}", h.stderr);
    assert!(
        h.stderr
            .contains("the agent did not answer the settings (--set) within 1 s"),
        "{}",
        h.stderr
    );
    assert!(!h.events().iter().any(|e| e["type"] == "turn_started"));
}

/// The agent stops waiting for a command (`$/cancel_request` on its
/// `terminal/wait_for_exit`): the wait is answered at once as cancelled (-32800), the
/// command runs on until the agent kills it, and the turn ends normally.
#[test]
fn an_agent_may_withdraw_its_wait_for_a_command() {
    let h = hostile(
        "cancel-wait",
        &["--permission", "allow-once"],
        "",
        Duration::from_secs(20),
    );
    assert_eq!(h.code, Some(0), "{}", h.stderr);
    assert_eq!(h.report("cancelled wait"), "-32800");
    assert_eq!(h.report("still running"), "true");
    let ended: Vec<_> = h
        .events()
        .into_iter()
        .filter(|e| e["type"] == "turn_ended")
        .collect();
    assert_eq!(ended[0]["stop_reason"], "end_turn");
}

#[test]
fn everything_a_dying_agent_wrote_reaches_the_events_and_the_log() {
    // The agent writes more than a pipe holds, with permission requests in between, and
    // aborts: Trellis's answers meet a closed stdin while the end of the burst is still in
    // the pipe. Whatever happens on the write side, every line is read, logged and shown.
    use trellis_agents::hostile::{BURST, LAST_WORDS};
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("last-message.txt");
    let args = [
        "--permission",
        "allow-once",
        "--output-file",
        output.to_str().unwrap(),
    ];
    for attempt in 0..12 {
        let _ = std::fs::remove_file(&output);
        let h = hostile("burst-then-die", &args, "", LIMIT);
        assert_eq!(h.code, Some(7), "attempt {attempt}: {}", h.stderr);
        // The artifact holds the agent's real last message, though the agent died.
        let last_message = std::fs::read_to_string(&output).unwrap();
        assert!(
            last_message.ends_with(LAST_WORDS),
            "attempt {attempt}: {last_message:?}"
        );
        let shown: String = h
            .events()
            .iter()
            .filter(|e| e["type"] == "message_chunk")
            .filter_map(|e| e["text"].as_str().map(str::to_string))
            .collect();
        let log = h.log();
        for i in 1..=BURST {
            let line = format!("burst {i} of {BURST} ");
            assert!(shown.contains(&line), "attempt {attempt}: event {i} lost");
            assert!(log.contains(&line), "attempt {attempt}: log line {i} lost");
        }
        let last = LAST_WORDS.trim_end();
        assert!(
            shown.contains(last),
            "attempt {attempt}: last words not shown"
        );
        assert!(
            log.contains(last),
            "attempt {attempt}: last words not logged"
        );
        h.assert_answered_once();
    }
}
