//! Checkpoints of the working tree before each turn, and rewinding the code to one
//! (issue 48's acceptance): two turns of the demo agent that edit files in a worktree of
//! a temporary repository; `sessions rewind --to 1 --code` puts the tree back exactly as
//! before turn 1 but for a file the user changed meanwhile, which is kept; `--undo` puts
//! back the tree as it was before the rewind.

use std::path::Path;

use crate::worktrees::{Home, git};

/// The tree of `dir` as a checkpoint would see it: every file but the ones named, as
/// (path, content).
fn tree(dir: &Path, but: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let listed = git(dir, &["ls-files", "-co", "--exclude-standard"]);
    for p in listed.lines().filter(|p| !but.contains(p)) {
        out.push((
            p.to_string(),
            std::fs::read_to_string(dir.join(p)).unwrap_or_default(),
        ));
    }
    out.sort();
    out
}

/// The files of commit `c`, as (path, content).
fn commit_tree(dir: &Path, c: &str, but: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = git(dir, &["ls-tree", "-r", "--name-only", c])
        .lines()
        .filter(|p| !but.contains(p))
        .map(|p| (p.to_string(), git_raw(dir, &format!("{c}:{p}"))))
        .collect();
    out.sort();
    out
}

fn git_raw(dir: &Path, object: &str) -> String {
    let o = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", object])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn two_turns_are_rewound_to_the_first_a_users_file_is_kept_and_the_rewind_undone() {
    let home = Home::new();
    let repo = home.repo("repo");
    let args = [
        &["run", "--worktree=cp", "--cwd", repo.to_str().unwrap()],
        crate::TWO_EDITING_TURNS,
        &["--format", "jsonl"],
    ]
    .concat();
    let (_, err) = home.ok(&args, &repo);
    assert!(err.contains("worktree cp"), "{err}");
    let wt = home.path().join("data/trellis/worktrees");
    let wt = std::fs::read_dir(&wt)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("cp");
    assert!(wt.is_dir(), "{}", wt.display());
    let (list, _) = home.ok(&["sessions", "list", "--all", "--json"], &repo);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let id = rows[0]["id"].as_str().unwrap().to_string();
    // One checkpoint before each turn, on the record too.
    let (cps, _) = home.ok(&["sessions", "checkpoints", &id, "--json"], &repo);
    let cps: serde_json::Value = serde_json::from_str(&cps).unwrap();
    let cps = &cps["checkpoints"];
    assert_eq!(cps.as_array().unwrap().len(), 2, "{cps}");
    let before_1 = cps[0]["commit"].as_str().unwrap().to_string();
    assert_eq!(cps[0]["prompt"], "fix the TODO");
    // When each turn began, in Unix seconds, in order.
    let began = |i: usize| cps[i]["began"].as_f64().unwrap();
    assert!(began(0) > 1.7e9 && began(0) <= began(1), "{cps}");
    let changed: Vec<&str> = cps[0]["files_changed_by_the_agent_since"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        changed
            .iter()
            .any(|p| p.ends_with("demo-workspace/src/lib.rs")),
        "{cps}"
    );
    let log = std::fs::read_to_string(rows[0]["path"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("checkpoint of the working tree before turn 2"),
        "the log says so"
    );
    // The agent changed the tree (lib.rs in turn 1, notes.txt made in turn 2); the user
    // changes a file of their own, and writes on top of one the agent made.
    assert_ne!(tree(&wt, &[]), commit_tree(&wt, &before_1, &[]));
    std::fs::write(wt.join("README.md"), "# the user's own words\n").unwrap();
    let notes = "notes.txt";
    let mut text = std::fs::read_to_string(wt.join(notes)).unwrap();
    text.push_str("the user's line\n");
    std::fs::write(wt.join(notes), &text).unwrap();
    let lib = "demo-workspace/src/lib.rs";
    let agents_lib = std::fs::read_to_string(wt.join(lib)).unwrap();
    let before_rewind = tree(&wt, &[]);

    let (said, _) = home.ok(&["sessions", "rewind", &id, "--to", "1", "--code"], &repo);
    assert!(said.contains("put back the tree before turn 1"), "{said}");
    assert!(said.contains(&format!("restored  {lib}")), "{said}");
    assert!(
        said.contains("kept      README.md: changed by someone other than the agent"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "kept      {notes}: no longer as the agent left it"
        )),
        "{said}"
    );
    assert_eq!(
        tree(&wt, &["README.md", notes]),
        commit_tree(&wt, &before_1, &["README.md", notes]),
        "exactly the tree before turn 1, but for the user's files"
    );
    assert_ne!(std::fs::read_to_string(wt.join(lib)).unwrap(), agents_lib);
    assert_eq!(std::fs::read_to_string(wt.join(notes)).unwrap(), text);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# the user's own words\n"
    );
    // Nothing staged, no commit made on the user's branch.
    assert_eq!(git(&wt, &["diff", "--cached", "--name-only"]), "");

    let (said, _) = home.ok(&["sessions", "rewind", &id, "--undo"], &repo);
    assert!(said.contains("before the last rewind"), "{said}");
    assert_eq!(tree(&wt, &[]), before_rewind, "the rewind is undone");

    // A rewind to a turn without a checkpoint says where to look.
    let o = home.trellis(&["sessions", "rewind", &id, "--to", "9", "--code"], &repo);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no checkpoint before turn 9"), "{err}");
    // Its undo points may hold someone's only copy: removing it asks for --force; then
    // it removes its checkpoints.
    let o = home.trellis(&["sessions", "rm", &id], &repo);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("undo point(s)") && err.contains("--force"),
        "{err}"
    );
    let (said, _) = home.ok(&["sessions", "rm", &id, "--force"], &repo);
    assert!(said.contains("checkpoint(s)"), "{said}");
    assert_eq!(
        git(&repo, &["for-each-ref", "refs/trellis/checkpoints"]),
        ""
    );
}

/// Outside git (issue 48, item 1): the log is the checkpoint. A rewind puts each file the
/// agent changed since the turn back to what the first of those changes replaced
/// (removing one it made), keeps a file someone changed since (unless --force) and files
/// it never touched, keeps what it overwrote, and `--undo` puts that back.
#[test]
fn outside_git_the_log_rewinds_the_agents_files_and_the_rewind_is_undone() {
    let home = Home::new();
    let dir = home.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    home.ok(
        &[
            &["run", "--cwd", dir.to_str().unwrap()],
            crate::TWO_EDITING_TURNS,
        ]
        .concat(),
        &dir,
    );
    let (list, _) = home.ok(&["sessions", "list", "--all", "--json"], &dir);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let lib = dir.join("demo-workspace/src/lib.rs");
    let fixed = std::fs::read_to_string(&lib).unwrap();
    assert!(fixed.contains("checked_add"), "{fixed}");
    assert!(dir.join("notes.txt").exists());
    let (cps, _) = home.ok(&["sessions", "checkpoints", &id], &dir);
    assert!(cps.contains("no git here"), "{cps}");
    // Each turn with when it began, how many files the agent changed since, its prompt.
    let two = cps.lines().find(|l| l.starts_with("turn   2  ")).unwrap();
    assert!(
        two.contains(" UTC  1 file(s) changed by the agent since  /edit notes.txt"),
        "{cps}"
    );
    // The user's own file, and a line of theirs on top of the agent's notes.
    std::fs::write(dir.join("mine.txt"), "mine\n").unwrap();
    let mut notes = std::fs::read_to_string(dir.join("notes.txt")).unwrap();
    notes.push_str("the user's line\n");
    std::fs::write(dir.join("notes.txt"), &notes).unwrap();
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--to", "1", "--code"], &dir);
    assert!(said.contains("no git here: from the log"), "{said}");
    assert!(
        said.contains("restored") && said.contains("src/lib.rs"),
        "{said}"
    );
    assert!(
        said.contains("notes.txt: no longer as the agent left it"),
        "{said}"
    );
    assert!(
        std::fs::read_to_string(&lib)
            .unwrap()
            .contains("// TODO: check for overflow")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        notes
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
        "mine\n"
    );
    // Undone: the agent's fix is back.
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--undo"], &dir);
    assert!(said.contains("before the last rewind"), "{said}");
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), fixed);
    // --force: the notes the agent made go too, the user's line with them; undone again.
    let (said, _) = home.ok(
        &["sessions", "rewind", &id, "--to", "1", "--code", "--force"],
        &dir,
    );
    assert!(
        said.contains("removed") && said.contains("notes.txt"),
        "{said}"
    );
    assert!(!dir.join("notes.txt").exists());
    home.ok(&["sessions", "rewind", &id, "--undo"], &dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        notes
    );
    let o = home.trellis(&["sessions", "rewind", &id, "--undo"], &dir);
    assert!(!o.status.success(), "nothing left to undo");
    // Removing the session removes its undo points.
    home.ok(&["sessions", "rm", &id], &dir);
}

/// Outside git, the agent's earlier files are copied before each turn (issue 48, item 1):
/// an edit reported without its old text (as some agents report their own tools' edits)
/// is rewound from the copy — the file as it was before the turn, not removed as the log
/// alone would have it — and the rewind is undone.
#[test]
fn outside_git_an_edit_without_its_old_text_is_rewound_from_the_copy_before_the_turn() {
    let home = Home::new();
    let dir = home.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    let cwd = dir.to_str().unwrap();
    home.ok(
        &[
            "run",
            "--cwd",
            cwd,
            "--prompt",
            "/edit notes.txt",
            "--prompt",
            "/append notes.txt",
            "--permission",
            "allow-once",
        ],
        &dir,
    );
    let notes = dir.join("notes.txt");
    let appended = std::fs::read_to_string(&notes).unwrap();
    assert!(
        appended.contains("appended by the Trellis demo agent"),
        "{appended}"
    );
    let (list, _) = home.ok(&["sessions", "list", "--all", "--json"], &dir);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let log = std::fs::read_to_string(rows[0]["path"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("no git here: the 1 file(s) the agent changed (or asked to change) in earlier turns, as they are before turn 2 (copied)"),
        "the copies are on the record"
    );
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--to", "2", "--code"], &dir);
    assert!(said.contains("from the copies taken before it"), "{said}");
    assert!(
        said.contains("restored") && said.contains("notes.txt"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "written by the Trellis demo agent (--edit)\n",
        "{said}"
    );
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--undo"], &dir);
    assert!(said.contains("restored"), "{said}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), appended);
    // Before turn 1 there was no notes.txt: removed (the log says the write made it).
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--to", "1", "--code"], &dir);
    assert!(said.contains("removed"), "{said}");
    assert!(!notes.exists());
    // Removed with the session (asked for: an undo point is left): its copies and undo
    // points.
    let o = home.trellis(&["sessions", "rm", &id], &dir);
    assert!(!o.status.success());
    home.ok(&["sessions", "rm", &id, "--force"], &dir);
    let rewinds = home.path().join("data/trellis/rewinds").join(&id);
    assert!(!rewinds.exists(), "{}", rewinds.display());
}

/// A directory outside git (`plain`) where the demo ran `prompts` as one session, allowed;
/// that session's id.
fn plain_session(home: &Home, prompts: &[&str]) -> (std::path::PathBuf, String) {
    let dir = home.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec![
        "run",
        "--cwd",
        dir.to_str().unwrap(),
        "--permission",
        "allow-once",
    ];
    for p in prompts {
        args.extend(["--prompt", p]);
    }
    home.ok(&args, &dir);
    let (id, _) = newest(home, &dir);
    (dir, id)
}

/// The newest session's id, and the log of it.
fn newest(home: &Home, dir: &Path) -> (String, String) {
    let (list, _) = home.ok(&["sessions", "list", "--all", "--json"], dir);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    (
        rows[0]["id"].as_str().unwrap().to_string(),
        rows[0]["path"].as_str().unwrap().to_string(),
    )
}

/// From a new user's trial, outside git: stepping back turn by turn needs no `--force`
/// (a rewind's own result is no one's new work); a file an earlier rewind removed is not
/// "kept"; and an `--undo` that keeps a file someone wrote since keeps the undo point
/// that may hold the only copy of what was there.
#[test]
fn outside_git_rewinds_step_back_turn_by_turn_and_an_undo_that_keeps_keeps_its_point() {
    let home = Home::new();
    let (dir, id) = plain_session(
        &home,
        &["/edit notes.txt", "/append notes.txt", "/edit other.txt"],
    );
    let notes = dir.join("notes.txt");
    let rewind = |to: &str| {
        home.ok(&["sessions", "rewind", &id, "--to", to, "--code"], &dir)
            .0
    };
    let said = rewind("3");
    assert!(
        said.contains("removed") && said.contains("other.txt"),
        "{said}"
    );
    let said = rewind("2");
    assert!(
        said.contains("restored") && !said.contains("  kept "),
        "{said}"
    );
    let said = rewind("1");
    assert!(
        said.contains("removed") && said.contains("notes.txt"),
        "{said}"
    );
    assert!(!said.contains("  kept "), "nothing to keep: {said}");
    assert!(!notes.exists());
    // The user writes a file where the rewind removed one; the undo keeps it, and its
    // point stays.
    std::fs::write(&notes, "MINE\n").unwrap();
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--undo"], &dir);
    assert!(said.contains("kept") && said.contains("stays in"), "{said}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "MINE\n");
    let point = home
        .path()
        .join("data/trellis/rewinds")
        .join(&id)
        .join("undo-3");
    assert!(point.join("manifest.json").is_file(), "{said}");
}

/// From the same trial: a file that was there before the session, edited by the agent's
/// own tool and reported without its old text, is not removed by a rewind (nothing on
/// the record says it was made), and says so.
#[test]
fn outside_git_an_edit_without_old_text_never_makes_a_rewind_remove_a_file_that_was_there() {
    let home = Home::new();
    let dir = home.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    let cwd = dir.to_str().unwrap();
    let run = |prompt: &str| {
        home.ok(
            &[
                "run",
                "--cwd",
                cwd,
                "--prompt",
                prompt,
                "--permission",
                "allow-once",
            ],
            &dir,
        )
    };
    run("/edit shared.txt");
    let shared = dir.join("shared.txt");
    let mut text = std::fs::read_to_string(&shared).unwrap();
    text.push_str("the user's line\n");
    std::fs::write(&shared, &text).unwrap();
    run("/append shared.txt");
    let (id, _) = newest(&home, &dir);
    let appended = std::fs::read_to_string(&shared).unwrap();
    let (said, _) = home.ok(&["sessions", "rewind", &id, "--to", "1", "--code"], &dir);
    assert!(
        said.contains("kept") && said.contains("not on the record"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), appended);
}

/// In git too, stepping back turn by turn needs no `--force`: a file as a later
/// checkpoint holds it (where the last rewind left it) is no one's new work.
#[test]
fn in_git_rewinds_step_back_turn_by_turn() {
    let home = Home::new();
    let repo = home.repo("repo");
    home.ok(
        &[
            "run",
            "--worktree=st",
            "--cwd",
            repo.to_str().unwrap(),
            "--prompt",
            "fix the TODO",
            "--prompt",
            "/edit notes.txt",
            "--prompt",
            "/append notes.txt",
            "--permission",
            "allow-once",
        ],
        &repo,
    );
    let (id, _) = newest(&home, &repo);
    let rewind = |to: &str| {
        home.ok(&["sessions", "rewind", &id, "--to", to, "--code"], &repo)
            .0
    };
    let said = rewind("3");
    assert!(
        said.contains("restored") && said.contains("notes.txt"),
        "{said}"
    );
    let said = rewind("2");
    assert!(
        said.contains("removed") && said.contains("notes.txt"),
        "{said}"
    );
    assert!(!said.contains("  kept "), "{said}");
}

/// Two rewinds of one session at once would take the same undo point: the second waits
/// for the first (here, for a lock held elsewhere), then gives up and says why.
#[test]
fn one_rewind_of_a_session_at_a_time() {
    let home = Home::new();
    let (dir, id) = plain_session(&home, &["/edit notes.txt"]);
    let rewinds = home.path().join("data/trellis/rewinds");
    std::fs::create_dir_all(&rewinds).unwrap();
    let mut held = std::process::Command::new("flock")
        .arg(rewinds.join(format!("{id}.lock")))
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = home.trellis(&["sessions", "rewind", &id, "--to", "1", "--code"], &dir);
    let _ = held.kill();
    let _ = held.wait();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("another rewind of session"), "{err}");
    assert!(dir.join("notes.txt").exists(), "nothing was done");
}

/// Outside git, a rewind never writes or removes through a link on the way to a file (a
/// trial replaced the agent's folder with a link to another, and the rewind wrote and
/// deleted there); neither does `--undo`.
#[test]
fn outside_git_a_rewind_never_goes_through_a_linked_folder() {
    let home = Home::new();
    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (dir, id) = plain_session(&home, &["/edit sub/f.txt", "/append sub/f.txt"]);
    std::fs::rename(dir.join("sub/f.txt"), elsewhere.join("f.txt")).unwrap();
    std::fs::remove_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("sub")).unwrap();
    let theirs = std::fs::read_to_string(elsewhere.join("f.txt")).unwrap();
    for to in ["2", "1"] {
        let (said, _) = home.ok(
            &["sessions", "rewind", &id, "--to", to, "--code", "--force"],
            &dir,
        );
        assert!(
            said.contains("a link (or a file) stands on its way"),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("f.txt")).unwrap(),
            theirs,
            "{said}"
        );
    }
}

/// A turn that changed nothing costs the next one no look at the tree (issue 48, item 1:
/// "a few ms when nothing changed"): a watch on the tree saw nothing, and the checkpoint
/// is the last one's commit again, said so in the log; a turn that changed something is
/// looked at in full.
#[test]
fn a_checkpoint_after_a_turn_that_changed_nothing_is_the_last_one_again() {
    let home = Home::new();
    let repo = home.repo("repo");
    home.ok(
        &[
            "run",
            "--worktree=w",
            "--cwd",
            repo.to_str().unwrap(),
            "--prompt",
            "fix the TODO",
            "--prompt",
            "/plans",
            "--prompt",
            "/plans",
            "--permission",
            "allow-once",
        ],
        &repo,
    );
    let (id, log) = newest(&home, &repo);
    let log = std::fs::read_to_string(log).unwrap();
    let mark = |turn: u32| {
        log.lines()
            .find(|l| {
                l.contains(&format!(
                    "checkpoint of the working tree before turn {turn}:"
                ))
            })
            .unwrap_or_else(|| panic!("turn {turn}: {log}"))
            .to_string()
    };
    assert!(
        !mark(2).contains("nothing changed"),
        "turn 1 edited: {}",
        mark(2)
    );
    assert!(
        mark(3).contains("nothing changed since the last one"),
        "{}",
        mark(3)
    );
    let (cps, _) = home.ok(&["sessions", "checkpoints", &id, "--json"], &repo);
    let cps: serde_json::Value = serde_json::from_str(&cps).unwrap();
    let commit = |i: usize| {
        cps["checkpoints"][i]["commit"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(commit(1), commit(2), "{cps}");
    assert_ne!(commit(0), commit(1), "{cps}");
}
