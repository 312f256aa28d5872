//! `trellis agents`: the agents of the ACP Registry (`[registry] url`, the public one by
//! default) — `list` and `info ID`. Every text of the index is made harmless before it is
//! printed; entries the index gets wrong are named on stderr with why, never a crash.

use std::path::PathBuf;
use std::process::ExitCode;

use trellis_registry::{Agent, Loaded, Source};
use trellis_store::{Config, Paths};

use crate::output::safe;

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
}

/// The index, from the config's source; what loading it had to say goes to stderr.
fn load(config: &Config) -> anyhow::Result<Loaded> {
    let source = Source::from_setting(config.registry.url.as_deref());
    let cache = Paths::from_env()
        .map(|p| p.data_dir.join("registry"))
        .unwrap_or_else(|| PathBuf::from(".trellis-registry-cache"));
    let loaded = trellis_registry::source::load(&source, &cache)
        .map_err(|e| anyhow::anyhow!("the agent registry ({}): {e}", source.describe()))?;
    if let Some(said) = &loaded.said {
        eprintln!("trellis: {}", safe(said));
    }
    for (id, why) in &loaded.index.refused {
        eprintln!(
            "trellis: registry entry {} refused: {}",
            safe(id),
            safe(why)
        );
    }
    Ok(loaded)
}

pub fn main(cmd: AgentsCmd, config: &Config) -> anyhow::Result<ExitCode> {
    let loaded = load(config)?;
    let index = &loaded.index;
    match cmd {
        AgentsCmd::List { json: true } => {
            let agents: Vec<serde_json::Value> = index.agents.iter().map(agent_json).collect();
            let refused: Vec<serde_json::Value> = index
                .refused
                .iter()
                .map(|(id, why)| serde_json::json!({"id": id, "reason": why}))
                .collect();
            println!(
                "{}",
                serde_json::json!({"agents": agents, "refused": refused, "said": loaded.said})
            );
        }
        AgentsCmd::List { json: false } => {
            if index.agents.is_empty() {
                println!("no agents in the registry");
            }
            let w = index
                .agents
                .iter()
                .map(|a| a.id.len())
                .max()
                .unwrap_or(0)
                .min(32);
            for a in &index.agents {
                println!(
                    "{:<w$}  {:<10}  {:<8}  {}",
                    safe(&a.id),
                    safe(&trellis_text::clip(&a.version, 10)),
                    a.distribution(),
                    safe(&trellis_text::clip(
                        &trellis_text::one_line(&a.description),
                        72
                    )),
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
            print!("{}", info(a));
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
