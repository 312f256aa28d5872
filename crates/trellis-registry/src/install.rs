//! Registry agents installed in Trellis's own directory, one directory per agent and
//! version (`agents/<id>/<version>/`), pinned: an `npx` package is installed with `npm`
//! from a `package.json` naming its exact version, and its lockfile kept — no floating
//! `npx` at every start. What is installed, and which version is in use, is recorded in
//! `agents/<id>/installed.json` (written beside and moved into place). A version is
//! installed into a fresh directory first and moved to its name only once it is complete.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::index::{Agent, Package};

/// One installed version of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub version: String,
    /// `npx` or `uvx`.
    pub kind: String,
    /// The program, relative to the version's directory.
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Unix seconds.
    pub installed: u64,
}

/// What is installed of one agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub id: String,
    /// The version started by `--agent ID`.
    pub current: String,
    pub versions: Vec<Version>,
}

/// How to start an installed agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub version: String,
}

/// Trellis's directory of registry agents.
#[derive(Debug, Clone)]
pub struct Agents {
    pub dir: PathBuf,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A directory Trellis made (not a link someone put there), made private if missing.
fn own_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(std::io::Error::other(format!(
            "{}: not a directory of Trellis's",
            dir.display()
        ))),
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir),
    }
}

impl Agents {
    pub fn new(dir: PathBuf) -> Agents {
        Agents { dir }
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(id).join("installed.json")
    }

    /// What is installed of `id` (none when nothing is, or its record does not read).
    pub fn installed(&self, id: &str) -> Option<Installed> {
        if !crate::index::valid_id(id) {
            return None;
        }
        let p = self.record_path(id);
        let m = std::fs::symlink_metadata(&p).ok()?;
        if !m.is_file() || m.len() > 1 << 20 {
            return None;
        }
        let i: Installed = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
        (i.id == id).then_some(i)
    }

    fn save(&self, rec: &Installed) -> std::io::Result<()> {
        use std::io::Write;
        let dir = self.dir.join(&rec.id);
        own_dir(&dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
        tmp.write_all(&serde_json::to_vec_pretty(rec).unwrap_or_default())?;
        tmp.persist(self.record_path(&rec.id))
            .map_err(|e| e.error)?;
        Ok(())
    }

    /// How to start `id` (its current version), checked to still be there.
    pub fn launch(&self, id: &str) -> Option<Launch> {
        let rec = self.installed(id)?;
        let v = rec.versions.iter().find(|v| v.version == rec.current)?;
        let program = self.dir.join(id).join(&v.version).join(&v.program);
        program.exists().then(|| Launch {
            program,
            args: v.args.clone(),
            env: v.env.clone(),
            version: v.version.clone(),
        })
    }

    /// Installs `agent` at `version` (the entry's when not given) and makes it the one in
    /// use; `say` is told what is done. An `npx` package goes through `npm`, a `uvx` one
    /// through `uv`.
    pub fn add(
        &self,
        agent: &Agent,
        version: Option<&str>,
        say: &mut dyn FnMut(String),
    ) -> Result<Launch, String> {
        let (kind, package) = match (&agent.npx, &agent.uvx) {
            (Some(p), _) => ("npx", p),
            (None, Some(p)) => ("uvx", p),
            (None, None) => {
                return Err(format!(
                    "{}: only a binary distribution, which Trellis does not install yet",
                    agent.id
                ));
            }
        };
        let version = version
            .map(str::to_string)
            .or_else(|| package.pinned.clone())
            .unwrap_or_else(|| agent.version.clone());
        if !valid_version(&version) {
            return Err(format!("{version}: not a version"));
        }
        let mut rec = self.installed(&agent.id).unwrap_or(Installed {
            id: agent.id.clone(),
            ..Installed::default()
        });
        let home = self.dir.join(&agent.id);
        let target = home.join(&version);
        if !rec.versions.iter().any(|v| v.version == version) || !target.exists() {
            own_dir(&self.dir).map_err(|e| e.to_string())?;
            own_dir(&home).map_err(|e| e.to_string())?;
            let work = tempfile::Builder::new()
                .prefix(".installing-")
                .tempdir_in(&home)
                .map_err(|e| e.to_string())?;
            let program = match kind {
                "npx" => npm_install(package, &version, work.path(), say)?,
                _ => uv_install(package, &version, work.path(), say)?,
            };
            if std::fs::symlink_metadata(&target).is_ok() {
                return Err(format!(
                    "{}: something is already there; remove it first (trellis agents remove {})",
                    target.display(),
                    agent.id
                ));
            }
            let kept = work.keep();
            std::fs::rename(&kept, &target).map_err(|e| e.to_string())?;
            rec.versions.retain(|v| v.version != version);
            rec.versions.push(Version {
                version: version.clone(),
                kind: kind.into(),
                program,
                args: package.args.clone(),
                env: package.env.clone(),
                installed: now(),
            });
        }
        rec.current = version;
        self.save(&rec).map_err(|e| e.to_string())?;
        self.launch(&agent.id)
            .ok_or_else(|| format!("{}: installed, but its program is missing", agent.id))
    }

    /// Makes `version` of `id` the one in use (it must be installed).
    pub fn use_version(&self, id: &str, version: &str) -> Result<(), String> {
        let mut rec = self
            .installed(id)
            .ok_or_else(|| format!("{id} is not installed"))?;
        if !rec.versions.iter().any(|v| v.version == version) {
            let have: Vec<_> = rec.versions.iter().map(|v| v.version.as_str()).collect();
            return Err(format!(
                "{id} {version} is not installed (installed: {})",
                have.join(", ")
            ));
        }
        rec.current = version.to_string();
        self.save(&rec).map_err(|e| e.to_string())
    }

    /// Removes every installed version of `id` (its directory, which Trellis made).
    pub fn remove(&self, id: &str) -> Result<(), String> {
        if !crate::index::valid_id(id) {
            return Err(format!("{id}: not an agent id"));
        }
        let dir = self.dir.join(id);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&dir).map_err(|e| e.to_string()),
            // A link there is removed itself; what it points to is not Trellis's.
            Ok(_) => std::fs::remove_file(&dir).map_err(|e| e.to_string()),
            Err(_) => Err(format!("{id} is not installed")),
        }
    }
}

/// A version used as a directory name: a version's characters, not only dots.
fn valid_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
}

/// Runs `cmd`, its output passed on to `say` line by line; an error names what failed.
fn run(mut cmd: Command, what: &str, say: &mut dyn FnMut(String)) -> Result<(), String> {
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    for line in String::from_utf8_lossy(&out.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&out.stdout).lines())
        .filter(|l| !l.trim().is_empty())
        .take(40)
    {
        say(format!("  {line}"));
    }
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({})", out.status))
    }
}

/// `npm install` of `package@version` into `dir` (a `package.json` naming it, the
/// lockfile npm writes kept): the program is the package's command.
fn npm_install(
    package: &Package,
    version: &str,
    dir: &Path,
    say: &mut dyn FnMut(String),
) -> Result<String, String> {
    say(format!("npm install {}@{version}", package.package));
    let manifest =
        serde_json::json!({"private": true, "dependencies": {&package.package: version}});
    std::fs::write(
        dir.join("package.json"),
        serde_json::to_vec_pretty(&manifest).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = Command::new("npm");
    cmd.args(["install", "--no-audit", "--no-fund", "--no-update-notifier"])
        .current_dir(dir);
    run(cmd, "npm install", say).map_err(|e| {
        if e.contains("No such file") || e.contains("not found") {
            format!("{e}: npm is not installed (Node.js comes with it)")
        } else {
            e
        }
    })?;
    let bin = match &package.cmd {
        Some(c) => c.clone(),
        None => bin_of(dir, &package.package)?,
    };
    let program = format!("node_modules/.bin/{bin}");
    if !dir.join(&program).exists() {
        return Err(format!(
            "{}: no command {bin} after installing",
            package.package
        ));
    }
    Ok(program)
}

/// The command a package installs: its only one, or the one named after it.
fn bin_of(dir: &Path, package: &str) -> Result<String, String> {
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let v: serde_json::Value = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| format!("{package}: its package.json does not read"))?;
    let base = package.rsplit('/').next().unwrap_or(package);
    let name = match &v["bin"] {
        serde_json::Value::String(_) => Some(base.to_string()),
        serde_json::Value::Object(m) if m.len() == 1 => m.keys().next().cloned(),
        serde_json::Value::Object(m) => m.contains_key(base).then(|| base.to_string()),
        _ => None,
    };
    name.filter(|n| crate::index::valid_command_name(n))
        .ok_or_else(|| format!("{package}: no command to run (the entry names none)"))
}

/// `uv` installs `package==version` into a virtual environment in `dir`.
fn uv_install(
    package: &Package,
    version: &str,
    dir: &Path,
    say: &mut dyn FnMut(String),
) -> Result<String, String> {
    say(format!("uv pip install {}=={version}", package.package));
    let mut venv = Command::new("uv");
    venv.args(["venv", "--quiet"]).arg(dir.join("venv"));
    run(venv, "uv venv", say).map_err(|e| {
        if e.contains("No such file") {
            "uvx packages are installed with uv, which is not installed (https://docs.astral.sh/uv/)"
                .to_string()
        } else {
            e
        }
    })?;
    let mut pip = Command::new("uv");
    pip.args(["pip", "install", "--quiet", "--python"])
        .arg(dir.join("venv/bin/python"))
        .arg(format!("{}=={version}", package.package));
    run(pip, "uv pip install", say)?;
    let bin = package
        .cmd
        .clone()
        .unwrap_or_else(|| package.package.clone());
    let program = format!("venv/bin/{bin}");
    if !dir.join(&program).exists() {
        return Err(format!(
            "{}: no command {bin} after installing",
            package.package
        ));
    }
    Ok(program)
}
