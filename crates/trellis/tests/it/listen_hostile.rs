//! The listener as an attacker tries it (issue 45, items 5–9): clients that never read
//! attached to a 20 000-call session, a web page's requests meant to lock the owner out,
//! a rebinding page's `Host`, idle connections holding every place, and what is not
//! JSON-RPC sent to `/acp`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::hubkit::{Dirs, text};

/// Sends `head` (a request line and headers, without the blank line) and `body` on a new
/// connection that closes after the answer: (status, body).
fn raw(addr: &str, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got).into_owned();
    let status = got
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        got.split("\r\n\r\n").nth(1).unwrap_or("").to_string(),
    )
}

fn get(addr: &str, path: &str, host: &str, auth: Option<&str>) -> u16 {
    let auth = auth
        .map(|t| format!("\r\nAuthorization: Bearer {t}"))
        .unwrap_or_default();
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}{auth}"),
        b"",
    )
    .0
}

fn token(d: &Dirs, label: &str, scope: &str) -> String {
    d.stdout(&["token", "new", "--label", label, "--scope", scope])
        .trim()
        .to_string()
}

/// A web page the user opens sends what it likes to the listener (image tags with a
/// token in the URL, guesses by the hundred): the owner's token and a fresh pairing code
/// still work; only the credential that keeps failing is refused unchecked.
#[test]
fn a_web_page_cannot_lock_the_owner_out() {
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    let owner = token(&d, "owner", "admin");
    for _ in 0..30 {
        assert_eq!(get(&addr, "/api/pending?token=x", &addr, None), 400);
        assert_eq!(get(&addr, "/api/pending", &addr, None), 401);
    }
    for i in 0..30 {
        assert_eq!(
            get(&addr, "/api/pending", &addr, Some(&format!("guess-{i}"))),
            401,
            "a new guess is checked, and refused"
        );
    }
    let mut statuses = Vec::new();
    for _ in 0..15 {
        statuses.push(get(&addr, "/api/pending", &addr, Some("same-guess")));
    }
    assert_eq!(statuses[..10], [401; 10], "{statuses:?}");
    assert_eq!(statuses[10..], [429; 5], "{statuses:?}");
    // The owner and the phone were never locked out.
    assert_eq!(get(&addr, "/api/pending", &addr, Some(&owner)), 200);
    // The scheme's name is not case-sensitive; a token in a URL is refused whatever its
    // parameter is called.
    let (status, _) = raw(
        &addr,
        &format!("GET /api/pending HTTP/1.1\r\nHost: {addr}\r\nAuthorization: bearer {owner}"),
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(
        get(
            &addr,
            &format!("/api/pending?q={owner}"),
            &addr,
            Some(&owner)
        ),
        400
    );
    let paired = d.stdout(&["pair"]);
    let code = paired.rsplit("#pair=").next().unwrap().trim().to_string();
    let (status, body) = raw(
        &addr,
        &format!("POST /api/pair HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json"),
        json!({ "code": code }).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("trl_"), "{body}");
}

/// A page that made its own name resolve to this machine names itself in `Host`: refused
/// whatever token it carries; loopback names and those the user allowed are answered.
#[test]
fn only_loopback_names_and_allowed_ones_are_answered() {
    let d = Dirs::new();
    let bad = d.trellis(&[
        "serve",
        "--detach",
        "--listen",
        "127.0.0.1:0",
        "--allow-host",
        "evil.example/x",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let out = d.stdout(&[
        "serve",
        "--detach",
        "--listen",
        "127.0.0.1:0",
        "--allow-host",
        "Phone.Example",
    ]);
    let addr = out
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{out}"))
        .trim_end_matches('/')
        .to_string();
    let _hub = crate::hubkit::Hub(d.hub_pid());
    let port = addr.rsplit(':').next().unwrap();
    let reader = token(&d, "reader", "read");
    let bad = d.trellis(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--allow-host",
        "0.0.0.0",
        "--name",
        "zero",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    // Two Host headers, or a request line naming another host: refused.
    let (status, _) = raw(
        &addr,
        &format!(
            "GET /api/pending HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nAuthorization: Bearer {reader}"
        ),
        b"",
    );
    assert_ne!(status, 200);
    let (status, _) = raw(
        &addr,
        &format!(
            "GET http://evil.example/api/pending HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {reader}"
        ),
        b"",
    );
    assert_eq!(status, 421);
    for host in [
        "evil.example".to_string(),
        format!("127.0.0.1.nip.io:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("evil.example:{port}"),
        format!("[::1]evil:{port}"),
        "localhost..".to_string(),
        "localhost:99999".to_string(),
    ] {
        assert_eq!(
            get(&addr, "/api/pending", &host, Some(&reader)),
            421,
            "{host}"
        );
        assert_eq!(get(&addr, "/", &host, None), 421, "the page too: {host}");
    }
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "phone.example".to_string(),
        format!("PHONE.example:{port}"),
    ] {
        assert_eq!(
            get(&addr, "/api/pending", &host, Some(&reader)),
            200,
            "{host}"
        );
    }
}

/// More idle connections than the listener holds never keep a client out: the longest
/// idle one makes room for it.
#[test]
fn idle_connections_never_keep_a_client_out() {
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    // Some say nothing; others begin a request line and never finish it (slowloris).
    let idle: Vec<TcpStream> = (0..40)
        .map(|i| {
            let mut s = TcpStream::connect(&addr).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /api/health HTTP/1.1\r\nHo").unwrap();
            }
            s
        })
        .collect();
    // Within the client's wait; before, it waited for the idle ones to time out.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        format!("GET /api/health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got)
        .expect("answered while 40 idle connections are open");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    drop(idle);
}

/// What is not a JSON-RPC message, sent to `/acp`, is answered as JSON-RPC says (over
/// streamable HTTP and over WebSocket); a request another client claimed answers 409.
#[test]
fn what_is_not_json_rpc_is_answered_as_the_spec_says() {
    use trellis_hub::client::Client;
    use trellis_hub::wire::{Body, Op};
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    d.detach("demo", "fix the TODO");
    d.until_asking();
    let reader = token(&d, "reader", "read");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (body, code) in [
        ("{not json".to_string(), -32700),
        ("42".to_string(), -32600),
        ("\"a string\"".to_string(), -32600),
        ("[]".to_string(), -32600),
        (deep.clone(), -32700),
        (String::new(), -32700),
    ] {
        let (status, answer) = raw(
            &addr,
            &format!(
                "POST /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {reader}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
            ),
            body.as_bytes(),
        );
        assert_eq!(status, 400, "{answer}");
        let v: Value = serde_json::from_str(&answer).unwrap_or_else(|_| panic!("{answer}"));
        assert_eq!(v["error"]["code"], code, "{answer}");
        assert_eq!(v["id"], Value::Null, "{answer}");
    }
    // A body announced past the bound is refused before any of it is read.
    let mut big = TcpStream::connect(&addr).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    big.write_all(format!(
        "POST /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {reader}\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{{"
    ).as_bytes())
    .unwrap();
    let mut got = [0u8; 12];
    big.read_exact(&mut got).expect("answered before the body");
    assert_eq!(&got, b"HTTP/1.1 413");
    // Over WebSocket: each answered, in order, and the connection goes on.
    let mut req =
        tungstenite::client::IntoClientRequest::into_client_request(format!("ws://{addr}/acp"))
            .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {reader}").parse().unwrap());
    let stream = TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let (mut ws, _) = tungstenite::client(req, stream).unwrap();
    for (msg, code) in [
        (tungstenite::Message::text("{not json"), -32700),
        (tungstenite::Message::text("7"), -32600),
        (tungstenite::Message::binary(vec![0u8, 1, 2]), -32700),
        (tungstenite::Message::text(deep), -32700),
        (
            tungstenite::Message::text(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"session/list"}"#),
            -32600,
        ),
        (
            tungstenite::Message::text(r#"{"jsonrpc":"1.0","id":1,"method":"session/list"}"#),
            -32600,
        ),
    ] {
        ws.send(msg).unwrap();
        let answer = loop {
            if let tungstenite::Message::Text(t) = ws.read().unwrap() {
                break serde_json::from_str::<Value>(t.as_str()).unwrap();
            }
        };
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
    // A request another client claimed: 409 says what happened (a 503 is retried).
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let mut c = Client::connect(&files, "holder").unwrap();
    let request_id = d.ls()[0]["pending"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let claimed = c
        .call(
            Op::Claim {
                session: 1,
                request_id: request_id.clone(),
                lease_s: Some(60),
            },
            None,
        )
        .unwrap();
    assert!(matches!(claimed, Body::Claimed { .. }), "{claimed:?}");
    let approver = token(&d, "approver", "approve");
    let (status, body) = raw(
        &addr,
        &format!(
            "POST /api/decide HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {approver}\r\nContent-Type: application/json"
        ),
        json!({"session": 1, "request_id": request_id, "option_id": "allow"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("holder"), "{body}");
}

/// The hub's resident memory (`VmRSS`), in KiB.
fn rss_kib(pid: u32) -> u64 {
    crate::procs::rss_kib(pid)
}

/// An ACP client over WebSocket that asks for a session's whole history and never reads
/// a byte of it, its receive buffer small.
fn silent_websocket(addr: &str, token: &str) -> TcpStream {
    let s = crate::hubkit::http_request(
        addr,
        ("GET", "/acp"),
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ],
        "",
        false,
    );
    // Client frames are masked (with a zero mask here: the payload as it is).
    let frame = |text: &str| {
        let mut f = vec![0x81u8];
        let n = text.len();
        if n < 126 {
            f.push(0x80 | n as u8);
        } else {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(text.as_bytes());
        f
    };
    let mut s = s;
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/attach", "params": {"sessionId": "1", "role": "observer", "historyPolicy": "full"}}),
    ] {
        s.write_all(&frame(&msg.to_string())).unwrap();
    }
    s
}

/// Reads what `s` holds until its end: the bytes, and whether the hub closed it.
fn drain(mut s: TcpStream) -> (usize, bool) {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut n = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (n, true),
            Ok(k) => n += k,
            Err(_) => return (n, false),
        }
    }
}

/// Waits (at most `limit`) until the hub's end of `s` has left ESTABLISHED: the hub let
/// the client go, though what it wrote still waits in the client's socket. Linux reads
/// the sockets' states from `/proc/net/tcp*`; elsewhere, it waits `limit`.
fn hub_let_go(s: &TcpStream, limit: Duration) {
    let (client, hub) = (s.local_addr().unwrap(), s.peer_addr().unwrap());
    // `/proc/net/tcp` writes a socket's ports in upper-case hex; state 01 is ESTABLISHED.
    let (local, remote) = (
        format!(":{:04X}", hub.port()),
        format!(":{:04X}", client.port()),
    );
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if !cfg!(target_os = "linux") {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        }
        let tables = ["/proc/net/tcp", "/proc/net/tcp6"]
            .map(|t| std::fs::read_to_string(t).unwrap_or_default());
        let established = tables.iter().flat_map(|t| t.lines()).any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[2].ends_with(&remote) && f[3] == "01"
        });
        if !established {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Clients that never read, attached to a 20 000-call session, are let go once what was
/// sent to them waited too long, and never grow the hub by more than their bounds: over
/// WebSocket, and over streamable HTTP without ever opening a stream.
#[test]
fn clients_that_stop_reading_are_let_go_and_hold_little() {
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    let flood = format!("{} agent hostile call-flood", env!("CARGO_BIN_EXE_trellis"));
    d.detach(&flood, "go");
    let start = Instant::now();
    while d.ls().first().is_none_or(|r| r["state"] != "done") {
        assert!(start.elapsed() < Duration::from_secs(180), "the flood ends");
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = d.hub_pid();
    let reader = token(&d, "reader", "read");
    // A client that reads everything: what the whole history is.
    let mut whole = silent_websocket(&addr, &reader);
    let (whole_bytes, _) = {
        whole
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let mut n = 0;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(k) = whole.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k;
        }
        (n, ())
    };
    assert!(whole_bytes > 8 << 20, "the history is {whole_bytes} bytes");
    drop(whole);
    std::thread::sleep(Duration::from_secs(1));
    let before = rss_kib(pid);

    let silent: Vec<TcpStream> = (0..3).map(|_| silent_websocket(&addr, &reader)).collect();
    // Streamable HTTP: initialize, attach, and never open a stream to read the answers.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}).to_string();
    s.write_all(format!("POST /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {reader}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}", init.len()).as_bytes()).unwrap();
    let mut head = String::new();
    let _ = s.read_to_string(&mut head);
    let conn = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("acp-connection-id:")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("{head}"));
    let post = |body: Value| {
        raw(
            &addr,
            &format!(
                "POST /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {reader}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAcp-Connection-Id: {conn}"
            ),
            body.to_string().as_bytes(),
        )
    };
    let (status, body) = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/attach",
        "params": {"sessionId": "1", "role": "observer", "historyPolicy": "full"}}),
    );
    assert_eq!(status, 202, "{body}");

    // The hub lets them all go within its stall bounds, holding little meanwhile.
    let mut peak = before;
    let until = Instant::now() + Duration::from_secs(40);
    let mut gone = false;
    while !gone && Instant::now() < until {
        peak = peak.max(rss_kib(pid));
        gone = post(json!({"jsonrpc": "2.0", "method": "_trellis/noop"})).0 == 404;
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        gone,
        "the streamable-HTTP client that never opened a stream is let go"
    );
    for s in silent {
        // Reading before the hub has let it go would make it a reader again.
        hub_let_go(&s, Duration::from_secs(60));
        let (read, closed) = drain(s);
        assert!(closed, "a WebSocket client that never read is let go");
        assert!(
            read < whole_bytes,
            "it was let go before the history ended ({read} of {whole_bytes} bytes)"
        );
    }
    let grew = peak.saturating_sub(before);
    assert!(
        grew < 48 * 1024,
        "four clients that never read grew the hub by {grew} KiB"
    );
    // And the hub still serves.
    assert_eq!(get(&addr, "/api/pending", &addr, Some(&reader)), 200);
}
