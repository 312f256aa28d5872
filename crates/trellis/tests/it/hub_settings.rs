//! A hub of its own keeps the settings it was started with and gives them to every
//! session started in it; it can be stopped by a command, take a listener while it runs,
//! and `trellis pair` finds the hub that listens (issue 44, items 5–6).

use crate::hubkit::{Dirs, Hub, text, until};

/// `trellis serve --detach --permission allow-once`: a session started in the hub runs
/// under that policy (it used to wait for permission forever), and `trellis ls` says so.
#[test]
fn a_hubs_sessions_run_under_the_hubs_own_policy() {
    let d = Dirs::new();
    let out = d.stdout(&["serve", "--detach", "--permission", "allow-once"]);
    assert!(out.contains("serving in the background"), "{out}");
    let _hub = Hub(d.hub_pid());
    let session = d.detach("demo", "fix the TODO");
    until("the session to finish its turn", || {
        d.ls()
            .first()
            .is_some_and(|r| r["state"] == "done" || r["state"] == "idle")
    });
    let rows = d.ls();
    assert_eq!(rows[0]["policy"], "allow-once", "{rows:?}");
    let plain = d.stdout(&["ls"]);
    assert!(plain.contains("permission policy: allow-once"), "{plain}");
    // The session may be idle before its turn began (on a loaded machine): the log says
    // when the edit was decided.
    until("the edit to be allowed by the hub's policy", || {
        d.log()
            .contains(r#""decider":{"by":"policy","name":"allow-once"}"#)
    });
    // And the turn to end (the story goes on after the edit): the cancel below finds
    // none running.
    until("the turn to end", || d.log().contains(r#""stopReason""#));
    // A hub that serves keeps its settings: asking for others is an error that says so.
    let o = d.trellis(&["serve", "--detach", "--permission", "reject"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("already serving"), "{said}");
    assert!(said.contains("permission policy allow-once"), "{said}");
    assert!(said.contains("trellis serve --stop"), "{said}");
    // Cancelling a session with no turn running says so, and fails.
    let o = d.trellis(&["cancel", &session]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("no turn running"), "{}", text(&o));
}

/// A running hub takes a listener; `trellis pair` finds the hub that listens; `trellis
/// serve --stop` ends the hub, its sessions closed, nothing of it left but its log.
#[test]
fn a_running_hub_takes_a_listener_pairs_and_stops_by_command() {
    let d = Dirs::new();
    d.stdout(&["serve", "--detach"]);
    let hub = Hub(d.hub_pid());
    let o = d.trellis(&["pair"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("trellis serve --listen 127.0.0.1:0"),
        "says how: {}",
        text(&o)
    );
    let out = d.stdout(&["serve", "--listen", "127.0.0.1:0"]);
    assert!(out.contains("hub default now listens"), "{out}");
    let out = d.stdout(&["pair"]);
    assert!(out.contains("/#pair="), "{out}");
    let out = d.stdout(&["serve", "--listen", "127.0.0.1:0"]);
    assert!(out.contains("listens already"), "{out}");
    d.detach("demo", "/plans");
    let out = d.stdout(&["serve", "--stop"]);
    assert!(out.contains("hub default stopped"), "{out}");
    assert!(!crate::hubkit::alive(hub.0));
    let left: Vec<String> = std::fs::read_dir(d.runtime.join("trellis"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        ["default.log"],
        "nothing of the hub is left but its log"
    );
    assert!(
        d.log().contains("the hub stopped (trellis serve --stop)"),
        "the session closed"
    );
    let out = d.stdout(&["ls"]);
    assert!(out.contains("no running sessions"), "{out}");
    let o = d.trellis(&["serve", "--stop"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no hub default is serving"),
        "{}",
        text(&o)
    );
}
