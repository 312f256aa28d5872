//! What the config gives an extension — its capabilities, its options (bad ones
//! reported) — and its store: one corrupt or written by a newer Trellis is reported, kept
//! aside and never overwritten.

use super::*;

#[test]
fn a_corrupt_or_newer_store_is_reported_kept_aside_and_not_overwritten() {
    struct Storer;
    impl Extension for Storer {
        fn manifest(&self) -> Manifest {
            manifest("storer", &[Capability::Store])
        }
        fn register(&mut self, h: &mut dyn Host) -> Result<Registration, ExtError> {
            assert_eq!(h.store_get("k")?, None);
            h.store_put("k", Some(json!(1)))?;
            Ok(Registration::default())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("storer.json"),
        "{\"schema\": 1, \"data\": [",
    )
    .unwrap();
    let (h, _rx) = host(
        vec![Box::new(Storer)],
        HostOptions {
            store_dir: Some(dir.path().to_path_buf()),
            ..HostOptions::default()
        },
    );
    let st = h.status();
    let notes = st.extensions[0].notes.join("\n");
    assert!(
        notes.contains("not valid JSON") && notes.contains("kept as"),
        "{notes}"
    );
    let kept: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(&kept[0])).unwrap(),
        "{\"schema\": 1, \"data\": ["
    );
    let fresh: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("storer.json")).unwrap())
            .unwrap();
    assert_eq!(fresh, json!({"schema": 1, "data": {"k": 1}}));
}

#[test]
fn capabilities_are_only_what_the_config_grants() {
    struct Greedy;
    impl Extension for Greedy {
        fn manifest(&self) -> Manifest {
            manifest(
                "greedy",
                &[Capability::Observe, Capability::Store, Capability::Ui],
            )
        }
        fn register(&mut self, h: &mut dyn Host) -> Result<Registration, ExtError> {
            assert!(h.store_put("k", Some(json!(1))).is_err());
            Ok(Registration::default())
        }
    }
    let mut opts = HostOptions::default();
    opts.config.insert(
        "greedy".into(),
        trellis_ext_host::ExtConfig {
            enabled: Some(true),
            grant: Some(vec![Capability::Observe]),
            ..Default::default()
        },
    );
    let (h, _rx) = host(vec![Box::new(Greedy)], opts);
    let st = h.status();
    let g = &st.extensions[0];
    assert_eq!(g.granted, vec!["observe"]);
    assert_eq!(g.refused, vec!["store", "ui"]);
    assert_eq!(g.refused_calls, vec![("store_put".to_string(), 1)]);
    // Disabled in the config: not loaded, and /status says so.
    let mut opts = HostOptions::default();
    opts.config.insert(
        "greedy".into(),
        trellis_ext_host::ExtConfig {
            enabled: Some(false),
            grant: None,
            ..Default::default()
        },
    );
    let (h, _rx) = host(vec![Box::new(Greedy)], opts);
    let st = h.status();
    assert!(st.extensions.is_empty());
    assert!(st.notes[0].contains("greedy is disabled by the config"));
}

#[test]
fn options_from_the_config_reach_the_extension_and_bad_ones_are_reported() {
    let mut opts = HostOptions::default();
    opts.config.insert(
        "redact".into(),
        trellis_ext_host::ExtConfig {
            options: json!({"patterns": ["INTERNAL-[0-9]{4}", "(unclosed"]}),
            ..Default::default()
        },
    );
    opts.config.insert(
        "follow".into(),
        trellis_ext_host::ExtConfig {
            options: json!({"window": 2}),
            ..Default::default()
        },
    );
    let exts: Vec<Box<dyn Extension>> = trellis_builtins::all();
    let (h, _rx) = host(exts, opts);
    let call = ToolCall::placeholder("c".into(), 0.0, 1);
    let out =
        h.ui.transform(
            &call,
            "ticket INTERNAL-1234 and sk-ant-abcdefghijklmnopqrstuvwxyz",
        )
        .unwrap();
    assert_eq!(out, "ticket ‹redacted› and ‹redacted›");
    let st = h.status();
    let text = st.lines().join("\n");
    assert!(text.contains("option patterns: \"(unclosed\""), "{text}");
    assert!(
        text.contains("follow 0.1.0 (built-in): degraded — option window: 2 is not a number of lines from 5 to 40"),
        "{text}"
    );
}
