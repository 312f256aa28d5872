#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Worktrees in temporary git repositories: creation, carry, include, setup, every ending,
//! and what others do behind Trellis's back. Nothing of the user's may ever be lost.

use std::path::{Path, PathBuf};
use std::process::Command;

use trellis_worktree::{Error, Plan, Stage, Status, Worktrees, end};

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

#[test]
fn land_fast_forwards_the_source_and_keeps_the_branch() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("land")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("feature.txt"), "done\n").unwrap();
    std::fs::write(t.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let found = f.wt.find("land", None).unwrap();
    let out = end::land(&found, Some("add the feature")).unwrap();
    assert!(
        out.lines.iter().any(|l| l.contains("fast-forwarded")),
        "{:?}",
        out.lines
    );
    assert_eq!(out.record.unwrap().stage, Stage::Landed);
    assert_eq!(
        std::fs::read_to_string(f.repo.join("feature.txt")).unwrap(),
        "done\n"
    );
    assert_eq!(
        git(&f.repo, &["log", "-1", "--format=%s"]),
        "add the feature"
    );
    assert_eq!(git(&f.repo, &["status", "--porcelain"]), "");
    assert!(!t.exists(), "the tree is removed");
    assert_eq!(
        git(&f.repo, &["rev-parse", "trellis/land"]),
        git(&f.repo, &["rev-parse", "main"]),
        "the branch is kept"
    );
    assert_eq!(f.wt.find("land", None).unwrap().status, Status::Ended);
}

#[test]
fn land_refuses_when_the_source_moved_on_and_sync_then_land_works() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("late")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("work.txt"), "agent work\n").unwrap();
    std::fs::write(f.repo.join("upstream.txt"), "meanwhile\n").unwrap();
    git(&f.repo, &["add", "upstream.txt"]);
    git(&f.repo, &["commit", "-q", "-m", "meanwhile"]);
    let main_before = git(&f.repo, &["rev-parse", "main"]);
    let found = f.wt.find("late", None).unwrap();
    let e = end::land(&found, None).unwrap_err();
    assert!(e.to_string().contains("trellis worktree sync late"), "{e}");
    assert_eq!(
        git(&f.repo, &["rev-parse", "main"]),
        main_before,
        "main untouched"
    );
    // Nothing changed: the work is where it was, uncommitted, the branch untouched.
    assert_eq!(
        std::fs::read_to_string(t.join("work.txt")).unwrap(),
        "agent work\n"
    );
    assert!(git_fails(&f.repo, &["show", "trellis/late:work.txt"]));
    assert_eq!(f.wt.find("late", None).unwrap().status, Status::Owned);
    // A sync commits it first, and says so.
    let synced = end::sync(&found).unwrap();
    assert!(
        synced
            .lines
            .iter()
            .any(|l| l.contains("committed the worktree's uncommitted work")),
        "{:?}",
        synced.lines
    );
    end::land(&found, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.repo.join("work.txt")).unwrap(),
        "agent work\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("upstream.txt")).unwrap(),
        "meanwhile\n"
    );
}

#[test]
fn apply_stages_the_changes_in_the_source_and_keeps_a_snapshot() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("apply")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("committed.txt"), "c\n").unwrap();
    git(&t, &["add", "committed.txt"]);
    git(&t, &["commit", "-q", "-m", "agent commit"]);
    std::fs::write(t.join("a.txt"), "one\ntwo\nuncommitted\n").unwrap();
    std::fs::write(t.join("untracked.txt"), "u\n").unwrap();
    let found = f.wt.find("apply", None).unwrap();
    let out = end::apply(&found).unwrap();
    let rec = out.record.unwrap();
    assert_eq!(rec.stage, Stage::Applied);
    let staged = git(&f.repo, &["diff", "--cached", "--name-only"]);
    for name in ["a.txt", "committed.txt", "untracked.txt"] {
        assert!(staged.lines().any(|l| l == name), "{name} staged: {staged}");
    }
    assert_eq!(
        git(&f.repo, &["log", "--format=%s"]),
        "first",
        "no history added"
    );
    let snap = rec.snapshot.unwrap();
    assert!(snap.starts_with("refs/trellis/retired/apply-"));
    assert_eq!(
        git(&f.repo, &["show", &format!("{snap}:untracked.txt")]),
        "u"
    );
    assert!(!t.exists());
    assert!(!git_fails(
        &f.repo,
        &["rev-parse", "--verify", "trellis/apply"]
    ));
}

#[test]
fn apply_that_does_not_fit_changes_nothing() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("clash")).unwrap();
    std::fs::write(made.record.path.join("a.txt"), "worktree version\n").unwrap();
    std::fs::write(f.repo.join("a.txt"), "source version, not committed\n").unwrap();
    let found = f.wt.find("clash", None).unwrap();
    let e = end::apply(&found).unwrap_err();
    assert!(e.to_string().contains("nothing was changed"), "{e}");
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "source version, not committed\n"
    );
    assert_eq!(
        std::fs::read_to_string(made.record.path.join("a.txt")).unwrap(),
        "worktree version\n"
    );
    assert_eq!(f.wt.find("clash", None).unwrap().status, Status::Owned);
}

#[test]
fn keep_leaves_the_tree_and_lists_it_as_kept() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("keep")).unwrap();
    std::fs::write(made.record.path.join("x"), "x").unwrap();
    let found = f.wt.find("keep", None).unwrap();
    assert_eq!(
        end::keep(&found).unwrap().record.unwrap().stage,
        Stage::Kept
    );
    let again = f.wt.find("keep", None).unwrap();
    assert_eq!(again.status, Status::Owned);
    assert_eq!(again.record.stage, Stage::Kept);
    assert_eq!(
        std::fs::read_to_string(made.record.path.join("x")).unwrap(),
        "x"
    );
    // A kept worktree can still be discarded later.
    end::discard(&again).unwrap();
}

#[test]
fn discard_of_a_dirty_tree_keeps_everything_under_a_retired_ref() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("dirty")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("a.txt"), "edited\n").unwrap();
    std::fs::write(t.join("new.txt"), "untracked work\n").unwrap();
    std::fs::create_dir_all(t.join("deep/dir")).unwrap();
    std::fs::write(t.join("deep/dir/f"), "deep\n").unwrap();
    let found = f.wt.find("dirty", None).unwrap();
    let out = end::discard(&found).unwrap();
    let rec = out.record.unwrap();
    assert_eq!(rec.stage, Stage::Discarded);
    let snap = rec.snapshot.unwrap();
    assert!(snap.starts_with("refs/trellis/retired/dirty-"), "{snap}");
    assert_eq!(git(&f.repo, &["show", &format!("{snap}:a.txt")]), "edited");
    assert_eq!(
        git(&f.repo, &["show", &format!("{snap}:new.txt")]),
        "untracked work"
    );
    assert_eq!(
        git(&f.repo, &["show", &format!("{snap}:deep/dir/f")]),
        "deep"
    );
    assert!(!t.exists());
    assert!(
        !git_fails(&f.repo, &["rev-parse", "--verify", "trellis/dirty"]),
        "branch kept"
    );
    // The source never saw any of it.
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    // A second discard is refused, not repeated.
    assert!(end::discard(&f.wt.find("dirty", None).unwrap()).is_err());
}

#[test]
fn a_worktree_remade_by_hand_at_the_same_place_is_never_touched() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("same")).unwrap();
    let t = made.record.path.clone();
    // Removed and made again by hand, at the same path and under the same name.
    git(
        &f.repo,
        &["worktree", "remove", "--force", t.to_str().unwrap()],
    );
    git(&f.repo, &["branch", "mine"]);
    git(
        &f.repo,
        &["worktree", "add", "-q", t.to_str().unwrap(), "mine"],
    );
    std::fs::write(t.join("precious.txt"), "the user's\n").unwrap();
    let found = f.wt.find("same", None).unwrap();
    assert!(
        matches!(found.status, Status::Foreign(_)),
        "{:?}",
        found.status
    );
    for e in [
        end::discard(&found).unwrap_err(),
        end::land(&found, None).unwrap_err(),
        end::apply(&found).unwrap_err(),
        end::keep(&found).unwrap_err(),
    ] {
        assert!(e.to_string().contains("will not touch"), "{e}");
    }
    assert_eq!(
        std::fs::read_to_string(t.join("precious.txt")).unwrap(),
        "the user's\n"
    );
}

#[test]
fn a_hand_made_worktree_of_the_same_name_is_left_alone() {
    let f = fixture();
    // The user's own worktree, whose git name will be "hand".
    let theirs = f.repo.parent().unwrap().join("hand");
    git(
        &f.repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "theirs",
            theirs.to_str().unwrap(),
        ],
    );
    std::fs::write(theirs.join("mine.txt"), "keep me\n").unwrap();
    let made = f.wt.create(&f.repo, &plan("hand")).unwrap();
    let found = f.wt.find("hand", None).unwrap();
    assert_eq!(found.status, Status::Owned);
    assert_ne!(
        made.record.identity.as_ref().unwrap().admin,
        f.repo.join(".git/worktrees/hand"),
        "git gave Trellis's worktree another name"
    );
    end::discard(&found).unwrap();
    assert_eq!(
        std::fs::read_to_string(theirs.join("mine.txt")).unwrap(),
        "keep me\n"
    );
    assert!(git(&f.repo, &["worktree", "list"]).contains(theirs.to_str().unwrap()));
}

#[test]
fn a_worktree_deleted_behind_trellis_back_is_reported() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("gone")).unwrap();
    std::fs::remove_dir_all(&made.record.path).unwrap();
    let found = f.wt.find("gone", None).unwrap();
    assert!(
        matches!(found.status, Status::Missing(_)),
        "{:?}",
        found.status
    );
    let e = end::land(&found, None).unwrap_err();
    assert!(e.to_string().contains("is gone"), "{e}");
    assert!(end::keep(&found).is_err());
    // Also after git forgot it.
    git(&f.repo, &["worktree", "prune"]);
    assert!(matches!(
        f.wt.find("gone", None).unwrap().status,
        Status::Missing(_)
    ));
    let out = end::discard(&found).unwrap();
    assert_eq!(out.record.unwrap().stage, Stage::Discarded);
    assert!(
        !git_fails(&f.repo, &["rev-parse", "--verify", "trellis/gone"]),
        "branch kept"
    );
}

#[test]
fn an_existing_branch_is_never_reused() {
    let f = fixture();
    git(&f.repo, &["branch", "trellis/taken"]);
    let at = git(&f.repo, &["rev-parse", "trellis/taken"]);
    let e = f.wt.create(&f.repo, &plan("taken")).unwrap_err();
    assert!(matches!(e, Error::BranchExists(_)), "{e}");
    assert_eq!(git(&f.repo, &["rev-parse", "trellis/taken"]), at);
    assert!(f.wt.list().found.is_empty(), "no record left behind");
    // A label used once is taken for good in that repository.
    f.wt.create(&f.repo, &plan("once")).unwrap();
    let e = f.wt.create(&f.repo, &plan("once")).unwrap_err();
    assert!(
        matches!(e, Error::BranchExists(_) | Error::LabelTaken(_)),
        "{e}"
    );
}

#[test]
fn no_repository_or_no_commit_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let wt = Worktrees::new(&tmp.path().join("data"));
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    assert!(matches!(
        wt.create(&plain, &Plan::default()).unwrap_err(),
        Error::NotARepository(_)
    ));
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    assert!(matches!(
        wt.create(&empty, &Plan::default()).unwrap_err(),
        Error::NoCommits(_)
    ));
    assert!(matches!(
        wt.create(&plain, &plan("Bad/Label")).unwrap_err(),
        Error::NotARepository(_) | Error::BadLabel(_)
    ));
}

#[test]
fn hostile_records_and_strays_are_listed_not_followed() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("real")).unwrap();
    let repo_dir = made.record.path.parent().unwrap().to_path_buf();
    std::fs::write(repo_dir.join("junk.json"), "{not json").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", repo_dir.join("link.json")).unwrap();
    std::fs::write(repo_dir.join("huge.json"), vec![b' '; 200_000]).unwrap();
    std::fs::create_dir(repo_dir.join("stray")).unwrap();
    let list = f.wt.list();
    assert_eq!(list.found.len(), 1);
    assert_eq!(list.unreadable.len(), 3, "{:?}", list.unreadable);
    assert_eq!(list.orphans.len(), 1);
    assert!(list.orphans[0].path.ends_with("stray"));
}

#[test]
fn land_over_a_dirty_source_changes_nothing_and_says_what_to_do() {
    let f = fixture();
    std::fs::write(f.repo.join("a.txt"), "one\ntwo\nlocal\n").unwrap();
    let made =
        f.wt.create(
            &f.repo,
            &Plan {
                label: Some("carried".into()),
                carry: true,
                setup: None,
            },
        )
        .unwrap();
    std::fs::write(made.record.path.join("b.txt"), "agent\n").unwrap();
    let found = f.wt.find("carried", None).unwrap();
    let e = end::land(&found, None).unwrap_err();
    assert!(e.to_string().contains("commit or stash"), "{e}");
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "one\ntwo\nlocal\n",
        "the source's own work is untouched"
    );
    assert_eq!(git(&f.repo, &["log", "--format=%s"]), "first");
    // Once the source's copy is put away, the land goes through.
    git(&f.repo, &["stash", "-q"]);
    end::land(&found, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.repo.join("b.txt")).unwrap(),
        "agent\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "one\ntwo\nlocal\n"
    );
}

#[test]
fn compare_two_and_land_one_of_three() {
    let f = fixture();
    let mut labels = Vec::new();
    for (i, text) in ["first try\n", "second try\n", "third try\n"]
        .iter()
        .enumerate()
    {
        let label = format!("fan-{i}");
        let made = f.wt.create(&f.repo, &plan(&label)).unwrap();
        std::fs::write(made.record.path.join("answer.txt"), text).unwrap();
        labels.push(label);
    }
    let found: Vec<_> = labels.iter().map(|l| f.wt.find(l, None).unwrap()).collect();
    let diff = trellis_worktree::measure::compare(&found[0], &found[1]).unwrap();
    assert!(
        diff.contains("-first try") && diff.contains("+second try"),
        "{diff}"
    );
    let out = end::land_one(&found[1], &[found[0].clone(), found[2].clone()], None).unwrap();
    assert!(
        out.lines.iter().any(|l| l.contains("fast-forwarded")),
        "{:?}",
        out.lines
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("answer.txt")).unwrap(),
        "second try\n"
    );
    let refs = git(
        &f.repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/trellis/retired/",
        ],
    );
    assert_eq!(refs.lines().count(), 2, "{refs}");
    for (i, name) in [(0, "first try"), (2, "third try")] {
        let r = refs
            .lines()
            .find(|r| r.contains(&format!("fan-{i}-")))
            .unwrap();
        assert_eq!(git(&f.repo, &["show", &format!("{r}:answer.txt")]), name);
    }
    for l in &labels {
        assert!(!git_fails(
            &f.repo,
            &["rev-parse", "--verify", &format!("trellis/{l}")]
        ));
    }
}

/// The case: `.env` is ignored in the source and holds the user's secret; in the
/// worktree the ignore line is dropped and another `.env` committed. Landing must not
/// replace the user's file (git's fast-forward overwrites ignored files by default).
#[test]
fn land_never_replaces_a_file_of_the_source_that_no_commit_has() {
    let f = fixture();
    std::fs::write(f.repo.join(".env"), "SECRET=the user's\n").unwrap();
    std::fs::write(f.repo.join("notes"), "the user's notes\n").unwrap();
    let made = f.wt.create(&f.repo, &plan("env")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join(".gitignore"), "secrets/\nbuild/\n").unwrap();
    std::fs::write(t.join(".env"), "SECRET=the agent's\n").unwrap();
    std::fs::create_dir(t.join("notes")).unwrap();
    std::fs::write(t.join("notes/todo.txt"), "agent\n").unwrap();
    std::fs::write(t.join("feature.txt"), "work\n").unwrap();
    let main_before = git(&f.repo, &["rev-parse", "main"]);
    let found = f.wt.find("env", None).unwrap();
    let e = end::land(&found, None).unwrap_err().to_string();
    assert!(e.contains(".env (ignored)"), "{e}");
    assert!(
        e.contains("notes (a file where a directory would go)"),
        "{e}"
    );
    assert!(e.contains("Nothing was changed"), "{e}");
    assert_eq!(
        std::fs::read_to_string(f.repo.join(".env")).unwrap(),
        "SECRET=the user's\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("notes")).unwrap(),
        "the user's notes\n"
    );
    assert_eq!(git(&f.repo, &["rev-parse", "main"]), main_before);
    assert_eq!(
        git(&t, &["status", "--porcelain"]).lines().count(),
        4,
        "the worktree's work is left as it was, uncommitted"
    );
    assert_eq!(f.wt.find("env", None).unwrap().status, Status::Owned);
    // Moved aside by the user, the land goes through.
    std::fs::rename(f.repo.join(".env"), f.repo.join("env.bak")).unwrap();
    std::fs::rename(f.repo.join("notes"), f.repo.join("notes.bak")).unwrap();
    end::land(&found, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.repo.join(".env")).unwrap(),
        "SECRET=the agent's\n"
    );
}

#[test]
fn apply_and_sync_never_replace_a_file_no_commit_has() {
    let f = fixture();
    std::fs::write(f.repo.join(".env"), "SECRET=mine\n").unwrap();
    let made = f.wt.create(&f.repo, &plan("ap")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join(".gitignore"), "build/\n").unwrap();
    std::fs::write(t.join(".env"), "SECRET=agent\n").unwrap();
    let found = f.wt.find("ap", None).unwrap();
    let e = end::apply(&found).unwrap_err().to_string();
    assert!(e.contains(".env (ignored)"), "{e}");
    assert_eq!(
        std::fs::read_to_string(f.repo.join(".env")).unwrap(),
        "SECRET=mine\n"
    );
    assert_eq!(git(&f.repo, &["diff", "--cached", "--name-only"]), "");
    // Sync: the source commits a file the worktree has as an ignored one of its own.
    let synced = f.wt.create(&f.repo, &plan("sy")).unwrap();
    let st = synced.record.path.clone();
    std::fs::create_dir(st.join("build")).unwrap();
    std::fs::write(st.join("build/out.txt"), "the agent's build\n").unwrap();
    std::fs::write(f.repo.join(".gitignore"), ".env\nsecrets/\n").unwrap();
    std::fs::create_dir(f.repo.join("build")).unwrap();
    std::fs::write(f.repo.join("build/out.txt"), "committed\n").unwrap();
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "track build"]);
    let sfound = f.wt.find("sy", None).unwrap();
    let e = end::sync(&sfound).unwrap_err().to_string();
    assert!(e.contains("build/out.txt (ignored)"), "{e}");
    assert_eq!(
        std::fs::read_to_string(st.join("build/out.txt")).unwrap(),
        "the agent's build\n"
    );
}

#[test]
fn an_ending_refuses_while_a_session_holds_the_worktree() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("busy")).unwrap();
    std::fs::write(made.record.path.join("w.txt"), "work\n").unwrap();
    let lease = f.wt.lease_for(&made.cwd).unwrap().expect("in a worktree");
    assert!(f.wt.lease_for(&f.repo).unwrap().is_none(), "not in one");
    let found = f.wt.find("busy", None).unwrap();
    assert_eq!(
        trellis_worktree::lease::holders(&found),
        vec![trellis_worktree::lease::Holder {
            pid: std::process::id()
        }]
    );
    for e in [
        end::land(&found, None).unwrap_err(),
        end::apply(&found).unwrap_err(),
        end::sync(&found).unwrap_err(),
        end::discard(&found).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InUse { .. }), "{e}");
        assert!(
            e.to_string().contains("a session runs in worktree busy"),
            "{e}"
        );
    }
    assert!(
        made.record.path.join("w.txt").exists(),
        "nothing was changed"
    );
    // A lease whose process died is stale: cleared by whoever looks.
    drop(lease);
    let stale = found.file.parent().unwrap().join("busy.lease-999999-0");
    std::fs::write(&stale, "").unwrap();
    assert!(trellis_worktree::lease::holders(&found).is_empty());
    assert!(!stale.exists());
    end::land(&found, Some("the work")).unwrap();
    assert_eq!(git(&f.repo, &["log", "-1", "--format=%s"]), "the work");
}

/// The comparison's figures are git's: `git diff --numstat` of the worktree's whole state
/// (a commit, uncommitted changes, an untracked file, a binary one) against its base.
#[test]
fn diffstat_is_what_git_numstat_says() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("count")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("a.txt"), "one\n2\nthree\nfour\n").unwrap();
    git(&t, &["commit", "-q", "-am", "agent commit"]);
    std::fs::write(t.join("sub/b.txt"), "").unwrap();
    std::fs::write(t.join("new.txt"), "x\ny\nz").unwrap();
    std::fs::write(t.join("blob.bin"), [0u8, 1, 2, 0, 255]).unwrap();
    std::fs::write(t.join(".env"), "ignored\n").unwrap();
    let stat = trellis_worktree::measure::diffstat(&made.record).unwrap();
    assert_eq!(
        git(&t, &["status", "--porcelain"]).lines().count(),
        3,
        "measuring changed nothing"
    );
    git(&t, &["add", "-A"]);
    let numstat = git(&t, &["diff", "--cached", "--numstat", &made.record.base]);
    let (mut a, mut d, mut n) = (0, 0, 0);
    for line in numstat.lines() {
        let mut p = line.split('\t');
        a += p.next().unwrap().parse::<u64>().unwrap_or(0);
        d += p.next().unwrap().parse::<u64>().unwrap_or(0);
        n += 1;
    }
    assert_eq!(
        (stat.added, stat.removed, stat.files),
        (a, d, n),
        "{numstat}"
    );
    assert_eq!((a, d, n), (6, 2, 4), "{numstat}");
}

#[test]
fn a_land_commit_says_what_the_work_was() {
    let m = end::commit_message("fix the TODO in src/lib.rs", Some("claude"), "alpha");
    assert_eq!(
        m,
        "fix the TODO in src/lib.rs\n\nDone by claude in Trellis worktree alpha."
    );
    let long = format!("{} and more\nsecond line", "word ".repeat(30));
    let m = end::commit_message(&long, None, "b");
    let subject = m.lines().next().unwrap();
    assert!(
        subject.chars().count() <= 72 && subject.ends_with('…'),
        "{subject}"
    );
    assert!(m.contains("second line"), "{m}");
}

/// Removing a tree never loses an ignored file no commit has: it goes into the snapshot
/// (a cache by its own declaration, and an unchanged copy of the source's file, do not).
#[test]
fn ignored_files_of_a_removed_tree_are_kept_in_its_snapshot() {
    let f = fixture();
    std::fs::write(f.repo.join(".env"), "SOURCE\n").unwrap();
    let made = f.wt.create(&f.repo, &plan("ign")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join(".env"), "edited in the worktree\n").unwrap();
    std::fs::create_dir_all(t.join("build/target")).unwrap();
    std::fs::write(
        t.join("build/target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    )
    .unwrap();
    std::fs::write(t.join("build/target/big.o"), "object\n").unwrap();
    std::fs::create_dir_all(t.join("secrets")).unwrap();
    std::fs::write(t.join("secrets/key"), "k\n").unwrap();
    std::fs::write(t.join("work.txt"), "w\n").unwrap();
    let found = f.wt.find("ign", None).unwrap();
    let out = end::discard(&found).unwrap();
    let said = out.lines.join("\n");
    assert!(
        said.contains("2 ignored file(s) are in the snapshot"),
        "{said}"
    );
    assert!(said.contains("build/target/"), "the cache is named: {said}");
    let snap = out.record.unwrap().snapshot.unwrap();
    assert_eq!(
        git(&f.repo, &["show", &format!("{snap}:.env")]),
        "edited in the worktree"
    );
    assert_eq!(git(&f.repo, &["show", &format!("{snap}:secrets/key")]), "k");
    assert_eq!(git(&f.repo, &["show", &format!("{snap}:work.txt")]), "w");
    assert!(git_fails(
        &f.repo,
        &["show", &format!("{snap}:build/target/big.o")]
    ));
    // A land keeps them the same way; an unchanged copy of the source's is not kept.
    let made = f.wt.create(&f.repo, &plan("ign2")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join(".env"), "SOURCE\n").unwrap();
    std::fs::create_dir_all(t.join("secrets")).unwrap();
    std::fs::write(t.join("secrets/token"), "t\n").unwrap();
    std::fs::write(t.join("feature.txt"), "f\n").unwrap();
    let found = f.wt.find("ign2", None).unwrap();
    let out = end::land(&found, Some("feature")).unwrap();
    let said = out.lines.join("\n");
    assert!(
        said.contains("its 1 ignored file(s) kept as refs/trellis/retired/ign2-"),
        "{said}"
    );
    let snap = out.record.unwrap().snapshot.unwrap();
    assert_eq!(
        git(&f.repo, &["show", &format!("{snap}:secrets/token")]),
        "t"
    );
    assert!(
        git_fails(&f.repo, &["show", &format!("{snap}:.env")]),
        "the source still has it"
    );
    assert!(!t.exists());
}

/// Prune deletes the branches of ended worktrees whose commits another ref keeps, and
/// nothing else: not an active worktree's, not one whose commits are only on it, not
/// one a worktree has checked out.
#[test]
fn prune_deletes_only_branches_whose_commits_are_kept_elsewhere() {
    let f = fixture();
    // Landed: its commits are on main.
    let made = f.wt.create(&f.repo, &plan("landed")).unwrap();
    std::fs::write(made.record.path.join("l.txt"), "l\n").unwrap();
    end::land(&f.wt.find("landed", None).unwrap(), Some("l")).unwrap();
    // Discarded: its state is in the retired snapshot.
    let made = f.wt.create(&f.repo, &plan("gone")).unwrap();
    std::fs::write(made.record.path.join("g.txt"), "g\n").unwrap();
    git(&made.record.path, &["add", "g.txt"]);
    git(&made.record.path, &["commit", "-q", "-m", "g"]);
    end::discard(&f.wt.find("gone", None).unwrap()).unwrap();
    // Active: left alone.
    f.wt.create(&f.repo, &plan("active")).unwrap();
    // Discarded, then its snapshot ref deleted by hand: the branch alone has its commit.
    let made = f.wt.create(&f.repo, &plan("only")).unwrap();
    std::fs::write(made.record.path.join("o.txt"), "o\n").unwrap();
    git(&made.record.path, &["add", "o.txt"]);
    git(&made.record.path, &["commit", "-q", "-m", "o"]);
    let out = end::discard(&f.wt.find("only", None).unwrap()).unwrap();
    let snap = out.record.unwrap().snapshot.unwrap();
    git(&f.repo, &["update-ref", "-d", &snap]);
    // Another repository's prune does not reach this one's.
    let elsewhere = f.repo.parent().unwrap().join("elsewhere");
    assert!(trellis_worktree::prune::prune(&f.wt.list(), true, Some(&elsewhere)).is_empty());
    let dry = trellis_worktree::prune::prune(&f.wt.list(), true, Some(&f.repo));
    assert_eq!(dry.len(), 3, "{dry:?}");
    // What keeps a branch is never another branch being pruned.
    for p in &dry {
        for pruned in ["landed", "gone", "only"] {
            let b = format!("refs/heads/trellis/{pruned}");
            assert!(!p.kept_by.contains(&b), "{p:?}");
        }
    }
    assert!(
        !git_fails(&f.repo, &["rev-parse", "--verify", "trellis/landed"]),
        "dry: nothing deleted"
    );
    let done = trellis_worktree::prune::prune(&f.wt.list(), false, None);
    let kept: Vec<_> = done
        .iter()
        .filter(|p| p.kept.is_some())
        .map(|p| p.branch.as_str())
        .collect();
    assert_eq!(kept, ["trellis/only"], "{done:?}");
    for gone in ["trellis/landed", "trellis/gone"] {
        assert!(
            git_fails(&f.repo, &["rev-parse", "--verify", gone]),
            "{gone}"
        );
    }
    for stays in ["trellis/only", "trellis/active"] {
        assert!(
            !git_fails(&f.repo, &["rev-parse", "--verify", stays]),
            "{stays}"
        );
    }
    // The discarded worktree's work is still in its snapshot.
    let retired = git(
        &f.repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/trellis/retired/",
        ],
    );
    let r = retired.lines().find(|r| r.contains("gone-")).unwrap();
    assert_eq!(git(&f.repo, &["show", &format!("{r}:g.txt")]), "g");
}

/// What a land would do is found before anything changes, and the land acts only on
/// it: the source's own uncommitted edits to a file the worktree changed refuse it before
/// the worktree's work is committed; a source that moved on makes it an apply.
#[test]
fn a_land_is_planned_before_anything_changes() {
    use trellis_worktree::plan::{Landing, landing};
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("plan")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("a.txt"), "one\ntwo\nworktree\n").unwrap();
    let found = f.wt.find("plan", None).unwrap();
    assert_eq!(
        landing(&found).unwrap(),
        Landing::FastForward {
            target: "main".into(),
            commit: true
        }
    );
    // The user edits the same file in the source, uncommitted.
    std::fs::write(f.repo.join("a.txt"), "one\ntwo\nmine\n").unwrap();
    let branch_before = git(&f.repo, &["rev-parse", "trellis/plan"]);
    let e = landing(&found).unwrap_err().to_string();
    assert!(e.contains("uncommitted changes to 1 file(s)"), "{e}");
    assert!(e.contains("a.txt"), "{e}");
    let e = end::land(&found, Some("x")).unwrap_err().to_string();
    assert!(e.contains("Nothing was changed"), "{e}");
    assert_eq!(
        git(&f.repo, &["rev-parse", "trellis/plan"]),
        branch_before,
        "nothing committed on the branch"
    );
    assert_eq!(
        std::fs::read_to_string(t.join("a.txt")).unwrap(),
        "one\ntwo\nworktree\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "one\ntwo\nmine\n"
    );
    git(&f.repo, &["checkout", "--", "a.txt"]);
    // The source moves on: an apply, said as one.
    std::fs::write(f.repo.join("upstream.txt"), "meanwhile\n").unwrap();
    git(&f.repo, &["add", "upstream.txt"]);
    git(&f.repo, &["commit", "-q", "-m", "meanwhile"]);
    assert_eq!(
        landing(&found).unwrap(),
        Landing::Apply {
            target: "main".into()
        }
    );
    // After a sync, the worktree's figures are its own work only: not the file the source
    // already has.
    end::sync(&found).unwrap();
    let stat =
        trellis_worktree::measure::diffstat(&f.wt.find("plan", None).unwrap().record).unwrap();
    assert_eq!(
        (stat.added, stat.removed, stat.files),
        (1, 0, 1),
        "{stat:?}"
    );
    let shown = trellis_worktree::measure::stat(&found).unwrap();
    assert!(!shown.contains("upstream.txt"), "{shown}");
}

/// A worktree belongs to the branch it was made from: its figures are measured from it
/// whatever the source has checked out, and a land onto another branch (which would
/// bring the first one's commits along) is refused before anything changes.
#[test]
fn a_worktree_lands_onto_the_branch_it_was_made_from() {
    let f = fixture();
    std::fs::write(f.repo.join("second.txt"), "2\n").unwrap();
    git(&f.repo, &["add", "second.txt"]);
    git(&f.repo, &["commit", "-q", "-m", "second"]);
    let made = f.wt.create(&f.repo, &plan("onto")).unwrap();
    assert_eq!(made.record.onto.as_deref(), Some("main"));
    std::fs::write(made.record.path.join("w.txt"), "w\n").unwrap();
    let found = f.wt.find("onto", None).unwrap();
    let before = trellis_worktree::measure::diffstat(&found.record).unwrap();
    assert_eq!((before.added, before.files), (1, 1));
    git(&f.repo, &["checkout", "-q", "-b", "other", "HEAD~1"]);
    let after = trellis_worktree::measure::diffstat(&found.record).unwrap();
    assert_eq!(before, after, "the source's checkout changes nothing");
    let e = end::land(&found, None).unwrap_err().to_string();
    assert!(e.contains("was made from main"), "{e}");
    assert!(e.contains("Nothing was changed"), "{e}");
    assert_eq!(
        git(&f.repo, &["rev-parse", "other"]),
        git(&f.repo, &["rev-parse", "main~1"])
    );
    git(&f.repo, &["checkout", "-q", "main"]);
    end::land(&found, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.repo.join("w.txt")).unwrap(),
        "w\n"
    );
}

/// A land of one worktree of several that cannot discard another says so as what it is:
/// the land happened, the other stays open. And the discard's refusal is known before
/// (what a UI asks first).
#[test]
fn a_land_whose_discard_cannot_happen_says_what_happened() {
    let f = fixture();
    let a = f.wt.create(&f.repo, &plan("keepme")).unwrap();
    std::fs::write(a.record.path.join("a.txt"), "one\ntwo\nA\n").unwrap();
    let b = f.wt.create(&f.repo, &plan("heavy")).unwrap();
    // More ignored bytes than a snapshot keeps (sparse: nothing is written).
    let big = std::fs::File::create(b.record.path.join(".env")).unwrap();
    big.set_len(trellis_worktree::ignored::LIMIT_BYTES + 1)
        .unwrap();
    drop(big);
    let heavy = f.wt.find("heavy", None).unwrap();
    let e = trellis_worktree::plan::ending(&heavy, "discard")
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than Trellis keeps"), "{e}");
    let out = end::land_one(&f.wt.find("keepme", None).unwrap(), &[heavy], Some("A")).unwrap();
    assert!(
        out.lines.iter().any(|l| l.contains("fast-forwarded")),
        "{:?}",
        out.lines
    );
    assert!(
        out.lines
            .iter()
            .any(|l| l.starts_with("heavy was not discarded")),
        "{:?}",
        out.lines
    );
    assert_eq!(f.wt.find("heavy", None).unwrap().status, Status::Owned);
    assert!(b.record.path.join(".env").exists());
}
