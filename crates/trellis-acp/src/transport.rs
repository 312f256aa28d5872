//! The agent process and the line transport handed to the SDK.
//!
//! Trellis spawns the agent itself (in the session cwd, in its own process group) and
//! gives the SDK a [`Lines`] transport whose both directions pass through the
//! [`Recorder`] first. `session/update` notifications — almost all the traffic — are
//! consumed by the recorder and not handed to the SDK at all: the SDK would only parse them
//! into a generic JSON tree to find nobody needs them (measured: most of the client's CPU
//! time). Requests and responses still go through the SDK.
//!
//! Shutdown: stdin is closed, the agent gets 1 s to exit, then SIGTERM to its process group
//! (so `npx`/`uvx` wrappers' children die too), then SIGKILL 2 s later.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Lines;
use futures::StreamExt;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin};
use trellis_core::wire::Dir;

use crate::lines;
use crate::recorder::{More, Recorder};

/// Lines of stderr kept to explain a crash.
const STDERR_TAIL: usize = 20;
pub use crate::lines::MAX_LINE;
/// Longest stderr line kept; the rest of a longer one is counted.
const MAX_STDERR_LINE: usize = 16 << 10;
/// Stderr bytes logged line by line; beyond them only a tail is kept.
const STDERR_LOG_HEAD: usize = 1 << 20;
/// Stderr bytes of the tail kept beyond the head (logged when stderr closes).
const STDERR_LOG_TAIL: usize = 64 << 10;

/// Lines from the agent waiting for the SDK (requests and responses only: updates stop
/// at the recorder); the reader waits when the SDK is this far behind.
const SDK_QUEUE: usize = 64;
/// How long the end of a session waits for the agent's pipes to close after its process
/// group was stopped (a process that left the group may still hold them).
const DRAIN_WAIT: Duration = Duration::from_secs(1);

pub struct AgentProcess {
    kind: Kind,
    /// The stdout and stderr readers: the session ends only after they reached the end
    /// of what the agent wrote (or [`DRAIN_WAIT`] after its group was stopped).
    readers: Vec<tokio::task::JoinHandle<()>>,
    /// Tells the stdout reader (a blocking thread: it cannot be aborted) to read no
    /// further.
    stop: Arc<AtomicBool>,
    /// Fires once the agent's output has ended and every line of it was recorded and
    /// offered (the agent, or the connection to it, is gone).
    ended: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// A process Trellis started, or a connection to an agent elsewhere.
enum Kind {
    Local {
        child: Child,
        pgid: Option<u32>,
        stderr_tail: Arc<Mutex<VecDeque<String>>>,
    },
    Remote(crate::remote::Link),
}

pub type Transport = Lines<
    std::pin::Pin<Box<dyn futures::Sink<String, Error = std::io::Error> + Send>>,
    std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>,
>;

/// Starts the agent; returns the process and the transport for `connect_with`.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: &PathBuf,
    bulk_reads: bool,
    recorder: Recorder,
) -> std::io::Result<(AgentProcess, Transport)> {
    let mut child = tokio::process::Command::new(command)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let missing = || std::io::Error::other("agent stdio not captured");
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_reader = tokio::spawn(drain_stderr(stderr, recorder.clone(), stderr_tail.clone()));
    let pipe = std::fs::File::from(stdout.into_owned_fd()?);
    let (stdout_reader, incoming, stop, ended) = read_agent(pipe, bulk_reads, &recorder);
    let tap_out = recorder;
    let outgoing = futures::sink::unfold(stdin, move |mut w: ChildStdin, line: String| {
        let tap = tap_out.clone();
        async move {
            tap.line(Dir::ClientToAgent, &line, More::No);
            w.write_all(line.as_bytes()).await?;
            w.write_all(b"\n").await?;
            w.flush().await?;
            Ok::<_, std::io::Error>(w)
        }
    });
    let pgid = child.id();
    if let Some(pid) = pgid {
        trellis_os::reaper::own(pid);
    }
    let transport = Lines::new(Box::pin(outgoing) as _, incoming);
    Ok((
        AgentProcess {
            kind: Kind::Local {
                child,
                pgid,
                stderr_tail,
            },
            readers: vec![stdout_reader, stderr_reader],
            stop,
            ended: Some(ended),
        },
        transport,
    ))
}

/// Dials an agent that runs elsewhere, over WebSocket (see [`crate::remote`]) or
/// streamable HTTP (`crate::streamable`); the connection and the
/// transport for `connect_with`, as [`spawn`] gives for a local one.
pub async fn dial(
    spec: &crate::remote::RemoteSpec,
    bulk_reads: bool,
    setup: Duration,
    recorder: Recorder,
) -> Result<(AgentProcess, Transport), String> {
    let target = crate::remote::Target::of(&spec.url, spec.plaintext)?;
    let dialed = if target.http {
        let wait = crate::remote::dial_wait(setup);
        crate::streamable::dial(spec, target, setup, wait).await
    } else {
        crate::remote::dial(spec, &recorder, setup).await
    };
    // A connection that never opened says so (not "ended", which it never began).
    let (pipe, link) = dialed.map_err(|e| {
        if e.starts_with("cannot reach ") {
            e
        } else {
            format!("could not connect: {e}")
        }
    })?;
    let (reader, incoming, stop, ended) = read_agent(pipe, bulk_reads, &recorder);
    let out = link
        .out
        .clone()
        .ok_or_else(|| "the connection closed at once".to_string())?;
    let outgoing = crate::remote::outgoing(out, recorder);
    let transport = Lines::new(Box::pin(outgoing) as _, incoming);
    Ok((
        AgentProcess {
            kind: Kind::Remote(link),
            readers: vec![reader],
            stop,
            ended: Some(ended),
        },
        transport,
    ))
}

/// The lines the SDK is offered, from the reader of the agent's output.
type Incoming = std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>;

/// What reading an agent's output gives: the reader, the lines for the SDK, the flag that
/// tells the reader to stop, and the signal that its output ended.
type Reading = (
    tokio::task::JoinHandle<()>,
    Incoming,
    Arc<AtomicBool>,
    tokio::sync::oneshot::Receiver<()>,
);

/// Reads the agent's output from `pipe` on a thread of its own (see [`read_stdout`]).
fn read_agent(pipe: std::fs::File, bulk_reads: bool, recorder: &Recorder) -> Reading {
    // The SDK gets the lines the recorder forwards (requests and responses) through a
    // bounded channel; the reader itself belongs to Trellis and reads to the end.
    let (to_sdk, from_reader) = tokio::sync::mpsc::channel::<std::io::Result<String>>(SDK_QUEUE);
    let stop = Arc::new(AtomicBool::new(false));
    // A roomy pipe lets a streaming agent's lines be read in fewer, fuller pieces
    // (`lines::Coalesce`) where no one types meanwhile; where it cannot be had, the
    // usual one is read as before.
    let capacity = bulk_reads
        .then(|| {
            use std::os::fd::AsFd;
            trellis_os::fd::grow_pipe(pipe.as_fd(), lines::Coalesce::ROOMY)
        })
        .flatten();
    let pipe = Gathering {
        pipe,
        coalesce: lines::Coalesce::for_pipe(capacity),
        stop: stop.clone(),
        last_read: 0,
        read_after_stop: 0,
    };
    let (tap, rt) = (recorder.clone(), tokio::runtime::Handle::current());
    let (ended_tx, ended) = tokio::sync::oneshot::channel();
    let reader = tokio::task::spawn_blocking(move || {
        read_stdout(pipe, tap, to_sdk, rt);
        let _ = ended_tx.send(());
    });
    let incoming = futures::stream::unfold(from_reader, |mut rx| async move {
        rx.recv().await.map(|line| (line, rx))
    })
    .boxed();
    (reader, incoming, stop, ended)
}

/// How often a reader waiting for the agent checks whether it was told to stop.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// The agent's stdout, read on a thread of its own: a streaming agent's lines are
/// gathered into fewer, fuller reads ([`lines::Coalesce`]: a wait on this thread is not
/// woken by every line the agent writes, as a task on the runtime's poller would be), and
/// the reader ends when told to stop (a pipe held open by a process that left the group,
/// or the process dropped without [`AgentProcess::finish`]) once nothing more is readable.
struct Gathering {
    /// Non-blocking (as the runtime left it): waited on with `poll`.
    pipe: std::fs::File,
    coalesce: lines::Coalesce,
    stop: Arc<AtomicBool>,
    /// Bytes the last read returned.
    last_read: usize,
    /// Bytes read since the reader was told to stop.
    read_after_stop: usize,
}

/// What a reader told to stop still reads of what is there (a pipe holds 64 KiB).
const AFTER_STOP: usize = 1 << 20;

impl std::io::Read for Gathering {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        // Called when every byte read so far was handled.
        let now = std::time::Instant::now();
        if let Some(wait) = self.coalesce.drained(now, self.last_read) {
            std::thread::sleep(wait);
        }
        let stopping = self.stop.load(Ordering::Relaxed);
        if stopping && self.read_after_stop >= AFTER_STOP {
            // A process that keeps writing into a pipe it took along is read no further.
            return Ok(0);
        }
        loop {
            match self.pipe.read(out) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Told to stop: what was readable was read; nothing more is waited for.
                    if self.stop.load(Ordering::Relaxed) {
                        return Ok(0);
                    }
                    use std::os::fd::AsFd;
                    trellis_os::fd::wait_readable(self.pipe.as_fd(), STOP_CHECK)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                done => {
                    self.last_read = *done.as_ref().unwrap_or(&0);
                    if stopping {
                        self.read_after_stop += self.last_read;
                    }
                    return done;
                }
            }
        }
    }
}

/// Reads the agent's stdout to its end, whatever happens to the connection: every line
/// reaches the recorder (the log, then the reducer) before it is offered to the SDK, and a
/// connection that failed (a write into the stdin of an agent that died) or finished stops
/// only the offering. The SDK once owned this loop and dropped it with the connection,
/// losing what a dying agent had left in the pipe.
fn read_stdout(
    stdout: Gathering,
    tap: Recorder,
    to_sdk: tokio::sync::mpsc::Sender<std::io::Result<String>>,
    rt: tokio::runtime::Handle,
) {
    use std::io::BufRead as _;
    let mut r = std::io::BufReader::with_capacity(stdout.coalesce.buffer(), stdout);
    let mut buf = Vec::new();
    let mut bad_utf8 = 0u64;
    let mut sdk = Some(to_sdk);
    // Lines for the SDK, offered once the recorder released their actions to the driver.
    let mut held: Vec<String> = Vec::new();
    loop {
        // A line whole in the reader's buffer is recorded where it is, not copied out
        // first (most lines of a read: only the first, begun in the read before, is).
        let more = if let Some(i) = memchr::memchr(b'\n', r.buffer()) {
            let rest = r.buffer();
            let line = rest[..i].strip_suffix(b"\r").unwrap_or(&rest[..i]);
            // Group commit: another complete line already in memory?
            let more = more_after(&rest[i + 1..]);
            let forward = record(&tap, line, 0, more, &mut bad_utf8);
            if let Some(line) = forward.filter(|_| sdk.is_some()) {
                held.push(line);
            }
            r.consume(i + 1);
            more
        } else {
            let read = match lines::read_line_blocking(&mut r, &mut buf, MAX_LINE) {
                Ok(Some(read)) => read,
                Ok(None) => break,
                Err(e) => {
                    tap.warn(format!("reading the agent's output failed: {e}"));
                    offer(&mut held, &mut sdk);
                    if let Some(tx) = sdk.take() {
                        let _ = tx.blocking_send(Err(e));
                    }
                    break;
                }
            };
            let more = more_after(r.buffer());
            let forward = record(&tap, &buf, read.dropped, more, &mut bad_utf8);
            if let Some(line) = forward.filter(|_| sdk.is_some()) {
                held.push(line);
            }
            more
        };
        if more == More::No {
            // Backpressure: the driver has enough queued (see `crate::inputs`).
            rt.block_on(tap.room());
            offer(&mut held, &mut sdk);
        }
    }
    // Whatever is pending reaches the log and the reducer, then the SDK.
    tap.flush();
    offer(&mut held, &mut sdk);
    if bad_utf8 > 1 {
        tap.warn(format!(
            "the agent wrote {bad_utf8} lines of invalid UTF-8 in all"
        ));
    }
}

/// Whether another complete line is already in memory behind the one being recorded.
fn more_after(rest: &[u8]) -> More {
    if lines::has_complete_line(rest) {
        More::Buffered
    } else {
        More::No
    }
}

/// Records one line of the agent's output (`dropped`: bytes of it cut off past the
/// longest line taken); returns it when the SDK must see it too.
fn record(
    tap: &Recorder,
    line: &[u8],
    dropped: usize,
    more: More,
    bad_utf8: &mut u64,
) -> Option<String> {
    if dropped > 0 {
        tap.oversized(Dir::AgentToClient, line, line.len() + dropped, more);
        return None;
    }
    if lines::is_blank(line) {
        if more == More::No {
            tap.flush();
        }
        return None;
    }
    // simdutf8's answer is std's (its `basic` flavour says only whether, as used here).
    let (text, raw) = match simdutf8::basic::from_utf8(line) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), None),
        Err(_) => {
            *bad_utf8 += 1;
            if *bad_utf8 == 1 {
                tap.warn(
                    "the agent wrote a line that is not valid UTF-8; invalid bytes \
                     were replaced with U+FFFD (the line is in the session log as \
                     received)"
                        .into(),
                );
            }
            (String::from_utf8_lossy(line), Some(line))
        }
    };
    tap.line_bytes(Dir::AgentToClient, &text, raw, more)
        .then(|| text.into_owned())
}

/// Offers `held` lines to the SDK, in order; a connection that is over takes no more.
fn offer(
    held: &mut Vec<String>,
    sdk: &mut Option<tokio::sync::mpsc::Sender<std::io::Result<String>>>,
) {
    for line in held.drain(..) {
        if let Some(tx) = sdk.as_ref()
            && tx.blocking_send(Ok(line)).is_err()
        {
            // The connection is over; the rest is still read and recorded.
            *sdk = None;
        }
    }
}

/// Drains the agent's stderr as bytes, always (a pipe left full would block the agent).
/// The first [`STDERR_LOG_HEAD`] bytes are logged line by line, then only the last
/// [`STDERR_LOG_TAIL`] bytes are kept and logged when stderr closes, after a record of how
/// much was left out.
async fn drain_stderr(
    stderr: ChildStderr,
    recorder: Recorder,
    crash_tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut r = BufReader::with_capacity(1 << 16, stderr);
    let mut buf = Vec::new();
    let mut logged = 0usize;
    let mut tail: VecDeque<String> = VecDeque::new();
    let mut tail_bytes = 0usize;
    let (mut skipped_lines, mut skipped_bytes) = (0u64, 0u64);
    while let Ok(Some(read)) = lines::read_line(&mut r, &mut buf, MAX_STDERR_LINE).await {
        let mut line = String::from_utf8_lossy(&buf).into_owned();
        if read.dropped > 0 {
            line.push_str(&format!(" [… {} more bytes]", read.dropped));
        }
        let size = buf.len() + read.dropped + 1;
        {
            let mut t = match crash_tail.lock() {
                Ok(t) => t,
                Err(p) => p.into_inner(),
            };
            if t.len() == STDERR_TAIL {
                t.pop_front();
            }
            t.push_back(line.clone());
        }
        if logged < STDERR_LOG_HEAD {
            logged += size;
            recorder.stderr(&line);
            continue;
        }
        tail_bytes += line.len();
        tail.push_back(line);
        while tail_bytes > STDERR_LOG_TAIL
            && let Some(old) = tail.pop_front()
        {
            tail_bytes -= old.len();
            skipped_lines += 1;
            skipped_bytes += old.len() as u64 + 1;
        }
    }
    if skipped_lines > 0 {
        recorder.local(trellis_core::LocalRecord::StderrElided {
            lines: skipped_lines,
            bytes: skipped_bytes,
        });
    }
    for line in tail {
        recorder.stderr(&line);
    }
}

impl Drop for AgentProcess {
    /// The reader waits no more for a pipe nobody will finish reading (the blocking pool,
    /// and a runtime being shut down, would wait for it).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl AgentProcess {
    /// The signal that the agent's output ended (taken once).
    pub fn take_ended(&mut self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        self.ended.take()
    }

    /// Stops the agent (stdin is already closed by then) and reads what it wrote to the
    /// end, or closes the connection to it; says why it ended if that was not a clean
    /// exit (or a close of Trellis's).
    pub async fn finish(mut self, grace: Duration) -> Option<String> {
        let (child, pgid, stderr_tail) = match &mut self.kind {
            Kind::Remote(link) => {
                let lost = link.finish(grace).await;
                self.drain().await;
                return lost;
            }
            Kind::Local {
                child,
                pgid,
                stderr_tail,
            } => (child, *pgid, stderr_tail.clone()),
        };
        let status = match tokio::time::timeout(grace, child.wait()).await {
            Ok(s) => s.ok(),
            Err(_) => {
                let groups: Vec<u32> = pgid.into_iter().collect();
                trellis_os::group::stop(&groups, Duration::from_secs(2), async {
                    let _ = child.wait().await;
                })
                .await;
                let _ = child.wait().await;
                // Stopped by Trellis: not the agent's failure.
                None
            }
        };
        // Wrapper launchers may leave children behind holding the pipes: the same stop
        // sequence ends them (off the runtime's threads: it may wait its grace).
        if let Some(pgid) = pgid {
            let _ = tokio::task::spawn_blocking(move || {
                trellis_os::group::stop_leftovers(pgid, Duration::from_secs(2));
            })
            .await;
        }
        self.drain().await;
        let status = status?;
        if status.success() {
            return None;
        }
        let tail: Vec<String> = match stderr_tail.lock() {
            Ok(t) => t.iter().cloned().collect(),
            Err(p) => p.into_inner().iter().cloned().collect(),
        };
        let what = match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "unknown status".into(),
        };
        Some(if tail.is_empty() {
            format!("the agent ended with {what}")
        } else {
            format!("the agent ended with {what}: {}", tail.join("\n"))
        })
    }

    /// Waits for the readers to reach the end of the agent's output; a pipe still held
    /// open [`DRAIN_WAIT`] later (by a process that left the group) is read no further.
    async fn drain(&mut self) {
        let deadline = tokio::time::Instant::now() + DRAIN_WAIT;
        for reader in &mut self.readers {
            if tokio::time::timeout_at(deadline, &mut *reader)
                .await
                .is_err()
            {
                self.stop.store(true, Ordering::Relaxed);
                reader.abort();
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::recorder::Kept;

    /// The agent reports the size of the pipe it writes into (`F_GETPIPE_SZ`): grown for a
    /// run no one types into, the usual one otherwise.
    #[tokio::test]
    async fn only_bulk_reads_ask_for_a_roomy_pipe() {
        let report = "import fcntl; print('{\"jsonrpc\":\"2.0\",\"method\":\"pipe\",\
                      \"params\":{\"bytes\":%d}}' % fcntl.fcntl(1, 1032), flush=True)";
        let cwd = std::env::current_dir().unwrap();
        for (bulk, want) in [(true, lines::Coalesce::ROOMY), (false, 64 << 10)] {
            let kept = Arc::new(Mutex::new(String::new()));
            let (tx, _rx) = crate::inputs::channel();
            let recorder = Recorder::new(Box::new(Kept(kept.clone())), tx);
            let args = ["-c".to_string(), report.to_string()];
            let (process, _transport) = spawn("python3", &args, &[], &cwd, bulk, recorder)
                .expect("python3 runs (scripts/test installs it)");
            process.finish(Duration::from_secs(5)).await;
            let log = kept.lock().unwrap().clone();
            assert!(
                log.contains(&format!("\"bytes\":{want}}}")),
                "bulk {bulk}: {log}"
            );
        }
    }
}
