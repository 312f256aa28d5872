//! What the headless run and the UI share: the log sink and the permission policy.

use std::path::PathBuf;

use anyhow::Context;
use trellis_acp::LogSink;
use trellis_core::permission::{Policy, Verdict};
use trellis_store::{Config, LogWriter};

pub struct FileSink(pub LogWriter);

impl LogSink for FileSink {
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        self.0.append(line)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.0.sync()
    }
    fn syncer(&self) -> Option<std::fs::File> {
        self.0.syncer().ok()
    }
    fn records(&self) -> u64 {
        self.0.records_before()
    }
}

/// The policy named by `--permission` (or the config); the flag says whether one was given.
pub fn policy_from(arg: Option<&str>, config: &Config) -> anyhow::Result<(Policy, bool)> {
    let from_config = config.permissions.policy.as_deref();
    let name = arg.or(from_config);
    let explicit = name.is_some();
    let policy = match name.unwrap_or("reject") {
        "reject" => Policy::Reject,
        "allow-once" => Policy::AllowOnce,
        "allow-reads" => Policy::AllowReads,
        "rules" if arg.is_none() => Policy::Rules {
            rules: config.permissions.rules.clone(),
            fallback: config.permissions.fallback.unwrap_or(Verdict::Reject),
        },
        path => {
            let path = PathBuf::from(path);
            let text = trellis_store::paths::read_text(
                &path,
                trellis_store::config::CONFIG_CAP,
            )
            .with_context(|| {
                format!("--permission {}: not a policy (reject, allow-once, allow-reads) nor a readable rules file", path.display())
            })?;
            let file: trellis_store::config::RulesFile =
                trellis_store::config::parse_toml(&text, &path)?;
            Policy::Rules {
                rules: file.rules,
                fallback: file.fallback.unwrap_or(Verdict::Reject),
            }
        }
    };
    Ok((policy, explicit))
}

/// The first record of a session log: who, where, which Trellis, when.
pub fn record_header(
    handle: &trellis_acp::Handle,
    (name, command): (&str, &str),
    (cwd, started): (&str, f64),
    (continues, continues_at, handed_over): (Option<&str>, Option<u32>, bool),
    worktree: Option<trellis_core::WorktreeRef>,
    launched_in: Option<&std::path::Path>,
    remote: Option<&crate::agents::RemoteAt>,
) {
    handle
        .recorder()
        .local(trellis_core::LocalRecord::SessionLog {
            schema: trellis_core::SCHEMA_VERSION,
            agent: name.to_string(),
            cwd: cwd.to_string(),
            trellis: env!("CARGO_PKG_VERSION").into(),
            started,
            command: Some(command.to_string()),
            continues: continues.map(str::to_string),
            continues_at,
            handed_over,
            // Where it was asked for: this process's directory, or the client's that
            // asked a hub.
            launched_in: launched_in
                .map(std::path::Path::to_path_buf)
                .or_else(|| std::env::current_dir().ok())
                .map(|d| d.display().to_string())
                .filter(|d| d != cwd),
            worktree,
            remote: remote.map(|r| r.at.clone()),
            shared_files: remote.is_some_and(|r| r.shared),
            paths: remote.map(|r| r.paths.clone()).unwrap_or_default(),
        });
}

/// Where a session runs, for the extension host.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Keep stores on disk and run plugins (live sessions); replays must change nothing.
    pub store: bool,
    pub headless: bool,
    /// The project (the session's directory): its `.trellis/plugins` are considered.
    pub project: Option<PathBuf>,
    /// Plugin packages to run for this session only (`--plugin`, `trellis plugin try`),
    /// granted what they ask for — `drive` only with `allow_drive`.
    pub try_plugins: Vec<PathBuf>,
    /// `--allow-drive`: a tried plugin that asks for `drive` gets it.
    pub allow_drive: bool,
    /// The session is one of a hub's (the UI, `trellis serve`): plugins of `"scope":
    /// "hub"` run in the hub's one host ([`hub_host`]), not in the session's.
    pub in_hub: bool,
}

/// The plugins of a session, found (and their packages hashed) once for the extension
/// host and the MCP servers they offer.
#[derive(Debug, Default)]
pub struct SessionPlugins {
    pub specs: Vec<(
        trellis_plugin::PluginSpec,
        Vec<trellis_core::ext::Capability>,
    )>,
    /// Why some did not start (for `/status`).
    pub notes: Vec<String>,
    /// With [`Live::in_hub`]: the plugins of `"scope": "hub"`, for the hub's host.
    pub hub_wide: Vec<(
        trellis_plugin::PluginSpec,
        Vec<trellis_core::ext::Capability>,
    )>,
    registry: Option<trellis_plugin::registry::Registry>,
}

/// The enabled plugins that apply here (user scope, this project's trusted ones) and the
/// packages tried for this session only. Replays run none.
pub fn session_plugins(live: &Live) -> anyhow::Result<SessionPlugins> {
    let mut out = SessionPlugins::default();
    let Some(paths) = trellis_store::Paths::from_env().filter(|_| live.store) else {
        return Ok(out);
    };
    let reg = trellis_plugin::registry::Registry::new(paths.data_dir, live.project.clone());
    let (specs, notes) = reg.enabled_specs(Some(trellis_os::reaper::own));
    out.specs = specs;
    out.notes = notes;
    for dir in &live.try_plugins {
        let package = trellis_plugin::Package::load(dir)
            .map_err(|e| anyhow::anyhow!("--plugin {}: {e}", dir.display()))?;
        // Shown in /status and the headless status event (an unknown key, say).
        out.notes.extend(
            package
                .warnings
                .iter()
                .map(|w| format!("plugin {} plugin.json: {w}", package.name)),
        );
        let mut spec =
            trellis_plugin::registry::spec_of(&package, &reg, Some(trellis_os::reaper::own))
                .map_err(|e| anyhow::anyhow!("--plugin {}: {e}", dir.display()))?;
        // Trying a plugin: its process restarts when its files change.
        spec.limits.watch = true;
        let mut grant = spec.manifest.capabilities.clone();
        if !live.allow_drive && grant.contains(&trellis_core::ext::Capability::Drive) {
            // Acting on the session (prompts of its own) is never granted in passing.
            grant.retain(|c| *c != trellis_core::ext::Capability::Drive);
            out.notes.push(format!(
                "plugin {} asks for drive (sending prompts, cancelling turns): not granted without --allow-drive",
                package.name
            ));
        }
        out.specs
            .retain(|(s, _)| s.manifest.name != spec.manifest.name);
        // What it is granted is said per extension (`granted:` / `not granted:`), after the
        // config had its say: `[extensions.NAME] grant` narrows what a tried plugin asks for.
        let reach = if spec.hub && live.in_hub {
            "runs once for every session of this hub"
        } else {
            "runs for this session only"
        };
        out.notes.push(format!(
            "plugin {} {reach} (trying {})",
            package.name,
            dir.display()
        ));
        out.specs.push((spec, grant));
    }
    if live.in_hub {
        let (hub, session): (Vec<_>, Vec<_>) = std::mem::take(&mut out.specs)
            .into_iter()
            .partition(|(s, _)| s.hub);
        out.specs = session;
        out.hub_wide = hub;
    }
    out.registry = Some(reg);
    Ok(out)
}

/// An extension host and its messages.
pub type Host = (
    trellis_ext_host::ExtHost,
    tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
);

/// The extension host with the built-ins and the session's plugins, as the config allows.
pub fn ext_host(config: &Config, live: &Live, plugins: &SessionPlugins) -> anyhow::Result<Host> {
    let mut opts = host_options(config, live)?;
    let mut candidates: Vec<trellis_ext_host::Candidate> = trellis_builtins::all()
        .into_iter()
        .map(|ext| trellis_ext_host::Candidate { ext, builtin: true })
        .collect();
    let mut hooks = crate::hooks::hooks_of(&config.hooks, "", |table, key, why| {
        config.invalid(table, key, why).into()
    })?;
    // A project's own hooks, once you trusted that file (`trellis hooks trust`).
    if live.store
        && let Some(project) = &live.project
    {
        match crate::project_hooks::find(project)? {
            crate::project_hooks::Found::Trusted(path, entries) => {
                hooks.extend(crate::hooks::hooks_of(
                    &entries,
                    "project ",
                    |table, key, why| anyhow::anyhow!("{}: {table}.{key}: {why}", path.display()),
                )?);
            }
            crate::project_hooks::Found::Refused(note) => {
                // Said where the user looks: stderr for a run, `/status` in the UI.
                if live.headless {
                    say!("trellis: {note}");
                }
                opts.notes.push(note);
            }
            crate::project_hooks::Found::None => {}
        }
    }
    if !hooks.is_empty() {
        candidates.push(trellis_ext_host::Candidate {
            ext: Box::new(trellis_plugin::hooks::Hooks::new(hooks)),
            builtin: true,
        });
    }
    opts.notes.extend(plugins.notes.iter().cloned());
    add_plugins(&mut opts, &mut candidates, &plugins.specs);
    Ok(trellis_ext_host::ExtHost::new(candidates, opts))
}

/// The host of a hub's plugins of `"scope": "hub"` (one process each for every session:
/// the deck hands it every session's events), if there are any.
pub fn hub_host(config: &Config, live: &Live) -> anyhow::Result<Option<Host>> {
    let plugins = session_plugins(live)?;
    if plugins.hub_wide.is_empty() {
        return Ok(None);
    }
    let mut opts = host_options(config, live)?;
    opts.hub_wide = true;
    let mut candidates = Vec::new();
    add_plugins(&mut opts, &mut candidates, &plugins.hub_wide);
    Ok(Some(trellis_ext_host::ExtHost::new(candidates, opts)))
}

/// Plugins join a host's candidates, the config still able to turn one off or narrow
/// its grant.
fn add_plugins(
    opts: &mut trellis_ext_host::HostOptions,
    candidates: &mut Vec<trellis_ext_host::Candidate>,
    specs: &[(
        trellis_plugin::PluginSpec,
        Vec<trellis_core::ext::Capability>,
    )],
) {
    for (spec, grant) in specs {
        let entry = opts.config.entry(spec.manifest.name.clone()).or_default();
        if entry.enabled.is_none() {
            entry.enabled = Some(true);
        }
        if entry.grant.is_none() {
            entry.grant = Some(grant.clone());
        }
        candidates.push(trellis_ext_host::Candidate {
            ext: Box::new(trellis_plugin::PluginExt::new(spec.clone())),
            builtin: false,
        });
    }
}

/// A host's options from the config's `[extensions]` (checked) and where it runs.
fn host_options(config: &Config, live: &Live) -> anyhow::Result<trellis_ext_host::HostOptions> {
    use trellis_core::ext::Capability;
    let x = &config.extensions;
    let (store, headless) = (live.store, live.headless);
    let mut opts = trellis_ext_host::HostOptions {
        headless,
        ..trellis_ext_host::HostOptions::default()
    };
    if let Some(n) = x.failure_limit {
        if n == 0 {
            return Err(config
                .invalid("extensions", "failure_limit", "must be at least 1")
                .into());
        }
        opts.failure_limit = n;
    }
    if let Some(q) = x.queue {
        if q == 0 {
            return Err(config
                .invalid("extensions", "queue", "must be at least 1")
                .into());
        }
        opts.queue = q;
    }
    if let Some(t) = x.permission_timeout {
        if !(t > 0.0 && t.is_finite()) {
            return Err(config
                .invalid(
                    "extensions",
                    "permission_timeout",
                    "must be a positive number of seconds",
                )
                .into());
        }
        opts.permission_timeout = t;
    }
    if let Some(n) = x.drive_per_minute {
        opts.drive_per_minute = n;
    }
    opts.path_map = x
        .path_map
        .iter()
        .map(|(a, b)| (a.clone(), b.clone()))
        .collect();
    for (name, e) in &x.each {
        let grant = match &e.grant {
            None => None,
            Some(list) => {
                let mut caps = Vec::new();
                for c in list {
                    caps.push(Capability::parse(c).ok_or_else(|| {
                        config.invalid(
                            &format!("extensions.{name}"),
                            "grant",
                            format!(
                                "{c:?} is not a capability ({})",
                                Capability::ALL.map(|c| c.as_str()).join(", ")
                            ),
                        )
                    })?);
                }
                Some(caps)
            }
        };
        let options = match &e.options {
            Some(t) => serde_json::to_value(t).map_err(|err| {
                config.invalid(&format!("extensions.{name}"), "options", err.to_string())
            })?,
            None => serde_json::Value::Null,
        };
        opts.config.insert(
            name.clone(),
            trellis_ext_host::ExtConfig {
                enabled: e.enabled,
                grant,
                options,
            },
        );
    }
    let stores = trellis_store::Paths::from_env().map(|p| p.data_dir.join("extensions"));
    if store {
        opts.store_dir = stores;
    } else {
        // Replays read the user's stores (chosen card designs included), write nothing.
        opts.store_seed = stores;
    }
    Ok(opts)
}

/// The MCP servers to offer the agent: `[mcp_servers]` from the config, then the
/// `mcp.json` of every plugin that runs in this session. Problems (an invalid entry, a
/// server skipped) are returned to be shown; the agent's capabilities decide the rest at
/// setup.
pub fn mcp_servers(
    config: &Config,
    plugins: &SessionPlugins,
) -> anyhow::Result<(Vec<trellis_acp::McpServerSpec>, Vec<String>)> {
    use trellis_acp::{McpServerSpec, McpTransport};
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (name, s) in &config.mcp_servers {
        let table = format!("mcp_servers.{name}");
        let kind = s.kind.as_deref();
        let pairs = |m: &std::collections::BTreeMap<String, String>| -> Vec<(String, String)> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let transport = match (kind, &s.command, &s.url) {
            (None | Some("stdio"), Some(command), None) => McpTransport::Stdio {
                command: command.clone(),
                args: s.args.clone(),
                env: pairs(&s.env),
            },
            (None | Some("http") | Some("streamable-http"), None, Some(url)) => {
                McpTransport::Http {
                    url: url.clone(),
                    headers: pairs(&s.headers),
                }
            }
            (Some("sse"), None, Some(url)) => McpTransport::Sse {
                url: url.clone(),
                headers: pairs(&s.headers),
            },
            _ => {
                return Err(config
                    .invalid(
                        &table,
                        if s.url.is_some() { "url" } else { "command" },
                        "a server is `command` (+ args, env) for stdio, or `url` (+ headers) with type \"http\" or \"sse\"",
                    )
                    .into());
            }
        };
        if let McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } = &transport
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(config
                .invalid(&table, "url", "must be an http or https URL")
                .into());
        }
        out.push(McpServerSpec {
            name: name.clone(),
            origin: "config".into(),
            transport,
        });
    }
    if let Some(reg) = &plugins.registry {
        for (spec, _) in &plugins.specs {
            let root = &spec.launch.root;
            let Ok(package) = trellis_plugin::Package::load(root) else {
                continue;
            };
            let (servers, skipped) =
                trellis_plugin::mcp::load(&package, &reg.data_dir(&package.name));
            problems.extend(skipped);
            for s in servers {
                let origin = format!("plugin {}", package.name);
                out.push(match s {
                    trellis_plugin::mcp::Server::Stdio {
                        name,
                        command,
                        args,
                        env,
                    } => McpServerSpec {
                        name,
                        origin,
                        transport: McpTransport::Stdio { command, args, env },
                    },
                    trellis_plugin::mcp::Server::Remote {
                        name,
                        sse,
                        url,
                        headers,
                    } => McpServerSpec {
                        name,
                        origin,
                        transport: if sse {
                            McpTransport::Sse { url, headers }
                        } else {
                            McpTransport::Http { url, headers }
                        },
                    },
                });
            }
        }
    }
    Ok((out, problems))
}
