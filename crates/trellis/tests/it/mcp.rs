//! MCP servers through the real binary: from the config and from a plugin package's
//! `mcp.json`, offered in `session/new` as each agent's capabilities allow, the rest
//! reported.

use std::path::Path;

use crate::plugins::{demo_run, exe, python, repo, text, trellis};

/// A plugin package with an `mcp.json`, for the MCP tests.
fn mcp_plugin(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "docs-mcp",
            "extensions": {"dev.trellis": {"command": ["python3", "./plugin.py"], "capabilities": []}}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("plugin.py"),
        "from trellis_plugin import Plugin\nPlugin().run()\n",
    )
    .unwrap();
    std::fs::write(dir.join("server.py"), "").unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {
            "docs": {"type": "stdio", "command": "./server.py", "args": ["--cache", "${PLUGIN_DATA}/cache"]},
            "insecure": {"type": "sse", "url": "http://docs.example/sse"}
        }}"#,
    )
    .unwrap();
}

fn session_new(log: &str) -> serde_json::Value {
    let line = log
        .lines()
        .find(|l| l.contains("\"session/new\""))
        .unwrap_or_else(|| panic!("no session/new in {log}"));
    serde_json::from_str::<serde_json::Value>(line).unwrap()["msg"]["params"]["mcpServers"].clone()
}

#[test]
fn mcp_servers_are_offered_as_the_agent_allows_and_the_rest_is_reported() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("config/trellis")).unwrap();
    std::fs::write(
        home.path().join("config/trellis/config.toml"),
        r#"
[mcp_servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { TOKEN_FILE = "/run/token" }

[mcp_servers.search]
url = "https://search.example/mcp"
headers = { "X-Team" = "core" }

[mcp_servers.events]
type = "sse"
url = "https://events.example/sse"
"#,
    )
    .unwrap();
    let plugin = home.path().join("docs-mcp");
    mcp_plugin(&plugin);
    // The demo agent advertises no MCP capabilities: stdio servers only.
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let log = home.path().join("demo.jsonl");
    let o = demo_run(
        home.path(),
        &work,
        &[
            "--log",
            log.to_str().unwrap(),
            "--plugin",
            plugin.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let servers = session_new(&std::fs::read_to_string(&log).unwrap());
    let names: Vec<&str> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["files", "docs"], "{servers}");
    let docs = &servers[1];
    assert!(
        docs["command"]
            .as_str()
            .unwrap()
            .ends_with("/docs-mcp/server.py"),
        "{docs}"
    );
    assert!(
        docs["args"][1]
            .as_str()
            .unwrap()
            .ends_with("plugin-data/docs-mcp/cache"),
        "{docs}"
    );
    assert!(
        docs["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "PLUGIN_ROOT"),
        "{docs}"
    );
    let t = text(&o);
    assert!(t.contains("MCP server search (http, from config): not offered — the agent does not take http MCP servers"), "{t}");
    assert!(
        t.contains("MCP server events (sse, from config): not offered"),
        "{t}"
    );
    assert!(
        t.contains("docs-mcp: MCP server insecure skipped: a remote server is reached over https"),
        "{t}"
    );
    // An agent that takes http and sse servers gets them all.
    let fixture = repo().join("fixtures/acp/claude-agent-acp-0.23.1.jsonl");
    let agent = format!("{} agent replay {}", exe(), fixture.display());
    let log = home.path().join("claude.jsonl");
    let o = trellis(
        home.path(),
        &work,
        &[
            "run",
            "--agent",
            &agent,
            "--prompt",
            "go",
            "--cwd",
            work.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
    );
    let servers = session_new(&std::fs::read_to_string(&log).unwrap());
    let kinds: Vec<String> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}:{}",
                s["name"].as_str().unwrap(),
                s["type"].as_str().unwrap_or("stdio")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        ["events:sse", "files:stdio", "search:http"],
        "{}",
        text(&o)
    );
    // `trellis status` lists them.
    let st = trellis(home.path(), &work, &["status"]);
    let t = text(&st);
    assert!(
        t.contains("MCP servers")
            && t.contains("search (http, from config): offered to agents that take http servers"),
        "{t}"
    );
}
