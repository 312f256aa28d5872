//! Where each line of a session log starts, kept up to date while the log grows, so that
//! a view can read one frame (a line) without reading the log: the Raw view of a call
//! reads its frames only, however long the session.
//!
//! Invariants: `starts[i]` is the byte offset of line `i + 1`; `starts` ends with the
//! offset just past the last complete line, so a line still being written is not
//! counted until its newline arrives. A log that shrank (replaced) is indexed anew.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Frames longer than this are cut when read back (a view shows a part of them).
pub const MAX_LINE: u64 = 8 << 20;

#[derive(Debug)]
pub struct LineOffsets {
    path: PathBuf,
    /// Bytes looked at so far (complete lines and the start of a partial one).
    scanned: u64,
    starts: Vec<u64>,
}

impl LineOffsets {
    pub fn new(path: &Path) -> LineOffsets {
        LineOffsets {
            path: path.to_path_buf(),
            scanned: 0,
            starts: vec![0],
        }
    }

    /// Complete lines indexed.
    pub fn lines(&self) -> usize {
        self.starts.len() - 1
    }

    /// Indexes what was appended since the last call (reads only the new bytes).
    pub fn refresh(&mut self) -> io::Result<()> {
        let mut f = File::open(&self.path)?;
        let len = f.metadata()?.len();
        if len < self.scanned {
            // Replaced or truncated: start over.
            self.scanned = 0;
            self.starts = vec![0];
        }
        if len == self.scanned {
            return Ok(());
        }
        f.seek(SeekFrom::Start(self.scanned))?;
        let mut buf = vec![0u8; 64 << 10];
        let mut at = self.scanned;
        let mut left = len - self.scanned;
        while left > 0 {
            let want = buf.len().min(left as usize);
            let n = f.read(&mut buf[..want])?;
            if n == 0 {
                break;
            }
            for i in memchr::memchr_iter(b'\n', &buf[..n]) {
                self.starts.push(at + i as u64 + 1);
            }
            at += n as u64;
            left -= n as u64;
        }
        self.scanned = at;
        Ok(())
    }

    /// Line `seq` (1-based) without its line end; `None` when it is not (yet) complete.
    /// At most [`MAX_LINE`] bytes of it; invalid UTF-8 is replaced.
    pub fn line(&self, seq: u64) -> io::Result<Option<String>> {
        let i = match usize::try_from(seq) {
            Ok(s) if s >= 1 && s < self.starts.len() => s - 1,
            _ => return Ok(None),
        };
        let (from, to) = (self.starts[i], self.starts[i + 1] - 1);
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(from))?;
        let mut bytes = Vec::new();
        f.take((to - from).min(MAX_LINE)).read_to_end(&mut bytes)?;
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_are_found_as_the_log_grows_and_partial_lines_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("log.jsonl");
        let mut f = File::create(&p).expect("create");
        let mut ix = LineOffsets::new(&p);
        ix.refresh().expect("refresh");
        assert_eq!(ix.lines(), 0);
        f.write_all(b"{\"a\":1}\n{\"b\":2}\r\n{\"c\":")
            .expect("write");
        ix.refresh().expect("refresh");
        assert_eq!(ix.lines(), 2);
        assert_eq!(ix.line(1).expect("read").as_deref(), Some("{\"a\":1}"));
        assert_eq!(ix.line(2).expect("read").as_deref(), Some("{\"b\":2}"));
        assert_eq!(ix.line(3).expect("read"), None, "not complete yet");
        assert_eq!(ix.line(0).expect("read"), None);
        f.write_all(b"3}\n").expect("write");
        ix.refresh().expect("refresh");
        assert_eq!(ix.line(3).expect("read").as_deref(), Some("{\"c\":3}"));
        // A longer log than one read buffer.
        let big = "x".repeat(100_000);
        writeln!(f, "{big}").expect("write");
        writeln!(f, "end").expect("write");
        ix.refresh().expect("refresh");
        assert_eq!(ix.line(4).expect("read").map(|l| l.len()), Some(100_000));
        assert_eq!(ix.line(5).expect("read").as_deref(), Some("end"));
        // Replaced by a shorter file: indexed anew.
        std::fs::write(&p, "new\n").expect("write");
        ix.refresh().expect("refresh");
        assert_eq!(ix.lines(), 1);
        assert_eq!(ix.line(1).expect("read").as_deref(), Some("new"));
    }
}
