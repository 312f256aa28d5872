//! `trellis plugin install`: a package from a directory or from npm, copied whole into
//! the user's plugins (built beside, then moved in place: never half a package), its
//! content hash locked; an update of an enabled plugin runs again only once trusted anew.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use trellis_plugin::Package;
use trellis_plugin::package::Entry;
use trellis_plugin::registry::{Locked, Scope, short};

use super::{command_of, registry, warn};
use crate::output::safe;

pub(super) fn install(source: &str) -> anyhow::Result<ExitCode> {
    let reg = registry()?;
    let unpacked;
    let dir: PathBuf = if let Some(spec) = source.strip_prefix("npm:") {
        unpacked = npm_fetch(spec)?;
        unpacked.path().join("package")
    } else {
        PathBuf::from(source)
    };
    let p = Package::load(&dir).map_err(|e| anyhow!("{source}: {e}"))?;
    let Some(t) = &p.trellis else {
        bail!("{source}: not a Trellis plugin (no \"dev.trellis\" part)");
    };
    warn(&p);
    if let Err(e) = command_of(&p, t) {
        bail!(
            "{source}: not installed: its command {} (trellis plugin validate says more)",
            safe(&e)
        );
    }
    let files = trellis_plugin::package::files(&p.root).map_err(|e| anyhow!(e))?;
    let user = reg.user_dir();
    std::fs::create_dir_all(&user)?;
    // Built beside the target, then moved in place: never half a package.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{}-", p.name))
        .tempdir_in(&user)?;
    if let Some(rel) = trellis_plugin::package::link_out(&p.root, &files) {
        bail!(
            "{source}: {} links outside the package (or to nothing)",
            safe(&rel)
        );
    }
    for (rel, entry) in &files {
        let target = staging.path().join(rel);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d)?;
        }
        match entry {
            // Inside the package (checked above): kept as the link it is.
            Entry::Link(t) => std::os::unix::fs::symlink(t, &target)?,
            Entry::File { exec, bytes } => {
                std::fs::write(&target, bytes)?;
                if *exec {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
                }
            }
        }
    }
    let hash = trellis_plugin::package::content_hash(staging.path()).map_err(|e| anyhow!(e))?;
    let dest = user.join(&p.name);
    if dest.exists() {
        let old = user.join(format!(".{}-old-{}", p.name, std::process::id()));
        std::fs::rename(&dest, &old)?;
        std::fs::rename(staging.keep(), &dest)?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(staging.keep(), &dest)?;
    }
    let (mut lock, _) = reg.lock();
    lock.plugins.insert(
        p.name.clone(),
        Locked {
            source: source.to_string(),
            version: p.version.clone(),
            hash: hash.clone(),
        },
    );
    reg.save_lock(&lock).map_err(|e| anyhow!(e))?;
    out!(
        "Installed {} {} into {} ({}).",
        p.name,
        p.version,
        dest.display(),
        short(&hash)
    );
    // An update of an enabled plugin keeps running only once the user says so again.
    let (state, _) = reg.state();
    if state
        .enabled
        .iter()
        .any(|e| e.name == p.name && e.scope == Scope::User && e.hash != hash)
    {
        out!(
            "It was enabled with other content: run `trellis plugin enable {}` to review and trust this version.",
            p.name
        );
    } else if !state
        .enabled
        .iter()
        .any(|e| e.name == p.name && e.scope == Scope::User)
    {
        out!("Enable it with `trellis plugin enable {}`.", p.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// `npm pack NAME@VERSION` into a temporary directory, unpacked (`package/`).
fn npm_fetch(spec: &str) -> anyhow::Result<tempfile::TempDir> {
    if !spec.contains('@') || spec.starts_with('-') {
        bail!("npm:{spec}: name it with a version, e.g. npm:my-plugin@1.2.0");
    }
    let tmp = tempfile::tempdir()?;
    let out = std::process::Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(tmp.path())
        .arg(spec)
        .output()
        .context("cannot run npm (is Node installed?)")?;
    if !out.status.success() {
        bail!(
            "npm pack {spec}: {}",
            safe(&String::from_utf8_lossy(&out.stderr))
        );
    }
    let tgz = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    let status = std::process::Command::new("tar")
        .args(["-xzf", &tgz, "--no-same-owner", "--no-same-permissions"])
        .current_dir(tmp.path())
        .status()
        .context("cannot run tar")?;
    if !status.success() {
        bail!("cannot unpack {tgz}");
    }
    Ok(tmp)
}
