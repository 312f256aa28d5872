//! `trellis sessions`: history across runs (issue 11): list, search, show, rm, reindex,
//! exports — the HTML one checked in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::jsonl as events;

mod resume;

/// A row of `sessions list --json`.
struct Row(serde_json::Value);

impl Row {
    /// A text field, as an owned string.
    fn str(&self, key: &str) -> String {
        self.0[key].as_str().unwrap().to_string()
    }
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn trellis(&self, args: &[&str], cwd: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(cwd)
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str], cwd: &Path) -> String {
        let o = self.trellis(args, cwd);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    fn project(&self, name: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::canonicalize(p).unwrap()
    }

    /// A headless demo session in `cwd`.
    fn demo(&self, cwd: &Path, prompt: &str) {
        let o = self.demo_run(cwd, cwd, prompt, None);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// A headless demo run started from `from`, its session in `cwd`, its log at `log`
    /// (default: the sessions directory).
    fn demo_run(&self, from: &Path, cwd: &Path, prompt: &str, log: Option<&Path>) -> Output {
        let mut args = vec![
            "run",
            "--format",
            "jsonl",
            "--permission",
            "allow-once",
            "--prompt",
            prompt,
            "--cwd",
            cwd.to_str().unwrap(),
        ];
        if let Some(log) = log {
            args.extend(["--log", log.to_str().unwrap()]);
        }
        self.trellis(&args, from)
    }

    /// A demo session ("the first prompt") in `cwd`: its row in `sessions list`.
    fn first_session(&self, cwd: &Path) -> Row {
        self.demo(cwd, "the first prompt");
        Row(self.json(&["sessions", "list", "--json"], cwd)[0].clone())
    }

    fn json(&self, args: &[&str], cwd: &Path) -> serde_json::Value {
        serde_json::from_str(&self.ok(args, cwd)).unwrap()
    }

    /// `trellis run --resume ID` with `extra`, one prompt "go on", JSONL out, from `cwd`.
    fn resume(&self, cwd: &Path, id: &str, extra: &[&str]) -> String {
        let mut args = vec!["run", "--resume", id];
        args.extend_from_slice(extra);
        args.extend([
            "--prompt",
            "go on",
            "--permission",
            "allow-once",
            "--format",
            "jsonl",
        ]);
        self.ok(&args, cwd)
    }

    /// The session of `cwd` that is not `id` (the one resuming it).
    fn other_than(&self, cwd: &Path, id: &str) -> serde_json::Value {
        let rows = self.json(&["sessions", "list", "--json"], cwd);
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] != id)
            .unwrap()
            .clone()
    }

    fn index(&self) -> PathBuf {
        self.path().join("data/trellis/index.sqlite")
    }

    /// The directories of the sessions `sessions list ARGS --json` lists from `cwd`,
    /// sorted.
    fn listed_cwds(&self, args: &[&str], cwd: &Path) -> Vec<String> {
        let mut all = vec!["sessions", "list", "--json"];
        all.extend_from_slice(args);
        let rows = self.json(&all, cwd);
        let mut cwds: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cwd"].as_str().unwrap().to_string())
            .collect();
        cwds.sort();
        cwds
    }
}

#[test]
fn sessions_are_listed_searched_shown_and_removed() {
    let home = Home::new();
    let (a, b) = (home.project("alpha"), home.project("beta"));
    home.demo(&a, "first prompt in alpha");
    home.demo(&b, "only prompt in beta");
    home.demo(&a, "second prompt in alpha");

    // This directory's sessions by default, newest first; --all for every one.
    let here = home.json(&["sessions", "list", "--json"], &a);
    let here = here.as_array().unwrap();
    assert_eq!(here.len(), 2, "{here:?}");
    assert_eq!(here[0]["first_prompt"], "second prompt in alpha");
    assert_eq!(here[0]["cwd"], a.to_str().unwrap());
    assert_eq!(here[0]["turns"], 1);
    assert_eq!(here[0]["calls"]["total"], 5);
    assert_eq!(here[0]["calls"]["failed"], 1);
    assert_eq!(here[0]["agent"], "demo");
    let all = home.json(&["sessions", "list", "--all", "--json"], &a);
    assert_eq!(all.as_array().unwrap().len(), 3);
    let text = home.ok(&["sessions", "list", "--all"], &a);
    assert_eq!(text.lines().count(), 4, "a header and three rows: {text}");
    assert!(
        text.contains("     1      5 ✗1"),
        "turns, calls, failed: {text}"
    );

    // A word that appears only in tool output (the README the demo reads).
    let hits = home.json(&["sessions", "search", "scratch", "--json"], &a);
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(
        hits.iter()
            .all(|h| h["kind"] == "output" && h["call_id"] == "read-1")
    );
    assert!(
        home.json(
            &["sessions", "search", "scratch", "--in", "prompts", "--json"],
            &a
        )
        .as_array()
        .unwrap()
        .is_empty()
    );
    let beta = home.json(
        &["sessions", "search", "beta", "--in", "prompts", "--json"],
        &a,
    );
    assert_eq!(beta.as_array().unwrap().len(), 1, "{beta}");
    // The directory is in the paths of its calls.
    let paths = home.json(
        &["sessions", "search", "beta", "--in", "tools", "--json"],
        &a,
    );
    assert!(paths.as_array().unwrap().len() >= 2, "{paths}");
    let id = beta[0]["session"].as_str().unwrap().to_string();
    let text = home.ok(&["sessions", "search", "scratch"], &a);
    assert!(text.contains("«scratch»"), "{text}");
    // A session's name in a hit is its own: the same whatever else the query found.
    let label = |text: &str| {
        let line = text.lines().find(|l| l.starts_with(&id)).unwrap();
        line.rsplit("  ").next().unwrap().to_string()
    };
    let alone = home.ok(&["sessions", "search", "beta", "--in", "prompts"], &a);
    assert_eq!(label(&text), label(&alone), "{text}\n{alone}");
    // Hits cut short by the limit say so.
    assert!(!text.contains("--limit N for more"), "{text}");
    let few = home.ok(&["sessions", "search", "scratch", "--limit", "2"], &a);
    assert!(
        few.ends_with("(the newest 2 hits; --limit N for more)\n"),
        "{few}"
    );
    // Nothing found: exit 1, like grep.
    let none = home.trellis(&["sessions", "search", "zyzzyva"], &a);
    assert_eq!(none.status.code(), Some(1));

    // A session logged elsewhere (`--log FILE`) is indexed by the session itself, as it
    // runs: `sessions` commands only scan the sessions directory.
    let elsewhere = home.path().join("elsewhere/kept.jsonl");
    let o = home.demo_run(&a, &a, "logged elsewhere", Some(&elsewhere));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let found = home.json(
        &[
            "sessions",
            "search",
            "elsewhere",
            "--in",
            "prompts",
            "--json",
        ],
        &a,
    );
    assert_eq!(found[0]["path"], elsewhere.to_str().unwrap(), "{found}");
    // A log written elsewhere is the user's file: forgotten, not deleted.
    let said = home.ok(
        &["sessions", "rm", found[0]["session"].as_str().unwrap()],
        &a,
    );
    assert!(
        said.contains("outside the sessions directory and was kept"),
        "{said}"
    );
    assert!(elsewhere.is_file());

    // Show, by a prefix of the id.
    let show = home.ok(&["sessions", "show", &id[..5]], &a);
    assert!(
        show.contains(&format!("directory  {}", b.display())),
        "{show}"
    );
    assert!(
        show.contains("calls      5 (4 completed, 1 failed, 0 other)"),
        "{show}"
    );
    let row = home.json(&["sessions", "show", &id, "--json"], &a);
    let log = PathBuf::from(row["path"].as_str().unwrap());
    assert!(log.is_file());

    // rm: the whole id, not a prefix (enough to show a session, not to delete it).
    let o = home.trellis(&["sessions", "rm", &id[..5]], &a);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("`trellis sessions rm {id}`")),
        "{err}"
    );
    assert!(log.is_file());
    // The log and the index entry go.
    home.ok(&["sessions", "rm", &id], &a);
    assert!(!log.exists());
    let all = home.json(&["sessions", "list", "--all", "--json"], &a);
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert!(
        home.json(&["sessions", "search", "beta", "--json"], &a)
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_index_survives_deletion_damage_and_truncated_logs() {
    let home = Home::new();
    let a = home.project("alpha");
    home.demo(&a, "one");
    home.demo(&a, "two");
    let count = |home: &Home| {
        home.json(&["sessions", "list", "--json"], &a)
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(&home), 2);

    // Deleted: rebuilt from the logs.
    std::fs::remove_file(home.index()).unwrap();
    assert_eq!(count(&home), 2);

    // Damaged: set aside (kept for a post-mortem), said so, rebuilt.
    std::fs::write(home.index(), vec![0x5a; 8192]).unwrap();
    let o = home.trellis(&["sessions", "list", "--json"], &a);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the session index was not a usable SQLite file"),
        "{err}"
    );
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let aside: Vec<_> = std::fs::read_dir(home.index().parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".damaged-"))
        .collect();
    assert_eq!(aside.len(), 1);

    // A log cut mid-line (a crash): what is complete is indexed, the rest ignored.
    let rows = home.json(&["sessions", "list", "--json"], &a);
    let log = PathBuf::from(rows[0]["path"].as_str().unwrap());
    let text = std::fs::read(&log).unwrap();
    let cut = text.len() * 2 / 3;
    std::fs::write(&log, &text[..cut]).unwrap();
    let row = home.json(&["sessions", "show", &log.to_string_lossy(), "--json"], &a);
    assert!(row["bytes"].as_u64().unwrap() <= cut as u64);
    assert_eq!(row["turns"], 1);
    // The reindex command reads everything again.
    let out = home.ok(&["sessions", "reindex"], &a);
    assert!(out.starts_with("indexed 2 logs"), "{out}");
}

#[test]
fn exports_in_markdown_and_html_checked_in_a_browser() {
    let home = Home::new();
    let a = home.project("alpha");
    home.demo(
        &a,
        "export me, my key is sk-ant-abcdefghijklmnopqrstuvwxyz0123",
    );
    let rows = home.json(&["sessions", "list", "--json"], &a);
    let id = rows[0]["id"].as_str().unwrap().to_string();

    // Markdown: every call a <details> block, arguments as fenced JSON, the diff.
    let md = home.ok(&["sessions", "export", &id, "--format", "md"], &a);
    assert!(
        md.starts_with("# Fix the TODO in the demo workspace"),
        "{md}"
    );
    assert_eq!(md.matches("<details>\n<summary>").count(), 5 + 1, "{md}"); // + a thought
    assert!(md.contains("```json\n{\n  \"path\""), "{md}");
    assert!(md.contains("```diff\n"), "{md}");
    assert!(md.contains("**Permission:** asked"), "{md}");
    // Redacted unless asked otherwise.
    assert!(
        !md.contains("sk-ant-abcdefghijklmnopqrstuvwxyz0123"),
        "{md}"
    );
    assert!(md.contains("‹redacted›"), "{md}");
    let raw = home.ok(&["sessions", "export", &id, "--no-redact"], &a);
    assert!(raw.contains("sk-ant-abcdefghijklmnopqrstuvwxyz0123"));

    // HTML, written to a file (through a new file renamed over the target).
    let file = home.path().join("session.html");
    std::fs::write(&file, "old").unwrap();
    home.ok(
        &[
            "sessions",
            "export",
            &id,
            "--format",
            "html",
            "-o",
            file.to_str().unwrap(),
        ],
        &a,
    );
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("default-src 'none'"),
        "a policy that forbids requests"
    );
    for forbidden in ["http://", "https://", "src=", "<link", "@import", "url("] {
        assert!(!html.contains(forbidden), "{forbidden} in the export");
    }
    assert!(!html.contains("sk-ant-abcdefghijklmnopqrstuvwxyz0123"));

    // In a real browser.
    let shot = artifact_dir().join("session-export.png");
    let r = crate::in_chromium(
        "export_check.cjs",
        &[
            file.as_ref(),
            shot.as_ref(),
            "5".as_ref(),
            "passed".as_ref(),
        ],
    );
    assert_eq!(r["cards"], 5);
    assert_eq!(r["openAfter"], true);
    assert_eq!(r["requests"], serde_json::json!([]));
    assert!(r["diffLines"].as_u64().unwrap() >= 2, "{r}");
    assert!(
        r["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().contains("by policy")),
        "{r}"
    );
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}

/// Where tests leave files for a person to look at (screenshots): under the target dir.
fn artifact_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sixteen_first_runs_at_once_are_all_in_the_history() {
    // On a machine with no index yet (then with a damaged one), sixteen headless runs
    // start at the same moment, half of them logging outside the sessions directory:
    // every one is listed afterwards, and found again when the index is lost.
    const RUNS: usize = 16;
    for damaged in [false, true] {
        let home = Home::new();
        let elsewhere = home.project("elsewhere");
        if damaged {
            std::fs::create_dir_all(home.index().parent().unwrap()).unwrap();
            std::fs::write(home.index(), vec![0x5a; 8192]).unwrap();
        }
        let children: Vec<_> = (0..RUNS)
            .map(|i| {
                let cwd = home.project(&format!("p{i}"));
                let mut c = Command::new(env!("CARGO_BIN_EXE_trellis"));
                c.args(["run", "--format", "jsonl", "--permission", "allow-once"])
                    .args(["--prompt", &format!("parallel run {i}")])
                    .arg("--cwd")
                    .arg(&cwd)
                    .current_dir(&cwd)
                    .env("XDG_DATA_HOME", home.path().join("data"))
                    .env("XDG_CONFIG_HOME", home.path().join("config"))
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped());
                if i % 2 == 0 {
                    c.arg("--log").arg(elsewhere.join(format!("run-{i}.jsonl")));
                }
                c.spawn().unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "damaged={damaged}: {err}");
            assert!(!err.contains("missing from the session history"), "{err}");
        }
        let listed = |home: &Home| home.listed_cwds(&["--all"], home.path());
        let mut want: Vec<String> = (0..RUNS)
            .map(|i| home.project(&format!("p{i}")).display().to_string())
            .collect();
        want.sort();
        assert_eq!(listed(&home), want, "damaged={damaged}");
        // The index lost: the logs in the sessions directory are scanned, the others
        // were recorded beside it.
        for suffix in ["", "-wal", "-shm"] {
            let mut p = home.index().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        assert_eq!(listed(&home), want, "damaged={damaged}, index deleted");
        let out = home.ok(&["sessions", "reindex"], home.path());
        assert!(out.starts_with(&format!("indexed {RUNS} logs")), "{out}");
        assert_eq!(listed(&home), want, "damaged={damaged}, reindexed");
    }
}

#[test]
fn a_log_written_elsewhere_can_be_added_to_the_history() {
    let home = Home::new();
    let cwd = home.project("work");
    // A log the index never heard of (copied from another machine).
    let log = home.path().join("copied/session.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(
        &log,
        trellis_agents::logs::log_text("demo", cwd.to_str().unwrap(), 1.0, 1, "zebu"),
    )
    .unwrap();
    let rows = home.json(&["sessions", "list", "--all", "--json"], &cwd);
    assert!(rows.as_array().unwrap().is_empty());
    let out = home.ok(&["sessions", "add", log.to_str().unwrap()], &cwd);
    assert!(out.starts_with("added "), "{out}");
    let rows = home.json(&["sessions", "list", "--all", "--json"], &cwd);
    assert_eq!(rows.as_array().unwrap().len(), 1);
    // Recorded: a rebuilt index finds it again.
    std::fs::remove_file(home.index()).unwrap();
    let rows = home.json(&["sessions", "list", "--all", "--json"], &cwd);
    assert_eq!(rows.as_array().unwrap().len(), 1);
    // Not a log: refused, nothing recorded.
    let not_log = home.path().join("notes.jsonl");
    std::fs::write(&not_log, "{\"hello\": 1}\n").unwrap();
    let o = home.trellis(&["sessions", "add", not_log.to_str().unwrap()], &cwd);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a Trellis session log"));
}

#[test]
fn listings_say_where_sessions_ran_and_tell_alike_titles_apart() {
    let home = Home::new();
    let (a, b) = (home.project("alpha"), home.project("beta"));
    home.demo(&a, "first prompt in alpha");
    home.demo(&b, "first prompt in beta");
    // A run started from alpha in another directory (the demo's scratch workspace does
    // the same): listed for alpha too.
    let elsewhere = home.project("scratch");
    let o = home.demo_run(&a, &elsewhere, "started from alpha", None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sessions", "list", "--all"])
        .current_dir(&a)
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three rows: {text}");
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("PROMPT"),
        "{text}"
    );
    // Every row names its directory, the home directory as ~.
    for dir in ["~/alpha", "~/beta", "~/scratch"] {
        assert!(
            lines.iter().any(|l| l.contains(&format!("{dir} "))),
            "{dir}: {text}"
        );
    }
    // The demo agent titles every session alike: the first prompts tell them apart.
    let all = home.json(&["sessions", "list", "--all", "--json"], &a);
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|r| r["title"] == "Fix the TODO in the demo workspace"),
        "{all}"
    );
    for prompt in [
        "first prompt in alpha",
        "first prompt in beta",
        "started from alpha",
    ] {
        assert!(text.contains(prompt), "{prompt}: {text}");
    }
    // A search names its hits' sessions the same way.
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sessions", "search", "TODO", "--in", "messages"])
        .current_dir(&a)
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .output()
        .unwrap();
    let found = String::from_utf8(o.stdout).unwrap();
    for prompt in ["first prompt in alpha", "first prompt in beta"] {
        assert!(found.contains(prompt), "{prompt}: {found}");
    }
    // This directory's sessions: the one that ran here and the one started from here.
    assert_eq!(
        home.listed_cwds(&[], &a),
        [a.display().to_string(), elsewhere.display().to_string()]
    );
}

#[test]
fn a_session_the_index_cannot_take_says_so_and_is_found_again() {
    let home = Home::new();
    let cwd = home.project("work");
    // The index cannot be opened: its lock file's name is taken by a directory.
    std::fs::create_dir_all(home.index().with_extension("sqlite.lock")).unwrap();
    let log = home.path().join("elsewhere/run.jsonl");
    let o = home.demo_run(&cwd, &cwd, "index me", Some(&log));
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("this session may be missing from the session history")
            && err.contains(&format!("trellis sessions add {}", log.display())),
        "{err}"
    );
    // Once the index can be opened, the history finds the log through its record.
    std::fs::remove_dir(home.index().with_extension("sqlite.lock")).unwrap();
    assert_eq!(
        home.listed_cwds(&["--all"], &cwd),
        [cwd.display().to_string()]
    );
}

/// The listing a user reads: headers; the user's prompt (never Trellis's own note that a
/// prompt waits for the agent); a session and its resumption as one row; sessions where
/// nothing was asked left out (and counted); an agent found by any of its names, in any
/// case; and a filter that finds nothing says so without pointing at a flag already given.
#[test]
fn a_listing_shows_prompts_threads_and_agents_by_any_name() {
    let home = Home::new();
    let p = home.project("proj");
    home.demo(&p, "fix the TODO");
    // A note recorded before the first prompt (as `fan` and `run --detach` do while the
    // agent sets up) is not the session's prompt.
    let id = Row(home.json(&["sessions", "list", "--json"], &p)[0].clone()).str("id");
    home.resume(&p, &id, &[]);
    // A session where nothing was asked: a log of its header only.
    let day = home.path().join("data/trellis/sessions/2026-12-01");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(
        day.join("100000-demo-1.jsonl"),
        format!(
            "{{\"seq\":1,\"t\":0.0,\"dir\":\"client\",\"msg\":{{\"type\":\"session_log\",\"schema\":1,\"agent\":\"demo\",\"cwd\":\"{}\",\"trellis\":\"0.1.0\",\"started\":1796000000.0}}}}\n\
             {{\"seq\":2,\"t\":0.5,\"dir\":\"client\",\"msg\":{{\"type\":\"mark\",\"text\":\"prompt queued until the agent has set up its session\"}}}}\n",
            p.display()
        ),
    )
    .unwrap();
    let o = home.trellis(&["sessions", "list"], &p);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one thread: {text}");
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("TITLE"),
        "{text}"
    );
    assert!(lines[1].contains("fix the TODO"), "{text}");
    assert!(lines[1].contains("(resumed 1×)"), "{text}");
    assert!(!text.contains("prompt queued"), "{text}");
    assert!(
        err.contains("1 session(s) where no prompt was sent"),
        "{err}"
    );
    let all = home.ok(&["sessions", "list", "--empty"], &p);
    assert_eq!(all.lines().count(), 3, "{all}");
    assert!(all.contains("(no prompt)"), "{all}");
    // By the name the agent gives itself, in any case.
    for name in ["demo", "TRELLIS-DEMO", "Trellis demo agent"] {
        let rows = home.json(&["sessions", "list", "--json", "--agent", name], &p);
        assert_eq!(rows.as_array().unwrap().len(), 2, "{name}: {rows}");
    }
    let o = home.trellis(&["sessions", "list", "--all", "--agent", "nobody"], &p);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no sessions of agent nobody"), "{err}");
    assert!(!err.contains("--all"), "already given: {err}");
}

/// An unknown agent is a usage error (exit 2) that names the agents there are, and
/// nothing is written for it: no session log, no worktree.
#[test]
fn an_unknown_agent_is_a_usage_error_that_writes_nothing() {
    let home = Home::new();
    let p = home.project("proj");
    for agent in ["nosuch", "env FOO=1 nosuch", "/no/such/agent --acp"] {
        let o = home.trellis(&["run", "--agent", agent, "--prompt", "hi"], &p);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{agent}: {err}");
        assert!(
            err.contains("presets claude, codex, demo, gemini, goose, opencode"),
            "{agent}: {err}"
        );
        assert!(
            !err.contains("No such file or directory (os error"),
            "{err}"
        );
    }
    assert!(
        !home.path().join("data/trellis/sessions").exists(),
        "no session log was written"
    );
}

/// An agent given as a command line with its settings (`env VAR=… PROGRAM`) is named by
/// its program, not `env`: in its log's name and the history, found by `--agent PROGRAM`.
#[test]
fn an_agent_behind_env_is_named_by_its_program() {
    let home = Home::new();
    let p = home.project("proj");
    let agent = format!(
        "env DEMO_SETTING=1 {} agent demo",
        env!("CARGO_BIN_EXE_trellis")
    );
    let o = home.trellis(
        &[
            "run",
            "--agent",
            &agent,
            "--prompt",
            "hi",
            "--permission",
            "allow-once",
        ],
        &p,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let log = err
        .lines()
        .find_map(|l| l.strip_prefix("trellis: session log: "))
        .unwrap();
    let file = Path::new(log)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(file.contains("-trellis-"), "{file}");
    assert!(!file.contains("-env-"), "{file}");
    let rows = home.json(&["sessions", "list", "--json", "--agent", "trellis"], &p);
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    let text = home.ok(&["sessions", "list"], &p);
    assert!(
        text.lines().nth(1).unwrap().contains("trellis-demo"),
        "its own name: {text}"
    );
}

/// The sessions of a directory that is gone (a demo's scratch workspace, a worktree
/// discarded) are still listed and searched by it: it was canonical when they ran.
#[test]
fn a_gone_directory_still_names_its_sessions() {
    let home = Home::new();
    let (a, gone) = (home.project("alpha"), home.project("gone"));
    home.demo(&gone, "a prompt in a directory since removed");
    std::fs::remove_dir_all(&gone).unwrap();
    let dir = gone.to_str().unwrap();
    let rows = home.json(&["sessions", "list", "--cwd", dir, "--json"], &a);
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["cwd"], dir);
    let hits = home.json(
        &["sessions", "search", "removed", "--cwd", dir, "--json"],
        &a,
    );
    assert_eq!(hits.as_array().unwrap().len(), 1, "{hits}");
}
