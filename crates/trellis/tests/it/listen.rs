//! The hub's loopback listener (issue 27, items 6–7): a phone pairs with a single-use code
//! and answers a request once on the approvals page (in headless Chromium); tokens only in
//! the Authorization header, scopes, expiry, revocation, other sites and non-loopback
//! binds refused.

use std::io::Read;

use crate::hubkit::{Dirs, text, until};

/// One HTTP/1.1 request on a new connection: (status, body).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = crate::hubkit::http_request(addr, (method, path), headers, body, true);
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    let status = got
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = got.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[test]
fn a_phone_pairs_and_answers_once_and_credentials_are_held_to_their_rules() {
    let d = Dirs::new();
    // Only loopback is ever bound.
    let o = d.trellis(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("loopback addresses only"), "{}", text(&o));

    let (addr, _hub) = d.serve_listening();
    let hub_log = d.runtime.join("trellis/default.log");
    d.detach("demo", "fix the TODO");
    d.until_asking();

    // The page itself is public; what it shows is not.
    let (status, page) = http(&addr, "GET", "/", &[], "");
    assert_eq!(status, 200);
    assert!(page.contains("/app.js"));
    assert_eq!(http(&addr, "GET", "/api/pending", &[], "").0, 401);
    // A token in a URL is refused, and said in the hub's messages.
    assert_eq!(
        http(&addr, "GET", "/api/pending?access_token=x", &[], "").0,
        400
    );
    assert!(
        std::fs::read_to_string(&hub_log)
            .unwrap()
            .contains("carrying a credential in its URL")
    );
    let (request_id, decide) = scopes_expiry_and_revocation(&d, &addr);
    // An "always" choice saves a rule: an approve-scoped token may not make one.
    let approver = d.stdout(&["token", "new", "--label", "approver", "--scope", "approve"]);
    let always = format!(
        r#"{{"session":1,"request_id":"{request_id}","option_id":"allow-always","always":"session"}}"#
    );
    let (status, body) = http(
        &addr,
        "POST",
        "/api/decide",
        &[("Authorization", &format!("Bearer {}", approver.trim()))],
        &always,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("admin scope"), "{body}");
    // Another site's page cannot post, whatever it holds.
    let admin = d.stdout(&["token", "new", "--label", "admin", "--scope", "admin"]);
    let admin = format!("Bearer {}", admin.trim());
    let (status, _) = http(
        &addr,
        "POST",
        "/api/decide",
        &[("Authorization", &admin), ("Origin", "http://evil.example")],
        &decide,
    );
    assert_eq!(status, 403);
    assert!(
        !d.log()
            .contains("permission_decided\",\"request_id\":\"1\",\"decider\":{\"by\":\"attached\"")
    );

    // The phone: pairing, the page, one answer.
    let paired = d.stdout(&["pair"]);
    let url = paired.lines().last().unwrap().trim().to_string();
    assert!(
        url.starts_with(&format!("http://{addr}/#pair=")),
        "{paired}"
    );
    let r = crate::in_chromium("approvals_check.cjs", &[url.as_ref()]);
    what_the_phone_saw(&r);
    // Once, by the paired device, on the record.
    until("the answer in the log", || {
        d.log().contains("\"by\":\"attached\"")
    });
    let log = d.log();
    let deciders: Vec<_> = log
        .lines()
        .filter(|l| l.contains("permission_decided") && l.contains("\"attached\""))
        .collect();
    assert_eq!(deciders.len(), 1, "{log}");
    assert!(
        deciders[0].contains("paired-") && deciders[0].contains("(token "),
        "{}",
        deciders[0]
    );
    // The same answer again is told who won; the code was single-use.
    let (status, body) = http(
        &addr,
        "POST",
        "/api/decide",
        &[("Authorization", &admin)],
        &decide,
    );
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already answered by paired-"), "{body}");
    let code = url.split("pair=").nth(1).unwrap();
    let (status, _) = http(
        &addr,
        "POST",
        "/api/pair",
        &[],
        &format!(r#"{{"code":"{code}"}}"#),
    );
    assert_eq!(status, 401);
}

/// A phone rejects with a reason (issue 48, item 8): written on the approvals page across
/// its refreshes, sent with the one-time reject, read by the agent as the next message.
#[test]
fn a_phone_rejects_with_a_reason_the_agent_reads_next() {
    let d = Dirs::new();
    let (_addr, _hub) = d.serve_listening();
    d.detach("demo", "fix the TODO");
    d.until_asking();
    let paired = d.stdout(&["pair"]);
    let url = paired.lines().last().unwrap().trim().to_string();
    let reason = "not in this file: the API is frozen";
    let r = crate::in_chromium("approvals_check.cjs", &[url.as_ref(), reason.as_ref()]);
    assert_eq!(r["formShownFirst"], false, "{r}");
    assert_eq!(r["typed"], reason, "kept across a refresh: {r}");
    assert_eq!(
        r["said"], "Answered: Reject — your reason goes to the agent when its turn ends",
        "{r}"
    );
    until("the agent to read the reason", || {
        d.log().contains("Your reason: not in this file")
    });
    let log = d.log();
    assert!(
        log.contains(&format!(
            r#"I rejected the tool call \"Edit src/lib.rs\". Reason: {reason}"#
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(r#""reason":"{reason}""#)),
        "the words on the call's record: {log}"
    );
}

/// What the approvals page showed and did in the browser (`approvals_check.cjs`'s report).
fn what_the_phone_saw(r: &serde_json::Value) {
    assert_eq!(r["outside"], serde_json::json!([]), "{r}");
    assert_eq!(
        r["queries"],
        serde_json::json!([]),
        "no credential in any URL: {r}"
    );
    assert!(
        !r["addressAfterPairing"].as_str().unwrap().contains("pair="),
        "{r}"
    );
    assert_eq!(r["stored"], "trl_");
    assert_eq!(r["subject"], "Edit src/lib.rs (+1 −2)");
    assert_eq!(r["choices"], serde_json::json!(["Allow", "Reject"]));
    assert_eq!(
        r["loginShown"], false,
        "the token form goes once paired: {r}"
    );
    let diff = r["diff"].as_array().unwrap();
    assert!(
        diff.iter().any(|l| l[0] == "del" && l[1] == "-    a + b"),
        "the diff's removed line: {r}"
    );
    assert!(
        diff.iter()
            .any(|l| l[0] == "add" && l[1].as_str().unwrap().contains("checked_add")),
        "the diff's added line: {r}"
    );
    assert!(
        r["input"]
            .as_str()
            .unwrap()
            .contains("\"old_string\": \"a + b\""),
        "{r}"
    );
    assert!(r["waited"].as_str().unwrap().starts_with("waiting "), "{r}");
    assert_eq!(r["said"], "Answered: Allow");
    assert_eq!(r["status"], "Nothing waits for you.");
}

/// A read token lists but may not answer; an expired or revoked one is refused. The
/// pending request's id, and a body answering it.
fn scopes_expiry_and_revocation(d: &Dirs, addr: &str) -> (String, String) {
    let read = d.stdout(&["token", "new", "--label", "reader", "--scope", "read"]);
    let read = format!("Bearer {}", read.trim());
    let (status, listed) = http(addr, "GET", "/api/pending", &[("Authorization", &read)], "");
    assert_eq!(status, 200, "{listed}");
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let request_id = v["sessions"][0]["pending"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let decide = format!(r#"{{"session":1,"request_id":"{request_id}","option_id":"allow"}}"#);
    let (status, body) = http(
        addr,
        "POST",
        "/api/decide",
        &[("Authorization", &read)],
        &decide,
    );
    assert_eq!(status, 403, "{body}");
    let old = d.stdout(&["token", "new", "--label", "old", "--ttl", "0m"]);
    let (status, body) = http(
        addr,
        "GET",
        "/api/pending",
        &[("Authorization", &format!("Bearer {}", old.trim()))],
        "",
    );
    assert_eq!((status, body.contains("expired")), (401, true), "{body}");
    d.stdout(&["token", "revoke", "reader"]);
    assert_eq!(
        http(addr, "GET", "/api/pending", &[("Authorization", &read)], "").0,
        401
    );
    (request_id, decide)
}
