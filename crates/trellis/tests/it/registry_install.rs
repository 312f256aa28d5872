//! Installing registry agents (issue 28, second part): an `npx` entry installed with npm
//! from a package registry the test serves on loopback — pinned, with its lockfile — then
//! started by its id in a headless turn; an update whose agent does not answer `initialize`
//! is installed beside and not switched to; `use` goes back and forth; `remove` removes.

use std::path::Path;
use std::process::Command;

use crate::registry_kit::{Home, serve_with, text};

/// A tiny ACP agent of `version` (none: one that exits at once).
fn agent_js(version: Option<&str>) -> String {
    match version {
        None => "#!/usr/bin/env node\nprocess.exit(3);\n".into(),
        Some(v) => format!(
            r#"#!/usr/bin/env node
const rl = require('readline').createInterface({{input: process.stdin}});
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on('line', (line) => {{
  let m; try {{ m = JSON.parse(line); }} catch (e) {{ return; }}
  if (m.method === 'initialize') send({{jsonrpc: "2.0", id: m.id, result: {{protocolVersion: 1, agentCapabilities: {{}}, authMethods: [{{id: "token", name: "Test token"}}], agentInfo: {{name: "test-agent", version: "{v}"}}}}}});
  else if (m.method === 'session/new') send({{jsonrpc: "2.0", id: m.id, result: {{sessionId: "s-1"}}}});
  else if (m.method === 'session/prompt') {{
    send({{jsonrpc: "2.0", method: "session/update", params: {{sessionId: m.params.sessionId, update: {{sessionUpdate: "agent_message_chunk", content: {{type: "text", text: "hello from {v}"}}}}}}}});
    send({{jsonrpc: "2.0", id: m.id, result: {{stopReason: "end_turn"}}}});
  }} else if (m.id !== undefined && m.method) send({{jsonrpc: "2.0", id: m.id, error: {{code: -32601, message: "no"}}}});
}});
"#
        ),
    }
}

/// The npm tarball of `trellis-test-agent@version` running `js`.
fn tarball(dir: &Path, version: &str, js: &str) -> Vec<u8> {
    let root = dir.join(format!("build-{version}"));
    let pkg = root.join("package");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        format!(r#"{{"name": "trellis-test-agent", "version": "{version}", "bin": {{"trellis-test-agent": "agent.js"}}}}"#),
    )
    .unwrap();
    std::fs::write(pkg.join("agent.js"), js).unwrap();
    let out = root.join("p.tgz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&out)
        .arg("-C")
        .arg(&root)
        .arg("package")
        .status()
        .unwrap_or_else(|_| panic!("tar is needed"));
    assert!(status.success());
    std::fs::read(out).unwrap()
}

/// A package registry on loopback serving `trellis-test-agent` at the given versions.
fn npm_registry(dir: &Path, versions: &[(&str, Option<&str>)]) -> String {
    let packages: Vec<(String, Vec<u8>)> = versions
        .iter()
        .map(|(v, agent)| (v.to_string(), tarball(dir, v, &agent_js(*agent))))
        .collect();
    serve_package("trellis-test-agent", "agent.js", packages)
}

/// A package registry on loopback serving package `name` (its command runs `bin`) at the
/// given versions' tarballs.
fn serve_package(name: &'static str, bin: &str, versions: Vec<(String, Vec<u8>)>) -> String {
    let bin = bin.to_string();
    let base = serve_with(move |base| {
        let mut docs = serde_json::Map::new();
        let mut files = std::collections::HashMap::new();
        let latest = versions.last().unwrap().0.clone();
        for (v, t) in versions {
            docs.insert(
                v.clone(),
                serde_json::json!({"name": name, "version": v, "bin": {name: bin},
                    "dist": {"tarball": format!("{base}/{name}/-/{name}-{v}.tgz")}}),
            );
            files.insert(format!("/{name}/-/{name}-{v}.tgz"), t);
        }
        let packument =
            serde_json::json!({"name": name, "dist-tags": {"latest": latest}, "versions": docs});
        files.insert(format!("/{name}"), packument.to_string().into_bytes());
        files
    });
    format!("{base}/")
}

/// The environment that sends npm to `registry`, its cache in `home`.
fn npm_env(home: &Path, registry: &str) -> Vec<(String, String)> {
    vec![
        ("npm_config_registry".into(), registry.to_string()),
        (
            "npm_config_cache".into(),
            home.join("npm-cache").display().to_string(),
        ),
    ]
}

/// A home whose npm asks a package registry on loopback serving `trellis-test-agent` at
/// `versions`, and that registry's address (none when npm is missing: the test fails).
fn npm_home(versions: &[(&str, Option<&str>)]) -> Option<(Home, String)> {
    if Command::new("npm").arg("--version").output().is_err() {
        crate::missing_tool("npm is not installed (scripts/test installs Node.js)");
        return None;
    }
    let mut h = Home::new();
    let npm = npm_registry(h.path(), versions);
    h.env = npm_env(h.path(), &npm);
    Some((h, npm))
}

/// The registry's index says `test-agent` is at `version`.
fn index(h: &Home, version: &str) {
    h.registry(serde_json::json!([
        {"id": "test-agent", "name": "Test agent", "version": version, "description": "answers hello",
         "distribution": {"npx": {"package": format!("trellis-test-agent@{version}")}}}]));
}

#[test]
fn an_npx_agent_is_installed_pinned_run_updated_only_when_it_works_and_removed() {
    let Some((h, _)) = npm_home(&[
        ("1.0.0", Some("1.0.0")),
        ("2.0.0", None),
        ("3.0.0", Some("3.0.0")),
    ]) else {
        return;
    };
    index(&h, "1.0.0");
    // Not installed yet: named with what installing it does, not run as a command.
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("test-agent is an agent of the registry (Test agent 1.0.0), not installed here: `trellis agents add test-agent` installs the npm package trellis-test-agent@1.0.0"),
        "{}",
        text(&o)
    );
    let o = h.trellis(&["agents", "add", "test-agent"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("test-agent 1.0.0 installed"),
        "{}",
        text(&o)
    );
    // It answered initialize, and says it may need a login.
    assert!(text(&o).contains("log in (Test token)"), "{}", text(&o));
    // Pinned: the exact version, and npm's lockfile beside it.
    let v1 = h.path().join("data/trellis/agents/test-agent/1.0.0");
    let manifest = std::fs::read_to_string(v1.join("package.json")).unwrap();
    assert!(
        manifest.contains("\"trellis-test-agent\": \"1.0.0\""),
        "{manifest}"
    );
    assert!(v1.join("package-lock.json").exists());
    let o = h.trellis(&["agents", "list"]);
    let rec = std::fs::read_to_string(
        h.path()
            .join("data/trellis/agents/test-agent/installed.json"),
    );
    assert!(
        text(&o).contains("installed 1.0.0"),
        "{}\n{rec:?}",
        text(&o)
    );
    // Started by its id, a turn headless.
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("hello from 1.0.0"), "{}", text(&o));
    // The registry moves to a version whose agent does not start: installed beside, not
    // switched to.
    index(&h, "2.0.0");
    let o = h.trellis(&["agents", "list"]);
    assert!(text(&o).contains("1.0.0 → 2.0.0 waiting"), "{}", text(&o));
    let o = h.trellis(&["agents", "update", "test-agent"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("test-agent: 1.0.0 → 2.0.0"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("1.0.0 stays in use"), "{}", text(&o));
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert!(text(&o).contains("hello from 1.0.0"), "{}", text(&o));
    // Back and forth by hand.
    let o = h.trellis(&["agents", "use", "test-agent", "2.0.0"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = h.trellis(&["agents", "use", "test-agent", "9.9.9"]);
    assert!(
        !o.status.success() && text(&o).contains("not installed"),
        "{}",
        text(&o)
    );
    let o = h.trellis(&["agents", "use", "test-agent", "1.0.0"]);
    assert!(o.status.success(), "{}", text(&o));
    // An update that works: switched to, the one it replaced kept, older ones removed.
    index(&h, "3.0.0");
    let o = h.trellis(&["agents", "update"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("removed 2.0.0"), "{}", text(&o));
    assert!(
        text(&o).contains("3.0.0 in use (1.0.0 kept"),
        "{}",
        text(&o)
    );
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert!(text(&o).contains("hello from 3.0.0"), "{}", text(&o));
    let agents = h.path().join("data/trellis/agents/test-agent");
    assert!(agents.join("1.0.0").exists() && !agents.join("2.0.0").exists());
    // Removed: every version, and the id no longer names an agent.
    let o = h.trellis(&["agents", "remove", "test-agent"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!h.path().join("data/trellis/agents/test-agent").exists());
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("not installed here"), "{}", text(&o));
}

/// A preset's name reaches the registry agent installed for it, with what Trellis knows of
/// its quirks: Gemini's gets no file reads (it misreads their not-found answer).
#[test]
fn a_presets_name_starts_its_registry_agent_with_its_quirks() {
    let Some((h, _)) = npm_home(&[("1.0.0", Some("1.0.0"))]) else {
        return;
    };
    h.registry(serde_json::json!([
        {"id": "gemini", "name": "Gemini CLI", "version": "1.0.0", "description": "stands in for Gemini",
         "distribution": {"npx": {"package": "trellis-test-agent@1.0.0"}}}]));
    let o = h.trellis(&["agents", "add", "gemini"]);
    assert!(o.status.success(), "{}", text(&o));
    let log = h.path().join("s.jsonl");
    let o = h.trellis(&[
        "run",
        "--agent",
        "gemini",
        "--prompt",
        "hi",
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(text(&o).contains("hello from 1.0.0"), "{}", text(&o));
    let init = crate::sent(&std::fs::read_to_string(&log).unwrap(), "initialize");
    assert_eq!(
        init[0]["clientCapabilities"]["fs"]["readTextFile"], false,
        "{init:?}"
    );
    assert_eq!(
        init[0]["clientCapabilities"]["fs"]["writeTextFile"], true,
        "{init:?}"
    );
}

/// The TypeScript SDK's example agent (the SDK 1.9.0 that `scripts/test` installs under
/// `.ci/node`), as a registry npx entry: a package whose command starts it, the SDK and zod
/// bundled in, served by a package registry on loopback; installed pinned, a turn run.
#[test]
fn the_typescript_sdks_example_agent_installs_from_the_registry() {
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/node/node_modules");
    if !node
        .join("@agentclientprotocol/sdk/dist/examples/agent.js")
        .exists()
        || Command::new("npm").arg("--version").output().is_err()
    {
        crate::missing_tool("the TypeScript SDK 1.9.0 under .ci/node (scripts/test installs it)");
        return;
    }
    let mut h = Home::new();
    let dir = h.path().to_path_buf();
    let pkg = dir.join("build/package");
    std::fs::create_dir_all(pkg.join("node_modules/@agentclientprotocol")).unwrap();
    for (from, to) in [
        (
            "@agentclientprotocol/sdk",
            "node_modules/@agentclientprotocol/sdk",
        ),
        ("zod", "node_modules/zod"),
    ] {
        let ok = Command::new("cp")
            .arg("-r")
            .arg(node.join(from))
            .arg(pkg.join(to))
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let zod: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(node.join("zod/package.json")).unwrap())
            .unwrap();
    std::fs::write(
        pkg.join("package.json"),
        serde_json::json!({"name": "trellis-sdk-example", "version": "1.9.0",
            "bin": {"trellis-sdk-example": "agent.mjs"},
            "dependencies": {"@agentclientprotocol/sdk": "1.9.0", "zod": zod["version"]},
            "bundleDependencies": ["@agentclientprotocol/sdk", "zod"]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        pkg.join("agent.mjs"),
        "#!/usr/bin/env node\nimport \"./node_modules/@agentclientprotocol/sdk/dist/examples/agent.js\";\n",
    )
    .unwrap();
    let out = dir.join("sdk.tgz");
    assert!(
        Command::new("tar")
            .arg("czf")
            .arg(&out)
            .arg("-C")
            .arg(dir.join("build"))
            .arg("package")
            .status()
            .unwrap()
            .success()
    );
    let npm = serve_package(
        "trellis-sdk-example",
        "agent.mjs",
        vec![("1.9.0".into(), std::fs::read(&out).unwrap())],
    );
    h.env = npm_env(h.path(), &npm);
    h.registry(serde_json::json!([
        {"id": "sdk-example", "name": "ACP TypeScript SDK example", "version": "1.9.0",
         "description": "the SDK's example agent",
         "distribution": {"npx": {"package": "trellis-sdk-example@1.9.0"}}}]));
    let o = h.trellis(&["agents", "add", "sdk-example"]);
    assert!(o.status.success(), "{}", text(&o));
    let lock = std::fs::read_to_string(
        h.path()
            .join("data/trellis/agents/sdk-example/1.9.0/package-lock.json"),
    )
    .unwrap();
    assert!(lock.contains("\"trellis-sdk-example\""), "{lock}");
    let o = h.trellis(&[
        "run",
        "--agent",
        "sdk-example",
        "--prompt",
        "hello",
        "--permission",
        "allow-once",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("end_turn"), "{}", text(&o));
}

/// In the UI: a registry agent that is not installed is offered for install on the
/// terminal first (what will be installed is said), then the UI starts on it.
#[test]
fn the_ui_offers_a_registry_agent_that_is_not_installed() {
    let Some((h, npm)) = npm_home(&[("1.0.0", Some("1.0.0"))]) else {
        return;
    };
    index(&h, "1.0.0");
    let config = format!("XDG_CONFIG_HOME={}", h.path().join("config").display());
    let registry = format!("npm_config_registry={npm}");
    let cache = format!("npm_config_cache={}", h.path().join("npm-cache").display());
    let Some(t) = crate::tui::Tmux::start_env(
        &["LANG=C.UTF-8", &config, &registry, &cache],
        &["--agent", "test-agent"],
        120,
        40,
    ) else {
        return;
    };
    let s = t.wait_for("Install it now? [y/N]");
    assert!(
        s.contains("the npm package trellis-test-agent@1.0.0"),
        "{s}"
    );
    t.send(&["y", "Enter"]);
    t.wait_for("Enter send");
    t.send(&["hi", "Enter"]);
    t.wait_for("hello from 1.0.0");
}
