//! Files of a checkpoint outside git reached and written safely: a path that goes through
//! directories only, a file created exclusively. Used by the copies taken as a session
//! runs (`copies.rs`) and by the rewinds that put them back (`plain.rs`).

use std::path::Path;

use anyhow::Context as _;

/// Whether `p` is reached from `cwd` through directories only: plain names (no `..`),
/// and no link or file on the way (writing or removing there would land elsewhere).
pub(super) fn inside(cwd: &Path, p: &Path) -> bool {
    use std::path::Component;
    let Ok(rel) = p.strip_prefix(cwd) else {
        return false;
    };
    let parts: Vec<Component<'_>> = rel.components().collect();
    if parts.is_empty() || !parts.iter().all(|c| matches!(c, Component::Normal(_))) {
        return false;
    }
    let mut at = cwd.to_path_buf();
    for c in &parts[..parts.len() - 1] {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            // Nothing further down: nothing to land on elsewhere.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            _ => return false,
        }
    }
    true
}

/// A file of ours, created exclusively (never through what already sits at `path`).
pub(super) fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("{}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}
