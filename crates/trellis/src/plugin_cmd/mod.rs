//! `trellis plugin …`: scaffold, validate, try, install, list, enable (with consent),
//! disable, remove and test plugins. See `docs/plugins.md`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Subcommand;
use trellis_core::ext::Capability;
use trellis_plugin::Package;
use trellis_plugin::registry::{Enabled, Registry, Scope, short};

use crate::output::safe;

mod author;
mod install;
use author::{new, test};
use install::install;

#[derive(Subcommand)]
pub enum PluginCmd {
    /// Create a plugin package in ./NAME with a passing replay test.
    New {
        name: String,
        #[arg(long, default_value = "python")]
        lang: String,
    },
    /// Check a package: manifest, Trellis part, command, capabilities, and that the
    /// process starts and answers `initialize`.
    Validate { path: PathBuf },
    /// Run the UI with the plugin at PATH for this session only (restarted when its
    /// files change); the same as `trellis --plugin PATH`.
    Try {
        path: PathBuf,
        #[command(flatten)]
        session: crate::session_args::UiArgs,
    },
    /// Copy a package into your plugins (PATH, or npm:NAME@VERSION) and pin its hash.
    Install { source: String },
    /// Plugins installed for you and in this project, and whether they run.
    List,
    /// Let a plugin run, granted what it asks for (shown first). Project plugins are
    /// trusted for their current content only.
    Enable {
        name: String,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Stop a plugin from running.
    Disable { name: String },
    /// Delete an installed plugin (yours, not a project's).
    Remove { name: String },
    /// Print the JSON Schema of the plugin protocol (every message, generated from the
    /// types Trellis uses).
    Schema,
    /// Run a plugin against a recorded session and print what it did.
    Test {
        path: PathBuf,
        /// A Trellis session log or an ACP fixture.
        #[arg(long)]
        replay: PathBuf,
        /// Compare with this snapshot; exit 1 on a difference.
        #[arg(long)]
        snapshot: Option<PathBuf>,
        /// Write the snapshot instead of comparing.
        #[arg(long)]
        update: bool,
    },
}

fn registry() -> anyhow::Result<Registry> {
    let paths = trellis_store::Paths::from_env().ok_or_else(|| anyhow!("no home directory"))?;
    Ok(Registry::new(paths.data_dir, std::env::current_dir().ok()))
}

/// What each capability lets a plugin do, for the consent screen.
fn meaning(c: Capability) -> &'static str {
    match c {
        Capability::Observe => {
            "see every event of your sessions (prompts, tool calls and their output)"
        }
        Capability::InterceptPermissions => {
            "answer permission requests for you (allow or reject tool calls)"
        }
        Capability::Ui => {
            "show sections, cards, transforms and status items; notify; add commands and keys"
        }
        Capability::Store => "keep its own data between sessions",
        Capability::CallState => "save per-call notes in your session logs",
        Capability::Drive => "send prompts to the agent, cancel turns and change modes on its own",
        Capability::AnswerQuestions => {
            "answer the agent's questions for you (fill in its forms, or decline them)"
        }
    }
}

pub fn main(cmd: PluginCmd, config: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match cmd {
        PluginCmd::New { name, lang } => new(&name, &lang),
        PluginCmd::Validate { path } => validate(&path),
        PluginCmd::Try { path, session } => {
            let mut ui = session;
            ui.policy.plugin.push(path);
            crate::ui::main(ui, config, false, None, false)
        }
        PluginCmd::Install { source } => install(&source),
        PluginCmd::List => list(),
        PluginCmd::Schema => {
            out_part!("{}", trellis_plugin::schema::text());
            Ok(ExitCode::SUCCESS)
        }
        PluginCmd::Enable { name, yes } => enable(&name, yes),
        PluginCmd::Disable { name } => disable(&name),
        PluginCmd::Remove { name } => remove(&name),
        PluginCmd::Test {
            path,
            replay,
            snapshot,
            update,
        } => test(&path, &replay, snapshot.as_deref(), update),
    }
}

fn validate(path: &Path) -> anyhow::Result<ExitCode> {
    let p = match Package::load(path) {
        Ok(p) => p,
        Err(e) => {
            out!("✗ {}: {}", path.display(), safe(&e));
            return Ok(ExitCode::from(1));
        }
    };
    // Every problem found without starting it is listed before any stops the check.
    let mut wrong = false;
    // A key no Trellis knows is a mistake here (`"capabilites"` would leave the plugin
    // asking for nothing), said with the key meant; elsewhere it is said and ignored.
    if p.unknown_keys.is_empty() {
        out!(
            "✓ plugin.json: {} {} (Agent Plugins {})",
            p.name,
            p.version,
            p.spec_version
        );
    } else {
        for k in &p.unknown_keys {
            out!("✗ plugin.json: {}", safe(k));
        }
        wrong = true;
    }
    for w in &p.warnings {
        out!("! {}", safe(w));
    }
    let Some(t) = &p.trellis else {
        out!(
            "✗ no \"dev.trellis\" part: not a Trellis plugin (its skills and MCP servers are not Trellis's business)"
        );
        return Ok(ExitCode::from(1));
    };
    match command_of(&p, t) {
        Ok(f) => out!(
            "✓ command: {} ({})",
            safe(&t.command.join(" ")),
            safe(&f.display().to_string())
        ),
        Err(e) => {
            out!("✗ command: {}", safe(&e));
            wrong = true;
        }
    }
    wrong |= !files_line(&p);
    out!(
        "✓ capabilities: {}",
        if t.capabilities.is_empty() {
            "none".to_string()
        } else {
            t.capabilities
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    out!(
        "✓ scope: {}",
        if t.hub {
            "hub (one process for every session of a UI or trellis serve)"
        } else {
            "session (one process per session)"
        }
    );
    if !t.api.contains(&1) {
        out!("✗ api: speaks {:?}; this Trellis speaks [1]", t.api);
        wrong = true;
    }
    if wrong {
        out!("(not started: the lines marked ✗ come first)");
        return Ok(ExitCode::from(1));
    }
    // Start it and see it answer.
    let data = tempfile::tempdir()?;
    let reg = Registry::new(data.path().to_path_buf(), None);
    // What keeps it from starting (a build older than its source) is a line of the list.
    let mut spec = match trellis_plugin::registry::spec_of(&p, &reg, Some(trellis_os::reaper::own))
    {
        Ok(spec) => spec,
        Err(e) => {
            out!("✗ start: {}", safe(&e));
            return Ok(ExitCode::from(1));
        }
    };
    spec.launch.log_file = None;
    let grant = spec.manifest.capabilities.clone();
    let mut opts = trellis_ext_host::HostOptions::default();
    opts.config.insert(
        p.name.clone(),
        trellis_ext_host::ExtConfig {
            enabled: Some(true),
            grant: Some(grant),
            options: serde_json::Value::Null,
        },
    );
    let (host, _rx) = trellis_ext_host::ExtHost::new(
        vec![trellis_ext_host::Candidate {
            ext: Box::new(trellis_plugin::PluginExt::new(spec)),
            builtin: false,
        }],
        opts,
    );
    host.flush(std::time::Duration::from_secs(10));
    let st = host.status();
    host.shutdown(std::time::Duration::from_secs(5));
    let e = st.extensions.first();
    match e.map(|e| &e.state) {
        Some(trellis_ext_host::ExtState::Disabled(r))
        | Some(trellis_ext_host::ExtState::Degraded(r)) => {
            out!("✗ start: {}", safe(r));
            for l in e.map(|e| e.extra.clone()).unwrap_or_default() {
                out!("  {}", safe(&l));
            }
            Ok(ExitCode::from(1))
        }
        Some(trellis_ext_host::ExtState::Ready) => {
            let regs = e.map(|e| e.registrations.join(", ")).unwrap_or_default();
            out!(
                "✓ start: answered initialize (protocol v1){}",
                if regs.is_empty() {
                    String::new()
                } else {
                    format!("; registers {regs}")
                }
            );
            for r in e.map(|e| e.rejections.clone()).unwrap_or_default() {
                out!("! rejected {}: {:?} — {}", r.what, safe(&r.text), r.rule);
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            for n in &st.notes {
                out!("✗ {}", safe(n));
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// Where the plugin's command is: a file of the package (`./…`) or a program on `PATH`;
/// and the script it runs (`python3 ./plugin.py`) is a file of the package: a command
/// that cannot start is refused here, not at every session's start.
/// `validate`'s line about the package's files: what install would refuse (a link out of
/// the package, too many files or bytes) is refused here too. False when it is.
fn files_line(p: &Package) -> bool {
    match trellis_plugin::package::files(&p.root) {
        Ok(files) => match trellis_plugin::package::link_out(&p.root, &files) {
            None => {
                out!("✓ files: {} (every link stays inside)", files.len());
                true
            }
            Some(rel) => {
                out!(
                    "✗ files: {} links outside the package (or to nothing)",
                    safe(&rel)
                );
                false
            }
        },
        Err(e) => {
            out!("✗ files: {}", safe(&e));
            false
        }
    }
}

fn command_of(p: &Package, t: &trellis_plugin::package::TrellisPart) -> Result<PathBuf, String> {
    let prog = t.command.first().map(String::as_str).unwrap_or("");
    let found = match trellis_plugin::process::program(&p.root, prog) {
        Ok(pb) if prog.starts_with("./") => pb.is_file().then_some(pb),
        Ok(pb) => which(&pb),
        Err(e) => return Err(e),
    };
    let found = found.ok_or_else(|| format!("{prog} not found"))?;
    for script in t.scripts() {
        trellis_plugin::package::check_script(&p.root, script)?;
    }
    Ok(found)
}

/// The package's warnings (an unknown key, a part ignored), said before it is used.
fn warn(p: &Package) {
    for w in &p.warnings {
        say!("trellis: {} plugin.json: {}", p.name, safe(w));
    }
}

fn which(prog: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

fn list() -> anyhow::Result<ExitCode> {
    let reg = registry()?;
    let (state, problem) = reg.state();
    if let Some(p) = problem {
        out!("! {}", safe(&p));
    }
    let found = reg.found();
    if found.is_empty() {
        out!("No plugins installed (user: {}).", reg.user_dir().display());
    }
    for f in found {
        let scope = match f.scope {
            Scope::User => "user",
            Scope::Project => "project",
        };
        match &f.package {
            Err(e) => out!("✗ {} ({scope}): {}", f.dir.display(), safe(e)),
            Ok(p) => {
                let hash = p.hash().unwrap_or_default();
                let enabled = state
                    .enabled
                    .iter()
                    .find(|e| e.name == p.name && e.scope == f.scope && reg.applies(e));
                let how = match (enabled, &p.trellis) {
                    (_, None) => "not a Trellis plugin".to_string(),
                    (None, _) => "disabled".to_string(),
                    (Some(e), _) if e.hash != hash => format!(
                        "enabled, but its files changed since ({} → {}): not run until enabled again",
                        short(&e.hash),
                        short(&hash)
                    ),
                    (Some(e), _) => format!("enabled, granted {}", e.grant.join(", ")),
                };
                out!(
                    "{} {} ({scope}) — {}\n    {}\n    {} · {}",
                    p.name,
                    p.version,
                    safe(&p.description),
                    how,
                    f.dir.display(),
                    short(&hash)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn enable(name: &str, yes: bool) -> anyhow::Result<ExitCode> {
    let reg = registry()?;
    let f = reg
        .find(name)
        .ok_or_else(|| anyhow!("no plugin {name} installed here (see `trellis plugin list`)"))?;
    let p = f.package.map_err(|e| anyhow!("{name}: {e}"))?;
    let t = p
        .trellis
        .as_ref()
        .ok_or_else(|| anyhow!("{name} is not a Trellis plugin (no \"dev.trellis\" part)"))?;
    warn(&p);
    // Checked before it is enabled: a plugin whose command is missing would only fail at
    // every session's start.
    if let Err(e) = command_of(&p, t) {
        bail!(
            "{name} not enabled: its command {} (trellis plugin validate says more)",
            safe(&e)
        );
    }
    let hash = p.hash().map_err(|e| anyhow!(e))?;
    let scope_word = match f.scope {
        Scope::User => "for you (every session)",
        Scope::Project => "for this project only",
    };
    out!("{} {} — {}", p.name, p.version, safe(&p.description));
    out!("  from {}", p.root.display());
    out!("  runs: {}", safe(&t.command.join(" ")));
    out!("  content: {}", short(&hash));
    if t.hub {
        out!("  runs once for every session of a UI or trellis serve, and sees all their events");
    }
    if t.capabilities.is_empty() {
        out!("  asks for no capabilities");
    } else {
        out!("  asks to:");
        for c in &t.capabilities {
            out!("    {:22} {}", c.as_str(), meaning(*c));
        }
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!("not enabled: confirm on a terminal, or pass --yes");
        }
        out_part!("Enable {name} {scope_word}, granted exactly this? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            out!("Not enabled.");
            return Ok(ExitCode::from(1));
        }
    }
    let (mut state, _) = reg.state();
    let project = match f.scope {
        Scope::Project => reg.project.clone(),
        Scope::User => None,
    };
    state
        .enabled
        .retain(|e| !(e.name == p.name && e.scope == f.scope && e.project == project));
    state.enabled.push(Enabled {
        name: p.name.clone(),
        scope: f.scope,
        project,
        grant: t
            .capabilities
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        hash,
    });
    reg.save_state(&state).map_err(|e| anyhow!(e))?;
    out!("Enabled {name} {scope_word}.");
    Ok(ExitCode::SUCCESS)
}

fn disable(name: &str) -> anyhow::Result<ExitCode> {
    let reg = registry()?;
    let (mut state, _) = reg.state();
    let before = state.enabled.len();
    state
        .enabled
        .retain(|e| !(e.name == name && reg.applies(e)));
    if state.enabled.len() == before {
        out!("{name} was not enabled here.");
        return Ok(ExitCode::SUCCESS);
    }
    reg.save_state(&state).map_err(|e| anyhow!(e))?;
    out!("Disabled {name}.");
    Ok(ExitCode::SUCCESS)
}

fn remove(name: &str) -> anyhow::Result<ExitCode> {
    let reg = registry()?;
    let f = reg
        .found()
        .into_iter()
        .find(|f| f.scope == Scope::User && f.package.as_ref().is_ok_and(|p| p.name == name))
        .ok_or_else(|| {
            anyhow!(
                "no plugin {name} installed for you (a project's plugins belong to the project)"
            )
        })?;
    std::fs::remove_dir_all(&f.dir)
        .with_context(|| format!("cannot remove {}", f.dir.display()))?;
    let (mut state, _) = reg.state();
    state
        .enabled
        .retain(|e| !(e.name == name && e.scope == Scope::User));
    reg.save_state(&state).map_err(|e| anyhow!(e))?;
    let (mut lock, _) = reg.lock();
    lock.plugins.remove(name);
    reg.save_lock(&lock).map_err(|e| anyhow!(e))?;
    out!("Removed {name}.");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json";

    /// A plugin on the Python SDK that starts and answers `initialize`.
    const PLUGIN_PY: &str = "from trellis_plugin import Plugin\nPlugin().run()\n";

    /// A package in a temporary directory: `plugin.json` with Trellis's part `part`, and
    /// `plugin.py`.
    fn package(part: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("plugin.json"),
            format!(
                r#"{{"$schema": "{SCHEMA}", "name": "p", "extensions": {{"dev.trellis": {part}}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(d.path().join("plugin.py"), PLUGIN_PY).unwrap();
        d
    }

    /// `validate`, `install` and `enable` refuse a command whose script is not in the
    /// package (they all ask `command_of`), and say which script.
    #[test]
    fn a_command_whose_script_is_missing_is_refused_naming_it() {
        let d = package(r#"{"command": ["python3", "./missing.py"]}"#);
        let p = Package::load(d.path()).unwrap();
        let e = command_of(&p, p.trellis.as_ref().unwrap()).unwrap_err();
        assert_eq!(e, "./missing.py: no such file in the package");
        assert_eq!(validate(d.path()).unwrap(), ExitCode::from(1));
        let d = package(r#"{"command": ["python3", "./plugin.py"]}"#);
        let p = Package::load(d.path()).unwrap();
        assert!(command_of(&p, p.trellis.as_ref().unwrap()).is_ok());
    }

    /// `validate` refuses a key no Trellis knows, with the key meant, instead of passing a
    /// plugin that asks for nothing; the same plugin spelled right passes.
    #[test]
    fn validate_refuses_an_unknown_key() {
        let good =
            package(r#"{"command": ["python3", "./plugin.py"], "capabilities": ["observe"]}"#);
        assert_eq!(validate(good.path()).unwrap(), ExitCode::SUCCESS);
        let typo =
            package(r#"{"command": ["python3", "./plugin.py"], "capabilites": ["observe"]}"#);
        assert_eq!(validate(typo.path()).unwrap(), ExitCode::from(1));
        let p = Package::load(typo.path()).unwrap();
        assert_eq!(
            p.unknown_keys,
            [
                "unknown key \"capabilites\" in extensions[\"dev.trellis\"]; did you mean \"capabilities\"?"
            ]
        );
    }
}
