//! Where plugins live, which are enabled with what, and which project plugins the user
//! trusts — and turning that into plugins for the host.
//!
//! - User scope: `DATA/plugins/<name>/` (copies made by `trellis plugin install`, their
//!   content hash pinned in `DATA/plugins.lock`).
//! - Project scope: `<project>/.trellis/plugins/<name>/`. **A cloned repository never
//!   runs code by itself**: a project plugin runs only once the user enabled it for that
//!   project, which records its content hash; when the files change, it stops running
//!   until the user enables (and so reviews) it again.
//! - `DATA/plugins.json`: what is enabled, in which scope, with which grant and hash.
//!
//! Every file here is written atomically (a temporary file created exclusively, then
//! renamed over) and read defensively (a corrupt or newer file is set aside, reported,
//! never overwritten blindly).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trellis_core::ext::Capability;

use crate::adapter::{Limits, PluginSpec};
use crate::package::Package;
use crate::process::Launch;

/// Schema of `plugins.json` and `plugins.lock`.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    User,
    Project,
}

/// One enabled plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub name: String,
    pub scope: Scope,
    /// The project directory (project scope only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    /// Capabilities granted (what the package asked for when it was enabled).
    pub grant: Vec<String>,
    /// The content hash the user enabled (and so trusted).
    pub hash: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    #[serde(default)]
    pub schema: u32,
    #[serde(default)]
    pub enabled: Vec<Enabled>,
}

/// One installed (copied) plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Locked {
    pub source: String,
    pub version: String,
    pub hash: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    #[serde(default)]
    pub schema: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
}

/// A plugin found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    pub scope: Scope,
    pub dir: PathBuf,
    pub package: Result<Package, String>,
}

/// Trellis's plugin directories for one project.
#[derive(Debug, Clone)]
pub struct Registry {
    pub data: PathBuf,
    pub project: Option<PathBuf>,
}

/// Writes `value` as JSON to `path` atomically.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    use std::io::Write;
    let dir = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let text = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    tmp.write_all(&text)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("{}: {}", path.display(), e.error))?;
    Ok(())
}

/// Reads a JSON file of ours; a missing file is the default. A file that cannot be
/// read, is corrupt or has a newer schema is moved aside and reported.
pub fn read_json<T: Default + serde::de::DeserializeOwned>(
    path: &Path,
    schema: fn(&T) -> u32,
) -> (T, Option<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (T::default(), None),
        Err(e) => return (T::default(), Some(format!("{}: {e}", path.display()))),
    };
    let why = match serde_json::from_str::<T>(&text) {
        Ok(v) if schema(&v) <= SCHEMA => return (v, None),
        Ok(_) => "written by a newer Trellis".to_string(),
        Err(e) => format!("not valid: {e}"),
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let aside = path.with_extension(format!("json.aside-{stamp}"));
    let _ = std::fs::rename(path, &aside);
    (
        T::default(),
        Some(format!(
            "{} was {why}; moved to {} and started empty",
            path.display(),
            aside.display()
        )),
    )
}

impl Registry {
    pub fn new(data: PathBuf, project: Option<PathBuf>) -> Registry {
        let project = project.map(|p| p.canonicalize().unwrap_or(p));
        Registry { data, project }
    }

    pub fn user_dir(&self) -> PathBuf {
        self.data.join("plugins")
    }

    pub fn project_dir(&self) -> Option<PathBuf> {
        self.project
            .as_ref()
            .map(|p| p.join(".trellis").join("plugins"))
    }

    fn state_path(&self) -> PathBuf {
        self.data.join("plugins.json")
    }

    fn lock_path(&self) -> PathBuf {
        self.data.join("plugins.lock")
    }

    pub fn state(&self) -> (State, Option<String>) {
        read_json(&self.state_path(), |s: &State| s.schema)
    }

    pub fn save_state(&self, s: &State) -> Result<(), String> {
        let mut s = s.clone();
        s.schema = SCHEMA;
        write_json(&self.state_path(), &s)
    }

    pub fn lock(&self) -> (Lock, Option<String>) {
        read_json(&self.lock_path(), |s: &Lock| s.schema)
    }

    pub fn save_lock(&self, l: &Lock) -> Result<(), String> {
        let mut l = l.clone();
        l.schema = SCHEMA;
        write_json(&self.lock_path(), &l)
    }

    /// Every plugin on disk: the project's first, then the user's.
    pub fn found(&self) -> Vec<Found> {
        let mut out = Vec::new();
        let dirs = [
            (Scope::Project, self.project_dir()),
            (Scope::User, Some(self.user_dir())),
        ];
        for (scope, dir) in dirs {
            let Some(dir) = dir else { continue };
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            entries.sort();
            for d in entries {
                out.push(Found {
                    scope,
                    package: Package::load(&d),
                    dir: d,
                });
            }
        }
        out
    }

    /// The plugin named `name` on disk (the project's wins).
    pub fn find(&self, name: &str) -> Option<Found> {
        self.found().into_iter().find(|f| match &f.package {
            Ok(p) => p.name == name,
            Err(_) => f.dir.file_name().is_some_and(|n| n == name),
        })
    }

    /// Whether `e` applies here (user scope, or this project).
    pub fn applies(&self, e: &Enabled) -> bool {
        match e.scope {
            Scope::User => true,
            Scope::Project => e.project.is_some() && e.project == self.project,
        }
    }

    /// The plugin's own directories: data (`PLUGIN_DATA`) and its log file.
    pub fn data_dir(&self, name: &str) -> PathBuf {
        self.data.join("plugin-data").join(name)
    }

    pub fn log_file(&self, name: &str) -> PathBuf {
        self.data
            .join("logs")
            .join("plugins")
            .join(format!("{name}.log"))
    }

    /// The Python SDK shipped with this Trellis, written where plugins find it (on
    /// `PYTHONPATH`); returns its directory.
    pub fn python_sdk(&self) -> Option<PathBuf> {
        let dir = self.data.join("sdk").join("python");
        let file = dir.join("trellis_plugin.py");
        let want = crate::sdk::PYTHON.as_bytes();
        if std::fs::read(&file).ok().as_deref() != Some(want) {
            write_bytes(&file, want).ok()?;
        }
        Some(dir)
    }

    /// What to run for an enabled plugin, or why it does not run.
    pub fn spec_for(&self, e: &Enabled, on_spawn: Option<fn(u32)>) -> Result<PluginSpec, String> {
        let found = self
            .find(&e.name)
            .filter(|f| f.scope == e.scope)
            .ok_or_else(|| format!("plugin {} is enabled but not installed", e.name))?;
        let package = found.package?;
        let hash = package.hash()?;
        if hash != e.hash {
            return Err(format!(
                "plugin {}: its files changed since it was enabled ({} → {}); not started. Review it and run `trellis plugin enable {}` to trust the new content",
                e.name,
                short(&e.hash),
                short(&hash),
                e.name
            ));
        }
        spec_of(&package, self, on_spawn)
    }

    /// Every enabled plugin that applies here, as specs and grants; problems as notes.
    pub fn enabled_specs(
        &self,
        on_spawn: Option<fn(u32)>,
    ) -> (Vec<(PluginSpec, Vec<Capability>)>, Vec<String>) {
        let (state, problem) = self.state();
        let mut notes: Vec<String> = problem.into_iter().collect();
        let mut out = Vec::new();
        let found = self.found();
        for e in state.enabled.iter().filter(|e| self.applies(e)) {
            match self.spec_for(e, on_spawn) {
                Ok(s) => {
                    // What its plugin.json has that this Trellis ignores, said each run.
                    if let Some(p) = found
                        .iter()
                        .filter(|f| f.scope == e.scope)
                        .filter_map(|f| f.package.as_ref().ok())
                        .find(|p| p.name == e.name)
                    {
                        notes.extend(
                            p.warnings
                                .iter()
                                .map(|w| format!("plugin {} plugin.json: {w}", p.name)),
                        );
                    }
                    let grant = e
                        .grant
                        .iter()
                        .filter_map(|c| Capability::parse(c))
                        .collect();
                    out.push((s, grant));
                }
                Err(why) => notes.push(why),
            }
        }
        // Project plugins nobody enabled: said, never run.
        for f in self.found() {
            if f.scope != Scope::Project {
                continue;
            }
            if let Ok(p) = &f.package
                && p.trellis.is_some()
                && !state
                    .enabled
                    .iter()
                    .any(|e| e.scope == Scope::Project && e.name == p.name && self.applies(e))
            {
                notes.push(format!(
                    "this project has plugin {} ({}); it does not run until you enable it: `trellis plugin enable {}`",
                    p.name,
                    f.dir.display(),
                    p.name
                ));
            }
        }
        (out, notes)
    }
}

/// A compiled script (`./x.mjs`, `./x.js`) older than its TypeScript source beside it
/// (`x.mts`, `x.ts`) by more than 2 s: running it would run yesterday's plugin without a
/// word.
fn stale_build(root: &std::path::Path, command: &[String]) -> Result<(), String> {
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    for arg in command {
        let Some(rel) = arg.strip_prefix("./") else {
            continue;
        };
        let built = root.join(rel);
        let sources: &[&str] = match built.extension().and_then(|e| e.to_str()) {
            Some("mjs") => &["mts"],
            Some("js") => &["ts"],
            _ => continue,
        };
        for ext in sources {
            let source = built.with_extension(ext);
            // (a checkout writes both within moments, in either order)
            if let (Some(src), Some(out)) = (modified(&source), modified(&built))
                && src
                    .duration_since(out)
                    .is_ok_and(|d| d > std::time::Duration::from_secs(2))
            {
                return Err(format!(
                    "{rel} is older than {}: build it first: `{}`",
                    source
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    build_command(root)
                ));
            }
        }
    }
    Ok(())
}

/// The command that builds the TypeScript plugin in `root`, from anywhere: its
/// `package.json`'s `build` script when it has one (a scaffold's compiles with the
/// TypeScript it pins, with or without `npm install`), else the compiler with its
/// `tsconfig.json` (named by its package: `npx` given only `tsc` fetches an unrelated
/// package of that name).
pub fn build_command(root: &Path) -> String {
    let script = std::fs::read_to_string(root.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v["scripts"]["build"].is_string());
    let dir = shell_word(&root.to_string_lossy());
    if script {
        format!("npm run build --prefix {dir}")
    } else {
        format!("npx --yes --package typescript tsc -p {dir}")
    }
}

/// `s` as one word of a POSIX shell.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The spec to run `package` with.
pub fn spec_of(
    package: &Package,
    reg: &Registry,
    on_spawn: Option<fn(u32)>,
) -> Result<PluginSpec, String> {
    let manifest = package.manifest().ok_or_else(|| {
        format!(
            "{} is not a Trellis plugin (no \"dev.trellis\" part)",
            package.name
        )
    })?;
    let t = package.trellis.as_ref().ok_or("no dev.trellis part")?;
    if !t.api.iter().any(|v| crate::protocol::VERSIONS.contains(v)) {
        return Err(format!(
            "plugin {} speaks protocol versions {:?}; this Trellis speaks {:?}",
            package.name,
            t.api,
            crate::protocol::VERSIONS
        ));
    }
    stale_build(&package.root, &t.command)?;
    let mut env = Vec::new();
    if let Some(sdk) = reg.python_sdk() {
        env.push(("PYTHONPATH".to_string(), sdk.to_string_lossy().into_owned()));
    }
    Ok(PluginSpec {
        manifest,
        launch: Launch {
            name: package.name.clone(),
            root: package.root.clone(),
            data: Some(reg.data_dir(&package.name)),
            command: t.command.clone(),
            log_file: Some(reg.log_file(&package.name)),
            env,
            max_line: Limits::default().max_line,
            on_spawn,
        },
        limits: Limits::default(),
        hub: t.hub,
    })
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let dir = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(bytes).map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(())
}

/// A hash as shown to people (`sha256:` and 12 hex digits).
pub fn short(hash: &str) -> String {
    hash.chars().take(19).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stale build names the one command that builds it, which works from a fresh
    /// scaffold: its `npm run build` (never `npx tsc`, which fetches another package).
    #[test]
    fn a_stale_build_says_the_command_that_builds_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("my plugin");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("plugin.mts"), "").unwrap();
        std::fs::write(root.join("plugin.mjs"), "").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .append(true)
            .open(root.join("plugin.mjs"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let command = ["node".to_string(), "./plugin.mjs".to_string()];
        let quoted = format!("'{}'", root.display());
        let e = stale_build(&root, &command).unwrap_err();
        assert_eq!(
            e,
            format!(
                "plugin.mjs is older than plugin.mts: build it first: `npx --yes --package typescript tsc -p {quoted}`"
            )
        );
        std::fs::write(
            root.join("package.json"),
            r#"{"scripts": {"build": "anything"}}"#,
        )
        .unwrap();
        let e = stale_build(&root, &command).unwrap_err();
        assert!(
            e.ends_with(&format!(
                "build it first: `npm run build --prefix {quoted}`"
            )),
            "{e}"
        );
        assert!(!e.contains("npx"), "{e}");
    }

    #[test]
    fn state_files_round_trip_and_bad_ones_are_set_aside() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::new(d.path().to_path_buf(), None);
        let s = State {
            schema: 1,
            enabled: vec![Enabled {
                name: "x".into(),
                scope: Scope::User,
                project: None,
                grant: vec!["observe".into()],
                hash: "sha256:00".into(),
            }],
        };
        r.save_state(&s).unwrap();
        assert_eq!(r.state(), (s, None));
        std::fs::write(d.path().join("plugins.json"), "{nope").unwrap();
        let (s, p) = r.state();
        assert!(s.enabled.is_empty());
        assert!(p.unwrap().contains("moved to"));
        std::fs::write(d.path().join("plugins.json"), r#"{"schema": 9}"#).unwrap();
        assert!(r.state().1.unwrap().contains("newer Trellis"));
    }
}
