//! What the hub tests share: private directories for a run of Trellis, the background
//! hub stopped whatever happens, processes looked at, waiting on a condition.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Dirs {
    _home: tempfile::TempDir,
    pub(crate) runtime: PathBuf,
    pub(crate) data: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) work: PathBuf,
}

impl Dirs {
    pub(crate) fn new() -> Dirs {
        let home = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(home.path()).unwrap();
        let [runtime, data, config, work] = ["run", "data", "config", "w"].map(|d| root.join(d));
        for d in [&runtime, &data, &config, &work] {
            std::fs::create_dir_all(d).unwrap();
        }
        Dirs {
            _home: home,
            runtime,
            data,
            config,
            work,
        }
    }

    pub(crate) fn trellis(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_DATA_HOME", &self.data)
            .env("XDG_CONFIG_HOME", &self.config)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub(crate) fn log(&self) -> String {
        logs_in(&self.data)
    }

    /// `trellis ls --json`'s rows.
    /// The output of a command that must succeed.
    pub(crate) fn stdout(&self, args: &[&str]) -> String {
        let o = self.trellis(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The pid of the background hub `default`, from what it said when it started.
    pub(crate) fn hub_pid(&self) -> u32 {
        let said = std::fs::read_to_string(self.runtime.join("trellis/default.log")).unwrap();
        said.split("(pid ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{said}"))
    }

    /// `trellis run --detach` of `agent` in the work directory with `prompt`: its
    /// `HUB:KEY` (the command must succeed).
    pub(crate) fn detach(&self, agent: &str, prompt: &str) -> String {
        let work = self.work.to_str().unwrap();
        let o = self.trellis(&[
            "run", "--detach", "--agent", agent, "--cwd", work, "--prompt", prompt,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// `trellis serve --detach --listen 127.0.0.1:0`: the address it listens on, and its
    /// hub (stopped when the guard goes).
    pub(crate) fn serve_listening(&self) -> (String, Hub) {
        let out = self.stdout(&["serve", "--detach", "--listen", "127.0.0.1:0"]);
        let addr = out
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("{out}"))
            .trim_end_matches('/')
            .to_string();
        (addr, Hub(self.hub_pid()))
    }

    /// Waits for the `permission-storm` agent's count, checks that each of its 100
    /// requests was answered once, and returns the logs.
    pub(crate) fn storm_answered_once(&self) -> String {
        until("the agent's count", || {
            self.log().contains("report: storm:")
        });
        let log = self.log();
        assert!(
            log.contains("report: storm: 100 answered (yes=100), 0 twice"),
            "{log}"
        );
        log
    }

    /// Waits until the first session listed asks for a permission.
    pub(crate) fn until_asking(&self) {
        until("the session to ask", || {
            self.ls()
                .first()
                .is_some_and(|r| r["state"] == "permission")
        });
    }

    pub(crate) fn ls(&self) -> Vec<serde_json::Value> {
        let o = self.trellis(&["ls", "--json"]);
        crate::jsonl(&String::from_utf8_lossy(&o.stdout))
    }
}

/// The background hub, stopped when the test ends whatever happens.
pub(crate) struct Hub(pub(crate) u32);

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
        let until = Instant::now() + Duration::from_secs(10);
        while alive(self.0) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .status();
    }
}

pub(crate) use crate::procs::{alive, children};

pub(crate) fn until(what: &str, mut ok: impl FnMut() -> bool) {
    until_seen(what, Duration::from_secs(20), || {
        if ok() { Ok(()) } else { Err(String::new()) }
    });
}

/// Waits up to `limit` for `seen` to be `Ok`; on a timeout, says what it saw last.
pub(crate) fn until_seen(
    what: &str,
    limit: Duration,
    mut seen: impl FnMut() -> Result<(), String>,
) {
    let start = Instant::now();
    loop {
        let last = match seen() {
            Ok(()) => return,
            Err(last) => last,
        };
        assert!(
            start.elapsed() < limit,
            "timed out: {what}; last seen: {last}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every session log under the data directory `data`, one after the other.
pub(crate) fn logs_in(data: &std::path::Path) -> String {
    let mut out = String::new();
    for day in std::fs::read_dir(data.join("trellis/sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(day.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            out.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
        }
    }
    out
}

/// Writes one HTTP/1.1 request to `addr` on a new connection (closed after the answer
/// when `close`); the connection, to read the answer from.
pub(crate) fn http_request(
    addr: &str,
    (method, path): (&str, &str),
    headers: &[(&str, &str)],
    body: &str,
    close: bool,
) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if close {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    s
}
