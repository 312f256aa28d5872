//! Rewinding the code of a session that ran outside git. There is no tree to go back to:
//! a file the agent had changed before the turn goes back to its copy taken right before
//! the turn (`copies`); any other goes back to what the log says the first of the
//! agent's changes since replaced (an edit's old text, a write's previous content,
//! whether the file was there). What a rewind overwrites is first copied
//! into the data directory (`rewinds/SESSION/undo-N/`), which `--undo` puts back.
//!
//! As in git: only the agent's files, only those still as it left them (`--force`: also
//! those changed since, within the session's directory), never through a link, never a
//! file whose earlier content the log does not hold.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use trellis_worktree::checkpoint::{KEPT_NOT_AS_LEFT, KEPT_OUTSIDE, KEPT_SINCE};

use super::files::{inside, write_new};
use super::{AgentPaths, Before, agent_paths};
use crate::output::safe;

/// Why a file was kept: the log does not hold what it was.
const KEPT_UNKNOWN: &str = "what it held before is not on the record (an edit reported without its old text, a write too large to keep, a deletion by the agent's own tool), and no copy of it was taken before the turn";
const KEPT_LINK: &str = "a link or a directory stands there now";
const KEPT_ON_THE_WAY: &str =
    "a link (or a file) stands on its way from the session's directory: it would land elsewhere";

/// One file of an undo point: where it is, and what it held before the rewind (none: it
/// was not there).
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    path: PathBuf,
    /// The file in the undo point holding its bytes.
    copy: Option<String>,
    /// What the rewind left there (none: it removed it): `--undo` puts back only what is
    /// still as the rewind left it.
    left: Option<String>,
    /// Or the turn's copy it left there (under the session's `rewinds`).
    #[serde(default)]
    left_copy: Option<String>,
}

/// Where a session's undo points (and its turns' copies) are.
fn undo_root(row: &trellis_index::SessionRow) -> anyhow::Result<PathBuf> {
    super::copies::root(&row.id)
}

/// The numbered undo points of a session, oldest first.
fn undo_points(root: &Path) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e
                .file_name()
                .to_str()?
                .strip_prefix("undo-")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort();
    v
}

/// `trellis sessions checkpoints ID` outside git: every turn, from the log.
pub(super) fn list(
    row: &trellis_index::SessionRow,
    json: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    let paths = agent_paths(Path::new(&row.path))?;
    let turns = 1..=u32::try_from(paths.prompts.len()).unwrap_or(u32::MAX);
    let undo: Vec<u32> = undo_root(row)
        .map(|r| undo_points(&r).into_iter().map(|(n, _)| n).collect())
        .unwrap_or_default();
    if json {
        let v: Vec<serde_json::Value> = turns
            .map(|t| {
                let mut v = paths.turn_json(t);
                v["from"] = "log".into();
                v
            })
            .collect();
        let undo: Vec<String> = undo.iter().map(|n| format!("undo-{n}")).collect();
        let v = serde_json::json!({"checkpoints": v, "undo": undo});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "no git here: a turn is rewound from the log (what each change of the agent's replaced)"
    )?;
    for t in turns {
        paths.turn_line(t, None, out)?;
    }
    for n in undo {
        writeln!(out, "  undo-{n}  the files before a rewind")?;
    }
    Ok(())
}

/// `trellis sessions rewind ID --to TURN --code` outside git.
pub(super) fn rewind(
    row: &trellis_index::SessionRow,
    cwd: &Path,
    to: u32,
    force: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    let paths = agent_paths(Path::new(&row.path))?;
    if to == 0 || to as usize > paths.prompts.len() {
        bail!(
            "session {} has {} turn(s): turn {to} is not one of them",
            row.id,
            paths.prompts.len()
        );
    }
    let root = undo_root(row)?;
    // Each file the agent changed since the turn, and what it held before: the copy
    // taken before the turn when there is one, else what the first of those changes
    // replaced.
    let copies = super::copies::of_turn(&root, to).unwrap_or_default();
    let mut firsts: Vec<(PathBuf, Before)> = Vec::new();
    for c in paths.pre.iter().filter(|c| c.turn >= to) {
        if !firsts.iter().any(|(p, _)| *p == c.path) {
            let before = match copies.iter().find(|k| k.path == c.path) {
                Some(k) => k.copy.clone().map_or(Before::Absent, Before::Copy),
                None => c.before.clone(),
            };
            firsts.push((c.path.clone(), before));
        }
    }
    writeln!(
        out,
        "put back the files before turn {to} (no git here: {}):",
        if copies.is_empty() {
            "from the log"
        } else {
            "from the copies taken before it, and the log"
        }
    )?;
    if firsts.is_empty() {
        writeln!(out, "  nothing the agent changed since")?;
        return Ok(());
    }
    let n = undo_points(&root).last().map_or(1, |(n, _)| n + 1);
    let point = root.join(format!("undo-{n}"));
    std::fs::create_dir_all(&root)?;
    // Made exclusively: another rewind at once gets its own number, or fails here.
    std::fs::create_dir(&point).with_context(|| format!("{}", point.display()))?;
    let mut saved: Vec<Saved> = Vec::new();
    let (mut restored, mut removed, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (p, before)) in firsts.iter().enumerate() {
        // Not there, as before the turn (an earlier rewind removed it): nothing to do.
        if *before == Before::Absent && std::fs::symlink_metadata(p).is_err() {
            continue;
        }
        let why = keep_why(&paths, cwd, p, before, force);
        if let Some(why) = why {
            kept.push((p.clone(), why));
            continue;
        }
        // What is there now goes into the undo point first.
        let copy = match std::fs::read(p) {
            Ok(bytes) => {
                let name = format!("{i}");
                write_new(&point.join(&name), &bytes)?;
                Some(name)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("{}", p.display())),
        };
        match before {
            Before::Text(text) => {
                replace(p, text.as_bytes())?;
                restored.push(p.clone());
            }
            Before::Copy(name) => {
                replace(p, &super::copies::read_copy(&root, name)?)?;
                restored.push(p.clone());
            }
            Before::Absent => {
                if copy.is_some() {
                    std::fs::remove_file(p).with_context(|| format!("{}", p.display()))?;
                    removed.push(p.clone());
                }
            }
            Before::Unknown => unreachable!("kept above"),
        }
        saved.push(Saved {
            path: p.clone(),
            copy,
            left: match before {
                Before::Text(t) => Some(t.clone()),
                _ => None,
            },
            left_copy: match before {
                Before::Copy(name) => Some(name.clone()),
                _ => None,
            },
        });
    }
    let manifest = serde_json::to_vec_pretty(&saved)?;
    write_new(&point.join("manifest.json"), &manifest)?;
    say(out, &restored, &removed, &kept)?;
    if restored.is_empty() && removed.is_empty() {
        let _ = std::fs::remove_dir_all(&point);
        writeln!(out, "nothing was changed")?;
    } else {
        writeln!(
            out,
            "what was there is kept in {}: `trellis sessions rewind {} --undo` puts it back",
            point.display(),
            row.id
        )?;
    }
    if kept.iter().any(|(_, w)| *w == KEPT_NOT_AS_LEFT) && !force {
        writeln!(out, "(--force puts back what was changed since too)")?;
    }
    Ok(())
}

/// Why file `p` is left as it is, if it is.
fn keep_why(
    paths: &AgentPaths,
    cwd: &Path,
    p: &Path,
    before: &Before,
    force: bool,
) -> Option<&'static str> {
    if *before == Before::Unknown {
        return Some(KEPT_UNKNOWN);
    }
    if !p.starts_with(cwd) {
        return Some(KEPT_OUTSIDE);
    }
    if !inside(cwd, p) {
        return Some(KEPT_ON_THE_WAY);
    }
    if let Ok(m) = std::fs::symlink_metadata(p)
        && !m.is_file()
    {
        return Some(KEPT_LINK);
    }
    if !force && !paths.as_the_agent_had_it(p) {
        return Some(KEPT_NOT_AS_LEFT);
    }
    None
}

/// `--undo` outside git: the newest undo point put back, for the files still as the
/// rewind left them; the point is used up.
pub(super) fn undo(
    row: &trellis_index::SessionRow,
    cwd: &Path,
    out: &mut String,
) -> anyhow::Result<()> {
    let root = undo_root(row)?;
    let Some((n, point)) = undo_points(&root).pop() else {
        bail!("session {} has no rewind to undo", row.id);
    };
    let manifest = std::fs::read(point.join("manifest.json"))
        .with_context(|| format!("{} (an undo point without its list)", point.display()))?;
    let saved: Vec<Saved> = serde_json::from_slice(&manifest)?;
    writeln!(
        out,
        "put back the files as they were before the last rewind (undo-{n}):"
    )?;
    let (mut restored, mut removed, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for s in &saved {
        let now = std::fs::read(&s.path).ok();
        let left = match (&s.left, &s.left_copy) {
            (Some(text), _) => Some(text.as_bytes().to_vec()),
            (None, Some(name)) => super::copies::read_copy(&root, name).ok(),
            (None, None) => None,
        };
        if !inside(cwd, &s.path) {
            kept.push((s.path.clone(), KEPT_ON_THE_WAY));
            continue;
        }
        let as_left = now == left;
        let link = std::fs::symlink_metadata(&s.path).is_ok_and(|m| !m.is_file());
        if !as_left || link {
            kept.push((s.path.clone(), KEPT_SINCE));
            continue;
        }
        match &s.copy {
            Some(name) => {
                let bytes = std::fs::read(point.join(name))?;
                replace(&s.path, &bytes)?;
                restored.push(s.path.clone());
            }
            None => {
                if now.is_some() {
                    std::fs::remove_file(&s.path)?;
                    removed.push(s.path.clone());
                }
            }
        }
    }
    say(out, &restored, &removed, &kept)?;
    if kept.is_empty() {
        std::fs::remove_dir_all(&point)?;
        return Ok(());
    }
    // What it holds of the files kept may be the only copy of someone's work: the point
    // stays, holding only those.
    let rest: Vec<&Saved> = saved
        .iter()
        .filter(|s| kept.iter().any(|(p, _)| *p == s.path))
        .collect();
    let manifest = serde_json::to_vec_pretty(&rest)?;
    replace(&point.join("manifest.json"), &manifest)?;
    writeln!(
        out,
        "undo-{n} stays in {}: it holds what the kept file(s) held before the rewind (each a numbered file, listed in its manifest.json)",
        point.display()
    )?;
    Ok(())
}

/// How many undo points the session's rewinds left outside git.
pub(super) fn undo_count(row: &trellis_index::SessionRow) -> usize {
    undo_root(row).map_or(0, |r| undo_points(&r).len())
}

/// Deletes the session's undo points (with the session): how many there were.
pub(super) fn forget(row: &trellis_index::SessionRow) -> usize {
    let Ok(root) = undo_root(row) else {
        return 0;
    };
    let n = undo_points(&root).len();
    if root.is_dir() {
        let _ = std::fs::remove_dir_all(&root);
    }
    let _ = std::fs::remove_file(root.with_extension("lock"));
    n
}

fn say(
    out: &mut String,
    restored: &[PathBuf],
    removed: &[PathBuf],
    kept: &[(PathBuf, &str)],
) -> anyhow::Result<()> {
    let shown = |p: &Path| safe(&trellis_text::one_line(&p.to_string_lossy())).into_owned();
    for p in restored {
        writeln!(out, "  restored  {}", shown(p))?;
    }
    for p in removed {
        writeln!(out, "  removed   {}", shown(p))?;
    }
    if restored.is_empty() && removed.is_empty() {
        writeln!(out, "  nothing to put back")?;
    }
    for (p, why) in kept {
        writeln!(out, "  kept      {}: {why}", shown(p))?;
    }
    Ok(())
}

/// `path`'s content replaced by `bytes`: a file made exclusively beside it, renamed over
/// it (a link standing there is replaced, never written through); its mode kept.
fn replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().context("a file without a directory")?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".trellis-rewind.")
        .tempfile_in(dir)
        .with_context(|| format!("{}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    if let Ok(m) = std::fs::metadata(path) {
        let _ = tmp.as_file().set_permissions(m.permissions());
    }
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("{}", path.display()))?;
    Ok(())
}
