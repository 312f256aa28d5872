//! Checkpoints outside git: right before each turn, the files the agent changed in the
//! turns before (the log names them) are copied into the data directory
//! (`rewinds/SESSION/turn-N/`, with a `manifest.json` of what each path held: a copy, or
//! nothing there). A file unchanged since its last copy is not copied again: the manifest
//! points at that copy.
//!
//! A rewind to before turn N takes a file from turn N's copies first: that is the file as
//! it was before the turn, whoever changed it and however (the agent's own tools, a write
//! too large for the log, a deletion). A file the agent first touched in turn N or later
//! is in no copy; the log's record of what it replaced serves for it (`plain`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

/// The largest file copied; a larger one is left out and said.
pub(super) const COPY_LIMIT: u64 = 8 << 20;

/// One path of a turn's copies.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub(super) struct Copied {
    pub path: PathBuf,
    /// The copy holding its bytes, relative to the session's `rewinds` directory (none:
    /// nothing was there).
    pub copy: Option<String>,
}

/// What the copier knows between turns.
#[derive(Default)]
struct State {
    /// How far the log was read.
    offset: u64,
    /// The agent's files so far (inside the session's directory).
    known: BTreeSet<PathBuf>,
    /// The last copy of each: its size and modification time then, and where it is.
    last: BTreeMap<PathBuf, (u64, Option<std::time::SystemTime>, String)>,
}

/// The session's `rewinds` directory (undo points and turn copies).
pub(super) fn root(session_id: &str) -> anyhow::Result<PathBuf> {
    let paths = trellis_store::Paths::from_env().context("no data directory")?;
    Ok(paths.data_dir.join("rewinds").join(session_id))
}

/// Copies before each turn of a session outside git (see the module).
pub(super) fn arm(spec: &mut trellis_acp::AgentSpec, log: &Path) {
    let cwd = spec.cwd.clone();
    let log = std::path::absolute(log).unwrap_or_else(|_| log.into());
    let id = trellis_index::session_id(&log);
    let state = Mutex::new(State::default());
    spec.before_turn = Some(trellis_acp::BeforeTurn(std::sync::Arc::new(
        move |turn: u32, _late: &std::sync::atomic::AtomicBool| {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            let root = match root(&id) {
                Ok(r) => r,
                Err(e) => return Some(format!("no copies before turn {turn}: {e:#}")),
            };
            match copy_before(&mut st, &log, &cwd, &root, turn) {
                Ok(None) => None,
                Ok(Some(said)) => Some(said),
                Err(e) => Some(format!("no copies before turn {turn}: {e:#}")),
            }
        },
    )));
}

/// Reads what the log gained, then copies the known files into `root/turn-N/`; what to
/// record in the log (nothing when the agent has changed no file yet).
fn copy_before(
    st: &mut State,
    log: &Path,
    cwd: &Path,
    root: &Path,
    turn: u32,
) -> anyhow::Result<Option<String>> {
    read_new(st, log, cwd)?;
    if st.known.is_empty() {
        return Ok(None);
    }
    let dir_name = format!("turn-{turn}");
    let dir = root.join(&dir_name);
    std::fs::create_dir_all(root)?;
    // Made exclusively: never into what another process left there.
    std::fs::create_dir(&dir).with_context(|| format!("{}", dir.display()))?;
    let mut manifest = Vec::new();
    let mut left_out = Vec::new();
    let mut copied = 0usize;
    for (i, p) in st.known.iter().enumerate() {
        // Reached through a link: what is there is not the session's.
        if !super::files::inside(cwd, p) {
            left_out.push(p.clone());
            continue;
        }
        let meta = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                manifest.push(Copied {
                    path: p.clone(),
                    copy: None,
                });
                continue;
            }
            Err(_) => {
                left_out.push(p.clone());
                continue;
            }
        };
        if !meta.is_file() || meta.len() > COPY_LIMIT {
            left_out.push(p.clone());
            continue;
        }
        let modified = meta.modified().ok();
        let copy = match st.last.get(p) {
            Some((len, at, copy))
                if *len == meta.len() && *at == modified && modified.is_some() =>
            {
                copy.clone()
            }
            _ => {
                let Some(mut f) = trellis_os::fd::open_regular(p)? else {
                    left_out.push(p.clone());
                    continue;
                };
                let mut bytes = Vec::new();
                f.by_ref().take(COPY_LIMIT + 1).read_to_end(&mut bytes)?;
                if bytes.len() as u64 > COPY_LIMIT {
                    left_out.push(p.clone());
                    continue;
                }
                let name = format!("{dir_name}/{i}");
                super::files::write_new(&root.join(&name), &bytes)?;
                copied += 1;
                st.last
                    .insert(p.clone(), (meta.len(), modified, name.clone()));
                name
            }
        };
        manifest.push(Copied {
            path: p.clone(),
            copy: Some(copy),
        });
    }
    super::files::write_new(
        &dir.join("manifest.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    let how = if copied == manifest.len() {
        "copied".to_string()
    } else {
        format!("{copied} copied, the others unchanged since their last copy")
    };
    let mut said = format!(
        "no git here: the {} file(s) the agent changed (or asked to change) in earlier turns, as they are before turn {turn} ({how}): {}",
        manifest.len(),
        dir.display()
    );
    if !left_out.is_empty() {
        let names: Vec<String> = left_out
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        said.push_str(&format!(
            "; left out (a link, a directory, or over {} MB): {}{}",
            COPY_LIMIT >> 20,
            names.join(", "),
            if left_out.len() > 5 { ", …" } else { "" }
        ));
    }
    Ok(Some(said))
}

/// Adds the paths the log's new lines show the agent changing (a write it asked for,
/// a diff, the locations of an edit, a deletion or a move) inside `cwd`.
fn read_new(st: &mut State, log: &Path, cwd: &Path) -> anyhow::Result<()> {
    let Some(mut f) = trellis_os::fd::open_regular(log)? else {
        anyhow::bail!("{} is not a session log", log.display());
    };
    f.seek(std::io::SeekFrom::Start(st.offset))?;
    // Only lines that can name a changed file are parsed: a long turn's log is mostly
    // output, and the prompt waits for this. A line at a time (the recorder bounds them).
    let wanted = [
        memchr::memmem::Finder::new(b"diff"),
        memchr::memmem::Finder::new(b"write_text_file"),
        memchr::memmem::Finder::new(b"locations"),
    ];
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = std::io::BufRead::read_until(&mut r, b'\n', &mut line)?;
        // The end, or the line being written: read next time.
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        st.offset += n as u64;
        if !wanted.iter().any(|w| w.find(&line).is_some()) {
            continue;
        }
        for p in changed_paths(&line[..n - 1]) {
            if p.is_absolute() && p.starts_with(cwd) {
                st.known.insert(p);
            }
        }
    }
    Ok(())
}

/// The paths one log line shows the agent changing.
fn changed_paths(line: &[u8]) -> Vec<PathBuf> {
    let Ok(rec) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Vec::new();
    };
    let msg = &rec["msg"];
    let mut out = Vec::new();
    if rec["dir"] != "agent_to_client" {
        return out;
    }
    match msg["method"].as_str() {
        Some("fs/write_text_file") => {
            if let Some(p) = msg["params"]["path"].as_str() {
                out.push(PathBuf::from(p));
            }
        }
        Some("session/update") => {
            let u = &msg["params"]["update"];
            for item in u["content"].as_array().into_iter().flatten() {
                if item["type"] == "diff"
                    && let Some(p) = item["path"].as_str()
                {
                    out.push(PathBuf::from(p));
                }
            }
            if matches!(u["kind"].as_str(), Some("edit" | "delete" | "move")) {
                for l in u["locations"].as_array().into_iter().flatten() {
                    if let Some(p) = l["path"].as_str() {
                        out.push(PathBuf::from(p));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// Turn `turn`'s copies, when they were taken.
pub(super) fn of_turn(root: &Path, turn: u32) -> Option<Vec<Copied>> {
    let bytes = std::fs::read(root.join(format!("turn-{turn}/manifest.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The bytes of a copy named in a manifest (never through a link, never outside `root`).
pub(super) fn read_copy(root: &Path, copy: &str) -> anyhow::Result<Vec<u8>> {
    let rel = Path::new(copy);
    anyhow::ensure!(
        rel.components()
            .all(|c| matches!(c, std::path::Component::Normal(_))),
        "a copy outside the session's rewinds: {copy}"
    );
    let path = root.join(rel);
    let mut f = trellis_os::fd::open_regular(&path)?
        .with_context(|| format!("{} is not a copy", path.display()))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn line(v: serde_json::Value) -> String {
        format!("{v}\n")
    }

    /// A turn's copies hold the agent's earlier files as they are before it; a file
    /// unchanged since is not copied again, a missing one is said to be absent, one
    /// outside the session's directory or still being written in the log is not read.
    #[test]
    fn copies_before_each_turn_of_the_agents_earlier_files() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("w");
        let root = tmp.path().join("rewinds/s");
        std::fs::create_dir_all(&cwd).unwrap();
        let a = cwd.join("a.txt");
        let b = cwd.join("b.txt");
        std::fs::write(&a, "a1").unwrap();
        let log = tmp.path().join("s.jsonl");
        let diff = |p: &Path| {
            line(
                serde_json::json!({"dir":"agent_to_client","msg":{"method":"session/update",
                "params":{"update":{"sessionUpdate":"tool_call","toolCallId":"c","kind":"edit",
                "content":[{"type":"diff","path":p,"newText":"x"}]}}}}),
            )
        };
        let mut text = diff(&a);
        text.push_str(&line(
            serde_json::json!({"dir":"agent_to_client","msg":{"method":"fs/write_text_file",
            "id":1,"params":{"path":b,"content":"b1"}}}),
        ));
        text.push_str(&diff(Path::new("/elsewhere/c.txt")));
        // Half a line: not yet.
        text.push_str(r#"{"dir":"agent_to_client","msg":{"method":"fs/write"#);
        std::fs::write(&log, &text).unwrap();
        let mut st = State::default();
        let said = copy_before(&mut st, &log, &cwd, &root, 2).unwrap().unwrap();
        assert!(
            said.contains("2 file(s)") && said.contains("1 copied"),
            "{said}"
        );
        let m = of_turn(&root, 2).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, a);
        assert_eq!(
            read_copy(&root, m[0].copy.as_deref().unwrap()).unwrap(),
            b"a1"
        );
        assert_eq!(
            m[1],
            Copied {
                path: b.clone(),
                copy: None
            }
        );
        // Turn 3: a unchanged (its copy reused), b made since.
        std::fs::write(&b, "b2").unwrap();
        let said = copy_before(&mut st, &log, &cwd, &root, 3).unwrap().unwrap();
        assert!(said.contains("1 copied"), "{said}");
        let m3 = of_turn(&root, 3).unwrap();
        assert_eq!(m3[0].copy, m[0].copy, "unchanged: the same copy");
        assert_eq!(
            read_copy(&root, m3[1].copy.as_deref().unwrap()).unwrap(),
            b"b2"
        );
        // A link in the agent's place is left out, never read through.
        std::fs::remove_file(&a).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &a).unwrap();
        let said = copy_before(&mut st, &log, &cwd, &root, 4).unwrap().unwrap();
        assert!(said.contains("left out"), "{said}");
        assert!(read_copy(&root, "../s/turn-2/0").is_err());
    }

    #[test]
    fn nothing_is_copied_before_the_agent_changed_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("s.jsonl");
        std::fs::write(&log, "{}\n").unwrap();
        let root = tmp.path().join("r");
        let said = copy_before(&mut State::default(), &log, tmp.path(), &root, 1).unwrap();
        assert_eq!(said, None);
        assert!(!root.exists());
    }
}
