//! Forking a session and rewinding its conversation (issue 48, items 3, 5 and 6) against
//! the demo agent: with and without its own `session/fork`; headless (`run --fork`), and
//! in a hub beside the others (`sessions fork`, `sessions rewind --conversation|--both`),
//! in a worktree holding the files of the turn forked from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::hubkit::{Dirs, Hub, text, until, until_seen};
use crate::worktrees::git;

/// A headless run of `agent` in `cwd` with the prompts, every request allowed: the
/// session's id.
fn two_turns(d: &Dirs, agent: &str, cwd: &Path, extra: &[&str]) -> String {
    let args = [
        &["run", "--agent", agent, "--cwd", cwd.to_str().unwrap()],
        crate::TWO_EDITING_TURNS,
        extra,
    ]
    .concat();
    let o = d.trellis(&args);
    assert!(o.status.success(), "{}", text(&o));
    newest(d)["id"].as_str().unwrap().to_string()
}

/// The newest session `trellis sessions list` shows.
fn newest(d: &Dirs) -> serde_json::Value {
    let out = d.stdout(&["sessions", "list", "--all", "--empty", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    rows[0].clone()
}

/// The log's records, parsed.
fn records(path: &str) -> Vec<serde_json::Value> {
    crate::jsonl(&std::fs::read_to_string(path).unwrap())
}

/// The text blocks and embedded resources of the prompts the log sent.
fn prompts(recs: &[serde_json::Value]) -> Vec<serde_json::Value> {
    recs.iter()
        .filter(|r| r["dir"] == "client_to_agent" && r["msg"]["method"] == "session/prompt")
        .map(|r| r["msg"]["params"]["prompt"].clone())
        .collect()
}

fn demo_with(flags: &str) -> String {
    format!("{} agent demo {flags}", env!("CARGO_BIN_EXE_trellis"))
}

#[test]
fn a_fork_before_a_turn_has_the_turns_before_it_and_the_agent_is_told_them() {
    let d = Dirs::new();
    let first = two_turns(&d, "demo", &d.work, &[]);
    let o = d.trellis(&[
        "run",
        "--fork",
        &first,
        "--at",
        "2",
        "--prompt",
        "go on",
        "--permission",
        "allow-once",
    ]);
    let err = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "forked from session {first} before its turn 2 (of 2): the agent is given the turns before it as a transcript"
        )),
        "{err}"
    );
    let fork = newest(&d);
    assert_ne!(fork["id"], first.as_str());
    let recs = records(fork["path"].as_str().unwrap());
    // The header names the session and the turn; the list shows one thread.
    assert_eq!(recs[0]["msg"]["continues_at"], 2, "{}", recs[0]);
    assert!(recs[0]["msg"]["continues"].as_str().is_some());
    // The first prompt carries turn 1 (its prompt and its edit), not turn 2.
    let sent = prompts(&recs);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0][0]["text"], "go on");
    let transcript = sent[0][1]["resource"]["text"].as_str().unwrap();
    assert!(
        transcript.starts_with(&format!(
            "This session is a fork of an earlier one (session {first}); here is the conversation up to where it was forked (its turn 1)"
        )),
        "{transcript}"
    );
    assert!(transcript.contains("fix the TODO"), "{transcript}");
    assert!(!transcript.contains("/edit notes.txt"), "{transcript}");
    // Its terminals are its own: none takes the id of one in its history (a trial saw a
    // fork's cards show the earlier session's results).
    let terminals = |recs: &[serde_json::Value]| -> Vec<String> {
        recs.iter()
            .filter_map(|r| {
                r["msg"]["result"]["terminalId"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    };
    let parent = records(
        d.stdout(&["sessions", "show", &first])
            .lines()
            .find_map(|l| l.strip_prefix("log"))
            .unwrap()
            .trim()
            .split(" (")
            .next()
            .unwrap(),
    );
    let (old, new) = (terminals(&parent), terminals(&recs));
    assert!(!old.is_empty() && !new.is_empty(), "{old:?} {new:?}");
    assert!(new.iter().all(|t| !old.contains(t)), "{old:?} {new:?}");
    // Its history is the turns before: the index counts the fork's own turns only.
    let list = d.stdout(&["sessions", "list", "--all"]);
    assert!(
        list.contains("go on") || list.contains("fix the TODO"),
        "{list}"
    );
    // Where the session ran is gone: refused, never run here instead.
    let gone = d.work.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let lost = two_turns(&d, "demo", &gone, &[]);
    std::fs::remove_dir_all(&gone).unwrap();
    let o = d.trellis(&["run", "--fork", &lost, "--prompt", "x"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("is gone: a fork runs there (give --cwd"),
        "{}",
        text(&o)
    );
    // A turn the session does not have is refused, naming what it has.
    let o = d.trellis(&["run", "--fork", &first, "--at", "7", "--prompt", "x"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains(&format!(
            "session {first} has 2 turn(s): turn 7 is not one of them"
        )),
        "{}",
        text(&o)
    );
}

#[test]
fn an_agent_with_its_own_fork_forks_its_copy_after_the_last_turn_and_only_then() {
    let d = Dirs::new();
    let forking = demo_with("--fork-session");
    let first = two_turns(&d, &forking, &d.work, &[]);
    let acp_id = newest(&d)["acp_id"].as_str().unwrap().to_string();
    // After the last turn: the agent's own session/fork, and no transcript.
    let o = d.trellis(&[
        "run", "--agent", &forking, "--fork", &first, "--prompt", "go on",
    ]);
    let err = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("the agent forked its own session"), "{err}");
    let recs = records(newest(&d)["path"].as_str().unwrap());
    let asked = recs
        .iter()
        .find(|r| r["msg"]["method"] == "session/fork")
        .unwrap_or_else(|| panic!("no session/fork: {recs:?}"));
    assert_eq!(asked["msg"]["params"]["sessionId"], acp_id.as_str());
    let sent = prompts(&recs);
    assert_eq!(
        sent[0].as_array().unwrap().len(),
        1,
        "no transcript: {sent:?}"
    );
    assert_eq!(recs[0]["msg"]["continues_at"], 3);
    let said: String = recs
        .iter()
        .filter_map(|r| r["msg"]["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(said.contains("I remember our conversation"), "{said}");
    // Before a turn: ACP's fork copies a whole conversation, so the transcript goes.
    let o = d.trellis(&[
        "run", "--agent", &forking, "--fork", &first, "--at", "2", "--prompt", "go on",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(newest(&d)["path"].as_str().unwrap());
    assert!(!recs.iter().any(|r| r["msg"]["method"] == "session/fork"));
    assert_eq!(prompts(&recs)[0].as_array().unwrap().len(), 2);
    // Another agent: the transcript (its own fork would be of a session it never had).
    let o = d.trellis(&[
        "run", "--agent", "demo", "--fork", &first, "--prompt", "go on",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(newest(&d)["path"].as_str().unwrap());
    assert!(!recs.iter().any(|r| r["msg"]["method"] == "session/fork"));
    assert_eq!(prompts(&recs)[0].as_array().unwrap().len(), 2);
    // The same agent without it: a new session, said, and the transcript.
    let plain = two_turns(&d, "demo", &d.work, &[]);
    let o = d.trellis(&["run", "--fork", &plain, "--prompt", "go on"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("the agent does not offer session/fork: a new session starts"),
        "{}",
        text(&o)
    );
    let recs = records(newest(&d)["path"].as_str().unwrap());
    assert_eq!(prompts(&recs)[0].as_array().unwrap().len(), 2);
}

/// A repository with one commit in the work directory.
fn repo(d: &Dirs) -> PathBuf {
    let repo = d.work.join("repo");
    crate::worktrees::init_repo(&repo);
    repo
}

/// Every file of `dir` git would see (tracked and untracked, not ignored), with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = git(dir, &["ls-files", "-co", "--exclude-standard"])
        .lines()
        .map(|p| (p.to_string(), std::fs::read(dir.join(p)).unwrap()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The files of commit `c` in `dir`'s repository, with their bytes.
fn files_of(dir: &Path, c: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = git(dir, &["ls-tree", "-r", "--name-only", c])
        .lines()
        .map(|p| {
            let o = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["cat-file", "blob", &format!("{c}:{p}")])
                .output()
                .unwrap();
            (p.to_string(), o.stdout)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_fork_in_a_hub_gets_a_worktree_of_that_turns_files_and_a_rewind_of_both_undoes_the_code() {
    let d = Dirs::new();
    let repo = repo(&d);
    let here = demo_with("--here");
    let first = two_turns(&d, &here, &repo, &[]);
    let cps = d.stdout(&["sessions", "checkpoints", &first, "--json"]);
    let cps: serde_json::Value = serde_json::from_str(&cps).unwrap();
    let before_2 = cps["checkpoints"][1]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    // Forked before turn 2, in a worktree: started in the hub, named.
    let o = d.trellis(&[
        "sessions",
        "fork",
        &first,
        "--at",
        "2",
        "--worktree=try-two",
    ]);
    let _hub = Hub(d.hub_pid());
    assert!(o.status.success(), "{}", text(&o));
    let name = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(name, "default:1", "{}", text(&o));
    assert!(
        text(&o).contains(&format!("forking session {first} before its turn 2 (of 2)")),
        "{}",
        text(&o)
    );
    // Listed once it runs in its worktree (while it starts, the row may name the source).
    // Making the worktree and putting the checkpoint's files in it runs git a dozen times:
    // under a loaded machine (the whole suite on two cores), 20 s was not always enough.
    until_seen(
        "the fork to run in its worktree",
        Duration::from_secs(60),
        || {
            let rows = d.ls();
            let there = rows.iter().any(|r| {
                r["key"] == 1
                    && r["cwd"]
                        .as_str()
                        .is_some_and(|c| c.contains("/trellis/worktrees/"))
            });
            if there {
                Ok(())
            } else {
                Err(format!("{rows:?}"))
            }
        },
    );
    let row = d.ls().into_iter().find(|r| r["key"] == 1).unwrap();
    let wt = PathBuf::from(row["cwd"].as_str().unwrap());
    assert!(wt.starts_with(d.data.join("trellis/worktrees")), "{row}");
    assert!(wt.ends_with("try-two"), "the label asked for: {row}");
    // Exactly the files of the checkpoint before turn 2 (the agent's fix of turn 1 in,
    // its notes of turn 2 not), whatever the source's HEAD is.
    assert_eq!(files(&wt), files_of(&repo, &before_2));
    assert!(!wt.join("notes.txt").exists());
    until("its log to name the session and the turn", || {
        let fork = newest(&d);
        fork["id"] != first.as_str()
            && records(fork["path"].as_str().unwrap())[0]["msg"]["continues_at"] == 2
    });
    // Rewinding both: the code of the original goes back to before turn 2, and the
    // conversation starts again from there as a new session in its directory.
    assert!(repo.join("notes.txt").exists());
    let o = d.trellis(&["sessions", "rewind", &first, "--to", "2", "--both"]);
    assert!(o.status.success(), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("put back the tree before turn 2"), "{said}");
    assert!(
        said.contains("the conversation is rewound as a new session"),
        "{said}"
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "default:2");
    assert!(!repo.join("notes.txt").exists(), "{said}");
    assert_eq!(
        files(&repo),
        files_of(&repo, &before_2),
        "the tree is the checkpoint's"
    );
    until("the second fork to run in the repository", || {
        d.ls()
            .iter()
            .any(|r| r["key"] == 2 && r["cwd"] == repo.to_str().unwrap())
    });
    // Say what is missing: no --code/--conversation/--both.
    let o = d.trellis(&["sessions", "rewind", &first, "--to", "2"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--code, --conversation or --both"),
        "{}",
        text(&o)
    );
}

/// In the UI (issue 48, items 6 and 7): `/fork 1` opens a fork from before the first
/// turn beside the session, saying how its agent gets the history; `/agent demo` opens
/// a hand-off whose brief waits in the prompt, sent only on Enter.
#[test]
fn in_the_ui_fork_opens_beside_the_session_and_agent_hands_off_with_a_brief() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = crate::tui::Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 40)
    else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("Done:");
    // A running turn is not cut: /fork without a turn waits for its end (this one ended).
    t.send(&["/fork 1", "Enter"]);
    let s = t.wait("the fork's divider", |s| {
        s.contains("forked from session") && s.contains("(of 1)")
    });
    assert!(
        s.contains("▶2"),
        "the fork is in front, second on the rail: {s}"
    );
    assert!(
        s.contains("transcript") && s.contains("partway"),
        "how the agent gets the history is said: {s}"
    );
    // Back to the first session; hand it off.
    t.send(&["M-1"]);
    t.wait_for("▶1");
    t.send(&["/agent demo", "Enter"]);
    let s = t.wait("the hand-off, its history read in", |s| {
        s.contains("a brief of the session you left is in the prompt")
            && s.contains("handed off from session")
    });
    assert!(s.contains("▶3"), "{s}");
    assert!(
        s.contains("› You are taking over a task from another coding agent"),
        "the brief is in the prompt, for editing: {s}"
    );
    assert!(s.contains("- fix the TODO"), "{s}");
    assert!(s.contains("handed off from session"), "{s}");
    // Nothing went to the new agent yet: its log sent no prompt.
    let logs = t.log();
    let sent = logs
        .lines()
        .filter(|l| l.contains("You are taking over a task"))
        .count();
    assert_eq!(sent, 0, "the brief waits for the user");
    t.send(&["Enter"]);
    t.wait("the brief sent", |_| {
        t.log()
            .lines()
            .any(|l| l.contains("session/prompt") && l.contains("You are taking over a task"))
    });
    // One thread on the rail: each under session 1, saying how it came.
    let s = t.wait_for("↳ from 1");
    assert!(s.contains("↳ 1 before turn 1"), "{s}");
    // Two directions from one point, then the comparison that exists: all three in it.
    t.send(&["M-c"]);
    let s = t.wait_for("Compare · 3 sessions");
    assert!(s.contains("demo"), "{s}");
}

/// The rewind list in the UI, for real (issue 48, item 2): two turns of the demo in a
/// repository; Esc Esc on the empty prompt, turn 2 chosen, `b`: its files go back to
/// the checkpoint before turn 2, and the conversation starts again beside it.
#[test]
fn esc_esc_in_the_ui_rewinds_the_code_and_forks_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::worktrees::init_repo(&repo);
    let here = demo_with("--here");
    let Some(t) = crate::tui::Tmux::start_allowing(&repo, &["--agent", &here], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("Done:");
    t.send(&["/edit notes.txt", "Enter"]);
    t.wait("the second turn's file", |_| {
        repo.join("notes.txt").exists()
    });
    t.wait("its end", |s| {
        s.matches("Done").count() >= 1 && !s.contains("working…")
    });
    t.send(&["Escape", "Escape"]);
    let s = t.wait_for("Rewind: back to before a turn");
    assert!(s.contains("turn   1") && s.contains("turn   2"), "{s}");
    assert!(s.contains("s ago  fix the TODO"), "each turn's age: {s}");
    t.send(&["b"]);
    let s = t.wait("the fork beside it", |s| {
        s.contains("▶2") && s.contains("forked from session")
    });
    assert!(!repo.join("notes.txt").exists(), "the code went back: {s}");
    t.wait_for("the code went back: 0 restored, 1 removed");
    assert!(repo.join("demo-workspace/src/lib.rs").exists());
    // One thread on the rail: the fork under the session, saying from where.
    t.wait_for("↳ 1 before turn 2");
}

/// A file the user changed between two turns is theirs (a trial saw it removed without
/// a second yes, in git and outside it): a rewind to before the first turn keeps it and
/// says so; the agent's other file goes.
#[test]
fn a_rewind_from_the_ui_keeps_what_the_user_changed_between_turns() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::worktrees::init_repo(&repo);
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let here = demo_with("--here");
    for (place, agent) in [(&repo, here.as_str()), (&plain, "demo")] {
        let Some(t) = crate::tui::Tmux::start_allowing(place, &["--agent", agent], 120, 40) else {
            return;
        };
        t.wait_for("Enter send");
        t.send(&["/edit a.txt", "Enter"]);
        t.wait("a.txt", |_| place.join("a.txt").exists());
        t.wait_for("Created a.txt.");
        let mut a = std::fs::read_to_string(place.join("a.txt")).unwrap();
        a.push_str("MINE\n");
        std::fs::write(place.join("a.txt"), &a).unwrap();
        t.send(&["/edit b.txt", "Enter"]);
        t.wait("b.txt", |_| place.join("b.txt").exists());
        t.wait_for("Created b.txt.");
        t.send(&["/rewind", "Enter"]);
        t.wait_for("Rewind: back to before a turn");
        t.send(&["Up"]);
        t.wait_for("▶ turn   1");
        t.send(&["c"]);
        let s = t.wait_for("a.txt: no longer as the agent left it");
        assert!(s.contains("removed   ") && s.contains("b.txt"), "{s}");
        assert_eq!(std::fs::read_to_string(place.join("a.txt")).unwrap(), a);
        assert!(!place.join("b.txt").exists(), "{s}");
    }
}

/// A paste arrives whole (a trial pasted two lines into a reason: the newline sent it
/// and the rest became a prompt): into the prompt with its lines, into a reason as one
/// line; nothing is sent or answered by it.
#[test]
fn a_paste_of_several_lines_is_text_and_never_enter() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = crate::tui::Tmux::start_sized(
        &["--agent", "demo", "--cwd", dir.path().to_str().unwrap()],
        120,
        40,
    ) else {
        return;
    };
    let paste = |text: &str| {
        for args in [
            vec!["set-buffer", "--", text],
            vec!["paste-buffer", "-p", "-t", "t"],
        ] {
            let ok = std::process::Command::new("tmux")
                .args(["-L", &t.socket])
                .args(&args)
                .status()
                .unwrap();
            assert!(ok.success());
        }
    };
    t.wait_for("Enter send");
    // As terminals paste: lines ended by CR.
    paste("first line\rsecond line");
    let s = t.wait_for("second line");
    assert!(s.contains("› first line"), "{s}");
    assert!(
        s.lines()
            .any(|l| l.contains("second line") && !l.contains("first line")),
        "its own line: {s}"
    );
    assert!(
        !t.log().contains("session/prompt"),
        "a pasted newline sent nothing"
    );
    // Sent with Enter; its permission question, and a reason pasted into it.
    t.send(&["Enter"]);
    t.wait_for("reject with a reason");
    std::thread::sleep(Duration::from_millis(600));
    t.send(&["r"]);
    t.wait_for("Reject with a reason");
    paste("not this file\nLEAKED PART");
    let s = t.wait_for("LEAKED PART");
    assert!(s.contains("> not this file LEAKED PART"), "{s}");
    assert!(
        !t.log().contains("permission_decided"),
        "a pasted newline answered nothing"
    );
    assert_eq!(t.log().matches("\"method\":\"session/prompt\"").count(), 1);
}

/// A real agent that offers `session/fork` (issue 48's acceptance): Codex (codex-acp
/// 2.6.0, recorded with `scripts/record/codex-fork`) asked to fork its own session after
/// the last turn answers with a new session of its own; no transcript goes with the
/// prompt, the log says so, and the recording reads back as any session.
#[test]
fn a_recorded_codex_forks_its_own_session_and_is_sent_no_transcript() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/acp/codex-acp-2.6.0-fork.jsonl");
    let recs = records(path.to_str().unwrap());
    assert_eq!(recs[0]["msg"]["continues_at"], 2, "{}", recs[0]);
    let asked = recs
        .iter()
        .find(|r| r["msg"]["method"] == "session/fork")
        .expect("Trellis asked Codex to fork");
    let from = asked["msg"]["params"]["sessionId"].as_str().unwrap();
    let answer = recs
        .iter()
        .find(|r| r["dir"] == "agent_to_client" && r["msg"]["id"] == asked["msg"]["id"])
        .expect("Codex answered");
    let new = answer["msg"]["result"]["sessionId"].as_str().unwrap();
    assert_ne!(new, from, "a session of its own");
    let sent = prompts(&recs);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].as_array().unwrap().len(),
        1,
        "no transcript: {sent:?}"
    );
    let prompt = recs
        .iter()
        .find(|r| r["msg"]["method"] == "session/prompt")
        .unwrap();
    assert_eq!(prompt["msg"]["params"]["sessionId"], new);
    // As the log shows it.
    let d = Dirs::new();
    let shown = d.stdout(&["log", "show", path.to_str().unwrap()]);
    assert!(
        shown.starts_with("! the agent forked its own session (session/fork)"),
        "{shown}"
    );
    assert!(shown.contains("last turn: end_turn"), "{shown}");
}
