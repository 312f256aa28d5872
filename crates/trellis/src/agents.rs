//! Turning `--agent NAME|COMMAND` into something to launch.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use trellis_acp::{AgentSpec, Caps};
use trellis_store::Config;

/// Splits a command line like a POSIX shell would for plain words and quotes.
pub fn split_words(line: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => bail!("unclosed ' in agent command: {line}"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => cur.extend(chars.next()),
                        Some(ch) => cur.push(ch),
                        None => bail!("unclosed \" in agent command: {line}"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// A launchable agent and a short name for logs.
pub struct Resolved {
    /// What the session's agent is called until it says its own name: a preset's or
    /// registry agent's name, or the program a command line runs (after any `env`).
    pub name: String,
    /// The agent was given as a command line (not a preset, the demo or a registry id).
    pub command_line: bool,
    /// The agent as the user named it (a preset, `demo`, or a command line).
    pub command: String,
    pub spec: AgentSpec,
    /// The demo runs in a scratch directory of its own unless `--cwd` is given: created
    /// exclusively, removed (with what the demo wrote) when this is dropped.
    pub scratch: Option<tempfile::TempDir>,
}

fn this_exe() -> anyhow::Result<String> {
    Ok(std::env::current_exe()
        .context("cannot find the trellis executable")?
        .to_string_lossy()
        .into_owned())
}

/// When `--agent NAME` would find nothing to run here but the registry has the agent (not
/// installed): its id and what to say — a preset whose program is not here, or one word
/// that is no program here. Not for `demo`, the user's presets or installed agents.
pub fn registry_hint(agent: &str, config: &Config) -> Option<(String, String)> {
    if agent == "demo" || config.agents.contains_key(agent) || installed(agent).is_some() {
        return None;
    }
    let missing = match trellis_store::config::builtin_presets().remove(agent) {
        Some(p) => on_path(&p.command).is_none(),
        None => {
            !agent.contains('/') && !agent.contains(char::is_whitespace) && on_path(agent).is_none()
        }
    };
    if !missing {
        return None;
    }
    crate::registry_agents::not_installed(agent, registry_ids(agent), config)
}

/// Where `program` is on `PATH`, if it is.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// The registry ids a preset's agent goes by (the registry renamed some).
fn registry_ids(preset: &str) -> &'static [&'static str] {
    match preset {
        "claude" => &["claude-acp", "claude-code-acp"],
        "codex" => &["codex-acp"],
        "gemini" => &["gemini"],
        "goose" => &["goose"],
        "opencode" => &["opencode"],
        _ => &[],
    }
}

/// The registry agent installed as `agent` (its id, or a preset's name for it), and how to
/// start it.
fn installed(agent: &str) -> Option<(String, Result<crate::registry_agents::Start, String>)> {
    let ids: Vec<&str> = std::iter::once(agent)
        .chain(registry_ids(agent).iter().copied())
        .collect();
    crate::registry_agents::installed(&ids)
}

fn caps_of(o: &trellis_store::config::CapabilityOverrides) -> Caps {
    let d = Caps::default();
    Caps {
        read_text_file: o.read_text_file.unwrap_or(d.read_text_file),
        write_text_file: o.write_text_file.unwrap_or(d.write_text_file),
        terminal: o.terminal.unwrap_or(d.terminal),
        terminal_login: d.terminal_login,
        elicitation_form: d.elicitation_form,
        elicitation_url: d.elicitation_url,
    }
}

/// What resolving takes from a preset (the user's or Trellis's).
type Launchable = (
    String,
    String,
    Vec<String>,
    Vec<(String, String)>,
    Caps,
    Option<String>,
    bool,
);

fn from_preset(name: &str, p: trellis_store::AgentPreset) -> Launchable {
    let caps = caps_of(&p.capabilities);
    (
        name.to_string(),
        p.command,
        p.args,
        p.env.into_iter().collect(),
        caps,
        p.auth_method,
        false,
    )
}

/// The agent `agent` (a preset, `demo`, an installed registry agent or a command line) for
/// a session in `cwd` (the current directory when none; the demo's own scratch workspace
/// for the demo). `worktree`: the session will run in a worktree made from `cwd` (the
/// demo then starts from the current directory, and may write there).
pub fn resolve(
    agent: &str,
    config: &Config,
    cwd: Option<&Path>,
    worktree: bool,
) -> anyhow::Result<Resolved> {
    remote::warn_written_secrets(config, agent);
    if agent == "demo" {
        match cwd {
            // An explicit --worktree of a repository wins over the demo's scratch
            // workspace (elsewhere the worktree cannot be made, and the scratch stays).
            None if worktree => {
                let here = std::env::current_dir().context("cannot read the current directory")?;
                if trellis_agents::demo::foreign_repository(&here).is_some() {
                    return resolve(agent, config, Some(&here), true);
                }
            }
            // The demo never writes into a repository it did not make, unless asked.
            Some(dir) if !worktree => {
                if let Some(top) = trellis_agents::demo::foreign_repository(dir) {
                    bail!(
                        "the demo agent does not write into a repository it did not make ({} is in the git repository at {}): leave out --cwd for a scratch workspace, or add --worktree to play in a worktree of it",
                        dir.display(),
                        top.display()
                    );
                }
            }
            _ => {}
        }
    }
    let Program {
        name,
        command,
        args,
        env,
        caps,
        auth,
        scratch,
        command_line,
        remote,
    } = program(agent, config)?;
    let mut dir = None;
    let cwd = match cwd {
        Some(c) => std::fs::canonicalize(c).with_context(|| format!("--cwd {}", c.display()))?,
        None if scratch => {
            let d = tempfile::Builder::new()
                .prefix("trellis-demo-")
                .tempdir()
                .context("cannot create the demo's workspace")?;
            let path = std::fs::canonicalize(d.path())?;
            dir = Some(d);
            path
        }
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    // `[session] additional_directories`, relative to the session's directory; Trellis
    // lets the agent's file requests reach them too.
    let dirs: Vec<PathBuf> = config
        .session
        .additional_directories
        .iter()
        .map(|d| {
            let d = cwd.join(d);
            std::fs::canonicalize(&d)
                .with_context(|| format!("[session] additional_directories: {}", d.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    let system_prompt = config.session.system_prompt.clone().map(|p| {
        (
            p,
            config.session.system_prompt_mode
                == Some(trellis_store::config::SystemPromptMode::Override),
        )
    });
    let mut resolved = Resolved {
        name,
        command_line,
        // A URL without what must not be kept (credentials, a query); a name as given
        // (resuming dials it again with its config).
        command: if remote.is_some() && agent.contains("://") {
            trellis_acp::remote::shown_url(agent)
        } else {
            agent.to_string()
        },
        spec: AgentSpec {
            command,
            args,
            env,
            caps,
            auth_method: auth,
            cwd,
            extra_roots: dirs.clone(),
            additional_directories: dirs,
            system_prompt,
            load_session: None,
            fork_session: None,
            keep_lines: false,
            bulk_reads: false,
            setup_timeout: std::time::Duration::from_secs_f64(
                config
                    .connection
                    .setup_timeout
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .unwrap_or(trellis_acp::client::DEFAULT_SETUP_TIMEOUT_S),
            ),
            terminal_output_limit: config
                .connection
                .terminal_output_limit
                .unwrap_or(trellis_acp::terminal::DEFAULT_OUTPUT_LIMIT),
            // Filled by the front end once it knows which plugins run.
            mcp_servers: Vec::new(),
            traceparent: None,
            terminal_trace: None,
            before_turn: None,
            remote: None,
        },
        scratch: dir,
    };
    if let Some(r) = &remote
        && worktree
        && !r.shared
    {
        bail!(
            "--worktree makes a worktree on this machine, and agent {agent} works on its own files elsewhere: leave --worktree out (or say files = \"shared\" if it sees this machine's)"
        );
    }
    if let Some(r) = remote {
        // An agent whose files are its own is given no directory of this machine's.
        if !r.shared {
            resolved.spec.extra_roots.clear();
            resolved.spec.additional_directories.clear();
        }
        // Shared directories that leave the session's out: the agent would be sent a
        // directory it cannot see.
        let cwd = resolved.spec.cwd.display().to_string();
        if !r.spec.paths.is_empty() && r.spec.paths.to_remote(&cwd).is_none() {
            bail!(
                "{cwd} is not in a directory shared with agent {agent} (its paths: {}): its files could not be served from here; start Trellis in one of the directories of this machine named there, or give it with --cwd",
                r.spec
                    .paths
                    .pairs()
                    .iter()
                    .map(|p| format!("{} = {}", p.remote, p.local))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        resolved.spec.remote = Some(r.spec);
    }
    Ok(resolved)
}

/// The MCP servers offered to the agent of `spec`: none to an agent elsewhere (they are
/// this machine's: their commands, addresses and the secrets in their environment and
/// headers would go to another machine), said in `problems`.
pub fn mcp_for(
    spec: &AgentSpec,
    mcp: Vec<trellis_acp::mcp::McpServerSpec>,
    problems: &mut Vec<String>,
) -> Vec<trellis_acp::mcp::McpServerSpec> {
    if spec.remote.is_none() || mcp.is_empty() {
        return mcp;
    }
    problems.push(format!(
        "{} MCP server(s) of this machine not offered to the agent elsewhere: their commands, addresses and secrets are this machine's",
        mcp.len()
    ));
    Vec::new()
}

/// Where an agent that is dialed runs, and whose files it works on: for the log's
/// header and the user.
pub struct RemoteAt {
    /// `HOST:PORT`.
    pub at: String,
    /// It works on this machine's files.
    pub shared: bool,
    /// Where they are, as it names them and here.
    pub paths: trellis_core::path_map::PathMap,
}

/// [`RemoteAt`] of the agent of `spec`, if it is dialed.
pub fn remote_at(spec: &AgentSpec) -> Option<RemoteAt> {
    let r = spec.remote.as_ref()?;
    trellis_acp::remote::Target::of(&r.url, true)
        .ok()
        .map(|t| RemoteAt {
            at: t.shown,
            shared: r.shared_files,
            paths: r.paths.clone(),
        })
}

mod remote;

/// What starts agent `agent`, as [`resolve`] finds it.
struct Program {
    name: String,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    caps: Caps,
    auth: Option<String>,
    scratch: bool,
    command_line: bool,
    /// It runs elsewhere: how to dial it, and whether it sees this machine's files.
    remote: Option<Remote>,
}

/// An agent dialed over WebSocket, as resolving finds it.
struct Remote {
    spec: trellis_acp::remote::RemoteSpec,
    /// It works on this machine's files (a devcontainer with the project mounted): it is
    /// offered file and terminal access here.
    shared: bool,
}

/// Whether `agent` names an agent that can start here (a preset whose program is
/// installed, `demo`, an installed registry agent, the user's own, or a command line
/// whose program is found): what `trellis run --detach` checks before it starts a hub.
pub fn check(agent: &str, config: &Config) -> anyhow::Result<()> {
    program(agent, config).map(|_| ())
}

/// The program of agent `agent` (see [`resolve`]).
fn program(agent: &str, config: &Config) -> anyhow::Result<Program> {
    if let Some(remote) = remote::program(agent, config)? {
        return Ok(remote);
    }
    let mut command_line = false;
    let (name, command, args, env, caps, auth, scratch) = if agent == "demo" {
        (
            "demo".to_string(),
            this_exe()?,
            vec!["agent".into(), "demo".into()],
            vec![],
            Caps::default(),
            None,
            true,
        )
    } else if let Some(p) = config.agents.get(agent).cloned() {
        // The user's own `[agents.X]` wins over everything else.
        if let Some(missing) = missing_program(std::slice::from_ref(&p.command)) {
            bail!("[agents.{agent}] in the config: {missing}");
        }
        from_preset(agent, p)
    } else if let Some((id, l)) = installed(agent) {
        // An agent installed from the registry (`trellis agents add`), with what Trellis
        // knows of its quirks (a preset's capabilities for the same agent). One that
        // changed since it was installed is not started.
        let l = l.map_err(|e| anyhow::anyhow!("agent {agent}: {e}"))?;
        let quirks = trellis_store::config::builtin_presets()
            .into_iter()
            .find(|(name, _)| registry_ids(name).contains(&id.as_str()))
            .map(|(_, p)| p.capabilities)
            .unwrap_or_default();
        (
            id,
            l.program.to_string_lossy().into_owned(),
            l.args,
            l.env,
            caps_of(&quirks),
            None,
            false,
        )
    } else if let Some(p) = trellis_store::config::builtin_presets().remove(agent) {
        // A preset whose program is not here, for an agent the registry has: say how to
        // get it rather than fail to start it.
        if let Some((_, hint)) = registry_hint(agent, config) {
            bail!("{hint}");
        }
        if let Some(missing) = missing_program(std::slice::from_ref(&p.command)) {
            bail!(
                "--agent {agent}: the preset runs {}, but {missing}; install it, or define [agents.{agent}] in the config. Agents known here: {}",
                p.command,
                known(config)
            );
        }
        from_preset(agent, p)
    } else {
        let mut words = split_words(agent)?;
        if words.is_empty() {
            bail!("--agent is empty");
        }
        if let Some((_, hint)) = registry_hint(agent, config) {
            bail!("{hint}");
        }
        if let Some(missing) = missing_program(&words) {
            bail!(
                "--agent {}: not a preset or an installed agent, and {missing}. Agents known here: {}",
                crate::output::safe(agent),
                known(config)
            );
        }
        let name = program_of(&words)
            .and_then(|p| Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agent".into());
        let mut command = words.remove(0);
        if command == "trellis" {
            command = this_exe()?;
        }
        command_line = true;
        (name, command, words, vec![], Caps::default(), None, false)
    };
    Ok(Program {
        name,
        command,
        args,
        env,
        caps,
        auth,
        scratch,
        command_line,
        remote: None,
    })
}

/// What is wrong with a command line's program, if it cannot run: not found on `PATH`,
/// or (a path) not an executable file.
pub(crate) fn missing_program(words: &[String]) -> Option<String> {
    let program = program_of(words)?;
    if program == "trellis" && words.first().is_some_and(|w| w == "trellis") {
        return None;
    }
    if program.contains('/') {
        use std::os::unix::fs::PermissionsExt;
        return match std::fs::metadata(program) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => None,
            Ok(_) => Some(format!("{program} is not an executable file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some(format!("{program} does not exist"))
            }
            Err(e) => Some(format!("{program} cannot be run ({e})")),
        };
    }
    on_path(program)
        .is_none()
        .then(|| format!("{program} is not on PATH"))
}

/// The agents `--agent` takes by name here: presets (the user's and Trellis's) and the
/// registry agents installed.
pub fn known(config: &Config) -> String {
    let mut presets: Vec<String> = trellis_store::config::builtin_presets()
        .into_keys()
        .chain(config.agents.keys().cloned())
        .chain(std::iter::once("demo".to_string()))
        .collect();
    presets.sort();
    presets.dedup();
    let installed = crate::registry_agents::installed_ids();
    let installed = if installed.is_empty() {
        "none installed from the registry (trellis agents list)".to_string()
    } else {
        format!("installed from the registry: {}", installed.join(", "))
    };
    format!("presets {}; {installed}", presets.join(", "))
}

/// The program a command line runs: its first word, or after `env`, its options and its
/// `NAME=value` words (`env FOO=1 /opt/claude-agent-acp` runs `claude-agent-acp`).
pub fn program_of(words: &[String]) -> Option<&str> {
    let mut it = words.iter().map(String::as_str);
    let first = it.next()?;
    if Path::new(first).file_name().is_none_or(|n| n != "env") {
        return Some(first);
    }
    while let Some(w) = it.next() {
        match w {
            "--" => return it.next(),
            // Options that take the next word.
            "-u" | "--unset" | "-C" | "--chdir" => {
                it.next();
            }
            // `-S 'prog args'`: the program is the string's first word.
            "-S" | "--split-string" => return it.next().and_then(|s| s.split_whitespace().next()),
            w if w.starts_with('-') || w.contains('=') => {}
            w => return Some(w),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn the_program_after_env() {
        let w = |s: &str| split_words(s).unwrap();
        assert_eq!(
            super::program_of(&w("claude-agent-acp --x")),
            Some("claude-agent-acp")
        );
        assert_eq!(
            super::program_of(&w("env A=1 B='x y' /opt/bin/claude-agent-acp --acp")),
            Some("/opt/bin/claude-agent-acp")
        );
        assert_eq!(
            super::program_of(&w("/usr/bin/env -i -u HOME -- gemini --acp")),
            Some("gemini")
        );
        assert_eq!(
            super::program_of(&w("env -S 'codex-acp -v'")),
            Some("codex-acp")
        );
        assert_eq!(super::program_of(&w("env A=1")), None);
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_words("a 'b c' \"d\\\"e\" f\\ g").unwrap(),
            vec!["a", "b c", "d\"e", "f g"]
        );
        assert!(split_words("a 'b").is_err());
    }
}
