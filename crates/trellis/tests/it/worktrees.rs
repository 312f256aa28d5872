//! `--worktree` and `trellis worktree …` against the real binary and the demo agent, in
//! temporary git repositories (issue 30, items 9–10).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    pub(crate) fn trellis(&self, args: &[&str], cwd: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(cwd)
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .output()
            .unwrap()
    }

    pub(crate) fn ok(&self, args: &[&str], cwd: &Path) -> (String, String) {
        let o = self.trellis(args, cwd);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{args:?}: {err}");
        (String::from_utf8(o.stdout).unwrap(), err)
    }

    /// A repository with one commit.
    pub(crate) fn repo(&self, name: &str) -> PathBuf {
        let repo = self.path().join(name);
        init_repo(&repo);
        repo
    }

    fn worktrees(&self, cwd: &Path) -> Vec<serde_json::Value> {
        let (out, _) = self.ok(&["worktree", "list", "--all", "--json"], cwd);
        crate::jsonl(&out)
    }

    fn first_log_record(&self) -> serde_json::Value {
        let dir = self.path().join("data/trellis/sessions");
        let day = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let log = std::fs::read_dir(day)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(log).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    }
}

/// A repository at `repo` (made), with one commit of a README.
pub(crate) fn init_repo(repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["config", "user.name", "Test User"]);
    git(repo, &["config", "user.email", "user@example.com"]);
    git(repo, &["config", "commit.gpgsign", "false"]);
    std::fs::write(repo.join("README.md"), "# project\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "first"]);
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = match Command::new("git").arg("-C").arg(dir).args(args).output() {
        Ok(o) => o,
        Err(_) => {
            crate::missing_tool("git");
            unreachable!()
        }
    };
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_headless_session_runs_in_its_own_worktree_and_lands() {
    let home = Home::new();
    let repo = home.repo("repo");
    let (_, err) = home.ok(
        &[
            "run",
            "--worktree=fix",
            "--cwd",
            repo.to_str().unwrap(),
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
        ],
        &repo,
    );
    assert!(err.contains("worktree fix:"), "{err}");
    assert!(
        err.contains("trellis worktree land|apply|keep|discard fix"),
        "{err}"
    );
    let rows = home.worktrees(&repo);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["label"], "fix");
    assert_eq!(row["branch"], "trellis/fix");
    assert_eq!(row["status"], "owned");
    assert_eq!(row["source"], repo.to_str().unwrap());
    let tree = PathBuf::from(row["path"].as_str().unwrap());
    assert!(
        tree.starts_with(home.path().join("data")),
        "under the data directory"
    );
    assert!(row["diffstat"]["files"].as_u64().unwrap() > 0, "{row}");
    // The log says where the session ran and in which worktree.
    let head = home.first_log_record();
    assert_eq!(head["msg"]["cwd"], tree.to_str().unwrap());
    assert_eq!(head["msg"]["worktree"]["label"], "fix");
    assert_eq!(head["msg"]["worktree"]["source"], repo.to_str().unwrap());
    // The agent wrote into the worktree, never into the source.
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_ne!(git(&tree, &["status", "--porcelain"]), "");
    let (out, _) = home.ok(&["worktree", "land", "fix", "-m", "the demo's work"], &repo);
    assert!(out.contains("fast-forwarded"), "{out}");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "the demo's work");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(!tree.exists());
    assert_eq!(home.worktrees(&repo)[0]["stage"], "landed");
    assert_eq!(
        git(&repo, &["rev-parse", "trellis/fix"]),
        git(&repo, &["rev-parse", "main"]),
        "the branch is kept"
    );
}

/// A closed stderr or stdout (`2>&1 | head`, `| head -1`) loses lines, never the
/// command: a run in a worktree and its ending go through whole, with their own exit
/// codes (a print that failed used to panic, exit 101, mid-way).
#[test]
fn closed_output_never_cuts_a_run_or_an_ending_short() {
    use std::process::Stdio;
    let home = Home::new();
    let repo = home.repo("repo");
    let closed = |args: &[&str], stderr: bool| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(&repo)
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .stdin(Stdio::null())
            .stdout(if stderr {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stderr(if stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap();
        // The reading end goes at once: every write there fails (EPIPE).
        drop(child.stderr.take());
        drop(child.stdout.take());
        child.wait().unwrap()
    };
    let status = closed(
        &[
            "run",
            "--worktree=cut",
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
        ],
        true,
    );
    assert_eq!(status.code(), Some(0), "{status:?}");
    let rows = home.worktrees(&repo);
    assert_eq!(rows[0]["status"], "owned", "{rows:?}");
    let status = closed(&["worktree", "land", "cut", "-m", "cut short?"], false);
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "cut short?");
    assert_eq!(home.worktrees(&repo)[0]["stage"], "landed");
}

#[test]
fn isolation_that_fails_is_loud_and_required_makes_it_fatal() {
    let home = Home::new();
    let plain = home.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let cwd = plain.to_str().unwrap();
    let (_, err) = home.ok(
        &["run", "--worktree", "--cwd", cwd, "--prompt", "hi"],
        &plain,
    );
    assert!(err.contains("NOT ISOLATED"), "{err}");
    assert!(err.contains("is not in a git repository"), "{err}");
    let o = Home::new().trellis(
        &["run", "--worktree=required", "--cwd", cwd, "--prompt", "hi"],
        &plain,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no worktree could be made (and one is required)"),
        "{err}"
    );
    assert!(!err.contains("session log"), "no session ran: {err}");
    // --carry alone names what it needs.
    let o = home.trellis(&["run", "--carry", "--cwd", cwd, "--prompt", "hi"], &plain);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--worktree"));
    // A label that is not one.
    let o = home.trellis(
        &["run", "--worktree=../x", "--cwd", cwd, "--prompt", "hi"],
        &plain,
    );
    assert_eq!(o.status.code(), Some(2));
    // A label the user chose that is taken: their word not taken, said (never a run in
    // the repository itself instead).
    let repo = home.repo("labelled");
    home.ok(
        &["run", "--agent", "demo", "--worktree=lab", "--prompt", "hi"],
        &repo,
    );
    let o = home.trellis(
        &["run", "--agent", "demo", "--worktree=lab", "--prompt", "hi"],
        &repo,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--worktree=lab: no worktree"), "{err}");
    assert!(err.contains("exists already"), "{err}");
    assert!(!err.contains("session log"), "no session ran: {err}");
}

#[test]
fn setup_carry_discard_and_a_worktree_removed_behind_trellis_back() {
    let home = Home::new();
    let repo = home.repo("repo");
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::write(
        home.path().join("config/trellis/config.toml"),
        "[worktree]\nsetup = \"printf '%s' \\\"$TRELLIS_SOURCE_ROOT\\\" > .setup-done\"\n",
    )
    .unwrap();
    std::fs::write(repo.join("notes.txt"), "uncommitted notes\n").unwrap();
    let cwd = repo.to_str().unwrap();
    let (_, said) = home.ok(
        &[
            "run",
            "--worktree=one",
            "--carry",
            "--cwd",
            cwd,
            "--prompt",
            "hi",
        ],
        &repo,
    );
    // notes.txt is untracked: no tracked change was carried, one file was copied.
    assert!(
        said.contains("carried: 1 file copied (untracked, or named in .worktreeinclude)"),
        "{said}"
    );
    let tree = PathBuf::from(
        home.worktrees(&repo)[0]["path"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    assert_eq!(
        std::fs::read_to_string(tree.join(".setup-done")).unwrap(),
        cwd,
        "the setup command ran in the tree"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("notes.txt")).unwrap(),
        "uncommitted notes\n",
        "carried"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.txt")).unwrap(),
        "uncommitted notes\n",
        "and still in the source"
    );
    let (out, _) = home.ok(&["worktree", "discard", "one"], &repo);
    assert!(out.contains("refs/trellis/retired/one-"), "{out}");
    let refs = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/trellis/retired/",
        ],
    );
    assert_eq!(refs.lines().count(), 1);
    assert_eq!(
        git(&repo, &["show", &format!("{refs}:notes.txt")]),
        "uncommitted notes"
    );
    assert!(!tree.exists());
    // Every worktree ended: the list says so (and where the ended ones are), not nothing.
    let (out, _) = home.ok(&["worktree", "list"], &repo);
    assert!(
        out.contains("no live worktrees; 1 ended (trellis worktree list --all"),
        "{out}"
    );
    // One removed by hand: reported by list and status, never a hang.
    home.ok(
        &["run", "--worktree=two", "--cwd", cwd, "--prompt", "hi"],
        &repo,
    );
    let two = home
        .worktrees(&repo)
        .into_iter()
        .find(|r| r["label"] == "two")
        .unwrap();
    std::fs::remove_dir_all(two["path"].as_str().unwrap()).unwrap();
    let row = home
        .worktrees(&repo)
        .into_iter()
        .find(|r| r["label"] == "two")
        .unwrap();
    assert_eq!(row["status"], "missing");
    let (status, _) = home.ok(&["status"], &repo);
    assert!(status.contains("two missing"), "{status}");
    let o = home.trellis(&["worktree", "land", "two"], &repo);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is gone"));
}

/// An ending from another terminal never pulls the tree from under a live session: a
/// session busy in the worktree (waiting for permission) makes it refuse, naming the
/// session; an idle one is closed through the UI that runs it (which says so), then the
/// ending goes on, committing the work with the session's prompt.
#[test]
fn an_ending_from_a_shell_closes_the_ui_session_in_the_worktree_first() {
    let home = Home::new();
    let repo = home.repo("repo");
    let runtime = home.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let rt = format!("XDG_RUNTIME_DIR={}", runtime.display());
    let Some(t) = crate::tui::Tmux::start_env(
        &[&rt, "LANG=C.UTF-8"],
        &[
            "--agent",
            "trellis agent demo --delay-ms 10",
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree=alpha",
        ],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("[worktree alpha]");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("Allow");
    let ending = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(&repo)
            .env("XDG_DATA_HOME", t.data())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .output()
            .unwrap()
    };
    let before = git(&repo, &["rev-parse", "main"]);
    for action in ["land", "discard", "apply", "sync"] {
        let o = ending(&["worktree", action, "alpha"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{action}: {err}");
        assert!(err.contains("runs in it and is busy"), "{action}: {err}");
        assert!(err.contains("permission"), "{action}: {err}");
    }
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        before,
        "nothing changed"
    );
    t.send(&["y"]);
    t.wait("the turn ended", |s| {
        s.contains("idle") || s.contains("Done")
    });
    // What would refuse the land refuses before the session is closed: a file of the
    // user's in the source where the worktree's work goes.
    std::fs::create_dir_all(repo.join("demo-workspace")).unwrap();
    std::fs::write(repo.join("demo-workspace/README.md"), "mine\n").unwrap();
    let o = ending(&["worktree", "land", "alpha"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("would replace files"), "{err}");
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("closed session"),
        "nothing closed for a land that cannot happen"
    );
    assert!(t.program_pid().is_some(), "the UI and its session go on");
    std::fs::remove_dir_all(repo.join("demo-workspace")).unwrap();
    let o = ending(&["worktree", "land", "alpha"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("which ran in worktree alpha"), "{out}");
    assert!(
        out.contains("worktree alpha against its base:"),
        "the stat first: {out}"
    );
    assert!(out.contains("fast-forwarded"), "{out}");
    // The UI's only session closed: the UI ends, saying why.
    let start = std::time::Instant::now();
    while t.program_pid().is_some() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{}",
            t.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let s = t.screen();
    assert!(
        s.contains("closed: worktree alpha is being ended (land)"),
        "{s}"
    );
    assert!(
        !s.contains("end it with"),
        "no reminder for a worktree being ended: {s}"
    );
    assert!(
        git(&repo, &["log", "-1", "--format=%B"]).starts_with("fix the TODO\n"),
        "the commit says what the work was"
    );
}

/// The demo agent never writes into a repository it did not make unless asked: `--cwd`
/// into one is a usage error that writes nothing; the agent itself refuses a session
/// there unless started with `--here`; an explicit `--worktree` wins over the demo's
/// scratch workspace (the UI runs it in a worktree of the repository, and says where).
/// After a rejected edit the demo does not claim the TODO is fixed.
#[test]
fn the_demo_plays_in_a_worktree_when_asked_and_never_in_a_foreign_repository() {
    let home = Home::new();
    let repo = home.repo("repo");
    let before = git(&repo, &["status", "--porcelain", "--ignored"]);
    let o = home.trellis(
        &["run", "--agent", "demo", "--cwd", ".", "--prompt", "hi"],
        &repo,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not write into a repository it did not make"),
        "{err}"
    );
    assert!(err.contains("--worktree"), "{err}");
    let exe = env!("CARGO_BIN_EXE_trellis");
    let o = home.trellis(
        &[
            "run",
            "--agent",
            &format!("{exe} agent demo"),
            "--cwd",
            ".",
            "--prompt",
            "hi",
        ],
        &repo,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("trellis agent demo --here"),
        "the agent says why: {err}"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain", "--ignored"]),
        before,
        "nothing was written into the repository"
    );
    // Asked: it plays there.
    let (_, err) = home.ok(
        &[
            "run",
            "--agent",
            &format!("{exe} agent demo --here"),
            "--cwd",
            ".",
            "--prompt",
            "fix the TODO",
            "--permission",
            "reject",
            "--format",
            "text",
        ],
        &repo,
    );
    assert!(repo.join("demo-workspace/src/lib.rs").exists(), "{err}");
    let log = std::fs::read_to_string(
        err.lines()
            .find_map(|l| l.strip_prefix("trellis: session log: "))
            .unwrap(),
    )
    .unwrap();
    assert!(
        log.contains("the TODO is still there"),
        "the rejected edit is said"
    );
    assert!(!log.contains("the TODO is fixed"));
    // What it wrote into the work tree to play in is on the record, as an edit of its
    // own: what git counts, the agent reports (the rejected edit aside).
    assert!(
        log.contains("Create demo-workspace/ (the demo's own project)"),
        "the seeded files are said"
    );
    // The UI with --worktree: a worktree of the repository, not the scratch workspace.
    let Some(t) = crate::tui::Tmux::start_env(
        &["LANG=C.UTF-8"],
        &["--cwd", repo.to_str().unwrap(), "--worktree=alpha"],
        120,
        30,
    ) else {
        return;
    };
    t.wait_for("[worktree alpha]");
    // Where no repository is, no worktree can be made: said on the screen.
    let plain = home.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let Some(t) = crate::tui::Tmux::start_env(
        &["LANG=C.UTF-8"],
        &["demo", "--worktree", "--cwd", plain.to_str().unwrap()],
        120,
        30,
    ) else {
        return;
    };
    t.wait_for("NOT ISOLATED");
}

/// A worktree session opened from the UI (Alt-N) gets the same reminder at quit as the
/// first one: how to end its worktree, with what it changed.
#[test]
fn every_open_worktree_is_reminded_at_quit() {
    let home = Home::new();
    let repo = home.repo("repo");
    let plain = home.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let Some(t) = crate::tui::Tmux::start_env(
        &["LANG=C.UTF-8"],
        &["demo", "--cwd", plain.to_str().unwrap()],
        120,
        30,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["M-N"]);
    t.wait_for("New session in a worktree");
    t.send(&["Tab", "C-u", repo.to_str().unwrap(), "Enter"]);
    t.wait("the worktree session in front", |s| s.contains("▶2"));
    t.send(&["C-c", "C-c"]);
    let s = t.wait("the reminder", |s| s.contains("end it with"));
    assert!(
        s.contains("file(s)) stays at")
            && s.contains("end it with `trellis worktree land|apply|keep|discard"),
        "{s}"
    );
}

/// What cannot start is said before any worktree is made for it: an unknown agent among
/// a fan-out's, an option a fan-out does not take, a UI without a terminal.
#[test]
fn nothing_is_made_for_what_cannot_start() {
    let home = Home::new();
    let repo = home.repo("repo");
    for (args, said) in [
        (
            vec![
                "fan",
                "2",
                "--agent",
                "demo",
                "--agent",
                "nosuch-agent",
                "x",
            ],
            "not a preset or an installed agent",
        ),
        (
            vec!["fan", "2", "--agent", "demo", "--load", "abc", "x"],
            "--load is not taken",
        ),
        (
            vec!["fan", "2", "--agent", "demo", "x"],
            "the UI needs a terminal",
        ),
        (
            vec!["--agent", "demo", "--worktree"],
            "the UI needs a terminal",
        ),
    ] {
        let o = home.trellis(&args, &repo);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            home.worktrees(&repo).is_empty(),
            "{args:?}: a worktree was made"
        );
    }
}
