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

/// The refs of the session logged at `log`.
pub(crate) fn prefix(log: &Path) -> String {
    format!(
        "refs/trellis/checkpoints/{}/",
        trellis_index::session_id(&std::path::absolute(log).unwrap_or_else(|_| log.into()))
    )
}

/// Takes a checkpoint before each turn of a session in a git repository (nothing
/// elsewhere: a directory outside git has no checkpoints yet).
pub(crate) fn arm(spec: &mut trellis_acp::AgentSpec, log: &Path) {
    let cwd = spec.cwd.clone();
    if checkpoint::top(&cwd).is_err() {
        return;
    }
    let prefix = prefix(log);
    spec.before_turn = Some(trellis_acp::BeforeTurn(std::sync::Arc::new(
        move |turn: u32, late: &std::sync::atomic::AtomicBool| {
            let refname = format!("{prefix}{turn}");
            let message = format!("trellis: the working tree before turn {turn}");
            let taken = checkpoint::take_unless(&cwd, &refname, &message, late);
            // Too late: the prompt went without it, and said so.
            if late.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            Some(match taken {
                Ok(t) => {
                    let mut text = format!(
                        "checkpoint of the working tree before turn {turn}: {} ({refname})",
                        &t.commit[..t.commit.len().min(12)]
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
    let undo = all
        .into_iter()
        .filter(|(n, _)| n.starts_with("undo-"))
        .collect();
    Ok((turns, undo))
}

/// `trellis sessions checkpoints ID`.
pub(crate) fn list(
    row: &trellis_index::SessionRow,
    json: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    let cwd = cwd_of(row)?;
    let prefix = prefix(Path::new(&row.path));
    let (turns, undo) = listed(&cwd, &prefix)?;
    let paths = agent_paths(Path::new(&row.path))?;
    if json {
        let v: Vec<serde_json::Value> = turns
            .iter()
            .map(|(t, c)| {
                serde_json::json!({"turn": t, "commit": c, "ref": format!("{prefix}{t}"),
                                   "files_changed_by_the_agent_since": paths.since(*t).len()})
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if turns.is_empty() {
        writeln!(
            out,
            "session {} has no checkpoints (they are taken before each turn in a git repository)",
            row.id
        )?;
        return Ok(());
    }
    for (t, c) in &turns {
        let prompt = paths
            .prompts
            .get(*t as usize - 1)
            .map_or("", String::as_str);
        writeln!(
            out,
            "turn {t:>3}  {}  {} file(s) changed by the agent since  {}",
            &c[..c.len().min(12)],
            paths.since(*t).len(),
            safe(
                &trellis_text::one_line(prompt)
                    .chars()
                    .take(60)
                    .collect::<String>()
            )
        )?;
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

/// `trellis sessions rewind ID --to TURN --code [--force]`, or `--undo`.
pub(crate) fn rewind(
    row: &trellis_index::SessionRow,
    to: Option<u32>,
    force: bool,
    undo: bool,
    out: &mut String,
) -> anyhow::Result<()> {
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
    let (target, allowed, what): (String, Option<Vec<PathBuf>>, String) = if undo {
        let Some((name, commit)) = undos
            .iter()
            .max_by_key(|(n, _)| n.strip_prefix("undo-").and_then(|n| n.parse::<u32>().ok()))
        else {
            bail!("session {} has no rewind to undo", row.id);
        };
        (
            commit.clone(),
            None,
            format!("the tree as it was before the last rewind ({name})"),
        )
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
        let rel: Vec<PathBuf> = paths
            .since(turn)
            .iter()
            .filter_map(|p| relative(&top, p))
            .collect();
        (
            commit.clone(),
            (!force).then_some(rel),
            format!("the tree before turn {turn}"),
        )
    };
    let may = |p: &Path| allowed.as_ref().is_none_or(|a| a.iter().any(|x| x == p));
    let done = checkpoint::restore(&cwd, &target, &may, &next_undo)?;
    writeln!(out, "put back {what}:")?;
    for p in &done.restored {
        writeln!(out, "  restored  {}", safe(&p.to_string_lossy()))?;
    }
    for p in &done.removed {
        writeln!(out, "  removed   {}", safe(&p.to_string_lossy()))?;
    }
    if done.restored.is_empty() && done.removed.is_empty() {
        writeln!(out, "  nothing to put back")?;
    }
    if !done.kept.is_empty() {
        writeln!(
            out,
            "kept, changed by someone other than the agent (--force puts them back too):"
        )?;
        for p in &done.kept {
            writeln!(out, "  kept      {}", safe(&p.to_string_lossy()))?;
        }
    }
    writeln!(
        out,
        "the tree as it was is kept on {next_undo}: `trellis sessions rewind {} --undo` puts it back",
        row.id
    )?;
    Ok(())
}

/// Deletes the session's checkpoints (with the session).
pub(crate) fn forget(row: &trellis_index::SessionRow) -> usize {
    cwd_of(row)
        .ok()
        .and_then(|cwd| checkpoint::forget(&cwd, &prefix(Path::new(&row.path))).ok())
        .unwrap_or(0)
}

fn cwd_of(row: &trellis_index::SessionRow) -> anyhow::Result<PathBuf> {
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

fn relative(top: &Path, p: &Path) -> Option<PathBuf> {
    if let Ok(r) = p.strip_prefix(top) {
        return Some(r.to_path_buf());
    }
    let top = top.canonicalize().ok()?;
    let parent = p.parent()?.canonicalize().ok()?;
    Some(parent.strip_prefix(&top).ok()?.join(p.file_name()?))
}

/// What the log says the agent changed, by turn, and each turn's prompt.
#[derive(Default)]
struct AgentPaths {
    /// (turn, absolute path) of each write, edit, diff or move.
    changed: Vec<(u32, PathBuf)>,
    prompts: Vec<String>,
}

impl AgentPaths {
    /// The files changed in turn `turn` or later.
    fn since(&self, turn: u32) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self
            .changed
            .iter()
            .filter(|(t, _)| *t >= turn)
            .map(|(_, p)| p.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Reads the log for the files the agent changed: `fs/write_text_file` requests, the
/// diffs of its tool calls, and the locations of its edit, delete and move calls.
fn agent_paths(log: &Path) -> anyhow::Result<AgentPaths> {
    use std::io::BufRead;
    let file = trellis_os::fd::open_regular(log)?
        .with_context(|| format!("{} is not a session log", log.display()))?;
    let mut found = AgentPaths::default();
    let mut turn = 0u32;
    // A call's kind, from its announcement (updates may not repeat it).
    let mut kinds: std::collections::HashMap<String, String> = Default::default();
    for line in std::io::BufReader::new(file).split(b'\n') {
        let line = line?;
        let Ok(rec) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let msg = &rec["msg"];
        match (rec["dir"].as_str(), msg["method"].as_str()) {
            (Some("client_to_agent"), Some("session/prompt")) => {
                turn += 1;
                let text = msg["params"]["prompt"]
                    .as_array()
                    .and_then(|b| b.iter().find_map(|b| b["text"].as_str()))
                    .unwrap_or_default();
                found.prompts.push(text.to_string());
            }
            (Some("agent_to_client"), Some("fs/write_text_file")) => {
                if let Some(p) = msg["params"]["path"].as_str() {
                    found.changed.push((turn, PathBuf::from(p)));
                }
            }
            (Some("agent_to_client"), Some("session/update")) => {
                let u = &msg["params"]["update"];
                for c in u["content"].as_array().into_iter().flatten() {
                    if c["type"] == "diff"
                        && let Some(p) = c["path"].as_str()
                    {
                        found.changed.push((turn, PathBuf::from(p)));
                    }
                }
                let id = u["toolCallId"].as_str().unwrap_or_default();
                if let Some(k) = u["kind"].as_str() {
                    kinds.insert(id.to_string(), k.to_string());
                }
                if matches!(
                    kinds.get(id).map(String::as_str),
                    Some("edit" | "delete" | "move")
                ) {
                    for l in u["locations"].as_array().into_iter().flatten() {
                        if let Some(p) = l["path"].as_str() {
                            found.changed.push((turn, PathBuf::from(p)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}
