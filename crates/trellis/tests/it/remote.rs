//! Agents that run elsewhere (issue 49): the demo served by `trellis agent serve` and
//! dialed over WebSocket by `trellis run` — by name from the config and by URL — with
//! tokens, and a connection killed mid-turn (refusals, TLS and hostile ends are in
//! `remote_refusals.rs`, which shares this file's helpers). Everything on loopback.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::hubkit::{Dirs, text, until};

/// A `trellis agent serve` running in the background (stopped when dropped).
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) addr: String,
    said: Arc<Mutex<String>>,
}

impl Served {
    /// Serves `agent` (after `--`) with `flags`, in `d`'s directories.
    pub(crate) fn start(d: &Dirs, flags: &[&str], agent: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(["agent", "serve"])
            .args(flags)
            .arg("--cwd")
            .arg(&d.work)
            .arg("--")
            .args(agent)
            .env("XDG_RUNTIME_DIR", &d.runtime)
            .env("XDG_DATA_HOME", &d.data)
            .env("XDG_CONFIG_HOME", &d.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take().unwrap();
        let keep = said.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = keep.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut addr = String::new();
        until("the server to listen", || {
            let s = said.lock().unwrap();
            if let Some(rest) = s.split("://").nth(1) {
                addr = rest.split('/').next().unwrap_or("").to_string();
            }
            !addr.is_empty() || s.contains("trellis: ")
        });
        assert!(!addr.is_empty(), "{}", said.lock().unwrap());
        Served { child, addr, said }
    }

    pub(crate) fn said(&self) -> String {
        self.said.lock().unwrap().clone()
    }

    /// The agent processes it runs now.
    pub(crate) fn agents(&self) -> Vec<u32> {
        crate::procs::children(self.child.id())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let until = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token of `scope` from `d`'s store.
pub(crate) fn token(d: &Dirs, scope: &str) -> String {
    d.stdout(&["token", "new", "--label", scope, "--scope", scope])
        .trim()
        .to_string()
}

/// `d`'s config: `[agents.box]` dialing `addr` with the token of `BOX_TOKEN`, working in
/// `d`'s work directory.
pub(crate) fn box_config(d: &Dirs, addr: &str) {
    let work = d.work.to_str().unwrap();
    config(
        d,
        &format!(
            "[agents.box]\nurl = \"ws://{addr}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\ncwd = \"{work}\"\n"
        ),
    );
}

/// Writes `d`'s config.
pub(crate) fn config(d: &Dirs, toml: &str) {
    let dir = d.config.join("trellis");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

/// `trellis run` of `agent` with one prompt, JSON Lines out, bounded by `limit`.
pub(crate) fn run(
    d: &Dirs,
    agent: &str,
    env: &[(&str, &str)],
    extra: &[&str],
    limit: Duration,
) -> Output {
    let local = d.work.join("local");
    std::fs::create_dir_all(&local).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--format",
            "jsonl",
            "--agent",
            agent,
            "--prompt",
            "fix the TODO",
        ])
        .arg("--cwd")
        .arg(&local)
        .args(extra)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    bounded(&mut child, limit)
}

/// Waits for `child` at most `limit` (a hang fails the test), its pipes read meanwhile.
pub(crate) fn bounded(child: &mut Child, limit: Duration) -> Output {
    crate::hostile::wait_bounded(child, limit, "trellis run")
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/tls")
        .join(name)
}

/// A test certificate or key of `fixtures/` (`localhost.pem`, `other.key`, `ca.pem`…), by path.
pub(crate) fn cert(name: &str) -> String {
    fixture(name).to_str().unwrap().to_string()
}

/// The demo served on loopback behind TLS with the certificate `NAME.pem` (and its key).
pub(crate) fn served_tls(d: &Dirs, name: &str) -> Served {
    Served::start(
        d,
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            &cert(&format!("{name}.pem")),
            "--tls-key",
            &cert(&format!("{name}.key")),
        ],
        &["trellis", "agent", "demo"],
    )
}

/// `trellis run` of `[agents.box]` with the token `secret` and `extra`, left running (a
/// test that kills its server meanwhile waits for it with [`bounded`]).
pub(crate) fn running(d: &Dirs, secret: &str, extra: &[&str]) -> Child {
    let local = d.work.join("local");
    std::fs::create_dir_all(&local).unwrap();
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--agent", "box", "--prompt", "fix the TODO"])
        .args(extra)
        .arg("--cwd")
        .arg(&local)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .env("BOX_TOKEN", secret)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The UI in tmux dialing `[agents.box]` at `addr` with token `secret` (its own config
/// file), `height` rows.
pub(crate) fn ui_dialing(
    d: &Dirs,
    addr: &str,
    secret: &str,
    height: u16,
) -> Option<crate::tui::Tmux> {
    ui_dialing_url(d, &format!("ws://{addr}/acp"), secret, height)
}

/// [`ui_dialing`] of `url`.
pub(crate) fn ui_dialing_url(
    d: &Dirs,
    url: &str,
    secret: &str,
    height: u16,
) -> Option<crate::tui::Tmux> {
    let work = d.work.to_str().unwrap();
    let cfg = d.work.join("ui.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agents.box]\nurl = \"{url}\"\ntoken = {{ env = \"BOX_TOKEN\" }}\ncwd = \"{work}\"\n"
        ),
    )
    .unwrap();
    let local = d.work.join("local");
    std::fs::create_dir_all(&local).unwrap();
    let env = format!("BOX_TOKEN={secret}");
    crate::tui::Tmux::start_env(
        &[&env],
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--agent",
            "box",
            "--permission",
            "allow-once",
            "--cwd",
            local.to_str().unwrap(),
        ],
        140,
        height,
    )
}

/// The first session log under the data directory `data`.
pub(crate) fn first_log(data: &Path) -> PathBuf {
    let day = std::fs::read_dir(data.join("trellis/sessions"))
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    std::fs::read_dir(day.path())
        .unwrap()
        .flatten()
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap()
}

/// Waits until the server runs no agent.
pub(crate) fn until_no_agent(s: &Served) {
    until("the served agent to end with its connection", || {
        s.agents().is_empty()
    });
}

#[test]
fn the_demo_served_over_websocket_is_dialed_by_name_and_by_url() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    let work = d.work.to_str().unwrap();
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\ncwd = \"{work}\"\n\
             [mcp_servers.files]\ncommand = \"mcp-files\"\nenv = {{ MCP_SECRET = \"mcp-s3cret\" }}\n",
            served.addr
        ),
    );
    let summary = d.work.join("summary.json");
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &[
            "--permission",
            "allow-once",
            "--summary",
            summary.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
    let events = crate::jsonl(&String::from_utf8_lossy(&o.stdout));
    // Where the agent runs is said: on stderr, in the session's first event, in the
    // summary, in the listing, in the trace.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "the agent runs at {}; its files are its own",
            served.addr
        )),
        "{stderr}"
    );
    let started = events
        .iter()
        .find(|e| e["type"] == "session_started")
        .unwrap();
    assert_eq!(started["remote"], served.addr.as_str(), "{started}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(summary["remote"], served.addr.as_str(), "{summary}");
    // This machine's MCP servers (and their secrets) are not offered to an agent elsewhere.
    assert!(
        stderr.contains("MCP server(s) of this machine not offered"),
        "{stderr}"
    );
    assert!(
        !d.log().contains("mcp-s3cret"),
        "an MCP server's secret went to the agent"
    );
    let listed = d.stdout(&["sessions", "list", "--json"]);
    assert!(
        listed.contains(&format!("\"agent\": \"box@{}\"", served.addr)),
        "{listed}"
    );
    // Its edits are on its machine: no code is rewound here.
    let id = serde_json::from_str::<serde_json::Value>(&listed).unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = d.trellis(&["sessions", "rewind", &id, "--to", "1", "--code"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("with its own files"), "{}", text(&o));
    let log_file = first_log(&d.data);
    let spans = d.work.join("spans.json");
    d.stdout(&[
        "log",
        "export",
        log_file.to_str().unwrap(),
        "--otlp-json",
        spans.to_str().unwrap(),
    ]);
    let spans = std::fs::read_to_string(&spans).unwrap();
    let port = served.addr.rsplit(':').next().unwrap();
    assert!(
        spans.contains("\"server.address\"") && spans.contains(&format!("\"{port}\"")),
        "{spans}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_ended" && e["stop_reason"] == "end_turn"),
        "{}",
        text(&o)
    );
    // The agent worked on its own files (it was offered none of this machine's).
    assert!(
        events.iter().any(|e| e["type"] == "tool_call_created"),
        "{}",
        text(&o)
    );
    let log = d.log();
    let first = log.lines().next().unwrap();
    assert!(
        first.contains(&format!("box@{}", served.addr)),
        "the log names where the agent runs: {first}"
    );
    let init = crate::sent(&log, "initialize");
    assert_eq!(
        init[0]["clientCapabilities"]["fs"]["readTextFile"], false,
        "{init:?}"
    );
    assert_eq!(init[0]["clientCapabilities"]["terminal"], false, "{init:?}");
    // The token went nowhere but the header.
    assert!(!log.contains(&secret), "the token is not in the log");
    assert!(!text(&o).contains(&secret));
    // Its agent ended with the connection.
    until_no_agent(&served);
}

/// A hub's session whose agent is dialed: `trellis ls` says where the agent runs.
#[test]
fn a_hub_lists_where_its_dialed_agent_runs() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    box_config(&d, &served.addr);
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--detach",
            "--agent",
            "box",
            "--cwd",
            d.work.to_str().unwrap(),
            "--prompt",
            "hi",
        ])
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .env("BOX_TOKEN", &secret)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let _hub = crate::hubkit::Hub(d.hub_pid());
    until("the session listed", || !d.ls().is_empty());
    let rows = d.ls();
    assert_eq!(rows[0]["agent"], format!("box@{}", served.addr), "{rows:?}");
    assert!(!d.trellis(&["ls"]).stdout.is_empty());
}

/// An agent elsewhere that asks for a login in a terminal: nothing it names runs here
/// (its login command is for its own machine), and the user is told to log in there.
#[test]
fn a_remote_agents_terminal_login_never_runs_here() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let exe = env!("CARGO_BIN_EXE_trellis");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &[exe, "agent", "hostile", "terminal-login-anyway"],
    );
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n",
            served.addr
        ),
    );
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &[],
        Duration::from_secs(60),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("log in there"), "{}", text(&o));
    assert!(
        !text(&o).contains("ws://"),
        "nothing of the URL was run: {}",
        text(&o)
    );
}

/// What an agent's entry may not say, said before anything is dialed (exit 2); and a
/// bearer token in any letter case is taken.
#[test]
fn an_agents_entry_is_checked_before_dialing() {
    let d = Dirs::new();
    for (entry, says) in [
        ("ca = [\"/nonexistent/ca.pem\"]", "is not a file"),
        (
            "token = \"x\"\nheaders = { Authorization = \"Bearer y\" }",
            "a token and an Authorization header",
        ),
        ("cwd = \"relative/dir\"", "absolute path"),
    ] {
        config(
            &d,
            &format!("[agents.box]\nurl = \"ws://127.0.0.1:9/acp\"\n{entry}\n"),
        );
        let o = run(&d, "box", &[], &[], Duration::from_secs(30));
        assert_eq!(o.status.code(), Some(2), "{entry}: {}", text(&o));
        assert!(text(&o).contains(says), "{entry}: {}", text(&o));
        // Pointing at the entry's line (the third of the file), with its key.
        assert!(
            text(&o).contains("config.toml:3: agents.box."),
            "{entry}: {}",
            text(&o)
        );
    }
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    let work = d.work.to_str().unwrap();
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\nheaders = {{ Authorization = {{ env = \"H\" }} }}\ncwd = \"{work}\"\n",
            served.addr
        ),
    );
    let lower = format!("bearer {secret}");
    let o = run(
        &d,
        "box",
        &[("H", &lower)],
        &["--permission", "allow-once"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
}
