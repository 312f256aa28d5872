//! A package's `mcp.json` (Agent Plugins §7.2): the MCP servers it offers agents.
//!
//! Per the specification: `$schema` must be a known one of the same version as
//! `plugin.json`, `mcpServers` an object; each server is one closed variant — `stdio`
//! (`command`, `args`, `env`, `cwd`) or `streamable-http` / `sse` (`url`, `headers`) — and
//! an invalid entry is skipped and reported while the others load. A stdio `command` is a
//! bare program name or `./path` inside the package; `${PLUGIN_ROOT}` and `${PLUGIN_DATA}`
//! are expanded (once, literally) in `args`, `env` values and `cwd`; `PLUGIN_ROOT` and
//! `PLUGIN_DATA` are set in its environment. A remote `url` is `https` (or `http` on
//! loopback), without user information or fragment. ACP gives a stdio server no working
//! directory: one whose `cwd` is not the package root is reported, not offered.

use std::path::Path;

use serde_json::Value;

use crate::package::Package;

/// One server, ready to offer.
#[derive(Debug, Clone, PartialEq)]
pub enum Server {
    Stdio {
        name: String,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Remote {
        name: String,
        sse: bool,
        url: String,
        headers: Vec<(String, String)>,
    },
}

fn expand(s: &str, root: &str, data: &str) -> String {
    // A single literal pass over the original text: what a replacement inserts is never
    // scanned again.
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${PLUGIN_") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("${PLUGIN_ROOT}") {
            out.push_str(root);
            rest = t;
        } else if let Some(t) = tail.strip_prefix("${PLUGIN_DATA}") {
            out.push_str(data);
            rest = t;
        } else {
            out.push_str("${PLUGIN_");
            rest = &tail["${PLUGIN_".len()..];
        }
    }
    out.push_str(rest);
    out
}

fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or(format!("{what} must hold strings"))
            })
            .collect(),
        Some(_) => Err(format!("{what} must be an array of strings")),
    }
}

fn map(v: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, String> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, x)| {
                x.as_str()
                    .map(|s| (k.clone(), s.to_string()))
                    .ok_or(format!("{what}.{k} must be a string"))
            })
            .collect(),
        Some(_) => Err(format!("{what} must be an object of strings")),
    }
}

fn remote_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url.split_once("://").ok_or("url must be absolute")?;
    let host_port = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host_port.contains('@') {
        return Err("url must not carry user information".into());
    }
    if url.contains('#') {
        return Err("url must not have a fragment".into());
    }
    let host = host_port
        .rsplit_once(':')
        .filter(|(h, p)| !h.ends_with(']') || p.chars().all(|c| c.is_ascii_digit()))
        .map_or(host_port, |(h, _)| h);
    let loopback = host == "localhost" || host.starts_with("127.") || host == "[::1]";
    match scheme {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err("a remote server is reached over https (http only on loopback)".into()),
        _ => Err("url must be http or https".into()),
    }
}

fn server(name: &str, v: &Value, package: &Package, data: &Path) -> Result<Server, String> {
    let Value::Object(o) = v else {
        return Err("must be an object".into());
    };
    let kind = o
        .get("type")
        .and_then(Value::as_str)
        .ok_or("\"type\" is required")?;
    let root = package.root.to_string_lossy().into_owned();
    let data_s = data.to_string_lossy().into_owned();
    match kind {
        "stdio" => {
            for k in o.keys() {
                if !["type", "command", "args", "env", "cwd"].contains(&k.as_str()) {
                    return Err(format!("unknown field {k:?} for a stdio server"));
                }
            }
            let command = o
                .get("command")
                .and_then(Value::as_str)
                .ok_or("\"command\" is required")?;
            let command = if command.starts_with("./") {
                crate::process::program(&package.root, command)?
                    .to_string_lossy()
                    .into_owned()
            } else if command.contains('/') || command.is_empty() {
                return Err("\"command\" is a program name or a ./path inside the package".into());
            } else {
                command.to_string()
            };
            let args = strings(o.get("args"), "args")?
                .iter()
                .map(|a| expand(a, &root, &data_s))
                .collect();
            let mut env = map(o.get("env"), "env")?;
            if env
                .iter()
                .any(|(k, _)| k == "PLUGIN_ROOT" || k == "PLUGIN_DATA")
            {
                return Err("env must not set PLUGIN_ROOT or PLUGIN_DATA".into());
            }
            for (_, v) in env.iter_mut() {
                *v = expand(v, &root, &data_s);
            }
            env.push(("PLUGIN_ROOT".into(), root.clone()));
            env.push(("PLUGIN_DATA".into(), data_s.clone()));
            if let Some(cwd) = o.get("cwd") {
                let cwd = cwd.as_str().ok_or("\"cwd\" must be a string")?;
                let expanded = expand(cwd, &root, &data_s);
                if expanded.trim_end_matches('/') != root && cwd != "./" && cwd != "." {
                    return Err(format!(
                        "cwd {cwd:?}: ACP gives MCP servers no working directory, so only the package root can be honoured"
                    ));
                }
            }
            Ok(Server::Stdio {
                name: name.to_string(),
                command,
                args,
                env,
            })
        }
        "streamable-http" | "sse" => {
            for k in o.keys() {
                if !["type", "url", "headers"].contains(&k.as_str()) {
                    return Err(format!("unknown field {k:?} for a {kind} server"));
                }
            }
            let url = o
                .get("url")
                .and_then(Value::as_str)
                .ok_or("\"url\" is required")?;
            remote_url(url)?;
            let headers = map(o.get("headers"), "headers")?;
            let mut seen = std::collections::HashSet::new();
            for (k, _) in &headers {
                if !seen.insert(k.to_ascii_lowercase()) {
                    return Err(format!("header {k} is given twice"));
                }
            }
            Ok(Server::Remote {
                name: name.to_string(),
                sse: kind == "sse",
                url: url.to_string(),
                headers,
            })
        }
        other => Err(format!("unknown server type {other:?}")),
    }
}

/// The servers of `package`'s `mcp.json` (none when it has none), and what was skipped.
pub fn load(package: &Package, data: &Path) -> (Vec<Server>, Vec<String>) {
    let path = package.root.join("mcp.json");
    let text = match std::fs::symlink_metadata(&path) {
        Err(_) => return (Vec::new(), Vec::new()),
        Ok(m) if !m.is_file() => {
            return (
                Vec::new(),
                vec![format!(
                    "{}: mcp.json is not a regular file; MCP disabled",
                    package.name
                )],
            );
        }
        Ok(m) if m.len() > 1 << 20 => {
            return (
                Vec::new(),
                vec![format!(
                    "{}: mcp.json is larger than 1 MiB; MCP disabled",
                    package.name
                )],
            );
        }
        Ok(_) => match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return (Vec::new(), vec![format!("{}: mcp.json: {e}", package.name)]),
        },
    };
    let bad = |why: String| {
        (
            Vec::new(),
            vec![format!(
                "{}: mcp.json {why}; MCP disabled for it",
                package.name
            )],
        )
    };
    let v: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return bad(format!("is not JSON ({e})")),
    };
    let want = format!(
        "https://agent-plugins.org/schemas/{}/mcp.schema.json",
        package.spec_version
    );
    if v.get("$schema").and_then(Value::as_str) != Some(want.as_str()) {
        return bad(format!(
            "must declare \"$schema\": {want:?} (the version of plugin.json)"
        ));
    }
    if v.as_object()
        .is_some_and(|o| o.keys().any(|k| k != "$schema" && k != "mcpServers"))
    {
        return bad("has fields besides $schema and mcpServers".into());
    }
    let Some(servers) = v.get("mcpServers").and_then(Value::as_object) else {
        return bad("needs an \"mcpServers\" object".into());
    };
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (name, s) in servers {
        match server(name, s, package, data) {
            Ok(s) => out.push(s),
            Err(e) => problems.push(format!("{}: MCP server {name} skipped: {e}", package.name)),
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_once_and_literally() {
        assert_eq!(
            expand("${PLUGIN_ROOT}/a:${PLUGIN_DATA}", "/r", "/d"),
            "/r/a:/d"
        );
        assert_eq!(
            expand("${PLUGIN_X} ${PLUGIN_ROOT}", "${PLUGIN_DATA}", "/d"),
            "${PLUGIN_X} ${PLUGIN_DATA}"
        );
    }

    #[test]
    fn remote_urls_are_https_or_loopback() {
        assert!(remote_url("https://docs.example/mcp").is_ok());
        assert!(remote_url("http://localhost:8080/mcp").is_ok());
        assert!(remote_url("http://127.0.0.1/mcp").is_ok());
        assert!(remote_url("http://docs.example/mcp").is_err());
        assert!(remote_url("https://user:pw@docs.example/mcp").is_err());
        assert!(remote_url("https://docs.example/mcp#x").is_err());
        assert!(remote_url("ftp://x").is_err());
    }

    #[test]
    fn a_packages_servers_load_and_bad_entries_are_skipped_with_a_reason() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("plugin.json"),
            r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "p"}"#,
        )
        .unwrap();
        std::fs::write(d.path().join("server.sh"), "").unwrap();
        std::fs::write(
            d.path().join("mcp.json"),
            r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {
                "local": {"type": "stdio", "command": "./server.sh", "args": ["--db", "${PLUGIN_DATA}/db"], "env": {"X": "${PLUGIN_ROOT}"}},
                "remote": {"type": "streamable-http", "url": "https://api.example/mcp", "headers": {"X-Team": "a"}},
                "escape": {"type": "stdio", "command": "./../x"},
                "plain-http": {"type": "sse", "url": "http://api.example/sse"},
                "wrongcwd": {"type": "stdio", "command": "npx", "cwd": "${PLUGIN_DATA}"},
                "extra": {"type": "stdio", "command": "npx", "url": "https://x"}
            }}"#,
        )
        .unwrap();
        let p = Package::load(d.path()).unwrap();
        let (servers, problems) = load(&p, Path::new("/data/p"));
        assert_eq!(servers.len(), 2, "{problems:?}");
        assert_eq!(problems.len(), 4, "{problems:?}");
        match &servers[0] {
            Server::Stdio {
                command, args, env, ..
            } => {
                assert!(command.ends_with("/server.sh"));
                assert_eq!(args[1], "/data/p/db");
                assert!(
                    env.iter()
                        .any(|(k, v)| k == "PLUGIN_DATA" && v == "/data/p")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
