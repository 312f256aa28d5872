//! A binary distribution: the archive downloaded (bounded), its SHA-256 checked against
//! the entry's when it gives one and recorded, and extracted safely — only plain files and
//! directories, every path inside the target (no `..`, nothing absolute), no links, a
//! bound on what it unpacks to. A raw binary (no archive suffix) is the program itself.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::Digest;

/// The largest archive downloaded.
const MAX_ARCHIVE: u64 = 512 << 20;
/// The most an archive may unpack to, and the most entries.
const MAX_UNPACKED: u64 = 2 << 30;
const MAX_ENTRIES: usize = 100_000;

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of the file at `path`.
pub fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// An archive being written, hashed as it comes.
struct Archive {
    file: std::fs::File,
    hash: sha2::Sha256,
}

impl crate::fetch::Sink for Archive {
    fn take(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.hash.update(chunk);
        self.file.write_all(chunk).map_err(|e| e.to_string())
    }
}

/// Downloads `url` to `to` (created new), at most [`MAX_ARCHIVE`] bytes, bounded as
/// [`crate::fetch::Bounds::ARCHIVE`] says; its SHA-256. The address, and every redirect,
/// must be https (or http to this machine).
pub fn download(url: &str, to: &Path) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(|e| e.to_string())?;
    let sink = Archive {
        file,
        hash: sha2::Sha256::new(),
    };
    let bounds = crate::fetch::Bounds {
        max: MAX_ARCHIVE,
        ..crate::fetch::Bounds::ARCHIVE
    };
    let (answer, sink) = crate::fetch::get(url, crate::address::Rule::Secure, &[], bounds, sink)?;
    if answer.status != 200 {
        return Err(format!("{url} answered {}", answer.status));
    }
    Ok(hex(&sink.hash.finalize()))
}

/// A path of an archive entry, checked to stay inside: only plain names (and `.`).
fn inside(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Unpacks the archive at `archive` (named after `url`) into `dir`, or places a raw
/// binary there as `cmd`.
pub fn unpack(archive: &Path, url: &str, dir: &Path, cmd: &str) -> Result<(), String> {
    let name = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let f = std::fs::File::open(archive).map_err(|e| e.to_string())?;
        untar(flate2::read::GzDecoder::new(f), dir)
    } else if name.ends_with(".tar") {
        untar(
            std::fs::File::open(archive).map_err(|e| e.to_string())?,
            dir,
        )
    } else if name.ends_with(".zip") {
        unzip(archive, dir)
    } else if [".tar.bz2", ".tbz2"].iter().any(|s| name.ends_with(s)) {
        let f = std::fs::File::open(archive).map_err(|e| e.to_string())?;
        untar(bzip2::read::BzDecoder::new(f), dir)
    } else if crate::index::installer(&name) {
        Err(format!(
            "{url}: an installer, not an archive: the registry's format has none (tar.gz, tgz, tar.bz2, tbz2, tar, zip, or a raw binary)"
        ))
    } else {
        // A raw binary: the program itself.
        let to = dir.join(inside(Path::new(cmd)).ok_or("cmd is not a path inside")?);
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
        }
        std::fs::copy(archive, &to).map_err(|e| e.to_string())?;
        make_executable(&to)
    }
}

fn make_executable(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())
}

fn untar(r: impl Read, dir: &Path) -> Result<(), String> {
    let mut a = tar::Archive::new(r);
    let mut total = 0u64;
    for (n, entry) in a.entries().map_err(|e| e.to_string())?.enumerate() {
        let mut entry = entry.map_err(|e| format!("the archive: {e}"))?;
        if n >= MAX_ENTRIES {
            return Err(format!("the archive has more than {MAX_ENTRIES} entries"));
        }
        let raw = entry.path().map_err(|e| e.to_string())?.into_owned();
        let Some(rel) = inside(&raw) else {
            return Err(format!(
                "the archive names {}, which is not inside it",
                raw.display()
            ));
        };
        let to = dir.join(&rel);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&to).map_err(|e| e.to_string())?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                total += entry.size();
                if total > MAX_UNPACKED {
                    return Err(format!(
                        "the archive unpacks to more than {MAX_UNPACKED} bytes"
                    ));
                }
                if let Some(p) = to.parent() {
                    std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
                }
                // Created new: an earlier entry (or anything else) is never written through.
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&to)
                    .map_err(|e| format!("{}: {e}", rel.display()))?;
                let size = entry.size();
                std::io::copy(&mut (&mut entry).take(size), &mut f).map_err(|e| e.to_string())?;
                let mode = entry.header().mode().unwrap_or(0o644);
                if mode & 0o111 != 0 {
                    make_executable(&to)?;
                }
            }
            // Links (which could point out), devices, FIFOs: not unpacked.
            other => {
                return Err(format!(
                    "the archive holds {} as a {other:?}, which Trellis does not unpack",
                    rel.display()
                ));
            }
        }
    }
    Ok(())
}

fn unzip(archive: &Path, dir: &Path) -> Result<(), String> {
    let f = std::fs::File::open(archive).map_err(|e| e.to_string())?;
    let mut z = zip::ZipArchive::new(f).map_err(|e| format!("the archive: {e}"))?;
    if z.len() > MAX_ENTRIES {
        return Err(format!("the archive has more than {MAX_ENTRIES} entries"));
    }
    let mut total = 0u64;
    for i in 0..z.len() {
        let mut e = z.by_index(i).map_err(|e| format!("the archive: {e}"))?;
        let Some(rel) = inside(Path::new(e.name())) else {
            return Err(format!(
                "the archive names {}, which is not inside it",
                e.name()
            ));
        };
        let to = dir.join(&rel);
        if e.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| e.to_string())?;
            continue;
        }
        if e.is_symlink() {
            return Err(format!(
                "the archive holds {} as a link, which Trellis does not unpack",
                rel.display()
            ));
        }
        total += e.size();
        if total > MAX_UNPACKED {
            return Err(format!(
                "the archive unpacks to more than {MAX_UNPACKED} bytes"
            ));
        }
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)
            .map_err(|e| format!("{}: {e}", rel.display()))?;
        let size = e.size();
        std::io::copy(&mut (&mut e).take(size), &mut out).map_err(|e| e.to_string())?;
        if e.unix_mode().is_some_and(|m| m & 0o111 != 0) {
            make_executable(&to)?;
        }
    }
    Ok(())
}
