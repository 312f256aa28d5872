//! Agents that run elsewhere over streamable HTTP (issue 49): the demo served by
//! `trellis agent serve` and dialed at `http://…/acp` by `trellis run` and the UI — its
//! calls and permissions, a connection killed mid-turn and restored, refusals and the
//! server's bounds said plainly. Everything on loopback.

use std::io::{Read, Write};
use std::time::Duration;

use crate::hubkit::{Dirs, text};
use crate::remote::{Served, cert, config, run, served_tls, token, ui_dialing_url, until_no_agent};

/// `d`'s config: `[agents.box]` at `http://addr/acp` with the token of `BOX_TOKEN`.
fn http_box(d: &Dirs, addr: &str) {
    let work = d.work.to_str().unwrap();
    config(
        d,
        &format!(
            "[agents.box]\nurl = \"http://{addr}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\ncwd = \"{work}\"\n"
        ),
    );
}

#[test]
fn the_demo_served_over_streamable_http_is_dialed() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    assert!(
        served
            .said()
            .contains(&format!("http://{}/acp", served.addr)),
        "the server says both of its addresses: {}",
        served.said()
    );
    http_box(&d, &served.addr);
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
    let count = |kind: &str| events.iter().filter(|e| e["type"] == kind).count();
    assert!(count("tool_call_created") >= 3, "{}", text(&o));
    // Requests of the agent's (permissions) came on its session's stream, and their
    // answers went back: each answered once.
    assert!(count("permission_requested") >= 1, "{}", text(&o));
    assert_eq!(
        count("permission_requested"),
        count("permission_resolved"),
        "{}",
        text(&o)
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_ended" && e["stop_reason"] == "end_turn"),
        "{}",
        text(&o)
    );
    let started = events
        .iter()
        .find(|e| e["type"] == "session_started")
        .unwrap();
    assert_eq!(started["remote"], served.addr.as_str(), "{started}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(summary["remote"], served.addr.as_str(), "{summary}");
    let log = d.log();
    let init = crate::sent(&log, "initialize");
    assert_eq!(init[0]["clientCapabilities"]["terminal"], false, "{init:?}");
    assert!(!log.contains(&secret), "the token is not in the log");
    assert!(!text(&o).contains(&secret));
    crate::hubkit::until("the server to say the transport", || {
        served.said().contains("streamable HTTP")
    });
    // The connection's DELETE ended its agent.
    until_no_agent(&served);
}

/// The server killed in the middle of a turn and started again on the same address: the
/// UI dials again over streamable HTTP, the agent takes its session up again, and the
/// next prompt runs on the new connection.
#[test]
fn a_streamable_http_connection_lost_mid_turn_is_restored() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let demo = [
        "trellis",
        "agent",
        "demo",
        "--delay-ms",
        "300",
        "--resume-session",
    ];
    let first = Served::start(&d, &["--listen", "127.0.0.1:0"], &demo);
    let addr = first.addr.clone();
    let Some(t) = ui_dialing_url(&d, &format!("http://{addr}/acp"), &secret, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait("a call of the turn", |s| s.contains("Read README.md"));
    drop(first);
    t.wait("the loss on the screen", |s| s.contains("dialing again"));
    let _second = Served::start(&d, &["--listen", &addr], &demo);
    let s = t.wait("the connection restored", |s| {
        s.contains("connected again after")
    });
    assert!(s.contains("took up its session"), "{s}");
    t.send(&["hello again", "Enter"]);
    t.wait("the next turn on the new connection", |s| {
        s.contains("› hello again") && s.contains("the tests pass")
    });
    let log = t.log();
    assert_eq!(crate::sent(&log, "session/resume").len(), 1, "{log}");
    let mut s = trellis_core::Session::new(trellis_core::Policy::Ask);
    let problems = trellis_core::log::rebuild(&mut s, log.lines(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
    assert!(s.open_permissions().is_empty());
}

/// One HTTP/1.1 request to `addr` on a connection of its own: the status and the body.
fn request(addr: &str, head: &str, body: &str) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got).into_owned();
    let (headers, body) = got.split_once("\r\n\r\n").unwrap_or((&got, ""));
    let status = headers
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, headers.to_string(), body.to_string())
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

/// What the server refuses over streamable HTTP is said with its reason: no token, a
/// token of another scope, a connection another token opened, an agent more than
/// `--max-agents`.
#[test]
fn streamable_http_refusals_reach_the_user_with_their_reason() {
    let d = Dirs::new();
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0", "--max-agents", "1"],
        &["trellis", "agent", "demo"],
    );
    let url = format!("http://{}/acp", served.addr);
    let o = run(&d, &url, &[], &[], Duration::from_secs(30));
    assert!(!o.status.success());
    assert!(
        text(&o).contains("401") && text(&o).contains("a token is needed"),
        "{}",
        text(&o)
    );
    // Not worth a retry: exit 2, as for a config error.
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A URL alone carries no token, and the user is told how to give one.
    assert!(text(&o).contains("no token was sent"), "{}", text(&o));
    // Nothing exited: the connection was refused, and that is what is said.
    assert!(
        text(&o).contains("refused the connection") && !text(&o).contains("agent exited"),
        "{}",
        text(&o)
    );
    let approve = token(&d, "approve");
    http_box(&d, &served.addr);
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &approve)],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("scope agent"), "{}", text(&o));
    assert!(served.agents().is_empty());

    // A query is refused for what it is, not as a wrong path.
    let mine = token(&d, "agent");
    let (status, _, body) = request(
        &served.addr,
        &format!(
            "POST /acp?x=1 HTTP/1.1\r\nAuthorization: Bearer {mine}\r\nContent-Type: application/json"
        ),
        INIT,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("takes no query"), "{body}");
    // (Its stderr is read as it comes.)
    crate::hubkit::until("the server to say the refusal", || {
        served.said().contains(": /acp takes no query")
    });
    // A connection opened by hand holds the one agent's place.
    let (status, headers, body) = request(
        &served.addr,
        &format!(
            "POST /acp HTTP/1.1\r\nAuthorization: Bearer {mine}\r\nContent-Type: application/json\r\nAccept: application/json"
        ),
        INIT,
    );
    assert_eq!(status, 200, "{headers}\n{body}");
    assert!(body.contains("\"result\""), "{body}");
    let conn = headers
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("acp-connection-id")
                .then(|| v.trim().to_string())
        })
        .unwrap();
    assert_eq!(served.agents().len(), 1);
    // Another token may not use it.
    let theirs = token(&d, "agent");
    let (status, _, body) = request(
        &served.addr,
        &format!(
            "DELETE /acp HTTP/1.1\r\nAuthorization: Bearer {theirs}\r\nAcp-Connection-Id: {conn}"
        ),
        "",
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("another token"), "{body}");
    // Said on the server too, with why.
    crate::hubkit::until("the server to say the refusal", || {
        served
            .said()
            .contains("refused: 403 Forbidden: this connection was opened with another token")
    });
    // No place is left: the next client is told so.
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &theirs)],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("503") && text(&o).contains("every agent of this server is at work"),
        "{}",
        text(&o)
    );
    // Its owner's DELETE ends the connection and its agent; the place is free again.
    let (status, _, body) = request(
        &served.addr,
        &format!(
            "DELETE /acp HTTP/1.1\r\nAuthorization: Bearer {mine}\r\nAcp-Connection-Id: {conn}"
        ),
        "",
    );
    assert!((200..300).contains(&status), "{status} {body}");
    until_no_agent(&served);
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &theirs)],
        &["--permission", "allow-once"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
}

/// `https://`: the certificate checked against the name dialed, with the config's CA.
#[test]
fn https_is_checked_against_the_name_dialed() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = served_tls(&d, "localhost");
    assert!(served.said().contains("https://"), "{}", served.said());
    let port = served.addr.rsplit(':').next().unwrap();
    let work = d.work.to_str().unwrap();
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"https://localhost:{port}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nca = [\"{}\"]\ncwd = \"{work}\"\n",
            cert("ca.pem")
        ),
    );
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &["--permission", "allow-once"],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
    // Plain ws:// or http:// at a TLS server: said so, and the server says why.
    for scheme in ["ws", "http"] {
        config(
            &d,
            &format!(
                "[agents.box]\nurl = \"{scheme}://localhost:{port}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n"
            ),
        );
        let o = run(
            &d,
            "box",
            &[("BOX_TOKEN", &secret)],
            &[],
            Duration::from_secs(30),
        );
        assert!(!o.status.success());
        assert!(
            text(&o).contains("did not answer in plain HTTP"),
            "{scheme}: {}",
            text(&o)
        );
    }
    crate::hubkit::until("the server to say what the client spoke", || {
        served.said().contains("the client did not speak TLS")
    });
    // --worktree makes a worktree here, which an agent with its own files never sees.
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &["--worktree"],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("leave --worktree out"), "{}", text(&o));
    // A certificate for another name: refused before anything is sent.
    let other = served_tls(&d, "other");
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"https://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nca = [\"{}\"]\n",
            other.addr,
            cert("ca.pem")
        ),
    );
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("TLS handshake failed") && text(&o).contains("another name"),
        "{}",
        text(&o)
    );
    until_no_agent(&served);
    assert!(other.agents().is_empty(), "no agent for a refused client");
    // https:// at a server that answers in plain HTTP: said so.
    let plain = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"https://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n",
            plain.addr
        ),
    );
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("did not answer in TLS"), "{}", text(&o));
}

/// A command that cannot run is said when the server starts, not to each client.
#[test]
fn a_server_of_a_command_that_cannot_run_does_not_start() {
    let d = Dirs::new();
    let o = d.trellis(&[
        "agent",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--",
        "no-such-agent-here",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cannot serve no-such-agent-here: no-such-agent-here is not on PATH"),
        "{}",
        text(&o)
    );
}

/// A hand-made streamable-HTTP server: `initialize` answered (when `answer`), other
/// `POST`s accepted, and every stream one event of `event_size` bytes never ended.
fn fake_server(answer: bool, event_size: usize) -> std::net::SocketAddr {
    use std::io::BufRead;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let mut head = Vec::new();
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line);
                    }
                    let len = head
                        .iter()
                        .find_map(|h| {
                            let (k, v) = h.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    let mut body = vec![0; len];
                    r.read_exact(&mut body).unwrap();
                    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    if head[0].starts_with("GET") {
                        let _ = write!(
                            w,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: "
                        );
                        let chunk = vec![b'x'; 1 << 20];
                        for _ in 0..event_size >> 20 {
                            if w.write_all(&chunk).is_err() {
                                return;
                            }
                        }
                        std::thread::sleep(Duration::from_secs(20));
                        return;
                    }
                    if body["method"] == "initialize" {
                        if !answer {
                            std::thread::sleep(Duration::from_secs(20));
                            return;
                        }
                        let reply = serde_json::json!({"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}).to_string();
                        let _ = write!(
                            w,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: c1\r\nContent-Length: {}\r\n\r\n{reply}",
                            reply.len()
                        );
                    } else {
                        let _ = write!(w, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
                    }
                }
            });
        }
    });
    addr
}

/// Servers that misbehave over streamable HTTP: one that never answers `initialize`, one
/// whose stream sends an event far larger than any agent line. Each is said plainly,
/// within the bounds, and nothing hangs.
#[test]
fn a_hostile_streamable_http_server_gives_a_clear_error_and_no_hang() {
    let d = Dirs::new();
    config(&d, "[connection]\nsetup_timeout = 2\n");
    let silent = fake_server(false, 0);
    let o = run(
        &d,
        &format!("http://{silent}/acp"),
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        // The setup timeout, or the request's own bound (the same), whichever is first.
        text(&o).contains("within 2 s"),
        "{}",
        text(&o)
    );
    let huge = fake_server(true, 80 << 20);
    let o = run(
        &d,
        &format!("http://{huge}/acp"),
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("too large"), "{}", text(&o));
}

/// Hostile agents behind the server, over streamable HTTP: an agent that dies with
/// permission requests open has each answered exactly once; one that never answers
/// `initialize` is given up on within the setup timeout.
#[test]
fn hostile_agents_behind_streamable_http_are_held_to_the_same_bounds() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let exe = env!("CARGO_BIN_EXE_trellis");
    for scenario in ["die-with-permissions", "hang-init"] {
        let served = Served::start(
            &d,
            &["--listen", "127.0.0.1:0"],
            &[exe, "agent", "hostile", scenario],
        );
        config(
            &d,
            &format!(
                "[connection]\nsetup_timeout = 3\n[agents.box]\nurl = \"http://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n",
                served.addr
            ),
        );
        let o = run(
            &d,
            "box",
            &[("BOX_TOKEN", &secret)],
            &["--permission", "allow-once"],
            Duration::from_secs(60),
        );
        assert!(!o.status.success(), "{scenario}: {}", text(&o));
        if scenario == "die-with-permissions" {
            let mut seen = std::collections::HashMap::<String, usize>::new();
            for e in crate::jsonl(&String::from_utf8_lossy(&o.stdout)) {
                if e["type"] == "permission_resolved" {
                    *seen.entry(e["request_id"].to_string()).or_default() += 1;
                }
            }
            assert!(!seen.is_empty(), "{}", text(&o));
            assert!(seen.values().all(|n| *n == 1), "{seen:?}");
        } else {
            assert!(text(&o).contains("3 s"), "{scenario}: {}", text(&o));
        }
        until_no_agent(&served);
    }
}

/// The server stopped (SIGTERM) while a turn runs: its clients are told — a WebSocket
/// client hears why, a streamable-HTTP client's streams end — and every agent ends with
/// it, none left running.
#[test]
fn a_stopped_server_tells_its_clients_and_leaves_no_agent() {
    for scheme in ["ws", "http"] {
        let d = Dirs::new();
        let secret = token(&d, "agent");
        let mut served = Served::start(
            &d,
            &["--listen", "127.0.0.1:0"],
            &["trellis", "agent", "demo", "--delay-ms", "400"],
        );
        let work = d.work.to_str().unwrap();
        config(
            &d,
            &format!(
                "[agents.box]\nurl = \"{scheme}://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\ncwd = \"{work}\"\n",
                served.addr
            ),
        );
        let o = std::thread::scope(|scope| {
            let client = scope.spawn(|| {
                run(
                    &d,
                    "box",
                    &[("BOX_TOKEN", &secret)],
                    &["--permission", "allow-once"],
                    Duration::from_secs(60),
                )
            });
            crate::hubkit::until("the agent to start", || {
                served.said().contains("agent started")
            });
            let agent: u32 = served
                .said()
                .split("(pid ")
                .nth(1)
                .and_then(|r| r.split([',', ')']).next())
                .and_then(|p| p.parse().ok())
                .unwrap();
            std::thread::sleep(Duration::from_millis(500));
            let _ = std::process::Command::new("kill")
                .arg(served.child.id().to_string())
                .status();
            let until = std::time::Instant::now() + Duration::from_secs(15);
            let status = loop {
                if let Some(st) = served.child.try_wait().unwrap() {
                    break st;
                }
                assert!(
                    std::time::Instant::now() < until,
                    "{scheme}: the server did not stop: {}",
                    served.said()
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            // Its last words come on its stderr's reader.
            crate::hubkit::until("the server's last words", || {
                served.said().contains("stopped by")
            });
            assert!(status.success(), "{scheme}: {}", served.said());
            assert!(
                served.said().contains("every client was told"),
                "{scheme}: {}",
                served.said()
            );
            assert!(
                !crate::hubkit::alive(agent),
                "{scheme}: the agent outlived its server"
            );
            client.join().unwrap()
        });
        assert!(!o.status.success(), "{scheme}: {}", text(&o));
        let said = if scheme == "ws" {
            "the server is stopping"
        } else {
            "ended the connection"
        };
        assert!(text(&o).contains(said), "{scheme}: {}", text(&o));
    }
}

/// A budget that stops a run says where its agent runs: an idle timeout of an agent
/// elsewhere may be its connection's doing.
#[test]
fn an_idle_remote_agent_is_stopped_saying_where_it_runs() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo", "--delay-ms", "4000"],
    );
    http_box(&d, &served.addr);
    let summary = d.work.join("summary.json");
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &secret)],
        &[
            "--idle-timeout",
            "1",
            "--summary",
            summary.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(11), "{}", text(&o));
    let said = format!("nothing from the agent at {} for 1 s", served.addr);
    assert!(text(&o).contains(&said), "{}", text(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(
        summary["budget"].as_str().unwrap().contains(&said),
        "{summary}"
    );
    until_no_agent(&served);
}
