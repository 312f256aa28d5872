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
    /// A binary's: the program's SHA-256 at install, checked before each start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A binary's: the archive's SHA-256 (an update that brings the same version with
    /// another archive is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_sha256: Option<String>,
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

    /// The ids of every agent installed here, sorted.
    pub fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|id| self.installed(id).is_some())
            .collect();
        ids.sort();
        ids
    }

    /// How to start `id` (its current version): none when it is not installed; an error
    /// when its program is gone or — a binary — changed since it was installed.
    pub fn launch(&self, id: &str) -> Option<Result<Launch, String>> {
        let rec = self.installed(id)?;
        let v = rec.versions.iter().find(|v| v.version == rec.current)?;
        let home = self.dir.join(id).join(&v.version);
        let program = home.join(&v.program);
        Some(
            check_program(&program, &home, v.sha256.as_deref()).map(|()| Launch {
                program,
                args: v.args.clone(),
                env: v.env.clone(),
                version: v.version.clone(),
            }),
        )
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
        let added = self.add_version(agent, version, say);
        if added.is_err() {
            // An install that failed leaves nothing behind: its work directory went with
            // it; the agent's directory goes too when nothing else is in it.
            let _ = std::fs::remove_dir(self.dir.join(&agent.id));
        }
        added
    }

    fn add_version(
        &self,
        agent: &Agent,
        version: Option<&str>,
        say: &mut dyn FnMut(String),
    ) -> Result<Launch, String> {
        let here = crate::index::this_platform().and_then(|p| agent.binary.get(p));
        // A binary needs nothing else on the machine: it comes first.
        let kind = match (here, &agent.npx, &agent.uvx) {
            (Some(_), ..) => "binary",
            (None, Some(_), _) => "npx",
            (None, None, Some(_)) => "uvx",
            (None, None, None) => {
                return Err(format!(
                    "{}: no distribution for this machine (its binaries are for {})",
                    agent.id,
                    agent.binary.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        };
        let package = match kind {
            "npx" => agent.npx.as_ref(),
            "uvx" => agent.uvx.as_ref(),
            _ => None,
        };
        let version = version
            .map(str::to_string)
            .or_else(|| package.and_then(|p| p.pinned.clone()))
            .unwrap_or_else(|| agent.version.clone());
        if !crate::index::valid_version(&version) {
            return Err(format!("{version}: not a version"));
        }
        if kind == "binary" && version != agent.version {
            return Err(format!(
                "{}: the registry has a binary of {} only",
                agent.id, agent.version
            ));
        }
        let mut rec = self.installed(&agent.id).unwrap_or(Installed {
            id: agent.id.clone(),
            ..Installed::default()
        });
        let home = self.dir.join(&agent.id);
        let target = home.join(&version);
        let have = rec.versions.iter().find(|v| v.version == version).cloned();
        if let (Some(old), Some(b)) = (&have, here)
            && kind == "binary"
            && old.archive_sha256.is_some()
            && b.sha256.is_some()
            && old.archive_sha256 != b.sha256
        {
            return Err(format!(
                "{} {version}: the registry now gives another archive for the same version (SHA-256 {}, installed {}): refused",
                agent.id,
                b.sha256.as_deref().unwrap_or_default(),
                old.archive_sha256.as_deref().unwrap_or_default()
            ));
        }
        if have.is_none() || !target.exists() {
            own_dir(&self.dir).map_err(|e| e.to_string())?;
            own_dir(&home).map_err(|e| e.to_string())?;
            let work = tempfile::Builder::new()
                .prefix(".installing-")
                .tempdir_in(&home)
                .map_err(|e| e.to_string())?;
            let mut installed = match (kind, package, here) {
                ("npx", Some(p), _) => Version {
                    program: npm_install(p, &version, work.path(), say)?,
                    ..Version::of(&version, kind, p)
                },
                ("uvx", Some(p), _) => Version {
                    program: uv_install(p, &version, work.path(), say)?,
                    ..Version::of(&version, kind, p)
                },
                (_, _, Some(b)) => binary_install(b, &version, work.path(), say)?,
                _ => return Err("nothing to install".into()),
            };
            installed.installed = now();
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
            rec.versions.push(installed);
        }
        rec.current = version;
        self.save(&rec).map_err(|e| e.to_string())?;
        self.launch(&agent.id)
            .unwrap_or_else(|| Err(format!("{}: installed, but not found", agent.id)))
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

    /// Keeps only the versions of `id` named in `keep` (an update keeps the new one and the
    /// one it replaced): the others' directories go, and their records.
    pub fn prune(&self, id: &str, keep: &[&str]) -> Result<Vec<String>, String> {
        let Some(mut rec) = self.installed(id) else {
            return Ok(Vec::new());
        };
        let gone: Vec<String> = rec
            .versions
            .iter()
            .map(|v| v.version.clone())
            .filter(|v| !keep.contains(&v.as_str()))
            .collect();
        for v in &gone {
            let dir = self.dir.join(id).join(v);
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
            }
        }
        rec.versions.retain(|v| keep.contains(&v.version.as_str()));
        self.save(&rec).map_err(|e| e.to_string())?;
        Ok(gone)
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

/// The program is there — a binary's a file of its own (not a link); a package's command
/// (npm links it into `.bin`) leads to a file inside `home`, the version's directory — and,
/// when its SHA-256 was recorded, still that one.
fn check_program(program: &Path, home: &Path, sha256: Option<&str>) -> Result<(), String> {
    let gone = || {
        format!(
            "{}: not there any more (trellis agents add again)",
            program.display()
        )
    };
    let meta = std::fs::symlink_metadata(program).map_err(|_| gone())?;
    if sha256.is_some() && !meta.is_file() {
        return Err(format!("{}: not a file of its own", program.display()));
    }
    let real = std::fs::canonicalize(program).map_err(|_| gone())?;
    let home = std::fs::canonicalize(home).map_err(|_| gone())?;
    if !real.starts_with(&home) || !real.is_file() {
        return Err(format!(
            "{}: leads outside its install, not started",
            program.display()
        ));
    }
    if let Some(want) = sha256 {
        let got = crate::binary::sha256_of(program).map_err(|e| e.to_string())?;
        if got != want {
            return Err(format!(
                "{}: changed since it was installed (SHA-256 {got}, installed {want}): not started",
                program.display()
            ));
        }
    }
    Ok(())
}

impl Version {
    fn of(version: &str, kind: &str, p: &Package) -> Version {
        Version {
            version: version.to_string(),
            kind: kind.into(),
            program: String::new(),
            args: p.args.clone(),
            env: p.env.clone(),
            installed: 0,
            sha256: None,
            archive_sha256: None,
        }
    }
}

/// A binary distribution: downloaded, its checksum checked against the entry's (when it
/// gives one), unpacked, the program's checksum recorded.
fn binary_install(
    b: &crate::index::Binary,
    version: &str,
    dir: &Path,
    say: &mut dyn FnMut(String),
) -> Result<Version, String> {
    say(format!("downloading {}", b.archive));
    let archive = dir.join(".archive");
    let got = crate::binary::download(&b.archive, &archive)?;
    if let Some(want) = &b.sha256
        && *want != got
    {
        return Err(format!(
            "{}: SHA-256 {got}, the registry says {want}: refused",
            b.archive
        ));
    }
    say(format!("SHA-256 {got}"));
    crate::binary::unpack(&archive, &b.archive, dir, &b.cmd)?;
    let _ = std::fs::remove_file(&archive);
    let program = b.cmd.strip_prefix("./").unwrap_or(&b.cmd).to_string();
    let path = dir.join(&program);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {}
        _ => return Err(format!("the archive has no program {program}")),
    }
    Ok(Version {
        version: version.to_string(),
        kind: "binary".into(),
        sha256: Some(crate::binary::sha256_of(&path).map_err(|e| e.to_string())?),
        archive_sha256: Some(got),
        program,
        args: b.args.clone(),
        env: b.env.clone(),
        installed: 0,
    })
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
    // Relocatable: the directory is moved to its version's name once complete.
    venv.args(["venv", "--quiet", "--relocatable"])
        .arg(dir.join("venv"));
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
