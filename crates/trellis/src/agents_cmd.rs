//! `trellis agents`: the agents of the ACP Registry (`[registry] url`, the public one by
//! default) — `list`, `info ID`, and installing them in Trellis's own directory: `add`,
//! `update`, `use`, `remove`. Every text of the index is made harmless before it is
//! printed; entries the index gets wrong are named on stderr with why, never a crash.

use std::process::ExitCode;

use trellis_registry::{Agent, Loaded, Source};
use trellis_store::Config;

use crate::output::safe;
use crate::registry_agents::{cache_dir, installed_agents};

#[derive(clap::Subcommand)]
pub enum AgentsCmd {
    /// Every agent of the registry: id, version, how it is distributed, what it is.
    List {
        /// As JSON (the entries, and those refused with why).
        #[arg(long)]
        json: bool,
    },
    /// One agent of the registry, in full.
    Info { id: String },
    /// Install an agent (its npx package with npm, its uvx package with uv), pinned, in
    /// Trellis's own directory; `trellis --agent ID` starts it.
    Add {
        id: String,
        /// This version instead of the registry's.
        #[arg(long)]
        version: Option<String>,
    },
    /// Install the registry's newer version beside the one in use, and switch to it once
    /// it starts and answers `initialize` (the old one is kept: `trellis agents use`).
    Update { id: Option<String> },
    /// Go back (or forth) to an installed version.
    Use { id: String, version: String },
    /// Remove an installed agent, every version.
    Remove { id: String },
}

/// Before the UI starts on `agent`: a registry agent that is not installed is offered for
/// install there and then, on the terminal (what will be downloaded and run is said first);
/// declined, or without a terminal to ask on, the UI says how and stops as `run` does.
pub(crate) fn offer_install(agent: &str, config: &Config) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    let Some((id, hint)) = crate::agents::registry_hint(agent, config) else {
        return Ok(());
    };
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(());
    }
    say_part!("{hint}.\nInstall it now? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        return Ok(());
    }
    let loaded = load(config)?;
    let a = loaded
        .index
        .get(&id)
        .ok_or_else(|| anyhow::anyhow!("{id} is no longer in the registry"))?;
    let agents = installed_agents().ok_or_else(|| anyhow::anyhow!("no data directory"))?;
    let launch = agents
        .add(a, None, &mut |s| say!("{}", safe(&s)))
        .map_err(|e| anyhow::anyhow!("{}", safe(&e)))?;
    say!("trellis: {} {} installed", safe(&id), safe(&launch.version));
    Ok(())
}

/// The index, from the config's source; what loading it had to say goes to stderr.
fn load(config: &Config) -> anyhow::Result<Loaded> {
    let source = Source::from_setting(config.registry.url.as_deref());
    let rule = if config.registry.unverified_http == Some(true) {
        trellis_registry::address::Rule::AnyHttp
    } else {
        trellis_registry::address::Rule::Secure
    };
    let loaded = trellis_registry::source::load(&source, &cache_dir(), rule).map_err(|e| {
        let hint = if e.contains("plain http to") {
            " ([registry] unverified_http = true accepts that, giving up every check the index's SHA-256s make)"
        } else {
            ""
        };
        anyhow::anyhow!("the agent registry ({}): {e}{hint}", source.describe())
    })?;
    if let Some(said) = &loaded.said {
        say!("trellis: {}", safe(said));
    }
    for (id, why) in &loaded.index.refused {
        say!(
            "trellis: registry entry {} refused: {}",
            safe(id),
            safe(why)
        );
    }
    Ok(loaded)
}

pub fn main(cmd: AgentsCmd, config: &Config) -> anyhow::Result<ExitCode> {
    let agents = installed_agents().ok_or_else(|| anyhow::anyhow!("no data directory"))?;
    // What needs no index.
    match &cmd {
        AgentsCmd::Use { id, version } => {
            agents
                .use_version(id, version)
                .map_err(|e| anyhow::anyhow!("{}", safe(&e)))?;
            out!("{} {} is in use", safe(id), safe(version));
            return Ok(ExitCode::SUCCESS);
        }
        AgentsCmd::Remove { id } => {
            agents
                .remove(id)
                .map_err(|e| anyhow::anyhow!("{}", safe(&e)))?;
            out!("{} removed", safe(id));
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let loaded = load(config)?;
    let index = &loaded.index;
    match cmd {
        AgentsCmd::Use { .. } | AgentsCmd::Remove { .. } => {}
        AgentsCmd::Add { id, version } => {
            let a = index.get(&id).ok_or_else(|| {
                anyhow::anyhow!(
                    "no agent {} in the registry (trellis agents list)",
                    safe(&id)
                )
            })?;
            let launch = agents
                .add(a, version.as_deref(), &mut |s| say!("{}", safe(&s)))
                .map_err(|e| anyhow::anyhow!("{}", safe(&e)))?;
            out!(
                "{} {} installed: trellis --agent {} starts it",
                safe(&a.id),
                safe(&launch.version),
                safe(&a.id)
            );
            // It starts and answers: and says whether it needs a login.
            match answers_initialize(&launch) {
                Ok(result) => say_login(&result),
                Err(e) => say!(
                    "trellis: installed, but it did not answer initialize: {}",
                    safe(&e)
                ),
            }
        }
        AgentsCmd::Update { id } => return update(&agents, index, id.as_deref()),

        AgentsCmd::List { json: true } => {
            let agents: Vec<serde_json::Value> = index.agents.iter().map(agent_json).collect();
            let refused: Vec<serde_json::Value> = index
                .refused
                .iter()
                .map(|(id, why)| serde_json::json!({"id": id, "reason": why}))
                .collect();
            out!(
                "{}",
                serde_json::json!({"agents": agents, "refused": refused, "said": loaded.said})
            );
        }
        AgentsCmd::List { json: false } => {
            if index.agents.is_empty() {
                out!("no agents in the registry");
            }
            let w = index
                .agents
                .iter()
                .map(|a| a.id.len())
                .max()
                .unwrap_or(0)
                .min(32);
            for a in &index.agents {
                let here = match agents.installed(&a.id) {
                    Some(i) if i.current == a.version => format!("installed {}", i.current),
                    Some(i) => format!("{} → {} waiting", i.current, a.version),
                    None => String::new(),
                };
                out!(
                    "{:<w$}  {:<10}  {:<8}  {:<22}  {}",
                    safe(&a.id),
                    safe(&trellis_text::clip(&a.version, 10)),
                    a.distribution(),
                    safe(&here),
                    // Cut first, then made visible: never cut inside an escape.
                    safe(&trellis_text::one_line(&trellis_text::clip(
                        &a.description,
                        60
                    ))),
                );
            }
        }
        AgentsCmd::Info { id } => {
            let Some(a) = index.get(&id) else {
                anyhow::bail!(
                    "no agent {} in the registry (trellis agents list)",
                    safe(&id)
                );
            };
            out_part!("{}", info(a));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn agent_json(a: &Agent) -> serde_json::Value {
    let package = |p: &trellis_registry::index::Package| {
        serde_json::json!({"package": p.package, "version": p.pinned, "cmd": p.cmd,
            "args": p.args, "env": p.env.iter().map(|(k, _)| k).collect::<Vec<_>>()})
    };
    serde_json::json!({
        "id": a.id, "name": a.name, "version": a.version, "description": a.description,
        "repository": a.repository, "website": a.website, "license": a.license,
        "authors": a.authors,
        "distribution": {
            "npx": a.npx.as_ref().map(package),
            "uvx": a.uvx.as_ref().map(package),
            "binary": a.binary.iter().map(|(p, b)| (p.clone(), serde_json::json!({
                "archive": b.archive, "sha256": b.sha256, "cmd": b.cmd, "args": b.args,
            }))).collect::<serde_json::Map<_, _>>(),
        },
        "this_platform": a.distribution(),
    })
}

/// One agent in full, made harmless for the terminal.
fn info(a: &Agent) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: &str| s.push_str(&format!("{k:<12} {}\n", safe(v)));
    line("id", &a.id);
    line("name", &a.name);
    line("version", &a.version);
    line("description", &trellis_text::one_line(&a.description));
    for (k, v) in [
        ("repository", &a.repository),
        ("website", &a.website),
        ("license", &a.license),
    ] {
        if let Some(v) = v {
            line(k, v);
        }
    }
    if !a.authors.is_empty() {
        line("authors", &a.authors.join(", "));
    }
    let run = |p: &trellis_registry::index::Package, how: &str| {
        let mut words = vec![how.to_string(), p.package.clone()];
        if let Some(v) = &p.pinned {
            words[1] = format!("{}@{v}", p.package);
        }
        words.extend(p.cmd.iter().cloned());
        words.extend(p.args.iter().cloned());
        words.join(" ")
    };
    if let Some(p) = &a.npx {
        line("npx", &run(p, "npx"));
    }
    if let Some(p) = &a.uvx {
        line("uvx", &run(p, "uvx"));
    }
    let here = trellis_registry::index::this_platform();
    for (platform, b) in &a.binary {
        let mark = if Some(platform.as_str()) == here {
            " (this machine)"
        } else {
            ""
        };
        line(
            "binary",
            &format!(
                "{platform}{mark}: {} → {} {}{}",
                b.archive,
                b.cmd,
                b.args.join(" "),
                b.sha256
                    .as_ref()
                    .map(|h| format!(" (sha256 {h})"))
                    .unwrap_or_default()
            ),
        );
    }
    s
}

/// An agent that needs a login says so after install (its `authMethods`); its first
/// session offers the login (a terminal login runs in the UI).
fn say_login(initialized: &serde_json::Value) {
    let methods: Vec<String> = initialized["authMethods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().or(m["id"].as_str()))
        .take(8)
        .map(|n| safe(n).into_owned())
        .collect();
    if !methods.is_empty() {
        out!(
            "it may ask you to log in ({}): its first session offers it",
            methods.join(", ")
        );
    }
}

/// `update [ID]`: for each installed agent (or `id`) whose registry version differs,
/// install it beside the one in use and switch once it answers `initialize`.
fn update(
    agents: &trellis_registry::install::Agents,
    index: &trellis_registry::Index,
    id: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let ids: Vec<String> = match id {
        Some(i) => vec![i.to_string()],
        None => index
            .agents
            .iter()
            .filter(|a| agents.installed(&a.id).is_some())
            .map(|a| a.id.clone())
            .collect(),
    };
    let mut failed = false;
    for id in ids {
        let Some(a) = index.get(&id) else {
            say!("trellis: {} is not in the registry", safe(&id));
            failed = true;
            continue;
        };
        let Some(old) = agents.installed(&id) else {
            say!(
                "trellis: {} is not installed (trellis agents add {})",
                safe(&id),
                safe(&id)
            );
            failed = true;
            continue;
        };
        if old.current == a.version {
            // The same version: nothing to install, unless the registry now gives another
            // archive for it, which is refused.
            match agents.add(a, Some(&a.version), &mut |s| say!("{}", safe(&s))) {
                Ok(_) => out!(
                    "{} {} is the registry's version",
                    safe(&id),
                    safe(&old.current)
                ),
                Err(e) => {
                    say!("trellis: {}", safe(&e));
                    failed = true;
                }
            }
            continue;
        }
        out!(
            "{}: {} → {}",
            safe(&id),
            safe(&old.current),
            safe(&a.version)
        );
        let launch = match agents.add(a, Some(&a.version), &mut |s| say!("{}", safe(&s))) {
            Ok(l) => l,
            Err(e) => {
                say!("trellis: {}: {}", safe(&id), safe(&e));
                failed = true;
                continue;
            }
        };
        if let Err(e) = answers_initialize(&launch) {
            // Back to the one that worked; the new one stays installed beside it.
            let _ = agents.use_version(&id, &old.current);
            say!(
                "trellis: {} {} did not start ({}): {} stays in use",
                safe(&id),
                safe(&a.version),
                safe(&e),
                safe(&old.current)
            );
            failed = true;
            continue;
        }
        // The one it replaced is kept (for `use`); older ones go.
        match agents.prune(&id, &[&a.version, &old.current]) {
            Ok(gone) if !gone.is_empty() => {
                out!("{}: removed {}", safe(&id), safe(&gone.join(", ")))
            }
            Ok(_) => {}
            Err(e) => say!("trellis: {}: {}", safe(&id), safe(&e)),
        }
        out!(
            "{} {} in use ({} kept: trellis agents use {} {})",
            safe(&id),
            safe(&a.version),
            safe(&old.current),
            safe(&id),
            safe(&old.current)
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Starts the agent and asks `initialize`: an answer within 30 s is a working install
/// (the answer is returned). The agent is stopped whatever happens.
fn answers_initialize(
    launch: &trellis_registry::install::Launch,
) -> Result<serde_json::Value, String> {
    use std::io::{BufRead, Write};
    let mut cmd = std::process::Command::new(&launch.program);
    cmd.args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    // It goes when Trellis goes, whatever stops Trellis.
    trellis_os::priority::die_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let ask = serde_json::json!({"jsonrpc": "2.0", "id": "trellis-probe", "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let _ = writeln!(stdin, "{ask}");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match std::io::Read::take(&mut reader, 1 << 20).read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(_) => {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                        && v["id"] == "trellis-probe"
                        && v.get("result").is_some()
                    {
                        let _ = tx.send(Some(v["result"].clone()));
                        return;
                    }
                }
            }
        }
    });
    let answered = rx.recv_timeout(std::time::Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    match answered {
        Ok(Some(result)) => Ok(result),
        Ok(None) => Err("it ended without answering initialize".into()),
        Err(_) => Err("no answer to initialize within 30 s".into()),
    }
}
