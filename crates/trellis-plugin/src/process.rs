//! One plugin process: spawned in its own process group with a minimal environment, its
//! stdout read as bounded lines on a thread, its stderr kept in a bounded ring (and a
//! capped log file), its stdin written by a thread so the worker never blocks on a plugin
//! that does not read. Stopping it stops its whole group (TERM, a grace period, KILL).
//!
//! Invariants: every line read is at most `max_line` bytes (a longer one disconnects the
//! plugin); bytes waiting for its stdin are counted (the adapter refuses to queue more
//! than its limit); a process is always stopped and waited for, whichever way it ends.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::feed::Piece;
use crate::protocol::{Incoming, parse_line};

/// What the reader threads report to the adapter; `generation` tells processes apart across
/// restarts (reports of an earlier process are ignored).
#[derive(Debug)]
pub enum Inbound {
    Msg {
        generation: u64,
        msg: Incoming,
    },
    /// A line that is not a protocol message, clipped for showing.
    Broken {
        generation: u64,
        why: String,
        line: String,
    },
    /// Stdout closed (the process ended or closed it).
    Eof {
        generation: u64,
    },
}

/// The plugin's stderr: the last lines, kept for `/status`, and a capped log file.
#[derive(Debug, Default)]
pub struct Stderr {
    pub lines: VecDeque<String>,
    /// Lines seen in all, and bytes.
    pub total: u64,
    pub bytes: u64,
    /// Changed since the adapter last looked.
    pub dirty: bool,
    /// The stream ended (the process closed it or ended).
    pub closed: bool,
}

/// How often the plugin's stderr wakes its adapter at most (to show it in `/status`).
const WAKE_EVERY: Duration = Duration::from_millis(500);

/// Most stderr lines kept in memory.
pub const STDERR_LINES: usize = 40;
/// Longest stderr line kept (the rest of the line is dropped).
const STDERR_LINE: usize = 2048;
/// Largest log file before it is rotated (one older file is kept).
const LOG_CAP: u64 = 1 << 20;

/// How to start the process.
#[derive(Debug, Clone)]
pub struct Launch {
    pub name: String,
    /// The package directory (`PLUGIN_ROOT`, and the working directory).
    pub root: PathBuf,
    /// `PLUGIN_DATA`: a directory of its own that persists (created before start).
    pub data: Option<PathBuf>,
    /// Program and arguments; a program starting with `./` is inside the package.
    pub command: Vec<String>,
    pub log_file: Option<PathBuf>,
    /// Variables set beside the minimal environment (e.g. `PYTHONPATH` to the SDK that
    /// ships with Trellis).
    pub env: Vec<(String, String)>,
    pub max_line: usize,
    /// Called with the pid of every process started (the binary marks it as a child the
    /// runtime waits for itself, so its orphan reaper leaves it alone).
    pub on_spawn: Option<fn(u32)>,
}

pub struct Proc {
    pub generation: u64,
    child: Child,
    writer: Option<Sender<Vec<Piece>>>,
    /// Bytes handed to the writer and not yet written.
    pub backlog: Arc<AtomicUsize>,
    /// The writer failed (the plugin closed its stdin).
    pub write_failed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proc")
            .field("generation", &self.generation)
            .field("pid", &self.child.id())
            .finish()
    }
}

/// Resolves the program: `./x` must stay inside the package; a bare name is looked up
/// on `PATH` by the system.
pub fn program(root: &Path, argv0: &str) -> Result<PathBuf, String> {
    if argv0.is_empty() {
        return Err("the command is empty".into());
    }
    if let Some(rel) = argv0.strip_prefix("./") {
        let root = root
            .canonicalize()
            .map_err(|e| format!("the package directory: {e}"))?;
        let p = root
            .join(rel)
            .canonicalize()
            .map_err(|e| format!("{argv0}: {e}"))?;
        if !p.starts_with(&root) {
            return Err(format!("{argv0} resolves outside the package"));
        }
        return Ok(p);
    }
    if argv0.contains('/') {
        return Err(format!(
            "{argv0}: a command is a bare program name or a path starting with ./"
        ));
    }
    Ok(PathBuf::from(argv0))
}

/// Variables passed through from Trellis's environment (nothing else is).
const PASS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
];

impl Proc {
    /// Starts the process; its reports go to `inbound`, `wake` is called after each.
    pub fn spawn(
        l: &Launch,
        generation: u64,
        inbound: Sender<Inbound>,
        stderr: Arc<Mutex<Stderr>>,
        wake: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Proc, String> {
        use std::os::unix::process::CommandExt;
        let argv0 = l.command.first().map(String::as_str).unwrap_or("");
        let prog = program(&l.root, argv0)?;
        let mut cmd = Command::new(&prog);
        cmd.args(l.command.iter().skip(1))
            .current_dir(&l.root)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for k in PASS {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        for (k, v) in &l.env {
            cmd.env(k, v);
        }
        cmd.env("PLUGIN_ROOT", &l.root)
            .env("TRELLIS_PLUGIN", &l.name)
            .env("TRELLIS_PLUGIN_PROTOCOL", "trellis-plugin/1")
            // Line-buffered output for the common interpreters (their SDKs flush anyway).
            .env("PYTHONUNBUFFERED", "1");
        if let Some(d) = &l.data {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("the plugin's data directory {}: {e}", d.display()))?;
            cmd.env("PLUGIN_DATA", d);
        }
        trellis_os::priority::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", prog.display()))?;
        if let Some(f) = l.on_spawn {
            f(child.id());
        }
        // The process starts at Trellis's own priority and is lowered once it has
        // answered `initialize` (`Proc::lower_priority`): at the lowest from the start, a
        // busy machine (a build on every core) starved it past its start timeout.
        let (stdin, stdout, err) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(a), Some(b), Some(c)) => (a, b, c),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("no pipes to the process".into());
                }
            };
        let backlog = Arc::new(AtomicUsize::new(0));
        let write_failed = Arc::new(AtomicBool::new(false));
        let (wtx, wrx) = channel::<Vec<Piece>>();
        {
            let backlog = backlog.clone();
            let failed = write_failed.clone();
            spawn_thread(&format!("plugin-{}-in", l.name), move || {
                crate::feed::writer(stdin, wrx, backlog, failed)
            })?;
        }
        {
            let max = l.max_line;
            let wake = wake.clone();
            spawn_thread(&format!("plugin-{}-out", l.name), move || {
                reader(stdout, generation, max, inbound, wake)
            })?;
        }
        {
            match stderr.lock() {
                Ok(mut g) => g.closed = false,
                Err(p) => p.into_inner().closed = false,
            }
            let log = l.log_file.clone();
            // Each start is headed in the log, so one run's lines are told from the last's.
            let head = format!(
                "── {} process {} started ──\n",
                jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC"),
                child.id()
            );
            spawn_thread(&format!("plugin-{}-err", l.name), move || {
                stderr_reader(err, stderr, log, &head, wake)
            })?;
        }
        Ok(Proc {
            generation,
            child,
            writer: Some(wtx),
            backlog,
            write_failed,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Puts the process at the lowest CPU priority, every thread it has so far (Linux:
    /// threads have their own; those it starts later inherit it): when the CPU is short,
    /// the agent and the client come first, and plugins catch up on their queues
    /// afterwards.
    pub fn lower_priority(&self) {
        trellis_os::priority::lower_process(self.child.id(), PLUGIN_NICE);
    }

    /// Queues a line for the plugin's stdin.
    pub fn send(&self, line: Vec<u8>) -> bool {
        self.send_pieces(vec![Piece::Raw(line)])
    }

    /// Queues pieces (lines, and events shared with other plugins) for its stdin.
    pub fn send_pieces(&self, pieces: Vec<Piece>) -> bool {
        let n: usize = pieces.iter().map(Piece::bytes).sum();
        self.backlog.fetch_add(n, Ordering::AcqRel);
        match &self.writer {
            Some(w) if w.send(pieces).is_ok() => true,
            _ => {
                self.backlog.fetch_sub(n, Ordering::AcqRel);
                false
            }
        }
    }

    /// The process ended: its exit status, if it has.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(s)) => Some(describe(s)),
            Ok(None) => None,
            Err(e) => Some(format!("lost: {e}")),
        }
    }

    /// Stops the process and its group: stdin closed, then TERM after `grace`, then KILL
    /// after another `grace`; waits for it. Returns how it ended.
    pub fn stop(&mut self, grace: Duration) -> String {
        self.writer = None; // closes stdin once the writer drains
        let pgid = self.child.id();
        if let Some(s) = wait_for(&mut self.child, grace) {
            // What the plugin left running in its group.
            trellis_os::group::stop_leftovers(pgid, grace);
            return s;
        }
        let mut ended = None;
        let child = &mut self.child;
        trellis_os::group::stop_blocking(&[pgid], grace, || match child.try_wait() {
            Ok(Some(s)) => {
                ended = Some(describe(s));
                true
            }
            Ok(None) => false,
            Err(e) => {
                ended = Some(format!("lost: {e}"));
                true
            }
        });
        if let Some(s) = ended {
            return s;
        }
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(s) => describe(s),
            Err(e) => format!("lost: {e}"),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop(Duration::from_millis(200));
        }
    }
}

fn wait_for(child: &mut Child, limit: Duration) -> Option<String> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(describe(s)),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => return None,
            Err(e) => return Some(format!("lost: {e}")),
        }
    }
}

/// The niceness plugin processes run at.
pub const PLUGIN_NICE: i32 = trellis_os::priority::LOWEST;

fn describe(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended".into(),
    }
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.chars().take(15).collect())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| format!("cannot start a thread: {e}"))
}

fn clip(bytes: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    let mut t = trellis_core_one_line(&s);
    if bytes.len() > max {
        t.push('…');
    }
    t
}

/// One line, control characters made harmless (the plugin's text is shown in `/status`).
fn trellis_core_one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}

fn reader(
    stdout: ChildStdout,
    generation: u64,
    max: usize,
    inbound: Sender<Inbound>,
    wake: Arc<dyn Fn() + Send + Sync>,
) {
    trellis_os::priority::lower_this_thread(PLUGIN_NICE);
    let mut r = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let (consumed, done) = {
            let buf = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            if buf.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    line.extend_from_slice(&buf[..i]);
                    (i + 1, true)
                }
                None => {
                    line.extend_from_slice(buf);
                    (buf.len(), false)
                }
            }
        };
        r.consume(consumed);
        if line.len() > max {
            let _ = inbound.send(Inbound::Broken {
                generation,
                why: format!("a line longer than {max} bytes"),
                line: clip(&line, 120),
            });
            wake();
            return;
        }
        if !done {
            continue;
        }
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            line.clear();
            continue;
        }
        let report = match parse_line(text) {
            Ok(msg) => Inbound::Msg { generation, msg },
            Err(e) => Inbound::Broken {
                generation,
                why: e.to_string(),
                line: clip(text, 120),
            },
        };
        let broken = matches!(report, Inbound::Broken { .. });
        if inbound.send(report).is_err() {
            return;
        }
        wake();
        if broken {
            return;
        }
        line.clear();
    }
    let _ = inbound.send(Inbound::Eof { generation });
    wake();
}

fn stderr_reader(
    err: std::process::ChildStderr,
    ring: Arc<Mutex<Stderr>>,
    log: Option<PathBuf>,
    head: &str,
    wake: Arc<dyn Fn() + Send + Sync>,
) {
    let mut r = BufReader::new(err);
    let mut file = log.as_ref().and_then(|p| open_log(p));
    if let Some(f) = file.as_mut() {
        let _ = f.write_all(head.as_bytes());
    }
    let mut written = file
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    let mut buf = Vec::new();
    let mut last_wake = Instant::now() - Duration::from_secs(1);
    // A wake due later for lines that came too soon after the last one (so the last lines
    // of a burst reach `/status` without waiting for the plugin's next event).
    let scheduled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    loop {
        buf.clear();
        let n = match (&mut r)
            .take(STDERR_LINE as u64)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if buf.last() != Some(&b'\n') && n == STDERR_LINE {
            // The rest of an overlong line is dropped.
            let mut sink = Vec::new();
            let _ = (&mut r).take(64 << 20).read_until(b'\n', &mut sink);
        }
        let text = clip(buf.strip_suffix(b"\n").unwrap_or(&buf), STDERR_LINE);
        if let (Some(f), Some(p)) = (file.as_mut(), log.as_ref()) {
            if written > LOG_CAP {
                let _ = std::fs::rename(p, p.with_extension("log.1"));
                *f = match open_log(p) {
                    Some(f) => f,
                    None => break,
                };
                written = 0;
            }
            if writeln!(f, "{text}").is_ok() {
                written += text.len() as u64 + 1;
            }
        }
        {
            let mut s = match ring.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            s.total += 1;
            s.bytes += n as u64;
            s.lines.push_back(text);
            while s.lines.len() > STDERR_LINES {
                s.lines.pop_front();
            }
            s.dirty = true;
        }
        // Wakes the adapter at most twice a second for its stderr, and once more after a
        // burst.
        let since = last_wake.elapsed();
        if since >= WAKE_EVERY {
            last_wake = Instant::now();
            wake();
        } else if !scheduled.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let (later, flag) = (wake.clone(), scheduled.clone());
            let due = WAKE_EVERY - since;
            let spawned = std::thread::Builder::new()
                .name("plugin-stderr-wake".into())
                .spawn(move || {
                    std::thread::sleep(due);
                    flag.store(false, std::sync::atomic::Ordering::Release);
                    later();
                });
            if spawned.is_err() {
                scheduled.store(false, std::sync::atomic::Ordering::Release);
            }
        }
    }
    let mut s = match ring.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    s.closed = true;
    s.dirty = true;
}

/// Opens (appends to) the plugin's log file, created without following a link.
fn open_log(p: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(d) = p.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_stay_inside_their_package() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("run.sh"), "").unwrap();
        assert!(program(d.path(), "./run.sh").is_ok());
        assert!(program(d.path(), "python3").is_ok());
        assert!(program(d.path(), "./../x").is_err());
        assert!(program(d.path(), "/bin/sh").is_err());
        assert!(program(d.path(), "bin/x").is_err());
        assert!(program(d.path(), "").is_err());
        std::os::unix::fs::symlink("/bin/sh", d.path().join("out")).unwrap();
        assert!(program(d.path(), "./out").unwrap_err().contains("outside"));
    }
}
