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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Lines;
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use trellis_core::wire::Dir;

use crate::recorder::{More, Recorder};

/// Lines of stderr kept to explain a crash.
const STDERR_TAIL: usize = 20;

pub struct AgentProcess {
    child: Child,
    pgid: Option<u32>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
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
    {
        let recorder = recorder.clone();
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                recorder.stderr(&line);
                let mut t = match tail.lock() {
                    Ok(t) => t,
                    Err(p) => p.into_inner(),
                };
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
    }
    let tap_in = recorder.clone();
    let reader = (BufReader::with_capacity(1 << 16, stdout), String::new());
    let incoming = futures::stream::unfold(reader, move |(mut r, mut buf)| {
        let tap = tap_in.clone();
        async move {
            loop {
                buf.clear();
                match r.read_line(&mut buf).await {
                    Ok(0) => return None,
                    Ok(_) => {
                        let line = buf.trim_end_matches(['\n', '\r']);
                        if line.trim().is_empty() {
                            continue;
                        }
                        // Group commit: another complete line already in memory?
                        let more = if r.buffer().contains(&b'\n') {
                            More::Buffered
                        } else {
                            More::No
                        };
                        if tap.line(Dir::AgentToClient, line, more) {
                            let line = line.to_string();
                            return Some((Ok(line), (r, buf)));
                        }
                    }
                    Err(e) => return Some((Err(e), (r, buf))),
                }
            }
        }
    })
    .boxed();
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
    let transport = Lines::new(Box::pin(outgoing) as _, incoming);
    Ok((
        AgentProcess {
            child,
            pgid,
            stderr_tail,
        },
        transport,
    ))
}

impl AgentProcess {
    /// Stops the agent (stdin is already closed by then); returns why it ended if that was
    /// not a clean exit.
    pub async fn finish(mut self, grace: Duration) -> Option<String> {
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(s) => s.ok(),
            Err(_) => {
                self.signal(libc::SIGTERM);
                match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
                    Ok(_) => return None,
                    Err(_) => {
                        self.signal(libc::SIGKILL);
                        let _ = self.child.wait().await;
                        return None;
                    }
                }
            }
        };
        // Wrapper launchers may leave children behind holding the pipes.
        self.signal(libc::SIGTERM);
        let status = status?;
        if status.success() {
            return None;
        }
        let tail: Vec<String> = match self.stderr_tail.lock() {
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
            what
        } else {
            format!("{what}: {}", tail.join("\n"))
        })
    }

    fn signal(&self, sig: i32) {
        if let Some(pgid) = self.pgid {
            crate::terminal::signal_group(pgid, sig);
        }
    }
}
