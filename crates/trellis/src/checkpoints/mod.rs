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

mod copies;
mod plain;

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
        eprintln!(
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

/// What the log says the agent changed, by turn, and each turn's prompt.
#[derive(Default)]
struct AgentPaths {
    /// (turn, absolute path) of each write, edit, diff or move that took effect.
    changed: Vec<(u32, PathBuf)>,
    prompts: Vec<String>,
    /// When each turn began (Unix seconds), where the log says.
    began: Vec<Option<f64>>,
    /// What the agent last wrote to each file (its writes and completed diffs): a file
    /// that differs now was changed since by someone else.
    last: std::collections::HashMap<PathBuf, Option<String>>,
    /// Every state the agent left each file in (its content's digest; none: deleted):
    /// a file in one of them holds no one else's work (an earlier rewind may have put
    /// it back there), so stepping back turn by turn needs no second yes.
    versions: std::collections::HashMap<PathBuf, Vec<Option<[u8; 32]>>>,
    /// Why a checkpoint was not taken (the log's marks).
    failures: Vec<String>,
    /// Each change with what the file was before it, in the order they took effect
    /// (a rewind outside git puts back the oldest since a turn).
    pre: Vec<Change>,
}

/// One change of a file by the agent, and what the file held before it.
struct Change {
    turn: u32,
    path: PathBuf,
    before: Before,
}

/// What a file held before a change, as the log tells it.
#[derive(Clone, PartialEq)]
enum Before {
    /// It was not there.
    Absent,
    Text(String),
    /// A copy taken before the turn (its name under the session's `rewinds`).
    Copy(String),
    /// The log does not say (a write over a file too large to keep, a deletion).
    Unknown,
}

impl AgentPaths {
    /// `p` is as the agent left it (or the log cannot say).
    fn as_left(&self, p: &Path) -> bool {
        match self.last.get(p) {
            Some(Some(text)) => std::fs::read(p).is_ok_and(|now| now == text.as_bytes()),
            // Deleted by the agent: still gone.
            Some(None) => std::fs::symlink_metadata(p).is_err(),
            None => true,
        }
    }

    /// `p` is as the agent left it, or as it left it at some earlier point (where a
    /// rewind put it back): no one else's work is in it.
    fn as_the_agent_had_it(&self, p: &Path) -> bool {
        if self.as_left(p) {
            return true;
        }
        let Some(versions) = self.versions.get(p) else {
            return false;
        };
        let now = match trellis_os::fd::open_regular(p) {
            Ok(Some(mut f)) => {
                let mut bytes = Vec::new();
                if std::io::Read::read_to_end(&mut f, &mut bytes).is_err() {
                    return false;
                }
                Some(digest(&bytes))
            }
            // Gone: as the agent left it if it deleted it once.
            _ if std::fs::symlink_metadata(p).is_err() => None,
            _ => return false,
        };
        versions.contains(&now)
    }

    /// What the agent left `p` holding (none: deleted), remembered as [`Self::last`] and
    /// among its versions.
    fn left(&mut self, p: PathBuf, text: Option<String>) {
        self.versions
            .entry(p.clone())
            .or_default()
            .push(text.as_deref().map(|t| digest(t.as_bytes())));
        self.last.insert(p, text);
    }

    /// A turn of `sessions checkpoints`: when it began, its commit (in git), how many
    /// files the agent changed since, its prompt.
    fn turn_line(&self, t: u32, commit: Option<&str>, out: &mut String) -> std::fmt::Result {
        let i = t as usize - 1;
        let prompt = self.prompts.get(i).map_or("", String::as_str);
        let began = self.began.get(i).copied().flatten();
        writeln!(
            out,
            "turn {t:>3}  {}  {}{} file(s) changed by the agent since  {}",
            began.map_or_else(|| "-".repeat(20), trellis_core::civil::utc_minutes),
            commit.map_or(String::new(), |c| format!("{}  ", &c[..c.len().min(12)])),
            self.since(t).len(),
            safe(
                &trellis_text::one_line(prompt)
                    .chars()
                    .take(60)
                    .collect::<String>()
            )
        )
    }

    /// A turn of `sessions checkpoints --json`.
    fn turn_json(&self, t: u32) -> serde_json::Value {
        let i = t as usize - 1;
        serde_json::json!({"turn": t, "prompt": self.prompts.get(i),
            "began": self.began.get(i).copied().flatten(),
            "files_changed_by_the_agent_since": self.since(t)})
    }

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

/// A call seen in the log: kind, status, and what it would change (path, new text; path,
/// old text).
struct Call {
    kind: String,
    status: String,
    turn: u32,
    changes: Vec<(PathBuf, Option<String>)>,
    befores: Vec<(PathBuf, Option<String>)>,
    locations: Vec<PathBuf>,
    /// The log line it completed at.
    done_at: Option<u64>,
}

/// Reads the log for the files the agent changed: `fs/write_text_file` requests that were
/// carried out, and the diffs and locations of its edit, delete and move calls that
/// completed (a refused or failed edit changed nothing).
fn agent_paths(log: &Path) -> anyhow::Result<AgentPaths> {
    use std::io::BufRead;
    let file = trellis_os::fd::open_regular(log)?
        .with_context(|| format!("{} is not a session log", log.display()))?;
    let mut found = AgentPaths::default();
    let mut turn = 0u32;
    let mut line_no = 0u64;
    let mut started: Option<f64> = None;
    let mut timed: Vec<(u64, Change)> = Vec::new();
    let mut calls: Vec<(String, Call)> = Vec::new();
    // Writes asked for, by request id, until the log says they were done.
    let mut writes: std::collections::HashMap<String, (u32, PathBuf, String)> = Default::default();
    for line in std::io::BufReader::new(file).split(b'\n') {
        let line = line?;
        line_no += 1;
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
                found
                    .began
                    .push(started.zip(rec["t"].as_f64()).map(|(s, t)| s + t));
            }
            (Some("agent_to_client"), Some("fs/write_text_file")) => {
                let id = msg.get("id").and_then(|id| {
                    trellis_core::wire::canonical_id(&id.to_string())
                        .ok()
                        .flatten()
                });
                if let (Some(p), Some(id)) = (msg["params"]["path"].as_str(), id) {
                    let content = msg["params"]["content"].as_str().unwrap_or_default();
                    writes.insert(id, (turn, PathBuf::from(p), content.to_string()));
                }
            }
            (Some("agent_to_client"), Some("session/update")) => {
                let u = &msg["params"]["update"];
                let Some(id) = u["toolCallId"].as_str() else {
                    continue;
                };
                let i = match calls.iter().position(|(c, _)| c == id) {
                    Some(i) => i,
                    None => {
                        calls.push((
                            id.to_string(),
                            Call {
                                kind: String::new(),
                                status: String::new(),
                                turn,
                                changes: Vec::new(),
                                befores: Vec::new(),
                                locations: Vec::new(),
                                done_at: None,
                            },
                        ));
                        calls.len() - 1
                    }
                };
                let c = &mut calls[i].1;
                if let Some(k) = u["kind"].as_str() {
                    c.kind = k.to_string();
                }
                if let Some(st) = u["status"].as_str() {
                    c.status = st.to_string();
                    if st == "completed" && c.done_at.is_none() {
                        c.done_at = Some(line_no);
                    }
                }
                for item in u["content"].as_array().into_iter().flatten() {
                    if item["type"] == "diff"
                        && let Some(p) = item["path"].as_str()
                    {
                        c.changes.push((
                            PathBuf::from(p),
                            item["newText"].as_str().map(str::to_string),
                        ));
                        c.befores.push((
                            PathBuf::from(p),
                            item["oldText"].as_str().map(str::to_string),
                        ));
                    }
                }
                for l in u["locations"].as_array().into_iter().flatten() {
                    if let Some(p) = l["path"].as_str() {
                        c.locations.push(PathBuf::from(p));
                    }
                }
            }
            (Some("client"), _) if msg["type"] == "session_log" => {
                started = msg["started"].as_f64();
            }
            (Some("client"), _) if msg["type"] == "file_written" => {
                if let Some((t, p, content)) =
                    msg["request_id"].as_str().and_then(|id| writes.remove(id))
                {
                    let before = match (msg["existed"].as_bool(), msg["old"].as_str()) {
                        (Some(false), _) => Before::Absent,
                        (_, Some(old)) => Before::Text(old.to_string()),
                        _ => Before::Unknown,
                    };
                    timed.push((
                        line_no,
                        Change {
                            turn: t,
                            path: p.clone(),
                            before,
                        },
                    ));
                    found.changed.push((t, p.clone()));
                    found.left(p, Some(content));
                }
            }
            _ => {}
        }
        if let Some(why) = checkpoint_failure(msg) {
            found.failures.push(why);
        }
    }
    completed_calls(&mut found, &mut timed, calls, line_no);
    timed.sort_by_key(|(at, _)| *at);
    found.pre = timed.into_iter().map(|(_, c)| c).collect();
    Ok(found)
}

/// What the completed calls changed (a refused or failed edit changed nothing), into
/// `found`, each change at the log line it completed at (`end`: still open at the end).
fn completed_calls(
    found: &mut AgentPaths,
    timed: &mut Vec<(u64, Change)>,
    calls: Vec<(String, Call)>,
    line_no: u64,
) {
    for (_, c) in calls.into_iter().filter(|(_, c)| c.status == "completed") {
        let at = c.done_at.unwrap_or(line_no);
        for (p, old) in &c.befores {
            // No old text: ACP's word for a new file, but some agents report their own
            // tools' edits of a file that was there this way. Only a copy from before the
            // turn, or a write Trellis carried out, proves a file was not there.
            let before = old.clone().map_or(Before::Unknown, Before::Text);
            timed.push((
                at,
                Change {
                    turn: c.turn,
                    path: p.clone(),
                    before,
                },
            ));
        }
        let diffed: Vec<PathBuf> = c.changes.iter().map(|(p, _)| p.clone()).collect();
        for (p, text) in c.changes {
            found.changed.push((c.turn, p.clone()));
            found.left(p, text);
        }
        if matches!(c.kind.as_str(), "edit" | "delete" | "move") {
            for p in c.locations.into_iter().filter(|p| !diffed.contains(p)) {
                timed.push((
                    at,
                    Change {
                        turn: c.turn,
                        path: p.clone(),
                        before: Before::Unknown,
                    },
                ));
                found.changed.push((c.turn, p.clone()));
                if c.kind == "delete" {
                    found.left(p, None);
                } else {
                    // What it left is not on the record: taken as it is.
                    found.last.remove(&p);
                }
            }
        }
    }
}

/// A file's content, as a digest (its versions are compared, not kept).
fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// The reason a mark of the log gives for a turn without a checkpoint.
fn checkpoint_failure(msg: &serde_json::Value) -> Option<String> {
    let text = msg["text"].as_str()?;
    (msg["type"] == "mark" && text.starts_with("no checkpoint")).then(|| text.to_string())
}

/// The checkpoint a fork's worktree starts from: that of the turn the fork is before
/// (none for a fork after the last turn, whose worktree is the tree as it is now).
pub(crate) fn fork_base(resume: &crate::sessions::Resume) -> anyhow::Result<Option<String>> {
    let Some(turn) = resume.fork.and_then(|f| f.at) else {
        return Ok(None);
    };
    let row = &resume.row;
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

/// The UI's rewind of the code (`c` in its rewind list): as `sessions rewind --to TURN
/// --code`, on the session logged at the path, said in lines.
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

pub(crate) fn ui_rewinder() -> trellis_tui::rewind::Rewinder {
    Box::new(|log: &Path, turn: u32, force: bool| {
        let (index, _) = crate::sessions::open_index().map_err(|e| format!("{e:#}"))?;
        let row = index
            .session(&log.to_string_lossy())
            .map_err(|e| e.to_string())?;
        let mut out = String::new();
        rewind(&row, Some(turn), force, false, &mut out).map_err(|e| format!("{e:#}"))?;
        Ok(out.lines().map(str::to_string).collect())
    })
}
