//! Replays in the UI read the user's extension stores (the chosen card designs among
//! them) without writing anything back (issue 10, item 12).

use std::path::Path;

use crate::tui::Tmux;

#[test]
fn a_replay_draws_the_card_designs_the_user_chose() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let data = tempfile::tempdir().unwrap();
    let stores = data.path().join("trellis/extensions");
    std::fs::create_dir_all(&stores).unwrap();
    let prefs = stores.join("trellis.json");
    let chosen = r#"{"schema":1,"data":{"ui":{"cards":{"kind:execute":"cards/terminal"}}}}"#;
    std::fs::write(&prefs, chosen).unwrap();
    let env = format!("XDG_DATA_HOME={}", data.path().display());
    let Some(t) = Tmux::start_env(&[&env], &["replay", fixture.to_str().unwrap()], 120, 30) else {
        return;
    };
    let s = t.wait_for("Done: listed the directory");
    let s = if s.contains("✓ $ ls") {
        s
    } else {
        t.wait_for("✓ $ ls")
    };
    assert!(
        !s.contains("» ls"),
        "the chosen design, not the native card: {s}"
    );
    // Nothing was written: the store is byte for byte what the user had.
    assert_eq!(std::fs::read_to_string(&prefs).unwrap(), chosen);
    let names: Vec<_> = std::fs::read_dir(&stores)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}
