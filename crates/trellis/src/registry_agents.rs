//! The ACP Registry as this machine has it, for resolving `--agent` and for `trellis
//! agents` alike: Trellis's directory of installed agents and the cached index (read
//! without the network). Below both; neither imports the other for it.
//!
//! A build without the cargo feature `registry` has none: no agent is installed, none is
//! known, and `trellis agents` is not a command.

#[cfg(feature = "registry")]
pub(crate) use with::*;
#[cfg(not(feature = "registry"))]
pub(crate) use without::*;

/// How to start an installed registry agent.
#[derive(Debug, Clone)]
pub(crate) struct Start {
    pub program: std::path::PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

#[cfg(not(feature = "registry"))]
mod without {
    use trellis_store::config::Config;

    /// The registry agent installed as one of `ids`: none without the registry.
    pub(crate) fn installed(_ids: &[&str]) -> Option<(String, Result<super::Start, String>)> {
        None
    }

    /// The installed registry agents' ids: none.
    pub(crate) fn installed_ids() -> Vec<String> {
        Vec::new()
    }

    /// Nothing is known of the registry in this build.
    pub(crate) fn not_installed(
        _name: &str,
        _ids: &[&str],
        _config: &Config,
    ) -> Option<(String, String)> {
        None
    }
}

#[cfg(feature = "registry")]
mod with {
    use std::path::PathBuf;

    use trellis_registry::Source;
    use trellis_store::Paths;
    use trellis_store::config::Config;

    use crate::output::safe;

    /// The registry agent installed as the first of `ids` that is, and how to start it.
    pub(crate) fn installed(ids: &[&str]) -> Option<(String, Result<super::Start, String>)> {
        let agents = installed_agents()?;
        ids.iter().find_map(|id| {
            agents.launch(id).map(|l| {
                let start = l.map(|l| super::Start {
                    program: l.program,
                    args: l.args,
                    env: l.env,
                });
                (id.to_string(), start)
            })
        })
    }

    /// The installed registry agents' ids.
    pub(crate) fn installed_ids() -> Vec<String> {
        installed_agents().map(|a| a.ids()).unwrap_or_default()
    }

    /// Trellis's directory of installed registry agents.
    pub(crate) fn installed_agents() -> Option<trellis_registry::install::Agents> {
        Paths::from_env().map(|p| trellis_registry::install::Agents::new(p.data_dir.join("agents")))
    }

    /// Where the registry's cached copy is.
    pub(crate) fn cache_dir() -> PathBuf {
        Paths::from_env()
            .map(|p| p.data_dir.join("registry"))
            .unwrap_or_else(|| PathBuf::from(".trellis-registry-cache"))
    }

    /// When `name` is a registry agent that is not installed: what to say instead of trying
    /// to run it as a command (the registry as known without the network).
    pub(crate) fn not_installed(
        name: &str,
        ids: &[&str],
        config: &Config,
    ) -> Option<(String, String)> {
        let source = Source::from_setting(config.registry.url.as_deref());
        let index = trellis_registry::source::load_local(&source, &cache_dir())?;
        let a = std::iter::once(name)
            .chain(ids.iter().copied())
            .find_map(|id| index.get(id))?;
        let what = match (
            trellis_registry::index::this_platform().and_then(|p| a.binary.get(p)),
            &a.npx,
            &a.uvx,
        ) {
            (Some(b), ..) => format!("downloads {}", b.archive),
            (None, Some(p), _) => format!(
                "installs the npm package {}@{}",
                p.package,
                p.pinned.as_deref().unwrap_or(&a.version)
            ),
            (None, None, Some(p)) => format!("installs the PyPI package {} with uv", p.package),
            _ => return None,
        };
        Some((
            a.id.clone(),
            format!(
                "{} is an agent of the registry ({} {}), not installed here: `trellis agents add {}` {what}, then --agent {} starts it",
                safe(&a.id),
                safe(&a.name),
                safe(&a.version),
                safe(&a.id),
                safe(name)
            ),
        ))
    }
}
