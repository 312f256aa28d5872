//! Plugins of `"scope": "hub"` in a hub of its own (`trellis serve`, started by `trellis
//! run --detach`): one process for every session, every session's events named by
//! `hub_session` — those an answer from elsewhere makes too — and nothing left running
//! when the hub ends.

use trellis_hub::client::Client;
use trellis_hub::wire::{Body, Op};

use crate::hubkit::{Dirs, Hub, alive, text, until};

/// A hub-wide plugin that writes the type and `hub_session` of each permission and turn
/// event to `seen/PID.jsonl` beside the work directory; installed and enabled.
fn install_recorder(d: &Dirs) -> std::path::PathBuf {
    let seen = d.work.join("../seen");
    let pkg = d.work.join("../recorder");
    let kinds = ["permission_requested", "permission_resolved", "turn_ended"];
    crate::plugins::recording_plugin(&pkg, &seen, "hub", &kinds);
    let o = d.trellis(&["plugin", "install", pkg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = d.trellis(&["plugin", "enable", "recorder", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    seen
}

/// Every line the plugin processes wrote, by process.
fn seen(dir: &std::path::Path) -> Vec<(u32, Vec<serde_json::Value>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let pid = e
                .path()
                .file_stem()
                .and_then(|s| s.to_str()?.parse().ok())
                .unwrap_or(0);
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            (pid, crate::jsonl(&text))
        })
        .collect();
    out.sort_by_key(|(pid, _)| *pid);
    out
}

#[test]
fn a_hub_wide_plugin_in_a_hub_of_its_own_sees_every_session_and_ends_with_it() {
    if !crate::plugins::python() {
        return;
    }
    let d = Dirs::new();
    let dir = install_recorder(&d);
    // `plugin enable` started it once to check it: what counts comes after.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        std::fs::remove_file(e.path()).unwrap();
    }
    let first = d.detach("demo", "fix the TODO");
    let hub = Hub(d.hub_pid());
    let second = d.detach("demo", "fix the TODO");
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("default:1", "default:2")
    );
    until("both sessions to ask", || {
        d.ls().iter().filter(|r| r["state"] == "permission").count() == 2
    });
    // Answered from elsewhere: the answer's events reach the hub-wide plugin too.
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let mut c = Client::connect(&files, "approver").unwrap();
    for row in d.ls() {
        let key = row["key"].as_u64().unwrap() as u32;
        let request_id = row["pending"][0]["request_id"]
            .as_str()
            .unwrap()
            .to_string();
        let done = c
            .call(
                Op::Decide {
                    session: key,
                    request_id,
                    option_id: "allow".into(),
                    claim: None,
                    always: None,
                    reason: None,
                },
                None,
            )
            .unwrap();
        assert!(matches!(done, Body::Done { .. }), "{done:?}");
    }
    until("the plugin to see both turns end", || {
        seen(&dir)
            .iter()
            .flat_map(|(_, lines)| lines)
            .filter(|l| l["event"] == "turn_ended")
            .count()
            == 2
    });
    let by_process = seen(&dir);
    assert_eq!(
        by_process.len(),
        1,
        "one process for the hub: {by_process:?}"
    );
    let (pid, lines) = &by_process[0];
    for kind in ["permission_requested", "permission_resolved", "turn_ended"] {
        let mut named: Vec<&str> = lines
            .iter()
            .filter(|l| l["event"] == kind)
            .filter_map(|l| l["hub_session"].as_str())
            .collect();
        named.sort_unstable();
        assert_eq!(named, ["default:1", "default:2"], "{kind}: {lines:?}");
    }
    // The hub ends: so does the plugin.
    drop(hub);
    until("the plugin to stop", || !alive(*pid));
}
