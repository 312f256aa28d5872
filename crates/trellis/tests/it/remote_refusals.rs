//! Agents that run elsewhere, where trust is decided: refusals reach the user with their
//! reason, plain WebSocket to another machine and credentials in URLs are refused before
//! dialing, TLS is checked against the name dialed, and hostile agents and servers are
//! held to the same bounds as local ones. Everything on loopback.

use std::io::Write;
use std::time::Duration;

use crate::hubkit::{Dirs, alive, text};
use crate::remote::*;

/// What the server refuses is said plainly, with its reason: no token, a token of
/// another scope, a token variable that is not set.
#[test]
fn refusals_reach_the_user_with_their_reason() {
    let d = Dirs::new();
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );

    // By URL, with the token in the environment only through the config: refused, and
    // said so plainly.
    let url = format!("ws://{}/acp", served.addr);
    let o = run(&d, &url, &[], &[], Duration::from_secs(30));
    assert!(!o.status.success());
    assert!(
        text(&o).contains("401") && text(&o).contains("token"),
        "{}",
        text(&o)
    );
    // A refusal for the token is a config error (2), not a crash worth a retry (7).
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A token in the URL's query is never kept or shown.
    let o = run(
        &d,
        &format!("{url}?token=qsecret"),
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!text(&o).contains("qsecret"), "{}", text(&o));
    assert!(!d.log().contains("qsecret"), "the query is not in the log");
    // A token of another scope is refused too.
    let approve = token(&d, "approve");
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
        &[("BOX_TOKEN", &approve)],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("403"), "{}", text(&o));
    // What the server said reaches the user.
    assert!(text(&o).contains("scope agent"), "{}", text(&o));
    // A token variable that is not set is said before anything is dialed.
    let o = run(&d, "box", &[], &[], Duration::from_secs(30));
    assert!(!o.status.success());
    assert!(text(&o).contains("BOX_TOKEN is not set"), "{}", text(&o));
    // A token sent without its scheme is said as such, not as no token at all.
    let agent = token(&d, "agent");
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\nheaders = {{ Authorization = {{ env = \"BOX_TOKEN\" }} }}\n",
            served.addr
        ),
    );
    let o = run(
        &d,
        "box",
        &[("BOX_TOKEN", &agent)],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not \"Bearer TOKEN\""), "{}", text(&o));
    assert!(!text(&o).contains(&agent), "{}", text(&o));
    // Another 4xx (here the server's 400 for a query on /acp) is no more worth a retry.
    let o = run(&d, &format!("{url}?q=1"), &[], &[], Duration::from_secs(30));
    assert!(text(&o).contains("400"), "{}", text(&o));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(served.agents().is_empty());
    assert!(alive(served.child.id()));
}

#[test]
fn plain_websocket_to_another_machine_and_credentials_in_urls_are_refused_before_dialing() {
    let d = Dirs::new();
    let o = run(
        &d,
        "ws://192.0.2.1:9/acp",
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("unencrypted"), "{}", text(&o));
    // A URL alone has no entry to set plaintext in: the user is told how to make one.
    assert!(
        text(&o).contains("a URL given alone has no entry"),
        "{}",
        text(&o)
    );
    let o = run(
        &d,
        "wss://user:hunter2@192.0.2.1/acp",
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(!text(&o).contains("hunter2"), "{}", text(&o));
    assert!(text(&o).contains("credentials"), "{}", text(&o));
    // A non-loopback address is served only with TLS, or when the user says a proxy of
    // theirs is in front.
    let o = d.trellis(&["agent", "serve", "--listen", "0.0.0.0:0", "--", "true"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--tls-cert"), "{}", text(&o));
}

#[test]
fn tls_is_checked_against_the_name_dialed() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let good = served_tls(&d, "localhost");
    let work = d.work.to_str().unwrap();
    let port = good.addr.rsplit(':').next().unwrap();
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"wss://localhost:{port}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nca = [\"{}\"]\ncwd = \"{work}\"\n",
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
    assert!(o.status.success(), "{}\n{}", text(&o), good.said());
    // Without the CA, the certificate is not trusted.
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"wss://localhost:{port}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n"
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
    assert!(text(&o).contains("TLS handshake failed"), "{}", text(&o));
    // A certificate for another name is refused, whoever signed it.
    let other = served_tls(&d, "other");
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"wss://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nca = [\"{}\"]\n",
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
        text(&o).contains("TLS handshake failed") && text(&o).contains("certificate"),
        "{}",
        text(&o)
    );
    assert!(
        other.agents().is_empty(),
        "no agent started for a refused client"
    );
}

/// Hostile agents behind the server: what a local one would get, over the network.
#[test]
fn hostile_agents_behind_the_server_are_held_to_the_same_bounds() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let exe = env!("CARGO_BIN_EXE_trellis");
    for (scenario, ok) in [
        ("huge-title", true),
        ("die-with-permissions", false),
        ("hang-init", false),
    ] {
        let served = Served::start(
            &d,
            &["--listen", "127.0.0.1:0"],
            &[exe, "agent", "hostile", scenario],
        );
        config(
            &d,
            &format!(
                "[connection]\nsetup_timeout = 3\n[agents.box]\nurl = \"ws://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n",
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
        assert_eq!(
            o.status.success(),
            ok,
            "{scenario}: {}\n{}",
            text(&o),
            served.said()
        );
        if scenario == "die-with-permissions" {
            // Every request the dead agent asked was answered exactly once.
            let mut seen = std::collections::HashMap::<String, usize>::new();
            for e in crate::jsonl(&String::from_utf8_lossy(&o.stdout)) {
                if e["type"] == "permission_resolved" {
                    *seen.entry(e["request_id"].to_string()).or_default() += 1;
                }
            }
            assert!(seen.values().all(|n| *n == 1), "{seen:?}");
        }
        if scenario == "hang-init" {
            assert!(
                text(&o).contains("3 s")
                    || text(&o).contains("timed out")
                    || text(&o).contains("setup"),
                "{}",
                text(&o)
            );
        }
        until_no_agent(&served);
    }
}

/// Servers that misbehave: one that never answers the upgrade, one that announces a
/// message far larger than any agent line.
#[test]
fn a_hostile_server_gives_a_clear_error_and_no_hang() {
    let d = Dirs::new();
    config(&d, "[connection]\nsetup_timeout = 2\n");
    // Accepts, then says nothing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let (s, _) = silent.accept().unwrap();
        std::thread::sleep(Duration::from_secs(6));
        drop(s);
    });
    let o = run(
        &d,
        &format!("ws://{addr}/acp"),
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("no WebSocket answer"), "{}", text(&o));
    held.join().unwrap();
    // Upgrades, then announces a 1 TiB message.
    let huge = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = huge.local_addr().unwrap();
    std::thread::spawn(move || {
        let (s, _) = huge.accept().unwrap();
        let mut ws = tungstenite::accept(s).unwrap();
        let raw = ws.get_mut();
        raw.write_all(&[0x81, 127, 0, 0, 1, 0, 0, 0, 0, 0]).unwrap();
        raw.flush().unwrap();
        std::thread::sleep(Duration::from_secs(5));
    });
    let o = run(
        &d,
        &format!("ws://{addr}/acp"),
        &[],
        &[],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("too large"), "{}", text(&o));
}
