//! "Always" answered from elsewhere (issue 27, item 4): a pending request lists each
//! "always" choice with the rule it would save and what that rule matches; the choice is
//! refused unless the caller names where the rule goes; once it does, the rule decides
//! the session's next matching request by itself. `trellis approve` shows the reach and
//! asks where the rule goes.

use std::io::Write;
use std::process::{Command, Stdio};

use trellis_hub::client::Client;
use trellis_hub::wire::{Body, Op};

use crate::hubkit::{Dirs, Hub, until};

fn decide(c: &mut Client, request_id: &str, always: Option<&str>) -> Body {
    c.call(
        Op::Decide {
            session: 1,
            request_id: request_id.into(),
            option_id: "allow-always".into(),
            claim: None,
            always: always.map(str::to_string),
            reason: None,
        },
        None,
    )
    .unwrap()
}

#[test]
fn always_from_elsewhere_shows_its_reach_needs_a_place_and_then_decides() {
    let d = Dirs::new();
    d.detach("demo", "fix the TODO");
    let _hub = Hub(d.hub_pid());
    d.until_asking();
    let row = d.ls().remove(0);
    let pending = &row["pending"][0];
    let request_id = pending["request_id"].as_str().unwrap().to_string();
    // The one-time choices, and apart from them the "always" one with its rule.
    assert!(!pending["options"].to_string().contains("allow-always"));
    let always = &pending["always"][0];
    assert_eq!(always["option_id"], "allow-always");
    let rule = always["rule"].as_str().unwrap().to_string();
    assert!(
        rule.starts_with("allow kind=edit path=") && rule.ends_with("/src/lib.rs"),
        "{always}"
    );
    assert!(always["matches"].as_u64().unwrap() >= 1, "{always}");
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let mut c = Client::connect(&files, "script").unwrap();
    // Without saying where the rule goes: refused, the request still open.
    match decide(&mut c, &request_id, None) {
        Body::Error { code, message } => {
            assert_eq!(code, "refused");
            assert!(
                message.contains("always: session, project or global"),
                "{message}"
            );
        }
        b => panic!("{b:?}"),
    }
    match decide(&mut c, &request_id, Some("nowhere")) {
        Body::Error { code, .. } => assert_eq!(code, "bad_request"),
        b => panic!("{b:?}"),
    }
    assert_eq!(d.ls()[0]["state"], "permission");
    // With its place: the rule is saved, the request answered once by this client.
    match decide(&mut c, &request_id, Some("session")) {
        Body::Done { said } => assert!(
            said.contains(&format!("rule saved: {rule} (session")),
            "{said}"
        ),
        b => panic!("{b:?}"),
    }
    // The next turn asks the same: the rule answers it, nobody is asked.
    until("the first turn to end", || {
        matches!(d.ls()[0]["state"].as_str(), Some("done" | "idle"))
    });
    let o = d.trellis(&["send", "default:1", "do it again"]);
    assert!(o.status.success(), "{}", crate::hubkit::text(&o));
    until("the second request to be decided", || {
        d.log().matches("\"permission_decided\"").count() >= 2
    });
    let log = d.log();
    let decided: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["msg"]["type"] == "permission_decided")
        .map(|r| r["msg"]["decider"].clone())
        .collect();
    assert_eq!(decided[0]["by"], "attached", "{decided:?}");
    assert!(decided[0]["name"].as_str().unwrap().starts_with("script"));
    assert_eq!(decided[1]["by"], "rule", "{decided:?}");
    assert!(d.ls()[0]["pending"].as_array().unwrap().is_empty());
}

#[test]
fn trellis_approve_shows_the_rule_and_asks_where_it_goes() {
    let d = Dirs::new();
    d.detach("demo", "fix the TODO");
    let _hub = Hub(d.hub_pid());
    d.until_asking();
    let mut approve = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .arg("approve")
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `a1`, then where: this project.
    approve.stdin.take().unwrap().write_all(b"a1\np\n").unwrap();
    let o = approve.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("a1 Always allow edits — saves the rule `allow kind=edit path="),
        "{out}"
    );
    assert!(
        out.contains("(matches 1 call(s) of this session so far)"),
        "{out}"
    );
    assert!(
        out.contains("the rule goes to: s(ession) p(roject) g(lobal)"),
        "{out}"
    );
    assert!(out.contains("/src/lib.rs (project"), "{out}");
    until("the turn to end", || {
        matches!(d.ls()[0]["state"].as_str(), Some("done" | "idle"))
    });
    // Saved for the project: a new session there is not asked, the rule answers.
    d.detach("demo", "fix the TODO");
    until("the new session's request to be decided", || {
        d.log().matches("\"by\":\"rule\"").count() >= 1
    });
    assert!(
        d.ls()
            .iter()
            .all(|r| r["pending"].as_array().unwrap().is_empty()),
        "{:?}",
        d.ls()
    );
}
