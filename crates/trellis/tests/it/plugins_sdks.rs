//! Plugins written with the TypeScript and Rust SDKs, through the real binary: the
//! examples and scaffolds build, type-check and pass their replay tests, the SDKs
//! subscribe a plugin to what it handles, and a TypeScript plugin's console and stale
//! build are dealt with.

use std::path::Path;
use std::process::Command;

use crate::plugins::{demo_run, examples, exe, node, python, replay_run, repo, text, trellis};

/// The TypeScript example is type-checked against the SDK's declarations and its
/// committed JavaScript is what the compiler makes of its source; the SDK it carries is
/// the SDK's own files.
#[test]
fn the_typescript_example_type_checks_and_carries_the_sdk_unchanged() {
    let dir = examples().join("test-results");
    for f in ["trellis-plugin.mjs", "trellis-plugin.d.mts"] {
        assert_eq!(
            std::fs::read(dir.join("lib").join(f)).unwrap(),
            std::fs::read(repo().join("sdk/typescript").join(f)).unwrap(),
            "examples/plugins/test-results/lib/{f} differs from sdk/typescript/{f}"
        );
    }
    let tsc = repo().join(".ci/node/node_modules/.bin/tsc");
    if !tsc.exists() {
        crate::missing_tool("tsc (scripts/test installs typescript under .ci/node)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(&tsc)
        .args([
            "-p",
            dir.to_str().unwrap(),
            "--outDir",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(out.path().join("plugin.mjs")).unwrap(),
        std::fs::read_to_string(dir.join("plugin.mjs")).unwrap(),
        "plugin.mjs is not the compiled plugin.mts: run tsc -p examples/plugins/test-results"
    );
}

/// The Rust audit logger in a headless run: its package is the built binary beside its
/// manifest; every call of the recorded session ends up in its log.
#[test]
fn the_rust_audit_logger_logs_every_call_of_a_headless_run() {
    let exe_dir = Path::new(exe()).parent().unwrap().to_path_buf();
    let bin = exe_dir.join("audit-log");
    if !bin.exists() {
        // Built with the workspace's tests; alone, build it here.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "-q", "-p", "audit-log"])
            .current_dir(repo())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok && bin.exists(), "cannot build the audit-log example");
    }
    let home = tempfile::tempdir().unwrap();
    let pkg = home.path().join("audit-log");
    std::fs::create_dir_all(&pkg).unwrap();
    let src = examples().join("audit-log");
    std::fs::copy(src.join("plugin.json"), pkg.join("plugin.json")).unwrap();
    std::fs::copy(&bin, pkg.join("audit-log")).unwrap();
    let (o, _) = replay_run(
        home.path(),
        &src.join("tests/session.jsonl"),
        "fix the parser",
        &pkg,
    );
    assert!(o.status.success(), "{}", text(&o));
    let audit = std::fs::read_to_string(
        home.path()
            .join("data/trellis/plugin-data/audit-log/audit.jsonl"),
    )
    .unwrap_or_else(|e| panic!("no audit log ({e}): {}", text(&o)));
    let ids: Vec<String> = audit
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["r1", "e1", "x1"], "{audit}");
}

#[test]
fn the_typescript_scaffold_passes_its_replay_test_and_its_javascript_is_its_source_compiled() {
    if !node() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let o = trellis(
        home.path(),
        home.path(),
        &["plugin", "new", "ts-plugin", "--lang", "typescript"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = trellis(
        home.path(),
        home.path(),
        &[
            "plugin",
            "test",
            "ts-plugin",
            "--replay",
            "ts-plugin/tests/session.jsonl",
            "--snapshot",
            "ts-plugin/tests/snapshot.txt",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let snap = std::fs::read_to_string(home.path().join("ts-plugin/tests/snapshot.txt")).unwrap();
    assert!(
        snap.contains("$ cargo clippy  exit 101  1.5s") && snap.contains("state: ready"),
        "{snap}"
    );
    let tsc = repo().join(".ci/node/node_modules/.bin/tsc");
    if !tsc.exists() {
        crate::missing_tool("tsc (scripts/test installs typescript under .ci/node)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(&tsc)
        .args([
            "-p",
            home.path().join("ts-plugin").to_str().unwrap(),
            "--outDir",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(out.path().join("plugin.mjs")).unwrap(),
        std::fs::read_to_string(home.path().join("ts-plugin/plugin.mjs")).unwrap(),
        "crates/trellis/templates/typescript/plugin.mjs is not plugin.mts compiled"
    );
}

#[test]
fn the_rust_scaffold_writes_a_package_that_says_how_to_build_and_record_it() {
    let home = tempfile::tempdir().unwrap();
    let o = trellis(
        home.path(),
        home.path(),
        &["plugin", "new", "rs-plugin", "--lang", "rust"],
    );
    assert!(o.status.success(), "{}", text(&o));
    for f in [
        "plugin.json",
        "Cargo.toml",
        "src/main.rs",
        "tests/session.jsonl",
    ] {
        assert!(home.path().join("rs-plugin").join(f).is_file(), "{f}");
    }
    assert!(text(&o).contains("cargo build --release"), "{}", text(&o));
    let o = trellis(
        home.path(),
        home.path(),
        &["plugin", "validate", "rs-plugin"],
    );
    assert!(
        text(&o).contains("✗ command: ./target/release/rs-plugin: No such file"),
        "{}",
        text(&o)
    );
    // It builds with nothing but crates.io (offline here: what Trellis itself was built
    // with), the SDK written into the package, pinned.
    let pkg = home.path().join("rs-plugin");
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    assert!(!manifest.contains("git ="), "{manifest}");
    let sdk = std::fs::read_to_string(pkg.join("sdk/trellis-plugin-sdk/Cargo.toml")).unwrap();
    assert!(sdk.contains("serde_json = \"=1."), "pinned: {sdk}");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&pkg)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built));
    // Its replay test, recorded once built, passes.
    let replay = [
        "plugin",
        "test",
        "rs-plugin",
        "--replay",
        "rs-plugin/tests/session.jsonl",
        "--snapshot",
        "rs-plugin/tests/snapshot.txt",
    ];
    let mut record = replay.to_vec();
    record.push("--update");
    let o = trellis(home.path(), home.path(), &record);
    assert!(o.status.success(), "{}", text(&o));
    let o = trellis(home.path(), home.path(), &replay);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("✓ rs-plugin matches"), "{}", text(&o));
}

/// A plugin that says nothing of subscriptions is sent only the event types its
/// handlers take (the SDKs derive them); one handler for everything takes all.
#[test]
fn the_sdks_subscribe_a_plugin_to_the_events_it_handles() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let package = |name: &str, body: &str| {
        let dir = home.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("plugin.json"),
            format!(
                r#"{{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "{name}",
                "extensions": {{"dev.trellis": {{"command": ["python3", "./plugin.py"], "capabilities": ["observe"]}}}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("plugin.py"),
            format!("from trellis_plugin import Plugin\nplugin = Plugin()\n{body}\nplugin.run()\n"),
        )
        .unwrap();
        dir
    };
    let narrow = package(
        "narrow",
        "@plugin.on('turn_ended')\ndef a(e, h): pass\n@plugin.on('tool_call_created', 'tool_call_updated')\ndef b(e, h): pass",
    );
    let all = package("all", "@plugin.on()\ndef a(e, h): pass");
    let none = package("none", "");
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut extra = vec!["--format", "jsonl"];
    for p in [&narrow, &all, &none] {
        extra.extend(["--plugin", p.to_str().unwrap()]);
    }
    let o = demo_run(home.path(), &work, &extra);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let status: serde_json::Value = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "status")
        .unwrap();
    let subs = |name: &str| {
        status["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {status}"))["subscriptions"]
            .clone()
    };
    assert_eq!(
        subs("narrow"),
        serde_json::json!(["tool_call_created", "tool_call_updated", "turn_ended"])
    );
    assert_eq!(subs("none"), serde_json::json!([]));
    assert_eq!(subs("all"), serde_json::json!(["all events"]));
}

#[test]
fn console_log_in_a_typescript_plugin_goes_to_its_log() {
    if !node() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("chatty");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        repo().join("sdk/typescript/trellis-plugin.mjs"),
        dir.join("trellis-plugin.mjs"),
    )
    .unwrap();
    std::fs::write(
        dir.join("plugin.mjs"),
        "import { Plugin } from \"./trellis-plugin.mjs\";\nconst plugin = new Plugin();\nconsole.log(\"hello at start\");\nplugin.on(\"tool_call_created\", (e) => { console.log(\"saw\", e.call.id); });\nplugin.run();\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
  "name": "chatty", "version": "1.0.0", "description": "prints",
  "extensions": {"dev.trellis": {"command": ["node", "./plugin.mjs"], "api": [1], "capabilities": ["observe"]}}}"#,
    )
    .unwrap();
    let o = trellis(
        home.path(),
        home.path(),
        &[
            "run", "--agent", "demo", "--prompt", "fix", "--format", "jsonl", "--plugin", "chatty",
        ],
    );
    let status = crate::jsonl(&String::from_utf8_lossy(&o.stdout))
        .into_iter()
        .find(|e| e["type"] == "status")
        .expect("a status event");
    let ext = status["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "chatty")
        .unwrap()
        .clone();
    assert_eq!(ext["state"], "ready", "{ext}");
    assert!(!ext.to_string().contains("disconnected"), "{ext}");
}

#[test]
fn a_typescript_plugin_whose_build_is_older_than_its_source_is_refused_with_the_reason() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| trellis(home.path(), home.path(), args);
    assert!(
        run(&["plugin", "new", "tsp", "--lang", "typescript"])
            .status
            .success()
    );
    let pkg = std::fs::read_to_string(home.path().join("tsp/package.json")).unwrap();
    assert!(
        pkg.contains("\"typescript\": \"5.6.3\""),
        "the compiler is pinned: {pkg}"
    );
    // The source edited after the build.
    let src = home.path().join("tsp/plugin.mts");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .append(true)
        .open(&src)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let o = run(&[
        "plugin",
        "test",
        "tsp",
        "--replay",
        "tsp/tests/session.jsonl",
    ]);
    let all = text(&o);
    assert!(
        all.contains("plugin.mjs is older than plugin.mts") && all.contains("npm run build"),
        "{all}"
    );
}
