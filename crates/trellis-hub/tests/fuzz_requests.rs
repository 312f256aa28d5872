#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "listen")]

//! The listener's request parsing fuzzed end to end: whatever bytes a client sends — any
//! method, path, `Host`, credential, length, upgrade or body, JSON-RPC or not, nested
//! 100 000 deep — nothing in the listener panics, nothing is answered with an internal
//! error, and the listener answers the next client. `scripts/fuzz` runs many more cases
//! (TRELLIS_FUZZ_CASES).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use trellis_hub::serve::Reply;
use trellis_hub::tokens::{Scope, Store};
use trellis_hub::wire::{Body, Response};

/// A listener with a hub loop that answers every call, and a token that may do anything.
struct Target {
    addr: String,
    secret: String,
    panics: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
    _listening: trellis_hub::listen::Listening,
    _tmp: tempfile::TempDir,
}

fn target() -> Target {
    let panics = Arc::new(AtomicUsize::new(0));
    let counted = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        counted.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(tmp.path().join("tokens.json"));
    let (_, secret) = store.mint("fuzz", &[Scope::Admin], None).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tx, mut calls) = tokio::sync::mpsc::channel::<trellis_hub::serve::Call>(64);
    rt.spawn(async move {
        while let Some(call) = calls.recv().await {
            let id = call.request.id;
            let body = Body::Error {
                code: "not_found".into(),
                message: "no such session".into(),
            };
            let _ = call.reply.send(Reply::Once(Response { id, body }));
        }
    });
    let listening = rt
        .block_on(async {
            trellis_hub::listen::listen(
                "127.0.0.1:0".parse().unwrap(),
                store,
                vec!["phone.example".into()],
                tx,
            )
        })
        .unwrap();
    Target {
        addr: listening.addr.to_string(),
        secret,
        panics,
        _rt: rt,
        _listening: listening,
        _tmp: tmp,
    }
}

/// One request as a hostile client writes it.
#[derive(Debug, Clone)]
struct Hostile {
    method: String,
    path: String,
    host: Option<String>,
    auth: u8,
    headers: Vec<(String, String)>,
    length: Option<i64>,
    body: Vec<u8>,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,40}",
        Just(String::new()),
        Just("\u{202E}é漢\r\n".into()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/attach\",\"params\":{\"sessionId\":\"1\"}}".to_vec()),
        Just(b"{\"session\":1,\"request_id\":\"1\",\"option_id\":\"allow\"}".to_vec()),
        Just(b"{\"code\":\"nope\"}".to_vec()),
        (1usize..100_000).prop_map(|n| [vec![b'['; n], vec![b']'; n]].concat()),
        (1usize..50_000).prop_map(|n| b"{\"a\":".repeat(n)),
        text().prop_map(String::into_bytes),
        Just(b"42".to_vec()),
    ]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    (
        prop_oneof![
            3 => Just("GET".to_string()),
            6 => Just("POST".to_string()),
            1 => Just("DELETE".to_string()),
            1 => Just("PUT".to_string()),
            1 => "[A-Z]{1,8}",
        ],
        prop_oneof![
            8 => Just("/acp".to_string()),
            2 => Just("/api/pending".to_string()),
            2 => Just("/api/decide".to_string()),
            2 => Just("/api/send".to_string()),
            2 => Just("/api/pair".to_string()),
            1 => Just("/".to_string()),
            1 => Just("/acp?token=x".to_string()),
            1 => "/[ -~&&[^ ]]{0,30}",
        ],
        proptest::option::weighted(
            0.95,
            prop_oneof![
                12 => Just("127.0.0.1".to_string()),
                1 => Just("localhost:1".to_string()),
                1 => Just("[::1]:9".to_string()),
                1 => Just("phone.example".to_string()),
                1 => Just("evil.example".to_string()),
                1 => Just("127.0.0.1.nip.io".to_string()),
                1 => "[ -~]{0,30}",
            ],
        ),
        prop_oneof![6 => Just(1u8), 1 => 0u8..4],
        proptest::collection::vec(
            (
                prop_oneof![
                    4 => Just("Content-Type".to_string()),
                    3 => Just("Accept".to_string()),
                    1 => Just("Upgrade".to_string()),
                    1 => Just("Connection".to_string()),
                    1 => Just("Acp-Connection-Id".to_string()),
                    1 => Just("Acp-Session-Id".to_string()),
                    1 => Just("Origin".to_string()),
                    1 => Just("Transfer-Encoding".to_string()),
                    1 => Just("Sec-WebSocket-Key".to_string()),
                    1 => Just("Sec-WebSocket-Version".to_string()),
                    1 => "[A-Za-z-]{1,20}",
                ],
                prop_oneof![
                    4 => Just("application/json".to_string()),
                    2 => Just("application/json, text/event-stream".to_string()),
                    1 => Just("text/event-stream".to_string()),
                    1 => Just("websocket".to_string()),
                    1 => Just("Upgrade".to_string()),
                    1 => Just("chunked".to_string()),
                    1 => Just("13".to_string()),
                    1 => Just("dGhlIHNhbXBsZSBub25jZQ==".to_string()),
                    1 => "[ -~]{0,40}",
                ],
            ),
            0..6,
        ),
        proptest::option::weighted(0.1, -5i64..100_000),
        body(),
    )
        .prop_map(
            |(method, path, host, auth, headers, length, body)| Hostile {
                method,
                path,
                host,
                auth,
                headers,
                length,
                body,
            },
        )
}

impl Hostile {
    fn bytes(&self, secret: &str) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if let Some(h) = &self.host {
            head.push_str(&format!("Host: {h}\r\n"));
        }
        match self.auth {
            1 => head.push_str(&format!("Authorization: Bearer {secret}\r\n")),
            2 => head.push_str("Authorization: Bearer trl_guess\r\n"),
            3 => head.push_str("Authorization: Basic eDp5\r\n"),
            _ => {}
        }
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let length = self.length.unwrap_or(self.body.len() as i64);
        head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// Sends `bytes`, says it is done sending, and reads whatever comes back.
fn exchange(addr: &str, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

fn target_once() -> &'static Target {
    static TARGET: std::sync::OnceLock<Target> = std::sync::OnceLock::new();
    TARGET.get_or_init(target)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("TRELLIS_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(128),
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_request_panics_the_listener_or_stops_it(req in hostile()) {
        let t = target_once();
        let got = exchange(&t.addr, &req.bytes(&t.secret));
        prop_assert_eq!(t.panics.load(Ordering::SeqCst), 0, "a panic answering {:?}", req);
        if let Some(status) = got.strip_prefix("HTTP/1.1 ").and_then(|r| r.get(..3)) {
            prop_assert!(
                !status.starts_with('5') || status == "503",
                "{} answering {:?}: {}", status, req, got
            );
        }
        let health = exchange(
            &t.addr,
            b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        );
        prop_assert!(health.starts_with("HTTP/1.1 200"), "after {:?}: {}", req, health);
    }
}

/// What `/acp` takes as one message: any bytes, and exactly the JSON objects.
#[test]
fn a_message_is_exactly_a_json_object() {
    proptest!(|(bytes in body())| {
        let parsed = serde_json::from_slice::<serde_json::Value>(&bytes);
        let checked = trellis_hub::listen::check_message(&bytes);
        prop_assert_eq!(checked.is_ok(), parsed.as_ref().is_ok_and(|v| v.is_object()));
        if let Err((code, _)) = checked {
            prop_assert!(code == -32700 || code == -32600);
        }
    });
    proptest!(|(host in text())| {
        if let Some(name) = trellis_hub::listen::host_name(&host) {
            let _ = trellis_hub::listen::valid_host_name(&name);
        }
    });
}
