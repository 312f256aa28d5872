//! `config.toml`: agent presets, the default agent and the permission policy.
//!
//! Invariant: a config error always names the file, the line and the key at fault.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use trellis_core::permission::{Rule, Verdict};

mod located;
mod secret;

pub use crate::paths::expand_home;
use located::line_of;
pub use located::{ConfigError, parse_toml};
pub use secret::{Secret, keep_taken_secrets, taken_secrets};

/// How to start one agent, or where to dial it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPreset {
    /// Program to run (looked up on `PATH`); none for an agent given by `url`.
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Client capabilities to advertise differently for this agent (quirks).
    #[serde(default)]
    pub capabilities: CapabilityOverrides,
    /// Authentication method id to use when the agent requires one (default: the first).
    #[serde(default)]
    pub auth_method: Option<String>,
    /// An agent that runs elsewhere, dialed over WebSocket (`wss://HOST/acp`, or
    /// `ws://` to this machine) instead of started here.
    #[serde(default)]
    pub url: Option<String>,
    /// Its token, sent as `Authorization: Bearer …`.
    #[serde(default)]
    pub token: Option<Secret>,
    /// More headers sent when dialing it.
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// Plain `ws://` to another machine: the session and its token cross the network
    /// unencrypted (only on a network that is yours).
    #[serde(default)]
    pub plaintext: bool,
    /// Certificates (PEM files) trusted for its TLS besides the public roots.
    #[serde(default)]
    pub ca: Vec<PathBuf>,
    /// Whose files the agent works on: `"its own"` (the default for an agent elsewhere:
    /// it is offered no file or terminal access here) or `"shared"` (it sees this
    /// machine's files, as in a devcontainer with the project mounted).
    #[serde(default)]
    pub files: Option<String>,
    /// The session's directory as the agent sees it (default: this machine's, or its
    /// path through `paths`).
    #[serde(default)]
    pub cwd: Option<String>,
    /// With `files = "shared"`: where the shared files are, as the agent names them and
    /// on this machine (`"/workspace" = "~/proj"`). Its paths in calls are shown as this
    /// machine's, its file requests are served from here, and the session's directory is
    /// sent as its path.
    #[serde(default)]
    pub paths: BTreeMap<String, String>,
}

impl Config {
    /// The environment variables the agents elsewhere take secrets from (`token` and
    /// `headers` of `{ env = … }`): taken out of the environment at the start, so that
    /// no process Trellis starts — an agent, its commands, a hook, a plugin — sees them.
    pub fn secret_env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .agents
            .values()
            .filter(|a| a.url.is_some())
            .flat_map(|a| a.token.iter().chain(a.headers.values()))
            .filter_map(|s| match s {
                Secret::Env { env } => Some(env.clone()),
                _ => None,
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityOverrides {
    pub read_text_file: Option<bool>,
    pub write_text_file: Option<bool>,
    pub terminal: Option<bool>,
}

/// `[permissions]`: the policy for requests nobody answers interactively.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionConfig {
    /// `reject`, `allow-once`, `allow-reads` or `rules`.
    pub policy: Option<String>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    /// What `rules` does when no rule decides (default `reject`).
    pub fallback: Option<Verdict>,
}

/// A rules file given to `--permission`: `[[rule]]` entries and an optional `fallback`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    pub fallback: Option<Verdict>,
}

/// A key binding setting: a key spec, or `false` to disable the action.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum KeySetting {
    Keys(String),
    Enabled(bool),
}

/// `[connection]`: limits on the agent connection.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionConfig {
    /// Seconds the agent has to answer `initialize` and set up its session (default 300:
    /// a first `npx` run downloads the agent).
    pub setup_timeout: Option<f64>,
    /// Bytes of a terminal's output kept for the agent when it asks for no limit
    /// (default 1 MiB).
    pub terminal_output_limit: Option<usize>,
}

/// `[session]`: what every new (or resumed) session is started with.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// Instructions for the agent (`systemPrompt`), sent to agents that advertise
    /// `sessionCapabilities.systemPrompt`.
    pub system_prompt: Option<String>,
    /// `append` (the default: added to the agent's own instructions) or `override`.
    pub system_prompt_mode: Option<SystemPromptMode>,
    /// Directories besides the session's the agent may work in (`additionalDirectories`;
    /// also readable and writable through Trellis). Relative paths are relative to the
    /// session's directory.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
}

/// `[notify]`: how a session that needs the human is announced when it is not in front
/// (bell, window title and desktop notification follow `[ui]`'s switches).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// Off switch for every announcement of background sessions (default on).
    pub enabled: Option<bool>,
    /// A session blocked on a permission, a question or a login (default on).
    pub blocked: Option<bool>,
    /// A session whose agent died or could not be set up (default on).
    pub error: Option<bool>,
    /// A background session's turn ended, when nothing else already waits (default on).
    pub done: Option<bool>,
    /// A command run (`sh -c`) on each announcement with `TRELLIS_SESSION` (the ACP
    /// session id), `TRELLIS_STATE` and `TRELLIS_AGENT` set — never the prompt or the
    /// output (for ntfy, a chat hook…).
    pub command: Option<String>,
}

/// One `[[hooks]]` entry: a command line run on an event (`docs/hooks.md`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// An event type of `docs/events.md` (`turn_ended`, `permission_requested`…).
    pub on: String,
    /// The command line (run by `$SHELL -c`); the event is on its stdin as JSON.
    pub run: String,
    /// Only calls of this kind (`execute`, `edit`…).
    pub kind: Option<String>,
    /// Only calls whose title matches this glob.
    pub title: Option<String>,
    /// Only calls touching a path that matches this glob.
    pub path: Option<String>,
    /// Only calls in this status.
    pub status: Option<String>,
    /// Seconds it may take (default 10).
    pub timeout: Option<f64>,
}

/// `[registry]`: where the ACP Registry's index comes from (`trellis agents`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// An address (`https://…/registry.json`), a `registry.json` on disk, or a directory
    /// of `<id>/agent.json` files; the public registry when unset.
    pub url: Option<String>,
    /// Accept an index over plain http from a host that is not this machine. Anyone on the
    /// way can then change the index — and with it every agent it names and every
    /// SHA-256 it vouches for — so it is refused unless this says `true`.
    pub unverified_http: Option<bool>,
}

/// `[worktree]`: worktrees Trellis makes for sessions (`--worktree`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// A command run (`sh -c`) in each new worktree before the agent starts, with
    /// `TRELLIS_WORKTREE_ROOT` and `TRELLIS_SOURCE_ROOT` set (install dependencies, say).
    pub setup: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemPromptMode {
    #[default]
    Append,
    Override,
}

/// `[ui]`: the full-screen UI.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiConfig {
    /// How the inspector finds the card at the cursor: exact, nearest, above, below.
    pub cursor: Option<String>,
    /// Key hints in the inspector's border (default true).
    pub key_hints: Option<bool>,
    /// When a permission request arrives and the terminal does not have focus: ring the
    /// bell, mark the terminal title, send a desktop notification (OSC 9). Default true.
    pub bell: Option<bool>,
    pub title_marker: Option<bool>,
    pub notify: Option<bool>,
    /// ASCII marks for session states in the rail (default: when the locale is not
    /// UTF-8).
    pub ascii: Option<bool>,
    /// Output under cards per kind: "hidden", "preview N" or "full".
    #[serde(default)]
    pub output: BTreeMap<String, String>,
    /// Key bindings by action name (see `docs/config.md`); `false` disables one.
    #[serde(default)]
    pub keys: BTreeMap<String, KeySetting>,
}

/// `[extensions]`: host settings, and one `[extensions.NAME]` table per extension.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ExtensionsConfig {
    /// Failures (errors, panics, hand-ons) before an extension is disabled (default 5).
    pub failure_limit: Option<u32>,
    /// Events queued per extension before it is disabled as too slow (default 16384).
    pub queue: Option<usize>,
    /// Seconds an extension that claimed a permission request has to answer (default 30).
    pub permission_timeout: Option<f64>,
    /// Prompts an extension holding `drive` may send per minute (default 6).
    pub drive_per_minute: Option<u32>,
    /// Path mappings for `resolve_path`: agent-side prefix = local prefix.
    #[serde(default)]
    pub path_map: BTreeMap<String, String>,
    /// Per extension: `enabled`, `grant`.
    #[serde(flatten)]
    pub each: BTreeMap<String, ExtensionEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionEntry {
    /// Built-ins default to on; plugins must be enabled.
    pub enabled: Option<bool>,
    /// Capabilities granted (observe, intercept-permissions, ui, store, call-state);
    /// default: everything a built-in asks for.
    pub grant: Option<Vec<String>>,
    /// The extension's own settings, handed to it as JSON (`Host::options`).
    pub options: Option<toml::Table>,
}

/// The most of `config.toml` (or a rules file) read: far more than any config, and a
/// bound.
pub const CONFIG_CAP: u64 = 4 << 20;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Preset used when no `--agent` is given.
    pub default_agent: Option<String>,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentPreset>,
    #[serde(default)]
    pub permissions: PermissionConfig,
    #[serde(default)]
    pub ui: UiConfig,
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    #[serde(default)]
    pub connection: ConnectionConfig,
    #[serde(default)]
    pub session: SessionConfig,
    #[serde(default)]
    pub worktree: WorktreeConfig,
    #[serde(default)]
    pub registry: RegistryConfig,
    #[serde(default)]
    pub notify: NotifyConfig,
    #[serde(default)]
    pub hooks: Vec<HookConfig>,
    /// MCP servers offered to agents (`[mcp_servers.NAME]`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where the config came from and its text, for errors found after parsing.
    #[serde(skip)]
    pub source: Option<(PathBuf, String)>,
}

/// One MCP server: `command` (+ `args`, `env`) for a stdio server, or `url` (+ `headers`)
/// with `type = "http"` (the default for a url) or `"sse"`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// The presets Trellis knows without any config, with their documented commands.
pub fn builtin_presets() -> BTreeMap<String, AgentPreset> {
    let preset = |command: &str, args: &[&str]| AgentPreset {
        command: command.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: BTreeMap::new(),
        ..Default::default()
    };
    let mut m = BTreeMap::new();
    m.insert(
        "claude".into(),
        preset("npx", &["-y", "@zed-industries/claude-agent-acp"]),
    );
    let mut gemini = preset("gemini", &["--acp"]);
    // Gemini CLI cannot create new files when the client advertises reads (it misreads the
    // not-found answer), so it gets writes only.
    gemini.capabilities.read_text_file = Some(false);
    m.insert("gemini".into(), gemini);
    // The adapter moved from `@zed-industries/codex-acp` (last release 0.16.0) to the ACP
    // organisation's package (2.x, which runs `codex app-server` from `@openai/codex`).
    m.insert(
        "codex".into(),
        preset("npx", &["-y", "@agentclientprotocol/codex-acp"]),
    );
    m.insert("goose".into(), preset("goose", &["acp"]));
    m.insert("opencode".into(), preset("opencode", &["acp"]));
    m
}

impl Config {
    /// Loads `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match crate::paths::read_text(path, CONFIG_CAP) {
            Ok(text) => Config::parse(&text, path),
            // A link to nothing (dotfiles not checked out) is a config the user meant, not
            // none: said, never taken as empty in silence.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read_link(path) {
                Ok(to) => Err(ConfigError::Io {
                    path: path.to_path_buf(),
                    error: std::io::Error::other(format!(
                        "a link to {}, which is not there",
                        to.display()
                    )),
                }),
                Err(_) => Ok(Config::default()),
            },
            Err(error) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                error,
            }),
        }
    }

    /// Parses config text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut c: Config = parse_toml(text, path)?;
        c.source = Some((path.to_path_buf(), text.to_string()));
        Ok(c)
    }

    /// An error about a value that parsed but means nothing (`table.key`), located in the
    /// file like parse errors are.
    pub fn invalid(&self, table: &str, key: &str, message: impl Into<String>) -> ConfigError {
        let (path, text) = self.source.clone().unwrap_or_default();
        // A key of a table inside (`headers.X-Key`) is written in one of three ways: as a
        // dotted key, in the table's own `[…]` section, or in an inline table on its
        // parent key's line.
        let line = line_of(&text, table, key)
            .or_else(|| {
                let (first, rest) = key.split_once('.')?;
                line_of(&text, &format!("{table}.{first}"), rest)
                    .or_else(|| line_of(&text, table, first))
            })
            .unwrap_or(0);
        let dotted = if table.is_empty() {
            key.to_string()
        } else {
            format!("{table}.{key}")
        };
        ConfigError::Invalid {
            path,
            line,
            key: dotted,
            message: message.into(),
        }
    }

    /// The preset called `name`: the user's definition wins over the built-in one.
    pub fn preset(&self, name: &str) -> Option<AgentPreset> {
        self.agents
            .get(name)
            .cloned()
            .or_else(|| builtin_presets().remove(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_of_a_table_inside_is_found_in_any_of_its_three_forms() {
        let text = "[agents.a]\nheaders = { X-One = \"1\" }\n\n[agents.b]\nheaders.\"X-Two\" = \"2\"\n\n[agents.c.headers]\nX-Zero = \"0\"\nX-Three = \"3\"\n";
        let at = |table: &str, key: &str| {
            let c = Config {
                source: Some((PathBuf::from("c.toml"), text.to_string())),
                ..Config::default()
            };
            match c.invalid(table, key, "x") {
                ConfigError::Invalid { line, .. } => line,
                ConfigError::Io { .. } => 0,
            }
        };
        assert_eq!(at("agents.a", "headers.X-One"), 2);
        assert_eq!(at("agents.b", "headers.X-Two"), 5);
        assert_eq!(at("agents.c", "headers.X-Three"), 9);
        assert_eq!(at("agents.c", "headers"), 7);
        assert_eq!(at("agents.a", "nothing"), 0);
    }

    #[test]
    fn a_secret_of_the_wrong_shape_says_what_to_write() {
        let err = |toml: &str| {
            toml::from_str::<BTreeMap<String, Secret>>(toml)
                .unwrap_err()
                .to_string()
        };
        assert!(err("s = { env = \"A\", file = \"b\" }").contains("give one of them"));
        assert!(err("s = { env = \"\" }").contains("give the variable's name"));
        assert!(err("s = 42").contains("{ env = \"NAME\" }"));
        assert!(err("s = { envv = \"A\" }").contains("{ envv }"));
        let ok: BTreeMap<String, Secret> =
            toml::from_str("a = { env = \"A\" }\nb = { file = \"f\" }\nc = \"t\"").unwrap();
        assert_eq!(ok["a"], Secret::Env { env: "A".into() });
        assert_eq!(ok["b"], Secret::File { file: "f".into() });
        assert_eq!(ok["c"], Secret::Text("t".into()));
    }

    fn err(text: &str) -> String {
        Config::parse(text, Path::new("config.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_presets_and_rules() {
        let c = Config::parse(
            r#"
default_agent = "mine"
[agents.mine]
command = "my-agent"
args = ["--acp"]
env = { TOKEN = "x" }
capabilities = { read_text_file = false }

[permissions]
policy = "rules"
fallback = "reject"
[[permissions.rule]]
action = "allow"
kind = "read"
"#,
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(c.default_agent.as_deref(), Some("mine"));
        assert_eq!(c.preset("mine").unwrap().args, vec!["--acp"]);
        assert_eq!(
            c.preset("gemini").unwrap().capabilities.read_text_file,
            Some(false)
        );
        assert_eq!(c.permissions.rules.len(), 1);
    }

    #[test]
    fn the_codex_preset_names_the_maintained_adapter() {
        let codex = builtin_presets().remove("codex").unwrap();
        assert_eq!(codex.command, "npx");
        assert_eq!(codex.args, vec!["-y", "@agentclientprotocol/codex-acp"]);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = err("default_agent = \"x\"\n[agents.a]\ncommand = 5\n");
        assert!(e.starts_with("config.toml:3: agents.a.command:"), "{e}");
        let e = err("[agents.a]\ncommand = \"x\"\ncomand = \"y\"\n");
        assert!(e.starts_with("config.toml:3: agents.a.comand:"), "{e}");
        let e = err("default_agent = \n");
        assert!(e.starts_with("config.toml:1:"), "{e}");
    }

    /// A secret's file that is a FIFO is refused at once, never waited on; a long one is
    /// read only as far as its first line needs.
    #[cfg(unix)]
    #[test]
    fn a_secret_file_that_is_no_regular_file_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("token");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = Secret::File { file: fifo }.value().unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let long = dir.path().join("long");
        let mut text = "s3cret\n".to_string();
        text.push_str(&"x".repeat(1 << 20));
        std::fs::write(&long, text).unwrap();
        assert_eq!(Secret::File { file: long }.value().unwrap(), "s3cret");
    }

    /// A config that cannot be read says why once, pointing at the file, whoever prints
    /// it (the binary prints an error and its causes).
    #[test]
    fn a_config_that_cannot_be_read_says_why_once() {
        let dir = tempfile::tempdir().unwrap();
        let e = Config::load(dir.path()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{}: cannot read: ", dir.path().display())),
            "{text}"
        );
        assert!(std::error::Error::source(&e).is_none(), "{text}");
    }

    #[test]
    fn a_config_that_is_a_link_to_nothing_is_said_not_taken_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert_eq!(
            Config::load(&path).unwrap(),
            Config::default(),
            "no file: no config"
        );
        std::os::unix::fs::symlink("dotfiles/trellis.toml", &path).unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(
            e.ends_with("cannot read: a link to dotfiles/trellis.toml, which is not there"),
            "{e}"
        );
    }

    #[test]
    fn a_config_past_its_bound_is_refused_not_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let mut text = "# a comment\n".repeat((CONFIG_CAP / 12 + 1) as usize);
        std::fs::write(&path, &text).unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.ends_with("cannot read: larger than 4 MiB"), "{e}");
        text.truncate(CONFIG_CAP as usize - 1);
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Config::load(&path).unwrap().default_agent, None);
    }
}
