//! What others do behind Trellis's back, and what is not Trellis's: worktrees remade or
//! deleted by hand, branches that exist already, hostile records, a session holding its
//! worktree, and what pruning and snapshots keep.

use super::*;

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

/// A repository of its own inside a worktree (its history and its uncommitted work in no
/// commit of this repository) is never removed with the tree, nor committed onto the
/// branch as a bare link: every ending refuses with nothing changed.
#[test]
fn a_repository_inside_a_worktree_is_never_removed_or_committed_as_a_link() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("nest")).unwrap();
    let t = made.record.path.clone();
    std::fs::write(t.join("feature.txt"), "f\n").unwrap();
    let inner = t.join("nested/two");
    std::fs::create_dir_all(&inner).unwrap();
    git(&inner, &["init", "-q", "-b", "main"]);
    git(&inner, &["config", "user.name", "Inner"]);
    git(&inner, &["config", "user.email", "inner@example.com"]);
    git(&inner, &["config", "commit.gpgsign", "false"]);
    std::fs::write(inner.join("history.txt"), "only here\n").unwrap();
    git(&inner, &["add", "-A"]);
    git(&inner, &["commit", "-q", "-m", "inner"]);
    std::fs::write(inner.join("dirty.txt"), "uncommitted\n").unwrap();
    let before = git(&f.repo, &["rev-parse", "main"]);
    for ending in ["land", "sync", "apply", "discard"] {
        let found = f.wt.find("nest", None).unwrap();
        let e = match ending {
            "land" => end::land(&found, Some("feature")).unwrap_err(),
            "sync" => end::sync(&found).unwrap_err(),
            "apply" => end::apply(&found).unwrap_err(),
            _ => end::discard(&found).unwrap_err(),
        }
        .to_string();
        assert!(
            e.contains("a repository of its own (nested/two)"),
            "{ending}: {e}"
        );
        assert!(e.contains("nothing was changed"), "{ending}: {e}");
        assert!(inner.join(".git").exists(), "{ending}");
        assert_eq!(
            std::fs::read_to_string(inner.join("dirty.txt")).unwrap(),
            "uncommitted\n"
        );
    }
    // Nothing was committed in the worktree, nothing moved in the source.
    assert_eq!(git(&f.repo, &["rev-parse", "main"]), before);
    assert_eq!(
        git(&t, &["rev-parse", "HEAD"]),
        git(&f.repo, &["rev-parse", "trellis/nest"])
    );
    assert!(
        status_of(&t).contains("?? feature.txt"),
        "{}",
        status_of(&t)
    );
    // Moved out, the worktree ends as any other.
    std::fs::rename(t.join("nested"), f.repo.join("../moved-out")).unwrap();
    let found = f.wt.find("nest", None).unwrap();
    end::land(&found, Some("feature")).unwrap();
    assert!(!t.exists());
}

/// A repository inside an ignored directory — a cache by its tag too — is never removed
/// with the tree either: git lists it as one entry and its snapshot could hold nothing of
/// it. After a land the tree stays, said as what happened (the land did happen).
#[test]
fn a_repository_in_an_ignored_directory_or_a_cache_stays() {
    let f = fixture();
    for (label, dir) in [("ign", "build/x/repo"), ("cache", "build/tagged")] {
        let made = f.wt.create(&f.repo, &plan(label)).unwrap();
        let t = made.record.path.clone();
        let inner = t.join(dir);
        std::fs::create_dir_all(&inner).unwrap();
        if label == "cache" {
            std::fs::write(
                inner.join("CACHEDIR.TAG"),
                "Signature: 8a477f597d28d172789f06886806bc55\n",
            )
            .unwrap();
        }
        git(&inner, &["init", "-q", "-b", "main"]);
        std::fs::write(inner.join("mine.txt"), "only here\n").unwrap();
        let found = f.wt.find(label, None).unwrap();
        let e = end::discard(&found).unwrap_err().to_string();
        assert!(e.contains("a repository of its own"), "{label}: {e}");
        assert!(e.contains("nothing was changed"), "{label}: {e}");
        assert!(inner.join("mine.txt").exists(), "{label}");
        // A land goes through, and says the tree stays (and why), not that nothing was
        // changed.
        std::fs::write(t.join("feature.txt"), "f\n").unwrap();
        let out = end::land(&found, Some(label)).unwrap();
        let said = out.lines.join("\n");
        assert!(said.contains("fast-forwarded"), "{label}: {said}");
        assert!(said.contains("the tree stays at"), "{label}: {said}");
        assert!(!said.contains("nothing was changed"), "{label}: {said}");
        assert!(inner.join("mine.txt").exists(), "{label}");
        assert_eq!(out.record.unwrap().stage, Stage::Kept);
    }
}

/// A directory is a cache by its `CACHEDIR.TAG` only when the tag begins with the
/// specification's signature: another file of that name makes nothing a cache, and what
/// is beside it is kept in the snapshot.
#[test]
fn a_cachedir_tag_without_its_signature_makes_no_cache() {
    let f = fixture();
    let made = f.wt.create(&f.repo, &plan("tag")).unwrap();
    let t = made.record.path.clone();
    std::fs::create_dir_all(t.join("build/data")).unwrap();
    std::fs::write(t.join("build/data/CACHEDIR.TAG"), "not a real tag\n").unwrap();
    std::fs::write(t.join("build/data/important.csv"), "1,2\n").unwrap();
    let found = f.wt.find("tag", None).unwrap();
    let out = end::discard(&found).unwrap();
    let said = out.lines.join("\n");
    assert!(!said.contains("caches removed"), "{said}");
    let snap = out.record.unwrap().snapshot.unwrap();
    assert_eq!(
        git(
            &f.repo,
            &["show", &format!("{snap}:build/data/important.csv")]
        ),
        "1,2"
    );
}
