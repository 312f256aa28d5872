//! Append-only session log files.
//!
//! Invariants: each record is written with a single `write` of a whole line (no buffering),
//! so a crash loses at most the line being written; `sync` makes everything durable and is
//! called at the end of every turn.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    bytes: u64,
    /// Records the file held when opened (see [`LogWriter::records_before`]).
    records_before: u64,
}

/// The lines of the file at `path`, and whether its last one is cut short (no newline).
fn count_lines(path: &Path) -> io::Result<(u64, bool)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut n, mut last) = (0u64, b'\n');
    loop {
        let got = f.read(&mut buf)?;
        if got == 0 {
            break;
        }
        n += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
        last = buf[got - 1];
    }
    Ok((n, last != b'\n'))
}

/// `dir` and the directories above it that are missing, made 0700.
fn private_dirs(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

impl LogWriter {
    /// Creates a new log file under `sessions_dir/YYYY-MM-DD/`, named after the time and agent.
    pub fn create_in(sessions_dir: &Path, agent: &str) -> io::Result<LogWriter> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (date, time) = civil(now.as_secs());
        let dir = sessions_dir.join(date);
        // What a session says (prompts, files, output) is the user's alone: directories
        // made 0700, logs 0600, whatever the umask.
        private_dirs(&dir)?;
        let slug: String = agent
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(32)
            .collect();
        let base = format!("{time}-{slug}-{}", std::process::id());
        for n in 0..1000 {
            let name = if n == 0 {
                format!("{base}.jsonl")
            } else {
                format!("{base}-{n}.jsonl")
            };
            let path = dir.join(name);
            match OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    written(&file);
                    return Ok(LogWriter {
                        file,
                        path,
                        bytes: 0,
                        records_before: 0,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free log file name",
        ))
    }

    /// Opens (or creates) a log at an explicit path, appending.
    pub fn open(path: &Path) -> io::Result<LogWriter> {
        if let Some(parent) = path.parent() {
            private_dirs(parent)?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        written(&file);
        let mut bytes = file.metadata()?.len();
        // Records already there (a log appended to): the next one's number follows them,
        // on a line of its own after a last one cut short.
        let records_before = if bytes == 0 {
            0
        } else {
            let (lines, cut) = count_lines(path)?;
            if cut {
                file.write_all(b"\n")?;
                bytes += 1;
            }
            lines + u64::from(cut)
        };
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            bytes,
            records_before,
        })
    }

    /// How many records the log held when it was opened.
    pub fn records_before(&self) -> u64 {
        self.records_before
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends one complete record line (it must end with `\n`).
    pub fn append(&mut self, line: &str) -> io::Result<()> {
        self.file.write_all(line.as_bytes())?;
        self.bytes += line.len() as u64;
        Ok(())
    }

    /// Makes every appended line durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Another handle on the log file, to make it durable from another thread.
    pub fn syncer(&self) -> io::Result<File> {
        self.file.try_clone()
    }
}

/// Marks a log as being written for as long as its writer holds it open (a shared lock
/// the system lets go with the process): [`is_being_written`] asks.
fn written(file: &File) {
    let _ = file.try_lock_shared();
}

/// Whether a Trellis process is writing the log at `path` now (its session runs).
pub fn is_being_written(path: &Path) -> bool {
    let Ok(file) = open_log(path) else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Opens a log (or fixture) file to read it a line at a time. Only a regular file: a FIFO
/// or a device named as a log would block or never end.
pub fn open_log(path: &Path) -> io::Result<std::fs::File> {
    let not_a_file = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_a_file());
    }
    let file = std::fs::File::open(path)?;
    // It may have been swapped between the two looks: the file opened decides.
    if !file.metadata()?.is_file() {
        return Err(not_a_file());
    }
    Ok(file)
}

/// UTC date `YYYY-MM-DD` and time `HHMMSS` for a Unix timestamp.
fn civil(secs: u64) -> (String, String) {
    let t = trellis_core::civil::civil(i64::try_from(secs).unwrap_or(i64::MAX));
    (
        t.strftime("%Y-%m-%d").to_string(),
        t.strftime("%H%M%S").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log is "being written" while its writer has it open, and not after (a
    /// command-line rewind warns of a session that still runs).
    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_log_is_being_written_while_its_writer_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let w = LogWriter::create_in(dir.path(), "demo").unwrap();
        let path = w.path().to_path_buf();
        assert!(is_being_written(&path));
        drop(w);
        assert!(!is_being_written(&path));
        let w = LogWriter::open(&path).unwrap();
        assert!(is_being_written(&path));
        drop(w);
        assert!(!is_being_written(&dir.path().join("none.jsonl")));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), ("1970-01-01".into(), "000000".into()));
        assert_eq!(
            civil(1795996800 + 3661),
            ("2026-11-30".into(), "010101".into())
        );
    }

    #[test]
    fn append_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create_in(dir.path(), "demo agent").unwrap();
        w.append("{\"t\":0}\n").unwrap();
        w.sync().unwrap();
        assert_eq!(std::fs::read_to_string(w.path()).unwrap(), "{\"t\":0}\n");
        assert!(w.path().to_string_lossy().contains("demo_agent"));
    }
}
