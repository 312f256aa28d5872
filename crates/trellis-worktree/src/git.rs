//! Running `git`. Trellis shells out to the user's git rather than linking a library:
//! hooks, LFS, sparse checkouts, submodules and configuration behave as they do for the
//! user, and no second implementation of the repository format comes into the tree.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// What a git command printed, cut for messages.
const MESSAGE_LIMIT: usize = 4000;

/// One `git -C DIR …` invocation being built.
pub(crate) struct Git {
    cmd: Command,
    shown: String,
}

impl Git {
    pub(crate) fn at(dir: &Path) -> Git {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir);
        // Inherited repository overrides (Trellis started from a hook, say) would point
        // every command at another repository.
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_COMMON_DIR",
            "GIT_PREFIX",
        ] {
            cmd.env_remove(var);
        }
        // Never stop to ask for a password or an editor: nobody is at this prompt.
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .stdin(Stdio::null());
        Git {
            cmd,
            shown: "git".into(),
        }
    }

    pub(crate) fn arg(mut self, a: impl AsRef<OsStr>) -> Git {
        let a = a.as_ref();
        if self.shown.len() < 200 {
            self.shown.push(' ');
            self.shown.push_str(&a.to_string_lossy());
        }
        self.cmd.arg(a);
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// Gives it `file` to read (a list of paths), instead of nothing.
    pub(crate) fn stdin(mut self, file: std::fs::File) -> Git {
        self.cmd.stdin(file);
        self
    }

    pub(crate) fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Git {
        self.cmd.env(k, v);
        self
    }

    /// Starts it, its output and error output piped.
    fn spawn(&mut self) -> Result<std::process::Child, Error> {
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        trellis_os::reaper::spawn_owned(&mut self.cmd).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::NoGit
            } else {
                Error::Io(format!("cannot run git: {e}"))
            }
        })
    }

    /// Runs it; its standard output when it succeeds, else an error with what it said.
    pub(crate) fn output(mut self) -> Result<Vec<u8>, Error> {
        let child = self.spawn()?;
        let pid = child.id();
        let out = child.wait_with_output();
        trellis_os::reaper::disown(pid);
        let out = out.map_err(|e| Error::Io(format!("git: {e}")))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(Error::Git {
                command: self.shown,
                said: said(&out.stderr, &out.stdout),
            })
        }
    }

    /// Runs it for its first line of output, trimmed.
    pub(crate) fn line(self) -> Result<String, Error> {
        let out = self.output()?;
        let text = String::from_utf8_lossy(&out);
        Ok(text.lines().next().unwrap_or_default().trim().to_string())
    }

    /// Runs it for whether it succeeded (a failure is an answer, not an error); git
    /// missing or failing to start is still an error.
    pub(crate) fn ok(self) -> Result<bool, Error> {
        match self.output() {
            Ok(_) => Ok(true),
            Err(Error::Git { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Runs it for NUL-separated paths (`-z` output).
    /// Runs it and hands each NUL-ended record of its output to `each` as it is read:
    /// for listings of any length (every ignored file of a tree with `node_modules/`),
    /// of which the caller keeps a few, held one record at a time. What git says on its
    /// error output is kept up to [`MESSAGE_LIMIT`] bytes, the rest read and dropped.
    pub(crate) fn each_record(mut self, mut each: impl FnMut(&[u8])) -> Result<(), Error> {
        use std::io::{BufRead, Read};
        let mut child = self.spawn()?;
        let pid = child.id();
        let stderr = child.stderr.take().map(|mut err| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let _ = (&mut err).take(MESSAGE_LIMIT as u64).read_to_end(&mut kept);
                let _ = std::io::copy(&mut err, &mut std::io::sink());
                kept
            })
        });
        let mut read = Ok(());
        if let Some(out) = child.stdout.take() {
            let mut r = std::io::BufReader::new(out);
            let mut record = Vec::new();
            loop {
                record.clear();
                match r.read_until(0, &mut record) {
                    Ok(0) => break,
                    Ok(_) => {
                        let rec = record.strip_suffix(&[0]).unwrap_or(&record);
                        if !rec.is_empty() {
                            each(rec);
                        }
                    }
                    Err(e) => {
                        read = Err(Error::Io(format!("git: {e}")));
                        break;
                    }
                }
            }
        }
        if read.is_err() {
            let _ = child.kill();
        }
        let status = child.wait();
        trellis_os::reaper::disown(pid);
        let said_err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        read?;
        match status {
            Ok(st) if st.success() => Ok(()),
            Ok(_) => Err(Error::Git {
                command: self.shown,
                said: said(&said_err, b""),
            }),
            Err(e) => Err(Error::Io(format!("git: {e}"))),
        }
    }

    pub(crate) fn paths(self) -> Result<Vec<PathBuf>, Error> {
        let out = self.output()?;
        Ok(out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| {
                use std::os::unix::ffi::OsStrExt;
                PathBuf::from(OsStr::from_bytes(p))
            })
            .collect())
    }
}

/// What git said on failure: its error output (else its output), trimmed and cut.
fn said(stderr: &[u8], stdout: &[u8]) -> String {
    let text = if stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        stderr
    } else {
        stdout
    };
    let mut s = String::from_utf8_lossy(text).trim().to_string();
    if s.len() > MESSAGE_LIMIT {
        let mut cut = MESSAGE_LIMIT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_handed_over_one_at_a_time_and_a_failure_says_what_git_said() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Git::at(dir.path()).args(["init", "-q"]).ok().unwrap());
        for name in ["a file", "b\nnewline"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let mut seen = Vec::new();
        Git::at(dir.path())
            .args(["ls-files", "-z", "--others"])
            .each_record(|r| seen.push(String::from_utf8_lossy(r).into_owned()))
            .unwrap();
        seen.sort();
        assert_eq!(seen, ["a file", "b\nnewline"]);
        let missing = dir.path().join("nowhere");
        let err = Git::at(&missing)
            .args(["ls-files", "-z"])
            .each_record(|_| panic!("no output"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::Git { said, .. } if said.contains("nowhere")),
            "{err:?}"
        );
    }
}
