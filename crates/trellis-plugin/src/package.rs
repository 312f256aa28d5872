//! A plugin package: a directory with a `plugin.json` following the Agent Plugins
//! specification (1.0.0 and 1.1.0 are recognized), Trellis's own part under
//! `extensions["dev.trellis"]`:
//!
//! ```json
//! {
//!   "$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
//!   "name": "shell-cards",
//!   "version": "1.0.0",
//!   "description": "Cards for shell commands",
//!   "extensions": {
//!     "dev.trellis": {
//!       "command": ["python3", "./plugin.py"],
//!       "api": [1],
//!       "capabilities": ["observe", "ui"]
//!     }
//!   }
//! }
//! ```
//!
//! Rules from the specification: the manifest schema is closed — an unknown top-level
//! field or a non-object `extensions` is reported and ignored, every other violation
//! rejects the package; `$schema` selects local rules and is never fetched; skills are
//! ignored by Trellis. An unknown key (top level or in Trellis's part) is named with the
//! key it likely misspells ([`Package::unknown_keys`]): `trellis plugin validate` refuses
//! it, the rest of Trellis says it and goes on (a newer Trellis's key is no reason not to
//! run). The content hash covers every file of the package (paths, modes, bytes; links by
//! their target), so any change to what would run is seen.

use std::path::{Path, PathBuf};

use serde_json::Value;
use trellis_core::ext::{Capability, Manifest};

mod files;
pub use files::{Entry, MAX_BYTES, MAX_FILES, check_script, content_hash, files, link_out};

/// Trellis's namespace in `plugin.json`'s `extensions`.
pub const NAMESPACE: &str = "dev.trellis";

/// `$schema` identifiers recognized, with their version.
pub const SCHEMAS: &[(&str, &str)] = &[
    (
        "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "1.0.0",
    ),
    (
        "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
        "1.1.0",
    ),
];

const FIELDS: &[&str] = &[
    "$schema",
    "name",
    "displayName",
    "icon",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "extensions",
];

/// Trellis's part of a package.
#[derive(Debug, Clone, PartialEq)]
pub struct TrellisPart {
    /// Program and arguments (`./x` is inside the package; a bare name is on `PATH`).
    pub command: Vec<String>,
    /// Protocol versions the plugin speaks.
    pub api: Vec<u32>,
    pub capabilities: Vec<Capability>,
    /// Everything it does is UI: not started by headless runs.
    pub ui_only: bool,
    /// `"scope": "hub"`: one process for a hub's every session (events of them all, each
    /// named by `hub_session`) instead of one per session; it may only observe and store.
    pub hub: bool,
}

/// A package as read from its directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// The directory, resolved.
    pub root: PathBuf,
    pub spec_version: &'static str,
    pub name: String,
    pub display_name: Option<String>,
    pub version: String,
    pub description: String,
    /// `None`: not a Trellis plugin (a package of skills or MCP servers only).
    pub trellis: Option<TrellisPart>,
    /// Non-fatal problems: reported, the package still loads.
    pub warnings: Vec<String>,
    /// The keys no Trellis knows, each said with the key it likely misspells (also among
    /// `warnings`): errors for `trellis plugin validate`.
    pub unknown_keys: Vec<String>,
}

impl Package {
    /// Reads and validates `DIR/plugin.json`.
    pub fn load(dir: &Path) -> Result<Package, String> {
        let root = dir
            .canonicalize()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = root.join("plugin.json");
        let resolved = path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !resolved.starts_with(&root) || !resolved.is_file() {
            return Err("plugin.json must be a regular file inside the package".into());
        }
        let meta = std::fs::metadata(&resolved).map_err(|e| e.to_string())?;
        if meta.len() > 1 << 20 {
            return Err("plugin.json is larger than 1 MiB".into());
        }
        let text = std::fs::read_to_string(&resolved).map_err(|e| format!("plugin.json: {e}"))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("plugin.json is not JSON: {e}"))?;
        Package::parse(root, &v)
    }

    /// Validates a manifest value (the directory is only recorded).
    pub fn parse(root: PathBuf, v: &Value) -> Result<Package, String> {
        let Value::Object(o) = v else {
            return Err("plugin.json must hold a JSON object".into());
        };
        let mut warnings = Vec::new();
        let mut unknown_keys = Vec::new();
        for k in o.keys() {
            if !FIELDS.contains(&k.as_str()) {
                unknown_keys.push(unknown_key(k, "at the top level", FIELDS));
            }
        }
        let schema = o
            .get("$schema")
            .and_then(Value::as_str)
            .ok_or("\"$schema\" is required (an Agent Plugins schema identifier)")?;
        let spec_version = SCHEMAS
            .iter()
            .find(|(id, _)| *id == schema)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                format!(
                    "\"$schema\" {schema:?} is not an Agent Plugins version this Trellis knows (1.0.0, 1.1.0)"
                )
            })?;
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .ok_or("\"name\" is required and must be a string")?;
        if !trellis_core::ext::name_ok(name) {
            return Err(format!(
                "\"name\" {name:?}: 1-64 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit, without '--' or '..'"
            ));
        }
        let string = |k: &str| -> Result<Option<String>, String> {
            match o.get(k) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("{k:?} must be a string")),
            }
        };
        for k in ["icon", "homepage", "repository", "license"] {
            string(k)?;
        }
        let display_name = string("displayName")?.filter(|s| !s.is_empty());
        let version = string("version")?.unwrap_or_else(|| "0.0.0".into());
        let description = string("description")?.unwrap_or_default();
        if let Some(a) = o.get("author") {
            let Value::Object(a) = a else {
                return Err("\"author\" must be an object".into());
            };
            for (k, v) in a {
                if !["name", "email", "url"].contains(&k.as_str()) || !v.is_string() {
                    return Err(format!(
                        "\"author\" may only hold string fields name, email and url (found {k:?})"
                    ));
                }
            }
        }
        if let Some(k) = o.get("keywords")
            && !k.as_array().is_some_and(|a| a.iter().all(Value::is_string))
        {
            return Err("\"keywords\" must be an array of strings".into());
        }
        let mut trellis = None;
        match o.get("extensions") {
            None => {}
            Some(Value::Object(ext)) => {
                for (ns, val) in ext {
                    if !val.is_object() {
                        return Err(format!("\"extensions\".{ns:?} must be an object"));
                    }
                }
                if let Some(part) = ext.get(NAMESPACE) {
                    trellis = Some(trellis_part(part, &mut unknown_keys)?);
                }
            }
            Some(_) => warnings.push("\"extensions\" is not an object: ignored".into()),
        }
        warnings.extend(unknown_keys.iter().map(|k| format!("{k} (ignored)")));
        Ok(Package {
            root,
            spec_version,
            name: name.to_string(),
            display_name,
            version,
            description,
            trellis,
            warnings,
            unknown_keys,
        })
    }

    /// The extension manifest the host loads it with.
    pub fn manifest(&self) -> Option<Manifest> {
        let t = self.trellis.as_ref()?;
        Some(Manifest {
            name: self.name.clone(),
            version: self.version.clone(),
            description: self.description.clone(),
            capabilities: t.capabilities.clone(),
            ui_only: t.ui_only,
        })
    }

    /// The content hash: `sha256:` and hex.
    pub fn hash(&self) -> Result<String, String> {
        content_hash(&self.root)
    }
}

/// What a plugin of `"scope": "hub"` may ask for: it sees every session's events, and its
/// reads, answers and contributions could only belong to one session.
const HUB_CAPABILITIES: [Capability; 2] = [Capability::Observe, Capability::Store];

/// The keys of Trellis's part.
const PART_FIELDS: &[&str] = &["command", "api", "capabilities", "ui_only", "scope"];

/// `unknown key "capabilites" in extensions["dev.trellis"]; did you mean "capabilities"?`
fn unknown_key(key: &str, place: &str, known: &[&str]) -> String {
    match nearest(key, known.iter().copied()) {
        Some(meant) => format!("unknown key {key:?} {place}; did you mean {meant:?}?"),
        None => format!(
            "unknown key {key:?} {place} (the keys: {})",
            known.join(", ")
        ),
    }
}

/// The name `word` most likely misspells or cuts short, if one is close: the one name it
/// begins (`exec` → `execute`), else one within a third of its length in edits (a swap of
/// two letters counting one).
pub fn nearest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut most = (word.chars().count() / 3).max(1);
    let mut best = None;
    let mut names: Vec<&str> = names.into_iter().collect();
    if word.chars().count() >= 3 {
        let mut begun = names.iter().filter(|n| n.starts_with(word) && **n != word);
        if let (Some(n), None) = (begun.next(), begun.next()) {
            return Some(n);
        }
    }
    names.sort_unstable();
    for n in names {
        let d = strsim::osa_distance(word, n);
        if d <= most {
            best = Some(n);
            most = d.saturating_sub(1);
            if d == 0 {
                break;
            }
        }
    }
    best
}

fn trellis_part(v: &Value, unknown_keys: &mut Vec<String>) -> Result<TrellisPart, String> {
    let Value::Object(o) = v else {
        return Err(format!("\"extensions\".{NAMESPACE:?} must be an object"));
    };
    for k in o.keys() {
        if !PART_FIELDS.contains(&k.as_str()) {
            unknown_keys.push(unknown_key(
                k,
                &format!("in extensions[{NAMESPACE:?}]"),
                PART_FIELDS,
            ));
        }
    }
    let command: Vec<String> = match o.get("command") {
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or(format!(
                "{NAMESPACE}: \"command\" must be an array of strings"
            ))?,
        _ => {
            return Err(format!(
                "{NAMESPACE}: \"command\" is required: the program and its arguments, e.g. [\"python3\", \"./plugin.py\"]"
            ));
        }
    };
    let prog = &command[0];
    let form_ok = if let Some(rel) = prog.strip_prefix("./") {
        !rel.is_empty() && !rel.split('/').any(|c| c == "..")
    } else {
        !prog.is_empty() && !prog.contains('/')
    };
    if !form_ok {
        return Err(format!(
            "{NAMESPACE}: \"command\": {prog:?} must be a bare program name (found on PATH) or a path inside the package starting with ./"
        ));
    }
    let api: Vec<u32> = match o.get("api") {
        None => vec![1],
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| format!("{NAMESPACE}: \"api\" must be an array of protocol versions"))?,
    };
    if api.is_empty() {
        return Err(format!("{NAMESPACE}: \"api\" names no protocol version"));
    }
    let mut capabilities = Vec::new();
    if let Some(c) = o.get("capabilities") {
        let names = c
            .as_array()
            .ok_or(format!("{NAMESPACE}: \"capabilities\" must be an array"))?;
        for n in names {
            let s = n.as_str().unwrap_or_default();
            let cap = Capability::parse(s).ok_or_else(|| {
                format!(
                    "{NAMESPACE}: unknown capability {n} (known: {})",
                    Capability::ALL.map(|c| c.as_str()).join(", ")
                )
            })?;
            if !capabilities.contains(&cap) {
                capabilities.push(cap);
            }
        }
    }
    let ui_only = match o.get("ui_only") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(format!("{NAMESPACE}: \"ui_only\" must be true or false")),
    };
    let hub = match o.get("scope") {
        None => false,
        Some(Value::String(s)) if s == "session" => false,
        Some(Value::String(s)) if s == "hub" => true,
        Some(v) => {
            return Err(format!(
                "{NAMESPACE}: \"scope\" is \"session\" (one process per session, the default) or \"hub\" (one for every session of a hub), not {v}"
            ));
        }
    };
    if hub && let Some(c) = capabilities.iter().find(|c| !HUB_CAPABILITIES.contains(c)) {
        return Err(format!(
            "{NAMESPACE}: a plugin of \"scope\": \"hub\" sees every session but acts on none: it may ask for observe and store, not {}",
            c.as_str()
        ));
    }
    Ok(TrellisPart {
        command,
        api,
        capabilities,
        ui_only,
        hub,
    })
}

/// Programs that run a script named by an argument (`python3 ./plugin.py`).
fn interpreter(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    let python = name
        .strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    python
        || [
            "node", "nodejs", "bun", "deno", "sh", "bash", "dash", "zsh", "ruby", "perl",
        ]
        .contains(&name)
}

/// An interpreter's options whose value is code or a module to run, not a script.
const CODE_FLAGS: &[&str] = &["-c", "-m", "-e", "-p", "--eval", "--print"];

/// The extensions of scripts: an argument ending with one names a file to run.
const SCRIPT_EXTENSIONS: &[&str] = &[
    ".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".sh", ".bash",
];

impl TrellisPart {
    /// The arguments of its command that name a script it runs, which must be a file of
    /// the package: an interpreter's first argument that is a path (`./plugin.py`,
    /// `bin/run`, `plugin.py`), and any argument that looks like the path of a script
    /// (ending `.py`, `.js`, `.mjs`, `.ts`, `.sh`…). Options, code (`-c`, `-e`) and URLs
    /// are not.
    pub fn scripts(&self) -> Vec<&str> {
        let Some((program, args)) = self.command.split_first() else {
            return Vec::new();
        };
        let mut want_script = interpreter(program);
        let mut skip = false;
        let mut out = Vec::new();
        for a in args {
            if std::mem::take(&mut skip) {
                continue;
            }
            if want_script && CODE_FLAGS.contains(&a.as_str()) {
                want_script = false;
                skip = true;
                continue;
            }
            let pathlike = !a.is_empty()
                && !a.starts_with('-')
                && !a.contains("://")
                && !a.chars().any(|c| c.is_whitespace() || c.is_control());
            if !pathlike {
                continue;
            }
            let script = SCRIPT_EXTENSIONS.iter().any(|e| a.ends_with(e));
            if script || (want_script && (a.contains('/') || a.starts_with('.'))) {
                out.push(a.as_str());
                want_script = false;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Package, String> {
        Package::parse(PathBuf::from("/p"), &v)
    }

    const S: &str = "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json";

    #[test]
    fn manifests_follow_the_specification() {
        let p = parse(json!({"$schema": S, "name": "shell.cards", "version": "1.2.0",
            "author": {"name": "A"}, "keywords": ["x"], "futureField": 1,
            "extensions": {"dev.trellis": {"command": ["python3", "./p.py"], "capabilities": ["observe", "ui"]},
                           "com.other": {"x": 1}}}))
        .unwrap();
        assert_eq!(p.name, "shell.cards");
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(
            p.warnings[0].contains("\"futureField\""),
            "{:?}",
            p.warnings
        );
        let t = p.trellis.unwrap();
        assert_eq!(t.api, vec![1]);
        assert_eq!(t.capabilities, vec![Capability::Observe, Capability::Ui]);
        // A package of skills only: loads, is not a Trellis plugin.
        assert!(
            parse(json!({"$schema": S, "name": "skills"}))
                .unwrap()
                .trellis
                .is_none()
        );
        assert!(
            parse(json!({"$schema": S, "name": "x", "extensions": 3}))
                .unwrap()
                .warnings[0]
                .contains("not an object")
        );
        for bad in [
            json!({"name": "x"}),
            json!({"$schema": "https://agent-plugins.org/schemas/9.0.0/plugin.schema.json", "name": "x"}),
            json!({"$schema": S, "name": "Bad"}),
            json!({"$schema": S, "name": "a--b"}),
            json!({"$schema": S, "name": "x", "version": 1}),
            json!({"$schema": S, "name": "x", "author": {"name": "a", "age": "3"}}),
            json!({"$schema": S, "name": "x", "keywords": [1]}),
            json!({"$schema": S, "name": "x", "extensions": {"dev.trellis": {}}}),
            json!({"$schema": S, "name": "x", "extensions": {"dev.trellis": {"command": ["/bin/sh"]}}}),
            json!({"$schema": S, "name": "x", "extensions": {"dev.trellis": {"command": ["sh"], "capabilities": ["root"]}}}),
            json!({"$schema": S, "name": "x", "extensions": {"com.x": 3}}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    /// `"scope"`: one process per session unless it says `hub`, and a hub-wide plugin may
    /// only observe and store (what it would read, answer or show belongs to one session).
    #[test]
    fn a_plugins_scope_is_its_session_unless_it_says_hub() {
        let part = |t: serde_json::Value| {
            parse(json!({"$schema": S, "name": "x", "extensions": {"dev.trellis": t}}))
                .map(|p| p.trellis.map(|t| t.hub))
        };
        assert_eq!(part(json!({"command": ["sh"]})), Ok(Some(false)));
        assert_eq!(
            part(json!({"command": ["sh"], "scope": "session"})),
            Ok(Some(false))
        );
        assert_eq!(
            part(json!({"command": ["sh"], "scope": "hub", "capabilities": ["observe", "store"]})),
            Ok(Some(true))
        );
        let e = part(json!({"command": ["sh"], "scope": "hub", "capabilities": ["observe", "ui"]}))
            .unwrap_err();
        assert!(e.contains("observe and store, not ui"), "{e}");
        let e = part(json!({"command": ["sh"], "scope": "galaxy"})).unwrap_err();
        assert!(e.contains("\"session\"") && e.contains("\"hub\""), "{e}");
    }

    /// An unknown key is named with the key it likely misspells — `validate` refuses it
    /// (`unknown_keys`), everything else says it and goes on (`warnings`).
    #[test]
    fn an_unknown_key_is_named_with_the_key_meant() {
        let p = parse(json!({"$schema": S, "name": "x", "descripton": "d", "futureField": 1,
            "extensions": {"dev.trellis": {"command": ["sh"], "capabilites": ["ui"], "ui_onyl": true}}}))
        .unwrap();
        assert_eq!(
            p.unknown_keys,
            [
                "unknown key \"descripton\" at the top level; did you mean \"description\"?",
                "unknown key \"futureField\" at the top level (the keys: $schema, name, displayName, icon, version, description, author, homepage, repository, license, keywords, extensions)",
                "unknown key \"capabilites\" in extensions[\"dev.trellis\"]; did you mean \"capabilities\"?",
                "unknown key \"ui_onyl\" in extensions[\"dev.trellis\"]; did you mean \"ui_only\"?",
            ]
        );
        assert_eq!(p.warnings.len(), 4, "{:?}", p.warnings);
        assert!(p.warnings[2].contains("capabilites") && p.warnings[2].ends_with("(ignored)"));
        assert_eq!(
            nearest(
                "tool_call_udpated",
                ["tool_call_updated", "tool_call_created"]
            ),
            Some("tool_call_updated")
        );
        assert_eq!(nearest("zzz", ["command", "api"]), None);
        // A word cut short names the one it begins; one that begins several, none of them.
        assert_eq!(
            nearest("exec", ["execute", "edit", "read"]),
            Some("execute")
        );
        assert_eq!(
            nearest("tool_call", ["tool_call_updated", "tool_call_created"]),
            None
        );
    }

    fn part(command: &[&str]) -> TrellisPart {
        TrellisPart {
            command: command.iter().map(|s| s.to_string()).collect(),
            api: vec![1],
            capabilities: vec![],
            ui_only: false,
            hub: false,
        }
    }

    /// The scripts a command runs: an interpreter's first path, and anything that looks like
    /// a script; never options, code or URLs.
    #[test]
    fn a_commands_scripts_are_its_interpreters_path_and_anything_like_a_script() {
        for (command, scripts) in [
            (&["python3", "./plugin.py"][..], &["./plugin.py"][..]),
            (&["python3", "-u", "plugin.py"], &["plugin.py"]),
            (&["python3.12", "-W", "ignore", "bin/run"], &["bin/run"]),
            (&["python3", "-m", "my.plugin"], &[]),
            (&["python3", "-c", "import x; x.run('/a.py')"], &[]),
            (&["sh", "-c", "exec ./x"], &[]),
            (&["node", "./plugin.mjs", "--flag"], &["./plugin.mjs"]),
            (
                &["deno", "run", "--allow-read=/tmp", "./plugin.ts"],
                &["./plugin.ts"],
            ),
            (&["deno", "run", "https://example.com/p.ts"], &[]),
            (&["bash", "./run"], &["./run"]),
            (&["uv", "run", "./plugin.py", "data.json"], &["./plugin.py"]),
            (&["./bin/plugin"], &[]),
            (&["my-plugin", "serve"], &[]),
        ] {
            assert_eq!(part(command).scripts(), scripts, "{command:?}");
        }
    }
}
