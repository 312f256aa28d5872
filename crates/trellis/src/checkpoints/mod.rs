//! Checkpoints of a session's working tree, one before each turn, and putting its files
//! back (`trellis sessions checkpoints`, `trellis sessions rewind`).
//!
//! In a git repository, the tree is recorded right before each prompt is sent
//! (`trellis_worktree::checkpoint`, through a private index: the user's index, HEAD and
//! stash are never touched) on `refs/trellis/checkpoints/<session>/<turn>`, and the log
//! says so. A rewind puts back the files the agent changed since that turn (the files its
//! edits, diffs and writes name in the log); a file changed by anyone else is listed and
//! kept unless `--force`. What a rewind overwrites is first recorded on
//! `…/<session>/undo-<n>`, which `--undo` puts back.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use trellis_worktree::checkpoint;

use crate::output::safe;

mod agent_paths;
mod copies;
mod files;
mod plain;

pub(crate) use agent_paths::Before;
use agent_paths::{AgentPaths, agent_paths};

/// The refs of the session logged at `log`.
pub(crate) fn prefix(log: &Path) -> String {
    format!(
        "refs/trellis/checkpoints/{}/",
        trellis_index::session_id(&std::path::absolute(log).unwrap_or_else(|_| log.into()))
    )
}

/// Takes a checkpoint before each turn: of the tree in a git repository; elsewhere,
/// copies of the files the agent changed so far (`copies`).
pub(crate) fn arm(spec: &mut trellis_acp::AgentSpec, log: &Path) {
    // An agent elsewhere with its own files edits nothing here.
    if spec.remote.as_ref().is_some_and(|r| !r.shared_files) {
        return;
    }
    let cwd = spec.cwd.clone();
    if checkpoint::top(&cwd).is_err() {
        copies::arm(spec, log);
        return;
    }
    let prefix = prefix(log);
    let keeper = std::sync::Mutex::new(checkpoint::Keeper::new(&cwd));
    spec.before_turn = Some(trellis_acp::BeforeTurn(std::sync::Arc::new(
        move |turn: u32, late: &std::sync::atomic::AtomicBool| {
            let refname = format!("{prefix}{turn}");
            let message = format!("trellis: the working tree before turn {turn}");
            let taken = keeper
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(&refname, &message, late);
            // Too late: the prompt went without it, and said so.
            if late.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            Some(match taken {
                Ok((t, unchanged)) => {
                    let mut text = format!(
                        "checkpoint of the working tree before turn {turn}: {} ({refname}){}",
                        &t.commit[..t.commit.len().min(12)],
                        if unchanged {
                            "; nothing changed since the last one (the same commit)"
                        } else {
                            ""
                        }
                    );
                    if !t.left_out.is_empty() {
                        let names: Vec<String> = t
                            .left_out
                            .iter()
                            .take(5)
                            .map(|(p, n)| format!("{} ({} MB)", p.display(), n >> 20))
                            .collect();
                        text.push_str(&format!(
                            "; left out for their size: {}{}",
                            names.join(", "),
                            if t.left_out.len() > 5 { ", …" } else { "" }
                        ));
                    }
                    text
                }
                Err(e) => format!("no checkpoint of the working tree before turn {turn}: {e}"),
            })
        },
    )));
}

/// A session's checkpoints: (turn, commit) by turn, and the undo points (name, commit).
type Listed = (Vec<(u32, String)>, Vec<(String, String)>);

/// The session's checkpoints: turn number and commit, by turn (undo points after).
fn listed(cwd: &Path, prefix: &str) -> anyhow::Result<Listed> {
    let all = checkpoint::list(cwd, prefix)?;
    let mut turns: Vec<(u32, String)> = all
        .iter()
        .filter_map(|(n, c)| Some((n.parse().ok()?, c.clone())))
        .collect();
    turns.sort();
    let mut undo: Vec<(String, String)> = all
        .into_iter()
        .filter(|(n, _)| n.starts_with("undo-"))
        .collect();
    undo.sort_by_key(|(n, _)| n.strip_prefix("undo-").and_then(|k| k.parse::<u32>().ok()));
    Ok((turns, undo))
}

/// `trellis sessions checkpoints ID`.
pub(crate) fn list(
    row: &trellis_index::SessionRow,
    json: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    if checkpoint::top(&dir_of(row)?).is_err() {
        return plain::list(row, json, out);
    }
    let cwd = cwd_of(row)?;
    let prefix = prefix(Path::new(&row.path));
    let (turns, undo) = listed(&cwd, &prefix)?;
    let paths = agent_paths(Path::new(&row.path))?;
    if json {
        let v: Vec<serde_json::Value> = turns
            .iter()
            .map(|(t, c)| {
                let mut v = paths.turn_json(*t);
                v["commit"] = c.as_str().into();
                v["ref"] = format!("{prefix}{t}").into();
                v
            })
            .collect();
        let undo: Vec<serde_json::Value> = undo
            .iter()
            .map(
                |(n, c)| serde_json::json!({"name": n, "commit": c, "ref": format!("{prefix}{n}")}),
            )
            .collect();
        let v = serde_json::json!({"checkpoints": v, "undo": undo});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if turns.is_empty() {
        writeln!(
            out,
            "session {} has no checkpoints{}",
            row.id,
            match paths.failures.last() {
                Some(why) => format!(": {}", safe(why)),
                None => String::new(),
            }
        )?;
        return Ok(());
    }
    for (t, c) in &turns {
        paths.turn_line(*t, Some(c), out)?;
    }
    for (n, c) in &undo {
        writeln!(
            out,
            "{n:>8}  {}  the tree before a rewind",
            &c[..c.len().min(12)]
        )?;
    }
    Ok(())
}

/// Says on stderr, before a rewind from the command line, when the session still runs in
/// another Trellis (its log is being written): an agent in the middle of a turn may write
/// again as the files go back.
pub(crate) fn warn_if_running(row: &trellis_index::SessionRow) {
    if trellis_store::session_log::is_being_written(Path::new(&row.path)) {
        say!(
            "trellis: session {} is still running in another Trellis: if a turn is under way, its agent may write again while the files go back (stop it, or rewind from its own screen: Esc Esc)",
            row.id
        );
    }
}

/// The lock every rewind (and undo) of `row` holds, from any process.
fn one_at_a_time(row: &trellis_index::SessionRow) -> anyhow::Result<trellis_os::lock::Held> {
    let root = copies::root(&row.id)?;
    let dir = root.parent().context("no data directory")?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}.lock", row.id));
    trellis_os::lock::take_within(&path, std::time::Duration::from_secs(10))?.with_context(|| {
        format!(
            "another rewind of session {} is under way: try again once it is done",
            row.id
        )
    })
}

/// `trellis sessions rewind ID --to TURN --code [--force]`, or `--undo`.
pub(crate) fn rewind(
    row: &trellis_index::SessionRow,
    to: Option<u32>,
    force: bool,
    undo: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    // An agent elsewhere edited its own files: nothing here is the code it changed.
    if let Some(at) = elsewhere(row) {
        bail!(
            "session {}'s agent ran at {at} with its own files: its edits are on that machine, not here, so no code is rewound here (its conversation can be forked: trellis sessions fork {} --at TURN)",
            row.id,
            row.id
        );
    }
    // One rewind of a session at a time: two at once would take the same undo point.
    let _one = one_at_a_time(row)?;
    // Outside git the log is the checkpoint.
    let dir = dir_of(row)?;
    if checkpoint::top(&dir).is_err() {
        return match (undo, to) {
            (true, _) => plain::undo(row, &dir, out),
            (false, Some(t)) => plain::rewind(row, &dir, t, force, out),
            (false, None) => bail!("say which turn to go back to: --to TURN"),
        };
    }
    let cwd = cwd_of(row)?;
    let prefix = prefix(Path::new(&row.path));
    let (turns, undos) = listed(&cwd, &prefix)?;
    let next_undo = format!(
        "{prefix}undo-{}",
        undos
            .iter()
            .filter_map(|(n, _)| n.strip_prefix("undo-")?.parse::<u32>().ok())
            .max()
            .unwrap_or(0)
            + 1
    );
    let done = if undo {
        let Some((name, commit)) = undos.last() else {
            bail!("session {} has no rewind to undo", row.id);
        };
        let done = checkpoint::undo(&cwd, commit, &next_undo)?;
        writeln!(
            out,
            "put back the tree as it was before the last rewind ({name}):"
        )?;
        done
    } else {
        let Some(turn) = to else {
            bail!(
                "say which turn to go back to: --to TURN (see `trellis sessions checkpoints {}`)",
                row.id
            );
        };
        let Some((_, commit)) = turns.iter().find(|(t, _)| *t == turn) else {
            bail!(
                "session {} has no checkpoint before turn {turn} (see `trellis sessions checkpoints {}`)",
                row.id,
                row.id
            );
        };
        let top = checkpoint::top(&cwd)?;
        let paths = agent_paths(Path::new(&row.path))?;
        // The agent's files, and whether each is as it left them.
        let agents: Vec<(PathBuf, bool)> = paths
            .since(turn)
            .iter()
            .filter_map(|p| Some((relative(&top, p)?, paths.as_the_agent_had_it(p))))
            .collect();
        // --force reaches only as far as the session's directory.
        let within = relative(&top, &cwd.join("x"))
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        let may = |p: &Path| {
            if force {
                (!p.starts_with(&within)).then_some(checkpoint::KEPT_OUTSIDE)
            } else {
                match agents.iter().find(|(a, _)| a == p) {
                    Some((_, true)) => None,
                    Some((_, false)) => Some(checkpoint::KEPT_NOT_AS_LEFT),
                    None => Some(checkpoint::KEPT_NOT_AGENTS),
                }
            }
        };
        let done = checkpoint::restore(&cwd, commit, &may, &next_undo)?;
        writeln!(out, "put back the tree before turn {turn}:")?;
        done
    };
    let shown = |p: &Path| safe(&trellis_text::one_line(&p.to_string_lossy())).into_owned();
    for p in &done.restored {
        writeln!(out, "  restored  {}", shown(p))?;
    }
    for p in &done.removed {
        writeln!(out, "  removed   {}", shown(p))?;
    }
    if done.restored.is_empty() && done.removed.is_empty() {
        writeln!(out, "  nothing to put back")?;
    }
    for (p, why) in &done.kept {
        writeln!(out, "  kept      {}: {why}", shown(p))?;
    }
    if done
        .kept
        .iter()
        .any(|(_, w)| *w == checkpoint::KEPT_NOT_AGENTS)
        && !undo
    {
        writeln!(out, "(--force puts back what someone else changed too)")?;
    }
    // The user's index is never touched: what is staged there stays staged.
    let staged = staged_among(&cwd, &done.restored, &done.removed);
    if !staged.is_empty() {
        writeln!(
            out,
            "still staged in your index as before: {} (`git restore --staged PATH` unstages)",
            staged.join(", ")
        )?;
    }
    if done.undo.is_empty() {
        writeln!(out, "nothing was changed")?;
    } else {
        writeln!(
            out,
            "the tree as it was is kept on {next_undo}: `trellis sessions rewind {} --undo` puts it back",
            row.id
        )?;
    }
    Ok(())
}

/// Deletes the session's checkpoints (with the session).
pub(crate) fn forget(row: &trellis_index::SessionRow) -> usize {
    // Undo points of rewinds outside git go with it too.
    let plain = plain::forget(row);
    plain
        + cwd_of(row)
            .ok()
            .and_then(|cwd| checkpoint::forget(&cwd, &prefix(Path::new(&row.path))).ok())
            .unwrap_or(0)
}

/// How many undo points the session's rewinds left (in git and outside it).
pub(crate) fn undo_points(row: &trellis_index::SessionRow) -> usize {
    let plain = plain::undo_count(row);
    let git = cwd_of(row)
        .ok()
        .and_then(|cwd| listed(&cwd, &prefix(Path::new(&row.path))).ok())
        .map_or(0, |(_, undo)| undo.len());
    plain + git
}

/// Where the session ran (it must still be there).
fn dir_of(row: &trellis_index::SessionRow) -> anyhow::Result<PathBuf> {
    let cwd = row
        .cwd
        .as_deref()
        .with_context(|| format!("session {} does not say where it ran", row.id))?;
    let cwd = PathBuf::from(cwd);
    if !cwd.is_dir() {
        bail!("{} (where session {} ran) is gone", cwd.display(), row.id);
    }
    Ok(cwd)
}

/// Where the session ran, in a git repository.
fn cwd_of(row: &trellis_index::SessionRow) -> anyhow::Result<PathBuf> {
    let cwd = dir_of(row)?;
    if checkpoint::top(&cwd).is_err() {
        bail!(
            "session {} ran outside a git repository ({}): checkpoints are taken in git repositories only",
            row.id,
            cwd.display()
        );
    }
    Ok(cwd)
}

fn relative(top: &Path, p: &Path) -> Option<PathBuf> {
    if let Ok(r) = p.strip_prefix(top) {
        return Some(r.to_path_buf());
    }
    let top = top.canonicalize().ok()?;
    let parent = p.parent()?.canonicalize().ok()?;
    Some(parent.strip_prefix(&top).ok()?.join(p.file_name()?))
}

/// Which of `restored` and `removed` the user's index has staged.
fn staged_among(cwd: &Path, restored: &[PathBuf], removed: &[PathBuf]) -> Vec<String> {
    let Ok(top) = checkpoint::top(cwd) else {
        return Vec::new();
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&top)
        .args(["diff", "--cached", "--name-only", "-z"])
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_DIR")
        .output();
    let Ok(out) = out else { return Vec::new() };
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .filter(|p| restored.contains(p) || removed.contains(p))
        .map(|p| safe(&p.to_string_lossy()).into_owned())
        .collect()
}

/// The reason a mark of the log gives for a turn without a checkpoint.
pub(super) fn checkpoint_failure(msg: &serde_json::Value) -> Option<String> {
    let text = msg["text"].as_str()?;
    (msg["type"] == "mark" && text.starts_with("no checkpoint")).then(|| text.to_string())
}

/// The checkpoint a fork's worktree starts from: that of the turn the fork is before
/// (none for a fork after the last turn, whose worktree is the tree as it is now).
/// `row`: the earlier session; `before`: the turn the fork is before.
pub(crate) fn fork_base(
    row: &trellis_index::SessionRow,
    before: Option<u32>,
) -> anyhow::Result<Option<String>> {
    let Some(turn) = before else {
        return Ok(None);
    };
    let cwd = cwd_of(row)?;
    let (turns, _) = listed(&cwd, &prefix(Path::new(&row.path)))?;
    match turns.into_iter().find(|(t, _)| *t == turn) {
        Some((_, commit)) => Ok(Some(commit)),
        None => bail!(
            "session {} has no checkpoint before turn {turn}, so a worktree cannot start from that turn's files (see `trellis sessions checkpoints {}`; without --worktree the fork runs in its directory as it is now)",
            row.id,
            row.id
        ),
    }
}

/// Makes the new worktree `cwd` hold the files of checkpoint `commit` (a fork from that
/// turn): the worktree as made is kept first, on the new session's first undo point.
pub(crate) fn materialize(cwd: &Path, commit: &str, log: &Path) -> anyhow::Result<String> {
    let undo_ref = format!("{}undo-1", prefix(log));
    let done = checkpoint::restore(cwd, commit, &|_| None, &undo_ref)
        .context("cannot put the checkpoint's files into the worktree")?;
    let mut said = format!(
        "the worktree holds the files of checkpoint {} ({} put back, {} removed)",
        &commit[..commit.len().min(12)],
        done.restored.len(),
        done.removed.len()
    );
    if !done.kept.is_empty() {
        said.push_str(&format!("; {} kept as they are", done.kept.len()));
    }
    Ok(said)
}

/// Where a session's agent ran when it was dialed and worked on its own files (its log's
/// header says).
fn elsewhere(row: &trellis_index::SessionRow) -> Option<String> {
    use std::io::{BufRead, Read};
    let f = trellis_store::open_log(Path::new(&row.path)).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(f.take(1 << 20))
        .read_line(&mut first)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(first.trim()).ok()?;
    let m = &v["msg"];
    let at = m["remote"].as_str()?;
    (m["shared_files"] != true).then(|| at.to_string())
}
