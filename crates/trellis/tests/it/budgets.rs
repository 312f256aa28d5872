//! Budgets `trellis run` enforces itself, and the exit codes a scheduler classifies
//! (issue 31, items 1–3): each kind of end against the demo and hostile agents, with the
//! log closed with the reason and the last-message artifact written every time.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_trellis")
}

struct Run {
    out: Output,
    dir: tempfile::TempDir,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("session.jsonl")).unwrap_or_default()
    }
    /// The reason the log closed with.
    fn ended(&self) -> String {
        self.log()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| r["msg"]["type"] == "session_ended")
            .map(|r| r["msg"]["reason"].as_str().unwrap_or_default().to_string())
            .next_back()
            .unwrap_or_default()
    }
    fn artifact(&self) -> bool {
        self.dir.path().join("last.md").exists()
    }
}

fn run(agent: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(exe())
        .current_dir(&work)
        .args(["run", "--agent", agent, "--cwd"])
        .arg(&work)
        .arg("--log")
        .arg(dir.path().join("session.jsonl"))
        .arg("--output-file")
        .arg(dir.path().join("last.md"))
        .args(args)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    Run { out, dir }
}

fn demo_load() -> String {
    format!("{} agent demo --calls 300000 --lines 5", exe())
}

#[test]
fn a_timeout_cancels_then_stops_with_10() {
    let r = run(
        &demo_load(),
        &[
            "--prompt",
            "load",
            "--permission",
            "allow-once",
            "--timeout",
            "1s",
        ],
    );
    assert_eq!(r.code(), Some(10), "{}", r.stderr());
    assert_eq!(r.ended(), "timeout: 1 s passed");
    assert!(r.artifact());
}

#[test]
fn an_agent_that_goes_quiet_stops_with_11_after_the_grace_period() {
    let r = run(
        &format!("{} agent hostile linger", exe()),
        &[
            "--prompt",
            "go",
            "--permission",
            "allow-once",
            "--idle-timeout",
            "1",
            "--grace",
            "500ms",
        ],
    );
    assert_eq!(r.code(), Some(11), "{}", r.stderr());
    assert!(
        r.stderr().contains("did not end within the grace period"),
        "{}",
        r.stderr()
    );
    assert!(r.ended().starts_with("idle timeout"), "{}", r.ended());
    assert!(r.artifact());
}

#[test]
fn budgets_of_calls_turns_and_cost_stop_with_12() {
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
            "--max-tool-calls",
            "2",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    assert!(r.ended().contains("--max-tool-calls 2"), "{}", r.ended());
    assert!(r.artifact());
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--prompt",
            "again",
            "--permission",
            "allow-once",
            "--max-turns",
            "1",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    let prompts = r
        .log()
        .lines()
        .filter(|l| l.contains("client_to_agent") && l.contains("\"session/prompt\""))
        .count();
    assert_eq!(prompts, 1, "the second prompt is not sent");
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
            "--max-cost",
            "0.001",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    assert!(r.ended().contains("cost 0.0123 USD"), "{}", r.ended());
    // An agent that reports no cost: said, not enforced.
    let r = run(
        &format!("{} agent hostile blank-lines", exe()),
        &["--prompt", "go", "--max-cost", "1"],
    );
    assert!(r.stderr().contains("reported no cost"), "{}", r.stderr());
}

#[test]
fn a_request_nobody_can_answer_is_denied_or_fails_the_run_with_13() {
    let r = run("demo", &["--prompt", "fix"]);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert!(
        r.log()
            .contains("\"decider\":{\"by\":\"policy\",\"name\":\"reject\"}")
    );
    let r = run("demo", &["--prompt", "fix", "--on-ask", "fail"]);
    assert_eq!(r.code(), Some(13), "{}", r.stderr());
    assert!(r.log().contains("\"name\":\"--on-ask fail\""));
    assert!(r.ended().starts_with("stopped after a permission denial"));
    assert!(r.artifact());
    // A policy the user chose decides: nothing is left to ask.
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--on-ask",
            "fail",
            "--permission",
            "allow-once",
        ],
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
}

#[test]
fn sigterm_exits_with_143_and_still_writes_the_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(exe())
        .args(["run", "--agent", &demo_load(), "--prompt", "load"])
        .args(["--permission", "allow-once", "--cwd"])
        .arg(dir.path())
        .arg("--output-file")
        .arg(dir.path().join("last.md"))
        .arg("--summary")
        .arg(dir.path().join("s.json"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(Path::new(&dir.path().join("last.md")).exists());
    let s = json(&dir.path().join("s.json"));
    assert_eq!(s["exit_code"], 143);
    assert_eq!(s["exit_reason"], "stopped by SIGTERM");
}

#[test]
fn a_duration_that_is_not_one_is_a_usage_error() {
    let r = run("demo", &["--prompt", "x", "--timeout", "soon"]);
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
    assert!(r.stderr().contains("not a duration"), "{}", r.stderr());
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_summary_and_the_patch_are_written_on_every_end() {
    // A normal end in a repository: the patch is git's, new files included.
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        assert!(
            Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args(args)
                .output()
                .unwrap()
                .status
                .success()
        )
    };
    git(&["init", "-q", "-b", "main"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "0",
    ]);
    // The demo plays in a repository it did not make only when asked (`--here`).
    let here = format!("{} agent demo --here", exe());
    let out = Command::new(exe())
        .args([
            "run",
            "--agent",
            &here,
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
        ])
        .arg("--cwd")
        .arg(&repo)
        .arg("--summary")
        .arg(dir.path().join("s.json"))
        .arg("--summary-md")
        .arg(dir.path().join("s.md"))
        .arg("--patch")
        .arg(dir.path().join("p.diff"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = json(&dir.path().join("s.json"));
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["stop_reason"], "end_turn");
    assert_eq!(s["turns"], 1);
    // The demo's five, and the seeding of its workspace in a git work tree, said as an
    // edit of its own.
    assert_eq!(s["tool_calls"]["total"], 6);
    assert_eq!(s["tool_calls"]["by_kind"]["execute"]["failed"], 1);
    assert_eq!(s["cost"]["currency"], "USD");
    assert!(s["files_written"].to_string().contains("src/lib.rs"), "{s}");
    let md = std::fs::read_to_string(dir.path().join("s.md")).unwrap();
    assert!(
        md.contains("| exit code | 0 |") && md.contains("| execute | 1 completed, 1 failed |"),
        "{md}"
    );
    let patch = std::fs::read_to_string(dir.path().join("p.diff")).unwrap();
    assert!(patch.contains("+++ b/demo-workspace/src/lib.rs"), "{patch}");
    // The patch applies to the commit the run started from.
    git(&["stash", "-u", "-q"]);
    git(&[
        "apply",
        "--check",
        dir.path().join("p.diff").to_str().unwrap(),
    ]);
    // Denied by the default policy, outside a repository: the denials and their decider,
    // and the patch from the edits the agent reported (none was allowed: empty).
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--summary",
            "s.json",
            "--patch",
            "p.diff",
        ],
    );
    let s = json(&r.dir.path().join("work/s.json"));
    assert_eq!(s["exit_code"], 0);
    assert!(s["tool_calls"].get("past_limit").is_none(), "{s}");
    assert_eq!(
        s["permission_denials"][0]["decider"], "policy reject",
        "{s}"
    );
    // Stopped by a budget: still written, with the reason.
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
            "--max-tool-calls",
            "1",
            "--summary",
            "s.json",
        ],
    );
    let s = json(&r.dir.path().join("work/s.json"));
    assert_eq!(s["exit_code"], 12);
    assert!(
        s["budget"].as_str().unwrap().contains("--max-tool-calls 1"),
        "{s}"
    );
    // An edit outside a repository: the patch comes from the ledger.
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix",
            "--permission",
            "allow-once",
            "--patch",
            "p.diff",
        ],
    );
    let patch = std::fs::read_to_string(r.dir.path().join("work/p.diff")).unwrap();
    assert!(patch.contains("+    a.checked_add(b)"), "{patch}");
    // A setup that fails: the summary says why, with 2.
    let r = run(
        "demo",
        &["--prompt", "x", "--set", "nope=1", "--summary", "s.json"],
    );
    assert_eq!(r.code(), Some(2));
    let s = json(&r.dir.path().join("work/s.json"));
    assert_eq!(s["exit_code"], 2, "{s}");
}

/// `--max-tool-calls` is checked on every update, not once per read of the agent's pipe: a
/// fast agent is stopped at the call past the limit (it was noticed 100–250 calls late).
/// No call past the limit completes on Trellis's side: its permission is refused (whatever
/// the policy), its terminal killed. In text, the budget's note starts a line of its own.
#[test]
fn a_tool_call_budget_holds_at_the_call_past_it() {
    let r = run(
        &format!("{} agent demo --calls 5000 --lines 1 --delay-ms 0", exe()),
        &[
            "--prompt",
            "load",
            "--permission",
            "allow-once",
            "--max-tool-calls",
            "3",
            "--summary",
            "s.json",
            "--summary-md",
            "s.md",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("4 tool calls started, --max-tool-calls 3"),
        "noticed at the fourth call: {}",
        r.stderr()
    );
    // The calls the fast agent had sent before the cancel reached it are on the record as
    // it reported them, and the summary counts them apart.
    let s = json(&r.dir.path().join("work/s.json"));
    let total = s["tool_calls"]["total"].as_u64().unwrap();
    assert!(total > 3, "{s}");
    assert_eq!(s["tool_calls"]["past_limit"], total - 3, "{s}");
    let md = std::fs::read_to_string(r.dir.path().join("work/s.md")).unwrap();
    assert!(
        md.contains(&format!(
            "| tool calls past --max-tool-calls | {} |",
            total - 3
        )),
        "{md}"
    );
    // The demo story: read, search, an edit that asks permission, then the tests in a
    // terminal. With 2, the edit is past the limit: refused although the policy allows.
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
            "--max-tool-calls",
            "2",
            "--format",
            "jsonl",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    let log = r.log();
    assert!(
        log.contains(r#""decider":{"by":"policy","name":"--max-tool-calls 2"}"#),
        "the edit's permission refused by the budget: {log}"
    );
    assert!(
        !log.contains(r#""decider":{"by":"policy","name":"allow-once"}"#),
        "nothing past the limit was allowed"
    );
    // With 3, the tests' command is past it: its terminal never finishes with exit 0.
    let r = run(
        "demo",
        &[
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
            "--max-tool-calls",
            "3",
        ],
    );
    assert_eq!(r.code(), Some(12), "{}", r.stderr());
    let exits: Vec<serde_json::Value> = r
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["msg"]["type"] == "terminal_exited")
        .collect();
    assert_eq!(exits.len(), 1, "{}", r.log());
    // Stopped by the one stop sequence: SIGTERM first, SIGKILL if it would not end.
    assert!(
        matches!(
            exits[0]["msg"]["signal"].as_str(),
            Some("SIGTERM" | "SIGKILL")
        ),
        "the command past the limit was killed, not run to its end: {exits:?}"
    );
    // On a terminal that shows both streams, the note is on a line of its own.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' run --agent demo --cwd '{}' --prompt 'fix the TODO' --permission allow-once --max-tool-calls 3 --format text 2>&1",
            exe(),
            dir.path().display()
        ))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("budget exceeded"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("trellis: budget exceeded"), "{text}");
}
