//! ACP over WebSocket (and streamable HTTP) on the hub's listener (issue 27, item 6): an ACP client attaches to a
//! running session in the #533 shape — history as `session/update`, the agent's permission
//! requests asked of a controller and answered exactly once through the hub, who resolved
//! each said to every attachment, an observer refused, a client leaving said to the
//! others, prompts queued and answered at the turn's end; credentials only in the header.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

use crate::hubkit::{Dirs, text};

type Ws = WebSocket<TcpStream>;

/// An ACP client on `ws://ADDR/acp` with `token` in the Authorization header.
fn connect(addr: &str, token: &str) -> Result<Ws, String> {
    let mut req = format!("ws://{addr}/acp")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().map_err(|_| "header")?,
    );
    let stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let (ws, _) = tungstenite::client(req, stream).map_err(|e| e.to_string())?;
    Ok(ws)
}

fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).unwrap();
}

/// The next message (waiting up to 20 s), if any came.
fn next(ws: &mut Ws) -> Option<Value> {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        match ws.read() {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Reads until `pred` holds for a message: every message read meanwhile, that one last.
fn until(ws: &mut Ws, what: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let Some(m) = next(ws) else {
            panic!("no {what}; read: {seen:#?}")
        };
        let done = pred(&m);
        seen.push(m);
        if done {
            return seen;
        }
    }
}

/// `initialize` then `session/attach` of session 1 as `role` with `history`: the answer.
fn attach(ws: &mut Ws, role: &str, history: &str) -> Value {
    send(
        ws,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    let init = until(ws, "initialize answer", |m| m["id"] == 1)
        .pop()
        .unwrap();
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    send(
        ws,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/attach", "params": {"sessionId": "1", "role": role, "historyPolicy": history, "clientInfo": {"name": "test"}}}),
    );
    until(ws, "attach answer", |m| m["id"] == 2).pop().unwrap()
}

fn token(d: &Dirs, label: &str, scopes: &[&str]) -> String {
    let mut args = vec!["token", "new", "--label", label];
    for s in scopes {
        args.extend(["--scope", s]);
    }
    d.stdout(&args).trim().to_string()
}

#[test]
fn an_acp_client_attaches_over_websocket_and_answers_once() {
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    d.detach("demo", "fix the TODO");
    d.until_asking();
    // No token, or a token in the URL: refused before any upgrade.
    assert!(connect(&addr, "nope").is_err());
    let reader = token(&d, "reader", &["read"]);
    assert!(
        tungstenite::connect(format!("ws://{addr}/acp?token={reader}")).is_err(),
        "a token in the URL is refused"
    );

    // An observer with the whole history sees the agent's updates; its answer to anything
    // is not asked for, and it may not prompt.
    let mut watcher = connect(&addr, &reader).unwrap();
    let attached = attach(&mut watcher, "observer", "full");
    assert_eq!(attached["result"]["role"], "observer", "{attached}");
    let history = until(&mut watcher, "the history's tool call", |m| {
        m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == "tool_call"
    });
    assert!(
        history
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "an observer is asked nothing: {history:#?}"
    );
    send(
        &mut watcher,
        json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": {"sessionId": "1", "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    let refused = until(&mut watcher, "the prompt's refusal", |m| m["id"] == 9)
        .pop()
        .unwrap();
    assert_eq!(refused["error"]["code"], -32002, "{refused}");

    // A reader may not control.
    let mut sneaky = connect(&addr, &reader).unwrap();
    let no = attach(&mut sneaky, "controller", "none");
    assert_eq!(no["error"]["code"], -32002, "{no}");
    drop(sneaky);

    // Two controllers' worth of approvers: the first attaches as controller and is asked
    // the pending request; a second controller is refused while it holds control.
    let approver = token(&d, "phone", &["approve", "prompt"]);
    let mut phone = connect(&addr, &approver).unwrap();
    let attached = attach(&mut phone, "controller", "pending_only");
    assert_eq!(attached["result"]["role"], "controller", "{attached}");
    assert_eq!(
        attached["result"]["connectedClients"][0]["role"], "observer",
        "the watcher is there: {attached}"
    );
    let asked = until(&mut phone, "the pending request", |m| {
        m["method"] == "session/request_permission"
    })
    .pop()
    .unwrap();
    assert_eq!(asked["params"]["sessionId"], "1");
    let mut other = connect(&addr, &approver).unwrap();
    let second = attach(&mut other, "controller", "none");
    assert!(second.get("error").is_some(), "one controller: {second}");
    drop(other);
    // Answered from the phone: once, said to everyone attached with who answered.
    let allow = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    send(
        &mut phone,
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow}}}),
    );
    for ws in [&mut phone, &mut watcher] {
        let resolved = until(ws, "the resolution", |m| {
            m["method"] == "_trellis/permission_resolved"
        })
        .pop()
        .unwrap();
        assert_eq!(
            resolved["params"]["outcome"]["optionId"], allow,
            "{resolved}"
        );
        assert!(
            resolved["params"]["resolvedBy"]
                .to_string()
                .contains("phone"),
            "{resolved}"
        );
    }
    // A prompt from the controller is queued, and answered when its turn ends.
    send(
        &mut phone,
        json!({"jsonrpc": "2.0", "id": 20, "method": "session/prompt", "params": {"sessionId": "1", "prompt": [{"type": "text", "text": "and the README"}]}}),
    );
    // (What the agent asks meanwhile, the phone allows.)
    let ended = loop {
        let m = next(&mut phone).expect("the prompt's end");
        if m["method"] == "session/request_permission" {
            send(
                &mut phone,
                json!({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow}}}),
            );
        }
        if m["id"] == 20 {
            break m;
        }
    };
    assert!(ended["result"]["stopReason"].is_string(), "{ended}");
    // The phone leaves: the watcher is told.
    drop(phone);
    until(&mut watcher, "the phone's leaving", |m| {
        m["method"] == "_trellis/client_disconnected"
    });
    // The log records each answer once, by the phone's token; the prompt is there as sent.
    let log = d.log();
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("permission_decided"))
        .collect();
    assert!(!decided.is_empty(), "{log}");
    assert!(decided.iter().all(|l| l.contains("phone")), "{decided:#?}");
    let ids: std::collections::BTreeSet<String> = decided
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["msg"]["request_id"].to_string())
        .collect();
    assert_eq!(ids.len(), decided.len(), "each answered once: {decided:#?}");
    assert!(
        log.contains("and the README"),
        "{}",
        text(&d.trellis(&["ls"]))
    );
}

/// An ACP controller and a socket client answer the same 100 requests at the same time:
/// each reaches the agent exactly once (the agent counts), and the ACP client hears who
/// resolved every one.
#[test]
fn an_acp_controller_racing_another_client_answers_each_request_once() {
    use trellis_hub::client::Client;
    use trellis_hub::wire::{Body, Op};
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    let storm = format!(
        "{} agent hostile permission-storm",
        env!("CARGO_BIN_EXE_trellis")
    );
    d.detach(&storm, "go");
    crate::hubkit::until("100 requests to wait", || {
        d.ls()
            .first()
            .is_some_and(|r| r["pending"].as_array().is_some_and(|p| p.len() == 100))
    });
    let approver = token(&d, "acp-racer", &["approve"]);
    let mut ws = connect(&addr, &approver).unwrap();
    let attached = attach(&mut ws, "controller", "pending_only");
    assert_eq!(attached["result"]["role"], "controller", "{attached}");
    // The other racer, through the socket, answering whatever is pending.
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let other = std::thread::spawn(move || {
        let mut c = Client::connect(&files, "socket-racer").unwrap();
        let mut won = 0;
        for round in 0..200 {
            let Body::Sessions { sessions, .. } = c.call(Op::List, None).unwrap() else {
                panic!("a list")
            };
            let pending = sessions[0].pending.clone();
            if pending.is_empty() {
                break;
            }
            for p in pending {
                let op = Op::Decide {
                    session: 1,
                    request_id: p.request_id.clone(),
                    option_id: "yes".into(),
                    claim: None,
                    always: None,
                    reason: None,
                };
                if let Body::Done { .. } = c
                    .call(op, Some(format!("s-{round}-{}", p.request_id)))
                    .unwrap()
                {
                    won += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        won
    });
    // The ACP client answers every request it is asked, and counts the resolutions.
    let mut resolved = 0;
    while resolved < 100 {
        let m = next(&mut ws).unwrap_or_else(|| panic!("{resolved} resolutions heard"));
        if m["method"] == "session/request_permission" {
            send(
                &mut ws,
                json!({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": "yes"}}}),
            );
        } else if m["method"] == "_trellis/permission_resolved" {
            resolved += 1;
        }
    }
    let socket_won = other.join().unwrap();
    let log = d.storm_answered_once();
    let by_acp = log
        .lines()
        .filter(|l| l.contains("permission_decided") && l.contains("acp-racer"))
        .count();
    assert_eq!(
        by_acp + socket_won,
        100,
        "ACP {by_acp}, socket {socket_won}"
    );
}

/// One HTTP/1.1 request on `/acp` over a new connection: the stream, left open (for an
/// event stream) or read to its end.
fn acp_request(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::BufReader<TcpStream> {
    std::io::BufReader::new(crate::hubkit::http_request(
        addr,
        (method, "/acp"),
        headers,
        body,
        false,
    ))
}

/// An answer's status and headers (lowercased names).
fn head(r: &mut std::io::BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    use std::io::BufRead;
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            return (status, headers);
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
}

/// The next `data:` message of a chunked event stream.
fn event(r: &mut std::io::BufReader<TcpStream>, pending: &mut String) -> Value {
    use std::io::{BufRead, Read};
    loop {
        if let Some(i) = pending.find("\n\n") {
            let ev: String = pending.drain(..i + 2).collect();
            let data: String = ev
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if let Ok(v) = serde_json::from_str(&data) {
                return v;
            }
            continue;
        }
        let mut size = String::new();
        r.read_line(&mut size).unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk).unwrap();
        pending.push_str(&String::from_utf8_lossy(&chunk[..n]).replace("\r\n", "\n"));
    }
}

/// ACP over streamable HTTP: `initialize` opens a connection for its token; what names
/// the session (the attach's answer, its requests, their resolution) comes on the
/// session's stream; the request is answered through a POST; another token may not use
/// the connection.
#[test]
fn an_acp_client_attaches_over_streamable_http() {
    let d = Dirs::new();
    let (addr, _hub) = d.serve_listening();
    d.detach("demo", "fix the TODO");
    d.until_asking();
    let bearer = format!("Bearer {}", token(&d, "http-phone", &["approve"]));
    let json_ct = ("Content-Type", "application/json");
    let mut init = acp_request(
        &addr,
        "POST",
        &[("Authorization", &bearer), json_ct],
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
    );
    let (status, headers) = head(&mut init);
    assert_eq!(status, 200, "{headers:?}");
    let conn = headers
        .iter()
        .find(|(k, _)| k == "acp-connection-id")
        .map(|(_, v)| v.clone())
        .expect("a connection id");
    let auth = ("Authorization", bearer.as_str());
    let with_conn = ("Acp-Connection-Id", conn.as_str());
    let sse = ("Accept", "text/event-stream");
    // The connection's stream, and the session's (opened before the session is named).
    let mut conn_stream = acp_request(&addr, "GET", &[auth, with_conn, sse], "");
    assert_eq!(head(&mut conn_stream).0, 200);
    let mut session_stream = acp_request(
        &addr,
        "GET",
        &[auth, with_conn, sse, ("Acp-Session-Id", "1")],
        "",
    );
    assert_eq!(head(&mut session_stream).0, 200);
    // Another token may not use this connection.
    let other = format!("Bearer {}", token(&d, "other", &["approve"]));
    let (status, _) = head(&mut acp_request(
        &addr,
        "POST",
        &[("Authorization", &other), with_conn, json_ct],
        r#"{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}"#,
    ));
    assert_eq!(status, 403);
    let (status, _) = head(&mut acp_request(
        &addr,
        "POST",
        &[auth, with_conn, json_ct],
        r#"{"jsonrpc":"2.0","id":2,"method":"session/attach","params":{"sessionId":"1","role":"controller","historyPolicy":"pending_only"}}"#,
    ));
    assert_eq!(status, 202);
    // What names the session (the attach's answer included) comes on its stream.
    let mut sbuf = String::new();
    let attached = loop {
        let m = event(&mut session_stream, &mut sbuf);
        if m["id"] == 2 {
            break m;
        }
    };
    assert_eq!(attached["result"]["role"], "controller", "{attached}");
    let asked = loop {
        let m = event(&mut session_stream, &mut sbuf);
        if m["method"] == "session/request_permission" {
            break m;
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
    let (status, _) = head(&mut acp_request(
        &addr,
        "POST",
        &[auth, with_conn, json_ct, ("Acp-Session-Id", "1")],
        &answer.to_string(),
    ));
    assert_eq!(status, 202);
    let resolved = loop {
        let m = event(&mut session_stream, &mut sbuf);
        if m["method"] == "_trellis/permission_resolved" {
            break m;
        }
    };
    assert!(
        resolved["params"]["resolvedBy"]
            .to_string()
            .contains("http-phone"),
        "{resolved}"
    );
}
