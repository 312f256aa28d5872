//! Installing registry agents (issue 28, second part): an `npx` entry installed with npm
//! from a package registry the test serves on loopback — pinned, with its lockfile — then
//! started by its id in a headless turn; an update whose agent does not answer `initialize`
//! is installed beside and not switched to; `use` goes back and forth; `remove` removes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

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
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let mut docs = serde_json::Map::new();
    let mut balls = std::collections::HashMap::new();
    let latest = versions.last().unwrap().0.clone();
    for (v, t) in versions {
        docs.insert(
            v.clone(),
            serde_json::json!({"name": name, "version": v, "bin": {name: bin},
                "dist": {"tarball": format!("{base}/{name}/-/{name}-{v}.tgz")}}),
        );
        balls.insert(format!("/{name}/-/{name}-{v}.tgz"), t);
    }
    let packument =
        serde_json::json!({"name": name, "dist-tags": {"latest": latest}, "versions": docs})
            .to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let body: Vec<u8> = match balls.get(&path) {
                Some(b) => b.clone(),
                None if path.trim_end_matches('/') == format!("/{name}") => {
                    packument.clone().into_bytes()
                }
                None => {
                    let _ = w.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    continue;
                }
            };
            let _ = w.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            let _ = w.write_all(&body);
            let mut rest = Vec::new();
            let _ = r
                .get_mut()
                .set_read_timeout(Some(std::time::Duration::from_millis(50)));
            let _ = r.read_to_end(&mut rest);
        }
    });
    format!("{base}/")
}

struct Home {
    dir: tempfile::TempDir,
    npm: String,
}

impl Home {
    /// The registry's index says `test-agent` is at `version`.
    fn index(&self, version: &str) {
        let index = serde_json::json!({"version": "1.0.0", "agents": [
            {"id": "test-agent", "name": "Test agent", "version": version, "description": "answers hello",
             "distribution": {"npx": {"package": format!("trellis-test-agent@{version}")}}}]});
        std::fs::write(self.dir.path().join("registry.json"), index.to_string()).unwrap();
        let config = self.dir.path().join("config/trellis");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "[registry]\nurl = {:?}\n",
                self.dir.path().join("registry.json")
            ),
        )
        .unwrap();
    }

    fn trellis(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("npm_config_registry", &self.npm)
            .env("npm_config_cache", self.dir.path().join("npm-cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn an_npx_agent_is_installed_pinned_run_updated_only_when_it_works_and_removed() {
    if Command::new("npm").arg("--version").output().is_err() {
        crate::missing_tool("npm is not installed (scripts/test installs Node.js)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let npm = npm_registry(
        dir.path(),
        &[
            ("1.0.0", Some("1.0.0")),
            ("2.0.0", None),
            ("3.0.0", Some("3.0.0")),
        ],
    );
    let h = Home { dir, npm };
    h.index("1.0.0");
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
    let v1 = h.dir.path().join("data/trellis/agents/test-agent/1.0.0");
    let manifest = std::fs::read_to_string(v1.join("package.json")).unwrap();
    assert!(
        manifest.contains("\"trellis-test-agent\": \"1.0.0\""),
        "{manifest}"
    );
    assert!(v1.join("package-lock.json").exists());
    let o = h.trellis(&["agents", "list"]);
    let rec = std::fs::read_to_string(
        h.dir
            .path()
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
    h.index("2.0.0");
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
    h.index("3.0.0");
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
    let agents = h.dir.path().join("data/trellis/agents/test-agent");
    assert!(agents.join("1.0.0").exists() && !agents.join("2.0.0").exists());
    // Removed: every version, and the id no longer names an agent.
    let o = h.trellis(&["agents", "remove", "test-agent"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!h.dir.path().join("data/trellis/agents/test-agent").exists());
    let o = h.trellis(&["run", "--agent", "test-agent", "--prompt", "hi"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("not installed here"), "{}", text(&o));
}

/// A preset's name reaches the registry agent installed for it, with what Trellis knows of
/// its quirks: Gemini's gets no file reads (it misreads their not-found answer).
#[test]
fn a_presets_name_starts_its_registry_agent_with_its_quirks() {
    if Command::new("npm").arg("--version").output().is_err() {
        crate::missing_tool("npm is not installed (scripts/test installs Node.js)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let npm = npm_registry(dir.path(), &[("1.0.0", Some("1.0.0"))]);
    let h = Home { dir, npm };
    let index = serde_json::json!({"version": "1.0.0", "agents": [
        {"id": "gemini", "name": "Gemini CLI", "version": "1.0.0", "description": "stands in for Gemini",
         "distribution": {"npx": {"package": "trellis-test-agent@1.0.0"}}}]});
    std::fs::write(h.dir.path().join("registry.json"), index.to_string()).unwrap();
    let config = h.dir.path().join("config/trellis");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[registry]\nurl = {:?}\n",
            h.dir.path().join("registry.json")
        ),
    )
    .unwrap();
    let o = h.trellis(&["agents", "add", "gemini"]);
    assert!(o.status.success(), "{}", text(&o));
    let log = h.dir.path().join("s.jsonl");
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
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("build/package");
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
    let out = dir.path().join("sdk.tgz");
    assert!(
        Command::new("tar")
            .arg("czf")
            .arg(&out)
            .arg("-C")
            .arg(dir.path().join("build"))
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
    let h = Home { dir, npm };
    let index = serde_json::json!({"version": "1.0.0", "agents": [
        {"id": "sdk-example", "name": "ACP TypeScript SDK example", "version": "1.9.0",
         "description": "the SDK's example agent",
         "distribution": {"npx": {"package": "trellis-sdk-example@1.9.0"}}}]});
    std::fs::write(h.dir.path().join("registry.json"), index.to_string()).unwrap();
    let config = h.dir.path().join("config/trellis");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[registry]\nurl = {:?}\n",
            h.dir.path().join("registry.json")
        ),
    )
    .unwrap();
    let o = h.trellis(&["agents", "add", "sdk-example"]);
    assert!(o.status.success(), "{}", text(&o));
    let lock = std::fs::read_to_string(
        h.dir
            .path()
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
    if Command::new("npm").arg("--version").output().is_err() {
        crate::missing_tool("npm is not installed (scripts/test installs Node.js)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let npm = npm_registry(dir.path(), &[("1.0.0", Some("1.0.0"))]);
    let h = Home { dir, npm };
    h.index("1.0.0");
    let config = format!("XDG_CONFIG_HOME={}", h.dir.path().join("config").display());
    let registry = format!("npm_config_registry={}", h.npm);
    let cache = format!(
        "npm_config_cache={}",
        h.dir.path().join("npm-cache").display()
    );
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
