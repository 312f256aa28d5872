//! A checkpoint of a repository of 10 000 files (issue 48): nothing changed since the
//! last one (looked at, and as a session takes it: watched, not looked at), one file
//! changed, and a hundred new files; beside `git status` on the same tree, the floor of
//! anything that looks at it. The private index starts as a
//! copy of the user's, so git's stat cache spares hashing what did not change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use trellis_worktree::checkpoint;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    for d in 0..100 {
        let dir = r.join(format!("src/m{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(
                dir.join(format!("f{f}.rs")),
                format!("// file {d}/{f}\nfn f{f}() -> u32 {{ {f} }}\n"),
            )
            .unwrap();
        }
    }
    git(&r, &["init", "-q", "-b", "main"]);
    git(
        &r,
        &["-c", "user.email=b@b", "-c", "user.name=b", "add", "-A"],
    );
    git(
        &r,
        &[
            "-c",
            "user.email=b@b",
            "-c",
            "user.name=b",
            "commit",
            "-q",
            "-m",
            "start",
        ],
    );
    let mut g = c.benchmark_group("checkpoint_10000_files");
    g.sample_size(20);
    // The floor: git's own look at the same tree (every file's stat, every directory
    // read), which any checkpoint at a turn's start needs too.
    let status = || {
        Command::new("git")
            .arg("-C")
            .arg(&r)
            .args(["status", "--porcelain", "-uall"])
            .output()
            .unwrap()
    };
    status();
    g.bench_function("git_status_for_reference", |b| b.iter(status));
    let mut n = 0u32;
    // A session's checkpoints as Trellis takes them: with a watch on the tree, a turn
    // after one that changed nothing does not look at it.
    let mut keeper = checkpoint::Keeper::new(&r);
    let never = std::sync::atomic::AtomicBool::new(false);
    keeper
        .take("refs/trellis/checkpoints/bench/w0", "b", &never)
        .unwrap();
    g.bench_function("unchanged_watched", |b| {
        b.iter(|| {
            n += 1;
            let (_, same) = keeper
                .take(&format!("refs/trellis/checkpoints/bench/w{n}"), "b", &never)
                .unwrap();
            assert!(same);
        })
    });
    g.bench_function("unchanged", |b| {
        b.iter(|| {
            n += 1;
            checkpoint::take(&r, &format!("refs/trellis/checkpoints/bench/{n}"), "b").unwrap()
        })
    });
    std::fs::write(r.join("src/m7/f7.rs"), "// changed\n").unwrap();
    g.bench_function("one_file_changed", |b| {
        b.iter(|| {
            n += 1;
            checkpoint::take(&r, &format!("refs/trellis/checkpoints/bench/{n}"), "b").unwrap()
        })
    });
    for i in 0..100 {
        std::fs::write(r.join(format!("new{i}.txt")), format!("new {i}\n")).unwrap();
    }
    g.bench_function("a_hundred_new_files", |b| {
        b.iter(|| {
            n += 1;
            checkpoint::take(&r, &format!("refs/trellis/checkpoints/bench/{n}"), "b").unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
