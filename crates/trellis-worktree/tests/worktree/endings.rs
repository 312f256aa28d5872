//! Every ending of a worktree: land (fast-forward, planned first, onto the branch it
//! came from), apply, sync, keep and discard; the comparison and its numbers. None
//! replaces a file of the source that no commit has.

use super::*;

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
    assert!(
        e.contains("uncommitted changes (staged or not) to 1 file(s)"),
        "{e}"
    );
    assert!(e.contains("a.txt"), "{e}");
    let e = end::land(&found, Some("x")).unwrap_err().to_string();
    assert!(e.contains("nothing was changed"), "{e}");
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

/// An apply over the source's own uncommitted changes to the files it changes — staged
/// ones too — is refused with nothing changed: mixed into them, the user's version would
/// be in no commit and no stash.
#[test]
fn apply_over_staged_changes_to_its_files_changes_nothing() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("stg")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(f.repo.join("a.txt"), "zero\none\ntwo\n").unwrap();
    git(&f.repo, &["add", "a.txt"]);
    let staged = git(&f.repo, &["diff", "--cached"]);
    let found = f.wt.find("stg", None).unwrap();
    let e = end::apply(&found).unwrap_err().to_string();
    assert!(e.contains("staged or not"), "{e}");
    assert!(e.contains("a.txt"), "{e}");
    assert_eq!(git(&f.repo, &["diff", "--cached"]), staged);
    assert_eq!(
        std::fs::read_to_string(f.repo.join("a.txt")).unwrap(),
        "zero\none\ntwo\n"
    );
    assert!(t.exists());
    // Put away, the apply goes through; a staged change to another file stays staged
    // beside it, and is said to.
    git(&f.repo, &["reset", "-q", "--", "a.txt"]);
    git(&f.repo, &["checkout", "--", "a.txt"]);
    std::fs::write(f.repo.join("sub/b.txt"), "bee, mine\n").unwrap();
    git(&f.repo, &["add", "sub/b.txt"]);
    let found = f.wt.find("stg", None).unwrap();
    let said = end::apply(&found).unwrap().lines.join("\n");
    assert!(
        said.contains("your own 1 staged file(s) stay staged"),
        "{said}"
    );
    assert_eq!(
        git(&f.repo, &["diff", "--cached", "--name-only"]),
        "a.txt\nsub/b.txt"
    );
}

/// A sync is not refused for the worktree's own untracked files: they are committed on
/// its branch before the merge (and said), so nothing of them is in the way.
#[test]
fn sync_commits_the_worktrees_untracked_work_before_merging_over_it() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("same")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("new.txt"), "the same\n").unwrap();
    std::fs::write(f.repo.join("new.txt"), "the same\n").unwrap();
    git(&f.repo, &["add", "new.txt"]);
    git(&f.repo, &["commit", "-q", "-m", "meanwhile"]);
    let found = f.wt.find("same", None).unwrap();
    let out = end::sync(&found).unwrap();
    let said = out.lines.join("\n");
    assert!(
        said.contains("committed the worktree's uncommitted work"),
        "{said}"
    );
    assert!(said.contains("merged main"), "{said}");
    assert_eq!(
        std::fs::read_to_string(t.join("new.txt")).unwrap(),
        "the same\n"
    );
}
