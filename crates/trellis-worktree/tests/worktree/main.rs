#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Worktrees in temporary git repositories: creation, carry, include and setup here;
//! every ending (`endings.rs`) and what others do behind Trellis's back (`others.rs`).
//! Nothing of the user's may ever be lost.

use std::path::{Path, PathBuf};
use std::process::Command;

use trellis_worktree::{Error, Plan, Stage, Status, Worktrees, end};

mod endings;
mod others;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git runs (the tests need git)");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn git_fails(dir: &Path, args: &[&str]) -> bool {
    !Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs")
        .status
        .success()
}

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    wt: Worktrees,
}

/// A repository with one commit on `main` (a file, a subdirectory, a .gitignore) and an
/// empty data directory.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let repo = base.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test User"]);
    git(&repo, &["config", "user.email", "user@example.com"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/b.txt"), "bee\n").unwrap();
    std::fs::write(repo.join(".gitignore"), ".env\nsecrets/\nbuild/\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let wt = Worktrees::new(&base.join("data"));
    Fixture {
        _tmp: tmp,
        repo,
        wt,
    }
}

fn plan(label: &str) -> Plan {
    Plan {
        label: Some(label.into()),
        ..Plan::default()
    }
}

fn status_of(dir: &Path) -> String {
    git(
        dir,
        &[
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignored",
        ],
    )
}

#[test]
fn a_session_gets_a_fresh_worktree_on_its_own_branch() {
    let f = fixture();
    let before = status_of(&f.repo);
    let made = f.wt.create(&f.repo.join("sub"), &plan("one")).unwrap();
    let r = &made.record;
    assert_eq!(r.branch, "trellis/one");
    assert_eq!(r.stage, Stage::Active);
    assert!(r.path.starts_with(f.wt.root()), "outside the repository");
    assert!(!r.path.starts_with(&f.repo));
    assert_eq!(made.cwd, r.path.join("sub"), "the same subdirectory");
    assert_eq!(
        std::fs::read_to_string(made.cwd.join("b.txt")).unwrap(),
        "bee\n"
    );
    assert_eq!(
        git(&r.path, &["symbolic-ref", "--short", "HEAD"]),
        "trellis/one"
    );
    assert_eq!(r.base, git(&f.repo, &["rev-parse", "HEAD"]));
    assert_eq!(status_of(&f.repo), before, "the source is untouched");
    let list = f.wt.list();
    assert_eq!(list.found.len(), 1);
    assert_eq!(list.found[0].status, Status::Owned);
    assert!(list.orphans.is_empty());
}

#[test]
fn made_up_labels_and_parallel_creation_never_collide() {
    let f = fixture();
    let made: Vec<_> = std::thread::scope(|s| {
        // (git itself fails when two adds in one repository overlap: Trellis takes turns)
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| f.wt.create(&f.repo, &Plan::default()).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let labels: std::collections::HashSet<_> =
        made.iter().map(|m| m.record.label.clone()).collect();
    assert_eq!(labels.len(), 8);
    assert_eq!(f.wt.list().found.len(), 8);
    for m in &made {
        assert_eq!(trellis_worktree::status(&m.record), Status::Owned);
    }
}

#[test]
fn carry_copies_uncommitted_work_and_leaves_the_source_alone() {
    let f = fixture();
    std::fs::write(f.repo.join("a.txt"), "one\ntwo changed\n").unwrap();
    std::fs::write(f.repo.join("staged.txt"), "staged\n").unwrap();
    git(&f.repo, &["add", "staged.txt"]);
    std::fs::write(f.repo.join("untracked.txt"), "new\n").unwrap();
    std::fs::write(f.repo.join(".env"), "SECRET=1\n").unwrap();
    let before = status_of(&f.repo);
    let made =
        f.wt.create(
            &f.repo,
            &Plan {
                label: Some("carry".into()),
                carry: true,
                setup: None,
            },
        )
        .unwrap();
    let t = &made.record.path;
    assert_eq!(
        std::fs::read_to_string(t.join("a.txt")).unwrap(),
        "one\ntwo changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.join("staged.txt")).unwrap(),
        "staged\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.join("untracked.txt")).unwrap(),
        "new\n"
    );
    assert!(
        !t.join(".env").exists(),
        "ignored files come only through .worktreeinclude"
    );
    assert!(made.carried.patch);
    assert_eq!(status_of(&f.repo), before, "the source is untouched");
    // Without --carry, none of it.
    let plain = f.wt.create(&f.repo, &plan("plain")).unwrap();
    assert_eq!(
        std::fs::read_to_string(plain.record.path.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!plain.record.path.join("untracked.txt").exists());
}

#[test]
fn worktreeinclude_copies_named_ignored_files_only_safely() {
    let f = fixture();
    std::fs::write(f.repo.join(".worktreeinclude"), ".env\nsecrets/\n").unwrap();
    std::fs::write(f.repo.join(".env"), "KEY=1\n").unwrap();
    std::fs::create_dir(f.repo.join("secrets")).unwrap();
    std::fs::write(f.repo.join("secrets/token"), "t\n").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", f.repo.join("secrets/link")).unwrap();
    nix_mkfifo(&f.repo.join("secrets/fifo"));
    std::fs::create_dir(f.repo.join("build")).unwrap();
    std::fs::write(f.repo.join("build/out.o"), "obj").unwrap();
    let made = f.wt.create(&f.repo, &plan("inc")).unwrap();
    let t = &made.record.path;
    assert_eq!(std::fs::read_to_string(t.join(".env")).unwrap(), "KEY=1\n");
    assert_eq!(
        std::fs::read_to_string(t.join("secrets/token")).unwrap(),
        "t\n"
    );
    let link = std::fs::symlink_metadata(t.join("secrets/link")).unwrap();
    assert!(link.file_type().is_symlink(), "a link is copied as a link");
    // git lists no FIFO; were one named, it would be skipped, never opened.
    assert!(!t.join("secrets/fifo").exists(), "a FIFO is not copied");
    assert!(!t.join("build").exists(), "ignored but not named");
}

fn nix_mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok);
}

#[test]
fn the_setup_command_runs_in_the_new_tree() {
    let f = fixture();
    let made = f
        .wt
        .create(
            &f.repo,
            &Plan {
                label: Some("setup".into()),
                carry: false,
                setup: Some(
                    "printf '%s|%s' \"$TRELLIS_WORKTREE_ROOT\" \"$TRELLIS_SOURCE_ROOT\" > ran; pwd > where"
                        .into(),
                ),
            },
        )
        .unwrap();
    let t = &made.record.path;
    assert!(made.setup_failed.is_none());
    assert_eq!(
        std::fs::read_to_string(t.join("ran")).unwrap(),
        format!("{}|{}", t.display(), f.repo.display())
    );
    assert_eq!(
        std::fs::read_to_string(t.join("where")).unwrap().trim(),
        t.to_str().unwrap()
    );
    let bad =
        f.wt.create(
            &f.repo,
            &Plan {
                label: Some("badsetup".into()),
                carry: false,
                setup: Some("exit 3".into()),
            },
        )
        .unwrap();
    assert!(bad.setup_failed.unwrap().contains("failed"));
    assert_eq!(trellis_worktree::status(&bad.record), Status::Owned);
}
