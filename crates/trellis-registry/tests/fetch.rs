#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Downloads against servers that misbehave on purpose, on loopback: one that stops after
//! two bytes, one that trickles a byte at a time, one that redirects to an address the
//! rule refuses. Each download ends, within its bounds, saying which bound it hit.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use trellis_registry::address::Rule;
use trellis_registry::fetch::{Bounds, get};

/// A server whose every answer `answer` writes on the connection (after the request).
fn server(answer: impl Fn(&mut std::net::TcpStream, &str) + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let b = base.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
            }
            let mut w = s;
            answer(&mut w, &b);
        }
    });
    base
}

fn small(silence: u64, window: u64) -> Bounds {
    Bounds {
        overall: Duration::from_secs(20),
        silence: Duration::from_secs(silence),
        window: Duration::from_secs(window),
        floor: 1024,
        max: 1 << 20,
    }
}

#[test]
fn a_body_that_stops_is_given_up_on_for_its_silence() {
    let base = server(|w, _| {
        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nab");
        let _ = w.flush();
        std::thread::sleep(Duration::from_secs(60));
    });
    let start = Instant::now();
    let e = get(
        &format!("{base}/a.tgz"),
        Rule::Secure,
        &[],
        small(1, 5),
        Vec::new(),
    )
    .unwrap_err();
    assert!(e.contains("no data for 1 s (2 bytes came)"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_trickle_is_given_up_on_for_its_pace() {
    let base = server(|w, _| {
        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        for _ in 0..200 {
            if w.write_all(b"x").and_then(|()| w.flush()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let start = Instant::now();
    let e = get(
        &format!("{base}/a.tgz"),
        Rule::Secure,
        &[],
        small(3, 1),
        Vec::new(),
    )
    .unwrap_err();
    assert!(e.contains("too slow"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_whole_download_is_bounded_too() {
    let base = server(|w, _| {
        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n");
        let chunk = vec![b'x'; 4096];
        while w.write_all(&chunk).is_ok() {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let bounds = Bounds {
        overall: Duration::from_secs(2),
        ..small(5, 5)
    };
    let start = Instant::now();
    let e = get(
        &format!("{base}/a.tgz"),
        Rule::Secure,
        &[],
        bounds,
        Vec::new(),
    )
    .unwrap_err();
    assert!(e.contains("gave up after 2 s in all"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_redirect_obeys_the_rule_of_the_first_address() {
    let base = server(|w, _| {
        let _ = w.write_all(
            b"HTTP/1.1 302 Found\r\nLocation: http://10.255.255.1/a.tgz\r\nContent-Length: 0\r\n\r\n",
        );
    });
    let e = get(
        &format!("{base}/a.tgz"),
        Rule::Secure,
        &[],
        small(5, 5),
        Vec::new(),
    )
    .unwrap_err();
    assert!(e.contains("a redirect to http://10.255.255.1/a.tgz"), "{e}");
    assert!(e.contains("not this machine"), "{e}");
    // On this machine, followed.
    let ok = server(|w, base| {
        let _ = w.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok{}",
                &base[..0]
            )
            .as_bytes(),
        );
    });
    let hop = {
        let target = ok.clone();
        server(move |w, _| {
            let _ = w.write_all(
                format!("HTTP/1.1 301 Moved\r\nLocation: {target}/b\r\nContent-Length: 0\r\n\r\n")
                    .as_bytes(),
            );
        })
    };
    let (answer, body) = get(
        &format!("{hop}/a"),
        Rule::Secure,
        &[],
        small(5, 5),
        Vec::new(),
    )
    .unwrap();
    assert_eq!((answer.status, body.as_slice()), (200, &b"ok"[..]));
}

#[test]
fn an_address_that_only_starts_like_this_machine_is_refused() {
    for url in [
        "http://localhost.evil.example/r.json",
        "http://127.0.0.1.evil.example/r.json",
    ] {
        let e = get(url, Rule::Secure, &[], small(5, 5), Vec::new()).unwrap_err();
        assert!(e.contains("not this machine"), "{url}: {e}");
    }
}
