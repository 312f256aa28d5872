//! The UI in a pseudo-terminal (`script`), for the benches that type keys into it: every
//! chunk of its output is kept with the moment it was read.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output as read, each chunk with the moment it was read.
type Chunks = Vec<(Instant, Vec<u8>)>;

/// Ended when dropped, also when a benchmark panics: `script` and the UI below it (in a
/// session of its own, so no signal to `script`'s group reaches it) are killed, so a failed
/// run leaves nothing behind holding the pipe.
pub struct Pty {
    pub child: Child,
    stdin: Option<ChildStdin>,
    pub started: Instant,
    seen: Arc<Mutex<Chunks>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Pty {
    /// Runs `line` (a shell line) under `script`, with the data and config directories
    /// under `dir`.
    pub fn start(line: &str, dir: &std::path::Path) -> Pty {
        let started = Instant::now();
        let mut child = Command::new("script")
            .args(["-qfec", line, "/dev/null"])
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("TERM", "xterm-256color")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let seen: Arc<Mutex<Chunks>> = Arc::default();
        let mut out = child.stdout.take().unwrap();
        let reader = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = out.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    seen.lock()
                        .unwrap()
                        .push((Instant::now(), buf[..n].to_vec()));
                }
            })
        };
        let stdin = child.stdin.take().unwrap();
        Pty {
            child,
            stdin: Some(stdin),
            started,
            seen,
            reader: Some(reader),
        }
    }

    /// When `what` was first read after `after`, waiting up to `limit`: the time of the
    /// read that completed it, also when it came in two reads (a key of two bytes, split
    /// by the pipe, was missed, and the benchmark failed with "no echo").
    pub fn wait_for(&self, what: &[u8], after: Instant, limit: Duration) -> Option<Instant> {
        let start = Instant::now();
        loop {
            let found = {
                let seen = self.seen.lock().unwrap();
                let mut carry: Vec<u8> = Vec::new();
                seen.iter().filter(|(t, _)| *t >= after).find_map(|(t, b)| {
                    carry.extend_from_slice(b);
                    let hit = carry.windows(what.len()).any(|w| w == what);
                    let keep = carry.len().saturating_sub(what.len().saturating_sub(1));
                    carry.drain(..keep);
                    hit.then_some(*t)
                })
            };
            if let Some(t) = found {
                return Some(t);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Types `key` every `every` (at most `max` times) while the stream runs, and returns
    /// each echo: from writing the key to the first output that carries it. A key typed
    /// after `end.0` (the stream's last output, e.g. the session stats' count) shows up
    /// in what was read from `end.1` on does not count, and ends the typing.
    /// The keys are typed in turn from `keys`: a screen that shows the same cells after a key
    /// (a prompt of one key repeated, scrolled a row up) sends the terminal nothing to echo,
    /// so a long run of keys needs many, in a cycle no row's width is a multiple of.
    pub fn echoes(
        &mut self,
        keys: &[&str],
        end: (&[u8], Instant),
        every: Duration,
        max: usize,
    ) -> Vec<Duration> {
        let mut echoes = Vec::new();
        for n in 0..max {
            std::thread::sleep(every);
            let at = Instant::now();
            let key = keys[n % keys.len()];
            self.send(key.as_bytes());
            let Some(t) = self.wait_for(key.as_bytes(), at, Duration::from_secs(5)) else {
                panic!(
                    "no echo of key {n} ({key}) within 5 s; read since it was typed:\n{}",
                    self.since(at)
                )
            };
            echoes.push(t - at);
            if self
                .wait_for(end.0, end.1, Duration::ZERO)
                .is_some_and(|done| done <= at)
            {
                echoes.pop();
                break;
            }
        }
        echoes
    }

    /// Everything read so far, for a failure's message.
    pub fn all(&self) -> String {
        let all: Vec<u8> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect();
        String::from_utf8_lossy(&all).into_owned()
    }

    /// What was read after `at` (its last 4 KiB, control bytes escaped), for a failure's
    /// message.
    pub fn since(&self, at: Instant) -> String {
        let bytes: Vec<u8> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| *t >= at)
            .flat_map(|(_, b)| b.clone())
            .collect();
        let tail = &bytes[bytes.len().saturating_sub(4096)..];
        String::from_utf8_lossy(tail).escape_debug().to_string()
    }

    /// Types `bytes`.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the pty's input is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Ctrl-C twice, then waits for the UI to end.
    pub fn quit(mut self) {
        self.send(b"\x03");
        std::thread::sleep(Duration::from_millis(200));
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\x03");
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // A run that did not quit (a panic): everything below `script`, then `script`.
        for pid in trellis_os::reaper::descendants(self.child.id()) {
            trellis_os::group::signal_process(pid, trellis_os::Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stdin.take();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}
