//! What `trellis plugin new NAME --lang LANG` writes: a package that runs, and a replay
//! test (a small recorded session and, written by `new` itself, its snapshot).

use anyhow::bail;

/// A short recorded session: a prompt, a passing and a failing command, the turn's end.
const SESSION: &str = r#"{"t": 0.0, "dir": "client_to_agent", "msg": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"terminal": true}}}}
{"t": 0.1, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "recorded-agent", "version": "1.0.0"}}}}
{"t": 0.1, "dir": "client_to_agent", "msg": {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/home/user/project", "mcpServers": []}}}
{"t": 0.2, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "S1"}}}
{"t": 1.0, "dir": "client_to_agent", "msg": {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "S1", "prompt": [{"type": "text", "text": "run the tests"}]}}}
{"t": 1.5, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run tests", "kind": "execute", "status": "in_progress", "rawInput": {"command": "cargo test"}}}}}
{"t": 4.2, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": {"exit_code": 0}, "content": [{"type": "content", "content": {"type": "text", "text": "running 3 tests\ntest result: ok. 3 passed; 0 failed\n"}}]}}}}
{"t": 4.5, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Lint", "kind": "execute", "status": "in_progress", "rawInput": {"command": "cargo clippy"}}}}}
{"t": 6.0, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "failed", "rawOutput": {"exit_code": 101}, "content": [{"type": "content", "content": {"type": "text", "text": "error: unused variable `x`\n"}}]}}}}
{"t": 6.5, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "The tests pass; clippy fails."}}}}}
{"t": 7.0, "dir": "agent_to_client", "msg": {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}}
"#;

const PYTHON: &str = r#"# A Trellis plugin: a card design for shell commands and a sidebar section of failures.
# The SDK (trellis_plugin) ships with Trellis; docs/plugins.md has the whole API.
from trellis_plugin import Plugin

plugin = Plugin(subscriptions=["tool_call_updated"], call_kinds=["execute"])
failed = {}


@plugin.design("shell", label="Shell", kind="execute")
def shell(call, facts, width, host):
    code = facts["exit_code"]
    took = f"  {facts['duration']:.1f}s" if facts["duration"] is not None else ""
    tone = "good" if code == 0 else "bad"
    return {"call": [[{"text": "$ ", "tone": "accent"}, facts["command"] or facts["title"],
                      {"text": f"  exit {code}" if code is not None else "", "tone": tone}, took]]}


@plugin.section("failed", title="Failed commands")
def open_call(call_id, host):
    host.open_inspector(call_id)


@plugin.on("tool_call_updated")
def updated(event, host):
    call = event["call"]
    if call["status"] == "failed":
        failed[call["id"]] = call.get("title", "")
        host.set_section("failed", [{"line": t, "id": i} for i, t in failed.items()], count=len(failed))


plugin.run()
"#;

/// The TypeScript template, and what `tsc -p .` makes of it (a test keeps them in step).
pub const TS_SOURCE: &str = include_str!("../templates/typescript/plugin.mts");
pub const TS_BUILT: &str = include_str!("../templates/typescript/plugin.mjs");
pub const TS_CONFIG: &str = include_str!("../templates/typescript/tsconfig.json");

/// The Rust template (compiled in Trellis's own tests as an example of the SDK crate).
const RUST_MAIN: &str = include_str!("../templates/rust/main.rs");

/// The Rust SDK and the protocol crate it speaks, written into the package (`sdk/`) the
/// way the Python SDK is written where plugins find it: the package builds with nothing
/// but crates.io, pinned to what this Trellis was built and tested with.
const RUST_SDK: &[(&str, &str)] = &[
    (
        "sdk/trellis-plugin-sdk/src/lib.rs",
        include_str!("../../trellis-plugin-sdk/src/lib.rs"),
    ),
    (
        "sdk/trellis-plugin-protocol/src/lib.rs",
        include_str!("../../trellis-plugin-protocol/src/lib.rs"),
    ),
    (
        "sdk/trellis-plugin-protocol/src/actions.rs",
        include_str!("../../trellis-plugin-protocol/src/actions.rs"),
    ),
    (
        "sdk/trellis-plugin-protocol/src/contrib.rs",
        include_str!("../../trellis-plugin-protocol/src/contrib.rs"),
    ),
    (
        "sdk/trellis-plugin-protocol/src/kinds.rs",
        include_str!("../../trellis-plugin-protocol/src/kinds.rs"),
    ),
    (
        "sdk/trellis-plugin-protocol/src/wire.rs",
        include_str!("../../trellis-plugin-protocol/src/wire.rs"),
    ),
];

/// Trellis's own lockfile: the versions of serde and serde_json the SDK is pinned to.
const LOCK: &str = include_str!("../../../Cargo.lock");

/// The version of `krate` in Trellis's lockfile (the first, if several).
fn locked(krate: &str) -> &'static str {
    let needle = format!("name = \"{krate}\"\nversion = \"");
    LOCK.find(&needle)
        .map(|i| &LOCK[i + needle.len()..])
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("1")
}

fn rust_manifest(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

# A package of its own, wherever it is put.
[workspace]

[dependencies]
# The SDK, as this Trellis ships it (sdk/): nothing to fetch but crates.io.
trellis-plugin-sdk = {{ path = "sdk/trellis-plugin-sdk" }}

[profile.release]
strip = true
"#
    )
}

fn rust_sdk_manifests() -> Vec<(String, String)> {
    let v = env!("CARGO_PKG_VERSION");
    let (serde, json) = (locked("serde"), locked("serde_json"));
    vec![
        (
            "sdk/trellis-plugin-protocol/Cargo.toml".into(),
            format!(
                r#"[package]
name = "trellis-plugin-protocol"
description = "The contract between Trellis and its extensions (as Trellis {v} ships it)."
version = "{v}"
edition = "2024"
publish = false

[dependencies]
serde = {{ version = "={serde}", features = ["derive"] }}
serde_json = "={json}"

[features]
# Trellis's own build generates the protocol's JSON Schema with it; not here.
schema = []
"#
            ),
        ),
        (
            "sdk/trellis-plugin-sdk/Cargo.toml".into(),
            format!(
                r#"[package]
name = "trellis-plugin-sdk"
description = "Write Trellis plugins in Rust (as Trellis {v} ships it)."
version = "{v}"
edition = "2024"
publish = false

[dependencies]
trellis-plugin-protocol = {{ path = "../trellis-plugin-protocol" }}
serde = {{ version = "={serde}", features = ["derive"] }}
serde_json = "={json}"
"#
            ),
        ),
    ]
}

/// The TypeScript a new package pins.
const TYPESCRIPT: &str = "5.6.3";

/// The TypeScript package's npm manifest. `npm run build` is the one command that builds
/// it (the scaffold's comment, the stale-build error and docs/plugins.md say it): it works
/// from a fresh package — the pinned compiler is the one `npm install` put in
/// `node_modules/`, or else fetched into npm's cache once — and offline after that.
fn ts_package(name: &str) -> String {
    format!(
        r#"{{
  "name": "{name}",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "scripts": {{ "build": "npx --yes --package typescript@{TYPESCRIPT} tsc -p ." }},
  "devDependencies": {{ "typescript": "{TYPESCRIPT}" }}
}}
"#
    )
}

fn manifest(name: &str, command: &str, caps: &str) -> String {
    format!(
        r#"{{
  "$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
  "name": "{name}",
  "version": "0.1.0",
  "description": "A Trellis plugin",
  "extensions": {{
    "dev.trellis": {{
      "command": {command},
      "api": [1],
      "capabilities": {caps}
    }}
  }}
}}
"#
    )
}

/// The files of a new package, relative to its directory.
pub fn files(name: &str, lang: &str) -> anyhow::Result<Vec<(String, String)>> {
    Ok(match lang {
        "python" | "py" => vec![
            (
                "plugin.json".into(),
                manifest(
                    name,
                    r#"["python3", "./plugin.py"]"#,
                    r#"["observe", "ui"]"#,
                ),
            ),
            ("plugin.py".into(), PYTHON.into()),
            ("tests/session.jsonl".into(), SESSION.into()),
        ],
        "typescript" | "ts" => vec![
            (
                "plugin.json".into(),
                manifest(name, r#"["node", "./plugin.mjs"]"#, r#"["observe", "ui"]"#),
            ),
            ("plugin.mts".into(), TS_SOURCE.into()),
            ("plugin.mjs".into(), TS_BUILT.into()),
            ("tsconfig.json".into(), TS_CONFIG.into()),
            ("package.json".into(), ts_package(name)),
            (
                "lib/trellis-plugin.mjs".into(),
                trellis_plugin::sdk::TYPESCRIPT.into(),
            ),
            (
                "lib/trellis-plugin.d.mts".into(),
                trellis_plugin::sdk::TYPESCRIPT_TYPES.into(),
            ),
            ("tests/session.jsonl".into(), SESSION.into()),
        ],
        "rust" | "rs" => vec![
            (
                "plugin.json".into(),
                manifest(
                    name,
                    &format!(r#"["./target/release/{name}"]"#),
                    r#"["observe", "ui"]"#,
                ),
            ),
            ("Cargo.toml".into(), rust_manifest(name)),
            ("src/main.rs".into(), RUST_MAIN.into()),
            ("tests/session.jsonl".into(), SESSION.into()),
        ]
        .into_iter()
        .chain(rust_sdk_manifests())
        .chain(RUST_SDK.iter().map(|(p, t)| ((*p).into(), (*t).into())))
        .collect(),
        other => bail!("--lang {other}: python, typescript or rust"),
    })
}
