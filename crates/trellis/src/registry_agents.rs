//! The ACP Registry as this machine has it, for resolving `--agent` and for `trellis
//! agents` alike: Trellis's directory of installed agents and the cached index (read
//! without the network). Below both; neither imports the other for it.

use std::path::PathBuf;

use trellis_registry::Source;
use trellis_store::Paths;
use trellis_store::config::Config;

use crate::output::safe;

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
pub(crate) fn not_installed(name: &str, ids: &[&str], config: &Config) -> Option<(String, String)> {
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
