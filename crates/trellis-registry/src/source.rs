//! Where the index comes from (`[registry] url`): the public registry by default, any
//! http(s) address, a `registry.json` on disk, or a directory of `<id>/agent.json` files
//! assembled as the registry's own build does (for air-gapped teams and tests). A fetched
//! index is cached with its validators and asked for again conditionally; when the network
//! fails the cached copy is used, and said to be.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::address::Rule;
use crate::fetch::{self, Bounds};
use crate::index::{Index, MAX_INDEX};

/// The public registry's index.
pub const DEFAULT_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// The largest `agent.json` read from a directory.
const MAX_ENTRY: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Url(String),
    File(PathBuf),
    Dir(PathBuf),
}

impl Source {
    /// From the setting (`None`: the public registry). An address is one with a scheme;
    /// anything else is a path, a directory or a file.
    pub fn from_setting(setting: Option<&str>) -> Source {
        match setting.map(str::trim).filter(|s| !s.is_empty()) {
            None => Source::Url(DEFAULT_URL.into()),
            Some(s) if s.contains("://") => Source::Url(s.into()),
            Some(s) => {
                let p = PathBuf::from(s);
                if p.is_dir() {
                    Source::Dir(p)
                } else {
                    Source::File(p)
                }
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Url(u) => u.clone(),
            Source::File(p) | Source::Dir(p) => p.display().to_string(),
        }
    }
}

/// An index as loaded, and what to say about where it came from (a cached copy, offline).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub index: Index,
    pub said: Option<String>,
}

/// The validators of the cached copy.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Meta {
    url: String,
    etag: Option<String>,
    last_modified: Option<String>,
    /// Unix seconds.
    fetched: u64,
}

/// Loads the index from `source`, the cache in `cache_dir` for addresses; `rule`: which
/// addresses it may come from (plain http elsewhere than this machine only when the user
/// accepted it).
pub fn load(source: &Source, cache_dir: &Path, rule: Rule) -> Result<Loaded, String> {
    match source {
        Source::File(p) => {
            let text = read_bounded(p, MAX_INDEX as u64)?;
            Ok(Loaded {
                index: Index::parse(&text).map_err(|e| format!("{}: {e}", p.display()))?,
                said: None,
            })
        }
        Source::Dir(d) => Ok(Loaded {
            index: assemble(d)?,
            said: None,
        }),
        Source::Url(u) => fetch(u, cache_dir, rule),
    }
}

/// The index without going to the network: a file or a directory as [`load`] reads them,
/// an address's cached copy (none when there is none).
pub fn load_local(source: &Source, cache_dir: &Path) -> Option<Index> {
    match source {
        Source::Url(u) => cached(cache_dir, u).and_then(|(_, text)| Index::parse(&text).ok()),
        other => load(other, cache_dir, Rule::Secure).ok().map(|l| l.index),
    }
}

/// A regular file (a link or a FIFO is refused), at most `max` bytes.
fn read_bounded(p: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", p.display()));
    }
    let f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut text = String::new();
    f.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if text.len() as u64 > max {
        return Err(format!("{}: larger than {max} bytes", p.display()));
    }
    Ok(text)
}

/// The index a directory of `<id>/agent.json` files makes, as the registry's build makes
/// it: directories starting with `.` or `_` are not entries; links are not followed.
pub fn assemble(dir: &Path) -> Result<Index, String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !n.starts_with('_'))
        .collect();
    names.sort();
    let mut entries = Vec::new();
    let mut unreadable = Vec::new();
    for n in names {
        let file = dir.join(&n).join("agent.json");
        if !file.exists() {
            continue;
        }
        match read_bounded(&file, MAX_ENTRY).and_then(|t| {
            serde_json::from_str::<serde_json::Value>(&t).map_err(|e| format!("not JSON: {e}"))
        }) {
            // The directory names the entry: an id that says otherwise is refused (one
            // entry cannot pass for another's directory).
            Ok(v) if v.get("id").and_then(serde_json::Value::as_str) != Some(n.as_str()) => {
                unreadable.push((
                    n.clone(),
                    format!("its id is not its directory's name `{}`", n.escape_debug()),
                ));
            }
            Ok(v) => entries.push(v),
            Err(e) => unreadable.push((n, e)),
        }
    }
    let mut index = Index::from_entries("local".into(), &entries);
    index.refused.extend(unreadable);
    Ok(index)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The cached copy of `url`, if there is one of that address.
fn cached(cache_dir: &Path, url: &str) -> Option<(Meta, String)> {
    let meta: Meta =
        serde_json::from_str(&read_bounded(&cache_dir.join("registry.meta.json"), 64 << 10).ok()?)
            .ok()?;
    if meta.url != url {
        return None;
    }
    let text = read_bounded(&cache_dir.join("registry.json"), MAX_INDEX as u64).ok()?;
    Some((meta, text))
}

/// Writes `text` to `name` in `dir` (made private if missing): beside it first, then moved
/// into place, so a link planted there is replaced, never followed.
fn put(dir: &Path, name: &str, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text)?;
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

fn ago(secs: u64) -> String {
    let d = now().saturating_sub(secs);
    match d {
        0..120 => format!("{d} s ago"),
        120..7200 => format!("{} min ago", d / 60),
        7200..172_800 => format!("{} h ago", d / 3600),
        _ => format!("{} days ago", d / 86_400),
    }
}

/// Fetches `url` (conditionally, when a cached copy has validators); the cached copy when
/// the network fails, said so. `rule`: which addresses it may come from (see
/// [`crate::address`]).
fn fetch(url: &str, cache_dir: &Path, rule: Rule) -> Result<Loaded, String> {
    let old = cached(cache_dir, url);
    let mut headers = Vec::new();
    if let Some((m, _)) = &old {
        if let Some(e) = &m.etag {
            headers.push(("If-None-Match".to_string(), e.clone()));
        }
        if let Some(l) = &m.last_modified {
            headers.push(("If-Modified-Since".to_string(), l.clone()));
        }
    }
    let offline = |why: String, old: Option<(Meta, String)>| -> Result<Loaded, String> {
        match old {
            Some((m, text)) => Ok(Loaded {
                index: Index::parse(&text)?,
                said: Some(format!("{why}: the registry as cached {}", ago(m.fetched))),
            }),
            None => Err(format!("{why} (and no cached copy)")),
        }
    };
    // An address the rule refuses is refused outright, cached copy or not.
    crate::address::check(url, rule).map_err(|why| format!("{url}: {why}"))?;
    let (answer, body) = match fetch::get(url, rule, &headers, Bounds::INDEX, Vec::new()) {
        Ok(got) => got,
        Err(why) => return offline(why, old),
    };
    let status = answer.status;
    if status == 304
        && let Some((mut m, text)) = old
    {
        m.fetched = now();
        let _ = put(
            cache_dir,
            "registry.meta.json",
            &serde_json::to_vec(&m).unwrap_or_default(),
        );
        return Ok(Loaded {
            index: Index::parse(&text)?,
            said: None,
        });
    }
    if status != 200 {
        return offline(format!("{url} answered {status}"), old);
    }
    let (etag, last_modified) = (answer.etag, answer.last_modified);
    let text = match String::from_utf8(body) {
        Ok(t) => t,
        Err(_) => return offline(format!("{url}: not UTF-8 text"), old),
    };
    // Only an index that reads is kept (a broken one must not replace a good copy).
    let index = match Index::parse(&text) {
        Ok(i) => i,
        Err(e) => return offline(format!("{url}: {e}"), old),
    };
    let meta = Meta {
        url: url.to_string(),
        etag,
        last_modified,
        fetched: now(),
    };
    let saved = put(cache_dir, "registry.json", text.as_bytes()).and_then(|()| {
        put(
            cache_dir,
            "registry.meta.json",
            &serde_json::to_vec(&meta).unwrap_or_default(),
        )
    });
    Ok(Loaded {
        index,
        said: saved
            .err()
            .map(|e| format!("the index could not be cached: {e}")),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_directory_entry_is_the_one_its_directory_names() {
        let tmp = tempfile::tempdir().unwrap();
        for (dir, id) in [("good", "good"), ("claimed", "other")] {
            std::fs::create_dir(tmp.path().join(dir)).unwrap();
            std::fs::write(
                tmp.path().join(dir).join("agent.json"),
                serde_json::json!({"id": id, "name": id, "version": "1.0.0",
                    "description": "d", "distribution": {"npx": {"package": "a"}}})
                .to_string(),
            )
            .unwrap();
        }
        let index = super::assemble(tmp.path()).unwrap();
        let ids: Vec<_> = index.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["good"]);
        assert!(
            index
                .refused
                .iter()
                .any(|(n, why)| n == "claimed" && why.contains("directory")),
            "{:?}",
            index.refused
        );
    }
}
