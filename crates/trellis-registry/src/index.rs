//! The registry's index (`registry.json`: `{"version", "agents": [...]}`, one entry per
//! agent as its `agent.json` has it), read as hostile input: each entry is checked on its
//! own and refused with a reason (wrong types, oversized fields, ids or paths that could
//! name something else, commands with shell metacharacters, environment that would load
//! other code), and the good ones are kept. Nothing here touches the disk or runs anything.

use std::collections::BTreeMap;

use serde_json::Value;

mod fields;
use fields::{args, env, split_version, text, valid_archive, valid_command, valid_relative};
pub use fields::{installer, valid_command_name, valid_id, valid_version};

/// The largest index read (the public one is a few hundred KiB).
pub const MAX_INDEX: usize = 16 << 20;
/// The most entries read; past it the rest are refused.
pub const MAX_AGENTS: usize = 5000;

/// The platforms a binary distribution may name.
pub const PLATFORMS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

/// This machine's platform as the registry names it.
pub fn this_platform() -> Option<&'static str> {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "linux" => "linux",
        "windows" => "windows",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "aarch64" => "aarch64",
        "x86_64" => "x86_64",
        _ => return None,
    };
    PLATFORMS
        .iter()
        .copied()
        .find(|p| p.starts_with(os) && p.ends_with(arch))
}

/// An index as read: the entries that passed, and those refused with why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Index {
    pub version: String,
    pub agents: Vec<Agent>,
    /// (the entry's id, or its place when it has none; why it was refused).
    pub refused: Vec<(String, String)>,
}

/// One agent of the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub repository: Option<String>,
    pub website: Option<String>,
    pub license: Option<String>,
    pub authors: Vec<String>,
    pub npx: Option<Package>,
    pub uvx: Option<Package>,
    /// Binaries by platform.
    pub binary: BTreeMap<String, Binary>,
}

/// An `npx` or `uvx` distribution: a package (with its pinned version when it names one)
/// and how to start it.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// The package name, without a version.
    pub package: String,
    /// The version the entry pins (`pkg@1.2.3`, `pkg==1.2.3`), if any.
    pub pinned: Option<String>,
    /// The command to run from it (its own name when none).
    pub cmd: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// A binary distribution for one platform.
#[derive(Debug, Clone, PartialEq)]
pub struct Binary {
    pub archive: String,
    /// The archive's SHA-256 as the entry gives it (lowercase hex), when it does.
    pub sha256: Option<String>,
    /// The executable inside the archive, relative to where it is extracted.
    pub cmd: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Agent {
    /// How it is distributed, in words (`npx`, `uvx`, `binary` for this platform; others
    /// in brackets).
    pub fn distribution(&self) -> String {
        let mut out = Vec::new();
        if self.npx.is_some() {
            out.push("npx".to_string());
        }
        if self.uvx.is_some() {
            out.push("uvx".to_string());
        }
        match this_platform() {
            Some(p) if self.binary.contains_key(p) => out.push("binary".into()),
            _ if !self.binary.is_empty() => out.push("(binary: not for this platform)".into()),
            _ => {}
        }
        out.join(", ")
    }
}

impl Index {
    /// Reads an index from its JSON text.
    pub fn parse(text: &str) -> Result<Index, String> {
        if text.len() > MAX_INDEX {
            return Err(format!(
                "the index is {} bytes, more than {MAX_INDEX}",
                text.len()
            ));
        }
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let version = v["version"].as_str().unwrap_or_default().to_string();
        let Some(entries) = v["agents"].as_array() else {
            return Err("no \"agents\" list".into());
        };
        Ok(Index::from_entries(version, entries))
    }

    /// Checks `entries` one by one.
    pub fn from_entries(version: String, entries: &[Value]) -> Index {
        let mut index = Index {
            version,
            ..Index::default()
        };
        for (n, e) in entries.iter().enumerate() {
            let name = e["id"]
                .as_str()
                .filter(|id| valid_id(id))
                .map_or_else(|| format!("entry {}", n + 1), str::to_string);
            if n >= MAX_AGENTS {
                index
                    .refused
                    .push((name, format!("past the first {MAX_AGENTS} entries")));
                continue;
            }
            match Agent::check(e) {
                Ok(a) if index.agents.iter().any(|b| b.id == a.id) => index
                    .refused
                    .push((name, "an entry with this id came first".into())),
                Ok(a) => index.agents.push(a),
                Err(why) => index.refused.push((name, why)),
            }
        }
        index.agents.sort_by(|a, b| a.id.cmp(&b.id));
        index
    }

    pub fn get(&self, id: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.id == id)
    }
}

impl Agent {
    /// One entry, checked.
    fn check(e: &Value) -> Result<Agent, String> {
        if !e.is_object() {
            return Err("not an object".into());
        }
        let id = text(e, "id", 64, true)?.unwrap_or_default();
        if !valid_id(&id) {
            return Err(format!(
                "id `{}` is not lowercase letters, digits, . _ -",
                id.escape_debug()
            ));
        }
        let version = text(e, "version", 64, true)?.unwrap_or_default();
        if !valid_version(&version) {
            return Err(format!(
                "version `{}` is not a version",
                version.escape_debug()
            ));
        }
        let d = &e["distribution"];
        if !d.is_object() {
            return Err("no distribution".into());
        }
        let npx = d
            .get("npx")
            .map(|p| package(p, '@').map_err(|w| format!("npx: {w}")))
            .transpose()?;
        let uvx = d
            .get("uvx")
            .map(|p| package(p, '=').map_err(|w| format!("uvx: {w}")))
            .transpose()?;
        let mut binary = BTreeMap::new();
        if let Some(b) = d.get("binary") {
            let Some(platforms) = b.as_object() else {
                return Err("binary: not an object".into());
            };
            for (platform, b) in platforms {
                // Platforms Trellis does not know are somebody else's.
                if !PLATFORMS.contains(&platform.as_str()) {
                    continue;
                }
                let archive = text(b, "archive", 2048, true)
                    .map_err(|w| format!("binary {platform}: {w}"))?
                    .unwrap_or_default();
                if !valid_archive(&archive) {
                    return Err(format!(
                        "binary {platform}: archive `{}` is not an https address",
                        archive.escape_debug()
                    ));
                }
                // Known before any byte is fetched: an installer is not an archive.
                if installer(&archive) {
                    return Err(format!(
                        "binary {platform}: `{}` is an installer, not an archive (tar.gz, tgz, tar.bz2, tbz2, tar, zip, or a raw binary)",
                        archive.escape_debug()
                    ));
                }
                let cmd = text(b, "cmd", 256, true)
                    .map_err(|w| format!("binary {platform}: {w}"))?
                    .unwrap_or_default();
                if !valid_relative(&cmd) {
                    return Err(format!(
                        "binary {platform}: cmd `{}` is not a path inside the archive",
                        cmd.escape_debug()
                    ));
                }
                let sha256 = text(b, "sha256", 64, false)
                    .map_err(|w| format!("binary {platform}: {w}"))?
                    .map(|h| h.to_ascii_lowercase());
                if sha256
                    .as_ref()
                    .is_some_and(|h| h.len() != 64 || !h.chars().all(|c| c.is_ascii_hexdigit()))
                {
                    return Err(format!("binary {platform}: sha256 is not 64 hex digits"));
                }
                binary.insert(
                    platform.clone(),
                    Binary {
                        archive,
                        sha256,
                        cmd,
                        args: args(b).map_err(|w| format!("binary {platform}: {w}"))?,
                        env: env(b).map_err(|w| format!("binary {platform}: {w}"))?,
                    },
                );
            }
        }
        if npx.is_none() && uvx.is_none() && binary.is_empty() {
            return Err(
                "no distribution Trellis can use (npx, uvx, or a binary for a known platform)"
                    .into(),
            );
        }
        let authors = match &e["authors"] {
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .take(16)
                .filter(|s| s.len() <= 200 && !s.chars().any(char::is_control))
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        Ok(Agent {
            name: text(e, "name", 200, true)?.unwrap_or_default(),
            description: text(e, "description", 2000, true)?.unwrap_or_default(),
            repository: text(e, "repository", 2048, false)?,
            website: text(e, "website", 2048, false)?,
            license: text(e, "license", 200, false)?,
            authors,
            id,
            version,
            npx,
            uvx,
            binary,
        })
    }
}

/// A package distribution; `sep` starts the version in its name (`@` for npm, `=` of
/// `==` for PyPI).
fn package(p: &Value, sep: char) -> Result<Package, String> {
    let spec = text(p, "package", 256, true)?.unwrap_or_default();
    let (name, pinned) = split_version(&spec, sep);
    let name_ok = if sep == '@' {
        // npm: an optional @scope/, then a name.
        let bare = name.strip_prefix('@').map_or(Some(name), |s| {
            s.split_once('/')
                .map(|(scope, n)| if valid_command(scope) { n } else { "" })
        });
        bare.is_some_and(valid_command)
    } else {
        valid_command(name)
    };
    if !name_ok {
        return Err(format!(
            "package `{}` is not a package name",
            spec.escape_debug()
        ));
    }
    if let Some(v) = pinned
        && !valid_version(v)
    {
        return Err(format!(
            "package `{}`: `{}` is not a version (a tag such as latest is not a pin)",
            spec.escape_debug(),
            v.escape_debug()
        ));
    }
    let cmd = text(p, "cmd", 128, false)?;
    if let Some(c) = &cmd
        && !valid_command(c)
    {
        return Err(format!("cmd `{}` is not a command name", c.escape_debug()));
    }
    Ok(Package {
        package: name.to_string(),
        pinned: pinned.map(str::to_string),
        cmd,
        args: args(p)?,
        env: env(p)?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entry(id: &str, dist: Value) -> Value {
        serde_json::json!({"id": id, "name": "N", "version": "1.0.0",
            "description": "d", "distribution": dist})
    }

    #[test]
    fn good_entries_are_kept_and_bad_ones_refused_with_a_reason() {
        let good = entry(
            "good",
            serde_json::json!({"npx": {"package": "@scope/agent@1.2.3", "args": ["--acp"]},
                "uvx": {"package": "agent-py==0.4.0", "cmd": "agent-py"},
                "binary": {"linux-x86_64": {"archive": "https://e.org/a.tar.gz", "cmd": "./bin/agent"},
                           "plan9-mips": {"archive": "ftp://x", "cmd": "/x"}}}),
        );
        let cases = [
            (
                entry("../up", serde_json::json!({"npx": {"package": "a"}})),
                "id",
            ),
            (
                entry(
                    "shell",
                    serde_json::json!({"npx": {"package": "a", "cmd": "a; rm -rf ~"}}),
                ),
                "cmd",
            ),
            (
                entry("pkg", serde_json::json!({"npx": {"package": "a b"}})),
                "package",
            ),
            (
                entry(
                    "climb",
                    serde_json::json!({"binary": {"linux-x86_64":
                {"archive": "https://e.org/a.zip", "cmd": "../../bin/sh"}}}),
                ),
                "inside the archive",
            ),
            (
                entry(
                    "abs",
                    serde_json::json!({"binary": {"linux-x86_64":
                {"archive": "https://e.org/a.zip", "cmd": "/bin/sh"}}}),
                ),
                "inside the archive",
            ),
            (
                entry(
                    "plain",
                    serde_json::json!({"binary": {"linux-x86_64":
                {"archive": "http://e.org/a.zip", "cmd": "a"}}}),
                ),
                "https",
            ),
            (
                entry(
                    "deb",
                    serde_json::json!({"binary": {"linux-x86_64":
                {"archive": "https://e.org/agent_1.0_amd64.deb?x=1", "cmd": "a"}}}),
                ),
                "an installer",
            ),
            (
                entry(
                    "preload",
                    serde_json::json!({"npx": {"package": "a",
                "env": {"LD_PRELOAD": "/tmp/x.so"}}}),
                ),
                "would change what runs",
            ),
            (
                entry("types", serde_json::json!({"npx": {"package": 7}})),
                "not a string",
            ),
            (entry("none", serde_json::json!({})), "no distribution"),
            (
                serde_json::json!({"id": "huge", "name": "n", "version": "1", "description": "x".repeat(5000),
                "distribution": {"npx": {"package": "a"}}}),
                "longer than",
            ),
            (serde_json::json!("a string"), "not an object"),
            (
                entry("good", serde_json::json!({"npx": {"package": "other"}})),
                "came first",
            ),
        ];
        let mut all = vec![good];
        all.extend(cases.iter().map(|(e, _)| e.clone()));
        let index = Index::from_entries("1.0.0".into(), &all);
        assert_eq!(index.agents.len(), 1, "{:?}", index.refused);
        let a = &index.agents[0];
        assert_eq!(a.npx.as_ref().unwrap().package, "@scope/agent");
        assert_eq!(a.npx.as_ref().unwrap().pinned.as_deref(), Some("1.2.3"));
        assert_eq!(a.uvx.as_ref().unwrap().pinned.as_deref(), Some("0.4.0"));
        assert_eq!(a.binary.len(), 1, "an unknown platform is not ours");
        assert_eq!(index.refused.len(), cases.len());
        for ((_, why), (_, expect)) in index.refused.iter().zip(cases.iter()) {
            assert!(why.contains(expect), "{why:?} should say {expect:?}");
        }
    }

    #[test]
    fn an_index_that_is_not_one_is_an_error_not_a_crash() {
        assert!(Index::parse("[]").is_err());
        assert!(Index::parse("{").is_err());
        assert!(Index::parse(&" ".repeat(MAX_INDEX + 1)).is_err());
        let i = Index::parse(r#"{"version":"1","agents":[1,null,{"id":"x"}]}"#).unwrap();
        assert!(i.agents.is_empty());
        assert_eq!(i.refused.len(), 3);
    }
}
