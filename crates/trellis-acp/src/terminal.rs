//! Client terminals (`terminal/*`): processes started for the agent, their output kept
//! within the requested byte limit (dropping from the front at a character boundary) and
//! recorded live.
//!
//! Invariants: a terminal id stays valid until `release`; `kill` keeps it; output is
//! recorded before the exit (readers finish before the exit is published). Memory and log
//! are bounded whatever a command prints: an agent that gives no `outputByteLimit` gets
//! the configured default ([`DEFAULT_OUTPUT_LIMIT`]); the buffer is compacted only when it
//! reaches twice its limit (amortized, not a move of the whole buffer per chunk); the log
//! keeps the first [`LOG_CAP`] bytes of each terminal live, then only a tail, written with
//! a note of what was left out when the command ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use trellis_core::session::LocalRecord;
use trellis_core::wire::ExitStatus;

use crate::recorder::Recorder;

/// Output kept for the agent when it gives no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;
/// Output of one terminal written to the session log as it comes.
pub const LOG_CAP: usize = 4 << 20;
/// Output kept past [`LOG_CAP`] and logged when the command ends.
const LOG_TAIL: usize = 64 << 10;

struct Term {
    output: String,
    truncated: bool,
    limit: usize,
    /// Bytes logged so far, and what was left out of the log past [`LOG_CAP`].
    logged: usize,
    unlogged: u64,
    tail: String,
    exit: watch::Receiver<Option<ExitStatus>>,
    pgid: Option<u32>,
}

/// A short mark of this connection, different from an earlier one's (the clock and the
/// process, mixed).
fn connection_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = nanos ^ (u64::from(std::process::id()) << 32);
    format!("{:06x}", (mixed ^ (mixed >> 24)) & 0xff_ffff)
}

/// What the ids of the user's own terminals start with.
const USERS: &str = "user";

/// Whether terminal `id` runs one of the user's own commands (never the agent's).
pub fn is_users(id: &str) -> bool {
    id.strip_prefix(USERS).is_some_and(|r| r.starts_with('-'))
}

#[derive(Clone)]
pub struct Terminals {
    inner: Arc<Mutex<HashMap<String, Term>>>,
    /// Every process group started, released or not (killed at session end).
    groups: Arc<Mutex<Vec<u32>>>,
    /// The output limit of terminals whose request gives none.
    default_limit: usize,
    next: Arc<std::sync::atomic::AtomicU64>,
    /// This connection's mark in its terminals' ids: a session that continues another
    /// (resumed, forked, its agent restarted) already holds `term-1`, `term-2`… of an
    /// earlier connection, and a new one's must not be taken for them.
    mark: String,
    recorder: Recorder,
    /// `TRACEPARENT` for every command (traces are exported), unless the agent set one.
    traceparent: Option<String>,
    /// Each command's own `TRACEPARENT`, from its terminal id (in place of `traceparent`).
    per_terminal: Option<crate::spec::TerminalTrace>,
}

/// What to start.
pub struct Spawn {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("unknown terminal {0}")]
    Unknown(String),
    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
}

/// Snapshot for `terminal/output`.
pub struct Output {
    pub output: String,
    pub truncated: bool,
    pub exit: Option<ExitStatus>,
}

impl Terminals {
    pub fn new(recorder: Recorder) -> Terminals {
        Terminals::with_default_limit(recorder, DEFAULT_OUTPUT_LIMIT)
    }

    /// Terminals whose output limit, when the agent gives none, is `default_limit` bytes.
    pub fn with_default_limit(recorder: Recorder, default_limit: usize) -> Terminals {
        Terminals {
            default_limit,
            groups: Arc::default(),
            inner: Arc::new(Mutex::new(HashMap::new())),
            next: Arc::new(std::sync::atomic::AtomicU64::new(1)),
            mark: connection_mark(),
            recorder,
            traceparent: None,
            per_terminal: None,
        }
    }

    /// Commands run with `TRACEPARENT` set to `tp` (unless the agent gives its own).
    pub fn traced(
        mut self,
        tp: Option<String>,
        per_terminal: Option<crate::spec::TerminalTrace>,
    ) -> Terminals {
        self.traceparent = tp;
        self.per_terminal = per_terminal;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Term>> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Starts a command. A command without args is a shell line, run with `sh -c`.
    pub fn create(&self, spec: Spawn) -> Result<String, TerminalError> {
        self.create_as(spec, "term")
    }

    /// Starts the user's own command (`!cmd`): a terminal the agent cannot name.
    pub fn create_users(&self, spec: Spawn) -> Result<String, TerminalError> {
        self.create_as(spec, USERS)
    }

    fn create_as(&self, spec: Spawn, prefix: &str) -> Result<String, TerminalError> {
        let mut cmd = if spec.args.is_empty() {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(&spec.command);
            c
        } else {
            let mut c = tokio::process::Command::new(&spec.command);
            c.args(&spec.args);
            c
        };
        // Its id first: its trace context is made from it.
        let id = format!(
            "{prefix}-{}-{}",
            self.mark,
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let tp = match &self.per_terminal {
            Some(f) => Some((f.0)(&id)),
            None => self.traceparent.clone(),
        };
        if let Some(tp) = tp
            && !spec.env.iter().any(|(k, _)| k == "TRACEPARENT")
        {
            cmd.env("TRACEPARENT", tp);
        }
        cmd.current_dir(&spec.cwd)
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd.spawn().map_err(|source| TerminalError::Spawn {
            command: spec.command.clone(),
            source,
        })?;
        if let Some(pgid) = child.id() {
            trellis_os::reaper::own(pgid);
            match self.groups.lock() {
                Ok(mut g) => g.push(pgid),
                Err(p) => p.into_inner().push(pgid),
            }
        }
        let (exit_tx, exit_rx) = watch::channel(None);
        self.lock().insert(
            id.clone(),
            Term {
                output: String::new(),
                truncated: false,
                limit: spec
                    .output_byte_limit
                    .map(|l| usize::try_from(l).unwrap_or(usize::MAX))
                    .unwrap_or(self.default_limit),
                logged: 0,
                unlogged: 0,
                tail: String::new(),
                exit: exit_rx,
                pgid: child.id(),
            },
        );
        let readers: Vec<_> = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        .map(|r| tokio::spawn(self.clone().pump(id.clone(), r)))
        .collect();
        let this = self.clone();
        let tid = id.clone();
        tokio::spawn(async move {
            for r in readers {
                let _ = r.await;
            }
            let status = match child.wait().await {
                Ok(s) => ExitStatus {
                    exit_code: s.code().map(i64::from),
                    signal: std::os::unix::process::ExitStatusExt::signal(&s)
                        .map(trellis_os::signal_name),
                },
                Err(_) => ExitStatus::default(),
            };
            this.log_tail(&tid);
            this.recorder.local(LocalRecord::TerminalExited {
                terminal_id: tid,
                status: status.clone(),
            });
            let _ = exit_tx.send(Some(status));
        });
        Ok(id)
    }

    async fn pump(self, id: String, mut r: Box<dyn tokio::io::AsyncRead + Send + Unpin>) {
        let mut buf = vec![0u8; 8192];
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let n = match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            carry.extend_from_slice(&buf[..n]);
            // Keep an incomplete UTF-8 sequence at the end for the next read.
            let valid = match std::str::from_utf8(&carry) {
                Ok(_) => carry.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => carry.len(),
            };
            let text = String::from_utf8_lossy(&carry[..valid]).into_owned();
            carry.drain(..valid);
            self.push(&id, &text);
        }
        if !carry.is_empty() {
            let text = String::from_utf8_lossy(&carry).into_owned();
            self.push(&id, &text);
        }
    }

    fn push(&self, id: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        let log = {
            let mut map = self.lock();
            let Some(term) = map.get_mut(id) else { return };
            term.output.push_str(text);
            if term.output.len() > term.limit.saturating_mul(2).max(64 << 10) {
                let cut = front_cut(&term.output, term.limit);
                term.output.drain(..cut);
                term.truncated = true;
            }
            if term.logged < LOG_CAP {
                term.logged += text.len();
                true
            } else {
                term.unlogged += text.len() as u64;
                term.tail.push_str(text);
                if term.tail.len() > 2 * LOG_TAIL {
                    let cut = front_cut(&term.tail, LOG_TAIL);
                    term.tail.drain(..cut);
                }
                false
            }
        };
        if log {
            self.recorder.local(LocalRecord::TerminalOutput {
                terminal_id: id.to_string(),
                data: text.to_string(),
            });
        }
    }

    /// Logs what the log left out of a terminal's output: a note, then its last bytes.
    fn log_tail(&self, id: &str) {
        let data = {
            let mut map = self.lock();
            let Some(term) = map.get_mut(id) else { return };
            if term.unlogged == 0 {
                return;
            }
            let tail = std::mem::take(&mut term.tail);
            let cut = front_cut(&tail, LOG_TAIL);
            let shown = tail.len() - cut;
            format!(
                "\n[… {} bytes of output not kept in the session log …]\n{}",
                term.unlogged - shown as u64,
                &tail[cut..]
            )
        };
        self.recorder.local(LocalRecord::TerminalOutput {
            terminal_id: id.to_string(),
            data,
        });
    }

    pub fn output(&self, id: &str) -> Result<Output, TerminalError> {
        let map = self.lock();
        let t = map
            .get(id)
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))?;
        let cut = front_cut(&t.output, t.limit);
        Ok(Output {
            output: t.output[cut..].to_string(),
            truncated: t.truncated || cut > 0,
            exit: t.exit.borrow().clone(),
        })
    }

    pub async fn wait_for_exit(&self, id: &str) -> Result<ExitStatus, TerminalError> {
        let mut rx = {
            let map = self.lock();
            map.get(id)
                .ok_or_else(|| TerminalError::Unknown(id.to_string()))?
                .exit
                .clone()
        };
        loop {
            if let Some(s) = rx.borrow_and_update().clone() {
                return Ok(s);
            }
            if rx.changed().await.is_err() {
                return Ok(ExitStatus::default());
            }
        }
    }

    /// Kills the command (and its process group); the terminal stays valid.
    pub fn kill(&self, id: &str) -> Result<(), TerminalError> {
        let map = self.lock();
        let t = map
            .get(id)
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))?;
        if t.exit.borrow().is_none()
            && let Some(pgid) = t.pgid
        {
            stop_group(pgid, t.exit.clone());
        }
        Ok(())
    }

    /// Kills if running and forgets the terminal.
    pub fn release(&self, id: &str) -> Result<(), TerminalError> {
        self.kill(id)?;
        self.lock().remove(id);
        Ok(())
    }

    /// Stops every command's process group (session end): SIGTERM, up to `grace` for the
    /// commands to exit, then SIGKILL. Released terminals and groups whose first process
    /// has exited are included, since what they left running in the background is still
    /// there.
    pub async fn stop_all(&self, grace: std::time::Duration) {
        let groups: Vec<u32> = match self.groups.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        if groups.is_empty() {
            return;
        }
        let all_exited = async {
            while self.lock().values().any(|t| t.exit.borrow().is_none()) {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        trellis_os::group::stop(&groups, grace, all_exited).await;
    }
}

/// Where to cut the front of `text` so that at most `keep` bytes remain, at a character
/// boundary.
fn front_cut(text: &str, keep: usize) -> usize {
    let mut cut = text.len().saturating_sub(keep);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    cut
}

/// How long a command the agent kills has between SIGTERM and SIGKILL.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Stops the process group `pgid` by the one stop sequence (SIGTERM, up to
/// [`KILL_GRACE`] for its command to exit as `exit` tells, then SIGKILL), in the
/// background: on the runtime, or a thread of its own outside one.
fn stop_group(pgid: u32, mut exit: watch::Receiver<Option<ExitStatus>>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        let _ = std::thread::Builder::new()
            .name("terminal-stop".into())
            .spawn(move || {
                trellis_os::group::stop_blocking(&[pgid], KILL_GRACE, || exit.borrow().is_some());
            });
        return;
    };
    rt.spawn(async move {
        let exited = async move {
            let _ = exit.wait_for(Option::is_some).await;
        };
        trellis_os::group::stop(&[pgid], KILL_GRACE, exited).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::Input;
    use crate::recorder::NullSink;

    fn terminals() -> (Terminals, crate::inputs::Inputs) {
        let (tx, rx) = crate::inputs::channel();
        let recorder = Recorder::new(Box::new(NullSink), tx);
        let inputs = recorder.inputs(rx);
        (Terminals::new(recorder), inputs)
    }

    fn spawn(cmd: &str, limit: Option<u64>) -> Spawn {
        Spawn {
            command: cmd.into(),
            args: vec![],
            env: vec![("GREETING".into(), "hi".into())],
            cwd: std::env::temp_dir(),
            output_byte_limit: limit,
        }
    }

    #[tokio::test]
    async fn shell_line_env_and_front_truncation_at_a_char_boundary() {
        let (t, mut rx) = terminals();
        // 20 two-byte characters then "end": 43 bytes, limited to 10.
        let id = t
            .create(spawn(
                "printf 'ééééééééééééééééééééend'; echo \" $GREETING\"; exit 3",
                Some(10),
            ))
            .unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        assert_eq!(exit.exit_code, Some(3));
        let out = t.output(&id).unwrap();
        assert!(out.truncated);
        assert!(out.output.len() <= 10, "{:?}", out.output);
        assert!(out.output.ends_with("end hi\n"), "{:?}", out.output);
        // Live output and the exit were recorded, output first.
        let mut kinds = Vec::new();
        while let Ok(Input::Action(trellis_core::Action::Local { record, .. })) = rx.try_recv() {
            kinds.push(match *record {
                LocalRecord::TerminalOutput { .. } => "output",
                LocalRecord::TerminalExited { .. } => "exit",
                _ => "other",
            });
        }
        assert_eq!(kinds.last(), Some(&"exit"));
        assert!(kinds.contains(&"output"));
    }

    #[tokio::test]
    #[cfg_attr(
        not(target_os = "linux"),
        ignore = "finds the released terminal's child through /proc (Linux)"
    )]
    async fn stop_all_asks_politely_first_and_stops_released_terminals_too() {
        let (t, _rx) = terminals();
        let dir = tempfile::tempdir().unwrap();
        let mut polite = spawn(
            "trap 'echo bye > said-bye; exit 0' TERM; sleep 30 & wait",
            None,
        );
        polite.cwd = dir.path().to_path_buf();
        let a = t.create(polite).unwrap();
        // A command that leaves a child behind, and is released after it exits.
        let secs = format!("30.{}", std::process::id());
        let c = t
            .create(spawn(
                &format!("sleep {secs} >/dev/null 2>&1 & echo started"),
                None,
            ))
            .unwrap();
        t.wait_for_exit(&c).await.unwrap();
        t.release(&c).unwrap();
        let running = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&secs))
            })
        };
        // A process in the middle of `execve` shows an empty command line for a moment, so
        // one look can miss the child: ask again until `expected` holds or two seconds pass.
        let left = |expected: bool| async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            loop {
                let now = running();
                if now == expected || std::time::Instant::now() > deadline {
                    return now;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        assert!(left(true).await, "the background child runs");
        // The shells need a moment to set their traps.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let start = std::time::Instant::now();
        t.stop_all(std::time::Duration::from_millis(500)).await;
        assert!(start.elapsed() < std::time::Duration::from_secs(3));
        let exit = t.wait_for_exit(&a).await.unwrap();
        assert_eq!(exit.exit_code, Some(0), "the TERM trap ran");
        assert!(dir.path().join("said-bye").exists());
        assert!(
            !left(false).await,
            "the released terminal's child was stopped too"
        );
    }

    #[tokio::test]
    async fn a_killed_command_that_ignores_term_is_killed_after_the_grace() {
        let (t, _rx) = terminals();
        let id = t
            .create(spawn("trap '' TERM; sleep 30 & wait; sleep 30", None))
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        t.kill(&id).unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
    }

    #[tokio::test]
    async fn kill_keeps_the_terminal_and_release_forgets_it() {
        let (t, _rx) = terminals();
        let id = t.create(spawn("sleep 30", None)).unwrap();
        t.kill(&id).unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        assert_eq!(
            exit.signal.as_deref(),
            Some("SIGTERM"),
            "the stop sequence's first step"
        );
        assert!(t.output(&id).is_ok(), "still valid after kill");
        t.release(&id).unwrap();
        assert!(matches!(t.output(&id), Err(TerminalError::Unknown(_))));
    }
}
