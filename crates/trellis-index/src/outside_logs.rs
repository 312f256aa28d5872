//! Logs written outside the sessions directory (`trellis run --log FILE`). The sessions
//! directory is scanned, so its logs are always found again; a log elsewhere would be known
//! only to the index, and an index can be lost (deleted, damaged and set aside, replaced by
//! a newer Trellis). So where such a log lives is also kept in a small file of its own in
//! a directory beside the index — one file per log, named by a hash of its path, written
//! to a temporary name and linked into place without replacing anything — and every
//! refresh reads them. Any number of processes can add theirs at once.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The directory of pointers beside the index file.
pub const DIR: &str = "logs-elsewhere";

/// A pointer is a path: anything longer is not one of ours.
const MAX_POINTER: u64 = 16 << 10;

fn dir(index: &Path) -> PathBuf {
    index.parent().unwrap_or(Path::new(".")).join(DIR)
}

fn name(log: &Path) -> String {
    let digest = Sha256::digest(log.as_os_str().as_encoded_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Records that `log` (an absolute path) is a session log. Idempotent.
pub fn remember(index: &Path, log: &Path) -> std::io::Result<()> {
    let dir = dir(index);
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&dir)?;
    let target = dir.join(name(log));
    if target.is_file() {
        return Ok(());
    }
    let mut tmp = tempfile::Builder::new().prefix(".new-").tempfile_in(&dir)?;
    tmp.write_all(log.to_string_lossy().as_bytes())?;
    match tmp.persist_noclobber(&target) {
        Ok(_) => Ok(()),
        // Another process recorded the same log meanwhile.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.error),
    }
}

/// Every log recorded; pointers to logs that no longer exist are removed (a log is
/// created before its pointer, so a missing one was deleted).
pub fn recorded(index: &Path) -> Vec<PathBuf> {
    let dir = dir(index);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut logs = Vec::new();
    for e in rd.flatten() {
        let file_name = e.file_name();
        let Some(name_str) = file_name.to_str() else {
            continue;
        };
        if name_str.len() != 64 || !name_str.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Some(log) = read_pointer(&e.path()) else {
            continue;
        };
        // Only a pointer whose name matches its content (never another file's name).
        if name(&log) != name_str {
            continue;
        }
        if log.is_file() {
            logs.push(log);
        } else if std::fs::symlink_metadata(&log)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
    logs
}

fn read_pointer(p: &Path) -> Option<PathBuf> {
    let f = std::fs::File::open(p).ok()?;
    let mut text = String::new();
    f.take(MAX_POINTER).read_to_string(&mut text).ok()?;
    let log = PathBuf::from(text);
    log.is_absolute().then_some(log)
}

/// Forgets the pointer of `log` (its log was deleted by `trellis sessions rm`).
pub fn forget(index: &Path, log: &Path) {
    let _ = std::fs::remove_file(dir(index).join(name(log)));
}
