//! The audit logger against a recorded session, through the real extension host: every
//! call is logged once, with the per-call state another extension kept (here `follow`'s),
//! and a call the turn left open is logged as it stood.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use trellis_core::ext::Capability;
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, HostOptions};
use trellis_plugin::{Limits, PluginExt, PluginSpec, process::Launch};

#[test]
fn every_call_is_logged_once_with_its_per_call_state() {
    // The package as it is installed: plugin.json and the binary side by side.
    let pkg = tempfile::tempdir().unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(dir.join("plugin.json"), pkg.path().join("plugin.json")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_audit-log"),
        pkg.path().join("audit-log"),
    )
    .unwrap();
    let package = trellis_plugin::Package::load(pkg.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let log = out.path().join("audit.jsonl");
    let spec = PluginSpec {
        manifest: package.manifest().unwrap(),
        launch: Launch {
            name: "audit-log".into(),
            root: package.root.clone(),
            data: None,
            command: package.trellis.as_ref().unwrap().command.clone(),
            log_file: None,
            env: vec![],
            max_line: 1 << 20,
            on_spawn: None,
        },
        limits: Limits::default(),
        hub: false,
    };
    let mut opts = HostOptions::default();
    opts.config.insert(
        "audit-log".into(),
        ExtConfig {
            enabled: Some(true),
            grant: Some(vec![Capability::Observe]),
            options: json!({"path": log}),
        },
    );
    let (host, _rx) = ExtHost::new(
        vec![Candidate {
            ext: Box::new(PluginExt::new(spec)),
            builtin: false,
        }],
        opts,
    );
    let text = std::fs::read_to_string(dir.join("tests/session.jsonl")).unwrap();
    let mut session = trellis_core::Session::new(trellis_core::Policy::Ask);
    let problems = trellis_core::log::rebuild(&mut session, text.lines(), |fx| {
        if let trellis_core::Effect::Emit(ev) = fx {
            host.dispatch(&ev);
        }
    });
    assert!(problems.is_empty(), "{problems:?}");
    assert!(host.flush(Duration::from_secs(10)));
    let st = host.status();
    assert_eq!(
        st.extensions[0].state,
        trellis_ext_host::ExtState::Ready,
        "{:?}",
        st.lines()
    );
    host.shutdown(Duration::from_secs(5));
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r1", "e1", "x1"], "{lines:#?}");
    assert_eq!(lines[0]["status"], "completed");
    assert_eq!(lines[0]["session"], "S1");
    assert_eq!(
        lines[1]["state"],
        json!({"follow": {"changed": [10, 12], "path": "/home/user/project/src/parser.rs"}})
    );
    // The turn ended with the test run still open: logged as it stood.
    assert_eq!(lines[2]["input"], json!({"command": "cargo test"}));
}
