//! What a session's log says its agent changed: the paths of each turn's writes, edits,
//! diffs and moves that took effect, each file's states as the agent left them (as
//! digests), and what each change replaced — read once, a line at a time, by the
//! rewinds and the checkpoints' listing.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::checkpoint_failure;
use crate::output::safe;

/// What the log says the agent changed, by turn, and each turn's prompt.
#[derive(Default)]
pub(super) struct AgentPaths {
    /// (turn, absolute path) of each write, edit, diff or move that took effect.
    pub(super) changed: Vec<(u32, PathBuf)>,
    pub(super) prompts: Vec<String>,
    /// When each turn began (Unix seconds), where the log says.
    pub(super) began: Vec<Option<f64>>,
    /// What the agent last wrote to each file (its writes and completed diffs): a file
    /// that differs now was changed since by someone else.
    pub(super) last: std::collections::HashMap<PathBuf, Option<String>>,
    /// Every state the agent left each file in (its content's digest; none: deleted):
    /// a file in one of them holds no one else's work (an earlier rewind may have put
    /// it back there), so stepping back turn by turn needs no second yes.
    pub(super) versions: std::collections::HashMap<PathBuf, Vec<Option<[u8; 32]>>>,
    /// Why a checkpoint was not taken (the log's marks).
    pub(super) failures: Vec<String>,
    /// Each change with what the file was before it, in the order they took effect
    /// (a rewind outside git puts back the oldest since a turn).
    pub(super) pre: Vec<Change>,
}

/// One change of a file by the agent, and what the file held before it.
pub(super) struct Change {
    pub(super) turn: u32,
    pub(super) path: PathBuf,
    pub(super) before: Before,
}

/// What a file held before a change, as the log tells it.
#[derive(Clone, PartialEq)]
pub(crate) enum Before {
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
    pub(super) fn as_left(&self, p: &Path) -> bool {
        match self.last.get(p) {
            Some(Some(text)) => std::fs::read(p).is_ok_and(|now| now == text.as_bytes()),
            // Deleted by the agent: still gone.
            Some(None) => std::fs::symlink_metadata(p).is_err(),
            None => true,
        }
    }

    /// `p` is as the agent left it, or as it left it at some earlier point (where a
    /// rewind put it back): no one else's work is in it.
    pub(super) fn as_the_agent_had_it(&self, p: &Path) -> bool {
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
    pub(super) fn left(&mut self, p: PathBuf, text: Option<String>) {
        self.versions
            .entry(p.clone())
            .or_default()
            .push(text.as_deref().map(|t| digest(t.as_bytes())));
        self.last.insert(p, text);
    }

    /// A turn of `sessions checkpoints`: when it began, its commit (in git), how many
    /// files the agent changed since, its prompt.
    pub(super) fn turn_line(
        &self,
        t: u32,
        commit: Option<&str>,
        out: &mut String,
    ) -> std::fmt::Result {
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
    pub(super) fn turn_json(&self, t: u32) -> serde_json::Value {
        let i = t as usize - 1;
        serde_json::json!({"turn": t, "prompt": self.prompts.get(i),
            "began": self.began.get(i).copied().flatten(),
            "files_changed_by_the_agent_since": self.since(t)})
    }

    /// The files changed in turn `turn` or later.
    pub(super) fn since(&self, turn: u32) -> Vec<PathBuf> {
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
    pub(super) kind: String,
    pub(super) status: String,
    pub(super) turn: u32,
    pub(super) changes: Vec<(PathBuf, Option<String>)>,
    pub(super) befores: Vec<(PathBuf, Option<String>)>,
    pub(super) locations: Vec<PathBuf>,
    /// The log line it completed at.
    pub(super) done_at: Option<u64>,
}

/// Reads the log for the files the agent changed: `fs/write_text_file` requests that were
/// carried out, and the diffs and locations of its edit, delete and move calls that
/// completed (a refused or failed edit changed nothing).
pub(super) fn agent_paths(log: &Path) -> anyhow::Result<AgentPaths> {
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
    // An agent elsewhere that shares this machine's files names them by its own paths
    // (the header says where they are here).
    let mut paths = trellis_core::path_map::PathMap::default();
    let here = |paths: &trellis_core::path_map::PathMap, p: &str| {
        PathBuf::from(paths.to_local(p).unwrap_or_else(|| p.to_string()))
    };
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
                    writes.insert(id, (turn, here(&paths, p), content.to_string()));
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
                            here(&paths, p),
                            item["newText"].as_str().map(str::to_string),
                        ));
                        c.befores.push((
                            here(&paths, p),
                            item["oldText"].as_str().map(str::to_string),
                        ));
                    }
                }
                for l in u["locations"].as_array().into_iter().flatten() {
                    if let Some(p) = l["path"].as_str() {
                        c.locations.push(here(&paths, p));
                    }
                }
            }
            (Some("client"), _) if msg["type"] == "session_log" => {
                started = msg["started"].as_f64();
                paths = serde_json::from_value(msg["paths"].clone()).unwrap_or_default();
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
pub(super) fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}
