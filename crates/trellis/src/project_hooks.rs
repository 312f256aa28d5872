//! A project's own command hooks (`.trellis/hooks.toml`), run only once you trusted that
//! file as it is: `trellis hooks trust` shows every command it would run and records the
//! file's SHA-256 for that project; a file that changed since stops running (and says so)
//! until you trust it again. A cloned repository never makes your Trellis run commands by
//! itself.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use sha2::Digest;
use trellis_store::config::HookConfig;

use crate::output::safe;

/// A project's hooks file, relative to the project.
pub const FILE: &str = ".trellis/hooks.toml";
/// Longest hooks file read.
const LIMIT: u64 = 64 * 1024;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksFile {
    #[serde(default)]
    hooks: Vec<HookConfig>,
}

/// What a project's hooks are to this session.
#[derive(Debug)]
pub enum Found {
    None,
    /// Trusted as it is: its entries.
    Trusted(PathBuf, Vec<HookConfig>),
    /// Not run, and why (for `/status` and stderr).
    Refused(String),
}

fn trust_file() -> Option<PathBuf> {
    trellis_store::Paths::from_env().map(|p| p.data_dir.join("hooks-trust.json"))
}

/// The trusted hashes: project directory → SHA-256 of its hooks file.
fn trusted() -> BTreeMap<String, String> {
    trust_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save(map: &BTreeMap<String, String>) -> anyhow::Result<()> {
    let f = trust_file().context("no data directory")?;
    if let Some(dir) = f.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(map)?;
    crate::sessions::write_new(&f, text.as_bytes())
}

/// The project's hooks file as bytes: a regular file (not a link), bounded.
fn read(project: &Path) -> anyhow::Result<Option<(PathBuf, Vec<u8>)>> {
    let path = project.join(FILE);
    let m = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
    };
    anyhow::ensure!(
        m.file_type().is_file(),
        "{}: not a regular file (a link or a directory is never read)",
        path.display()
    );
    let mut bytes = Vec::new();
    std::fs::File::open(&path)?
        .take(LIMIT + 1)
        .read_to_end(&mut bytes)?;
    anyhow::ensure!(
        bytes.len() as u64 <= LIMIT,
        "{}: longer than {} KiB",
        path.display(),
        LIMIT / 1024
    );
    Ok(Some((path, bytes)))
}

fn key(project: &Path) -> String {
    std::path::absolute(project)
        .unwrap_or_else(|_| project.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

fn hash(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse(path: &Path, bytes: &[u8]) -> anyhow::Result<Vec<HookConfig>> {
    let text =
        std::str::from_utf8(bytes).with_context(|| format!("{}: not UTF-8", path.display()))?;
    let f: HooksFile = trellis_store::config::parse_toml(text, path)?;
    Ok(f.hooks)
}

/// The hooks of `project` for a session there.
pub fn find(project: &Path) -> anyhow::Result<Found> {
    let Some((path, bytes)) = read(project)? else {
        return Ok(Found::None);
    };
    Ok(match trusted().get(&key(project)) {
        Some(h) if *h == hash(&bytes) => Found::Trusted(path.clone(), parse(&path, &bytes)?),
        Some(_) => Found::Refused(format!(
            "the project's hooks ({FILE}) changed since you trusted them: not run until `trellis hooks trust` again"
        )),
        None => Found::Refused(format!(
            "the project has hooks ({FILE}) you have not trusted: not run (`trellis hooks trust` shows them)"
        )),
    })
}

#[derive(clap::Subcommand)]
pub enum HooksCmd {
    /// Show the commands a project's `.trellis/hooks.toml` would run, and trust the file
    /// as it is now (it stops running when it changes).
    Trust {
        /// The project (default: the current directory).
        dir: Option<PathBuf>,
    },
    /// Stop trusting a project's hooks.
    Forget { dir: Option<PathBuf> },
}

pub fn main(cmd: HooksCmd) -> anyhow::Result<ExitCode> {
    let here = |d: Option<PathBuf>| d.map_or_else(std::env::current_dir, Ok);
    match cmd {
        HooksCmd::Trust { dir } => {
            let project = here(dir)?;
            let Some((path, bytes)) = read(&project)? else {
                anyhow::bail!("{}: no {FILE} here", project.display());
            };
            let hooks = parse(&path, &bytes)?;
            // Checked as they would be at a session's start: a bad entry is not trusted.
            crate::hooks::hooks_of(&hooks, "project ", |table, key, why| {
                anyhow::anyhow!("{}: {table}.{key}: {why}", path.display())
            })?;
            out!("{} runs, on your machine, as you:", path.display());
            for h in &hooks {
                out!("  on {}: {}", safe(&h.on), safe(&h.run));
            }
            let mut map = trusted();
            map.insert(key(&project), hash(&bytes));
            save(&map)?;
            out!("trusted as it is now; a change to it stops it until you trust it again");
        }
        HooksCmd::Forget { dir } => {
            let project = here(dir)?;
            let mut map = trusted();
            if map.remove(&key(&project)).is_none() {
                anyhow::bail!("{}: its hooks were not trusted", project.display());
            }
            save(&map)?;
            out!("{}: its hooks are no longer run", project.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
