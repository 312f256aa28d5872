//! The extensions' persistent store: one JSON file per namespace,
//! `{"schema": 1, "data": {key: value}}`, replaced atomically on every write.
//!
//! Invariant: a file is never silently overwritten. A file that cannot be read as this
//! schema (corrupt, or written by a newer Trellis) is moved aside to
//! `<name>.json.<reason>-<unix seconds>` and reported; the namespace starts empty.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Version of the store file format.
pub const STORE_SCHEMA: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
}

/// One namespace's store.
#[derive(Debug)]
pub struct ExtStore {
    path: PathBuf,
    data: BTreeMap<String, Value>,
}

/// What opening a store found wrong (the store is still usable, empty).
#[derive(Debug, Clone, PartialEq)]
pub struct StoreProblem {
    pub message: String,
    /// Where the unreadable file was moved.
    pub kept_at: Option<PathBuf>,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ExtStore {
    /// Opens namespace `ns` under `dir`. A missing file is an empty store.
    pub fn open(dir: &Path, ns: &str) -> (ExtStore, Option<StoreProblem>) {
        let path = dir.join(format!("{ns}.json"));
        let mut store = ExtStore {
            path: path.clone(),
            data: BTreeMap::new(),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (store, None),
            Err(e) => {
                // Unreadable (permissions, not UTF-8): keep it aside like a corrupt file.
                let problem = store.set_aside("unreadable", &e.to_string());
                return (store, Some(problem));
            }
        };
        let parsed: Result<Value, _> = serde_json::from_str(&text);
        let problem = match parsed {
            Err(e) => Some(("corrupt", format!("not valid JSON: {e}"))),
            Ok(v) => match v.get("schema").and_then(Value::as_u64) {
                Some(s) if s > STORE_SCHEMA => Some((
                    "newer",
                    format!(
                        "written by a newer Trellis (schema {s}; this one reads {STORE_SCHEMA})"
                    ),
                )),
                Some(_) => match v.get("data").and_then(Value::as_object) {
                    Some(map) => {
                        store.data = map.clone().into_iter().collect();
                        None
                    }
                    None => Some(("corrupt", "no \"data\" object".to_string())),
                },
                None => Some(("corrupt", "no \"schema\" number".to_string())),
            },
        };
        match problem {
            None => (store, None),
            Some((reason, message)) => {
                let p = store.set_aside(reason, &message);
                (store, Some(p))
            }
        }
    }

    /// The data of namespace `ns` under `dir`, read without touching anything (a
    /// replay): empty when the file is missing, unreadable, corrupt or newer.
    pub fn read_only(dir: &Path, ns: &str) -> BTreeMap<String, Value> {
        std::fs::read_to_string(dir.join(format!("{ns}.json")))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(|v| {
                v.get("schema")
                    .and_then(Value::as_u64)
                    .is_some_and(|s| s <= STORE_SCHEMA)
            })
            .and_then(|v| v.get("data").and_then(Value::as_object).cloned())
            .map(|m| m.into_iter().collect())
            .unwrap_or_default()
    }

    fn set_aside(&mut self, reason: &str, message: &str) -> StoreProblem {
        let mut aside = self.path.clone().into_os_string();
        aside.push(format!(".{reason}-{}", unix_now()));
        let aside = PathBuf::from(aside);
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => StoreProblem {
                message: format!(
                    "{}: {message}; kept as {}",
                    self.path.display(),
                    aside.display()
                ),
                kept_at: Some(aside),
            },
            Err(e) => StoreProblem {
                message: format!(
                    "{}: {message}; could not move it aside ({e}), so it will not be written",
                    self.path.display()
                ),
                kept_at: None,
            },
        }
        .tap_poison(self)
    }

    /// Every key and value.
    pub fn entries(&self) -> Vec<(String, Value)> {
        self.data
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.data.keys()
    }

    /// Sets (or with `None` removes) a key and writes the file atomically.
    pub fn put(&mut self, key: &str, value: Option<Value>) -> Result<(), StoreError> {
        if self.path.as_os_str().is_empty() {
            return Err(StoreError::Io {
                path: PathBuf::new(),
                message: "the store file could not be set aside earlier; not writing".into(),
            });
        }
        match value {
            Some(v) => self.data.insert(key.to_string(), v),
            None => self.data.remove(key),
        };
        self.write()
    }

    fn write(&self) -> Result<(), StoreError> {
        let io = |e: std::io::Error| StoreError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let body = serde_json::json!({"schema": STORE_SCHEMA, "data": self.data});
        let tmp = self
            .path
            .with_extension(format!("json.tmp-{}", std::process::id()));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(body.to_string().as_bytes())?;
            f.sync_data()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(io)
    }
}

trait TapPoison {
    fn tap_poison(self, store: &mut ExtStore) -> Self;
}

impl TapPoison for StoreProblem {
    /// When the bad file could not be moved aside, the store must never write over it.
    fn tap_poison(self, store: &mut ExtStore) -> StoreProblem {
        if self.kept_at.is_none() {
            store.path = PathBuf::new();
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_atomic_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, p) = ExtStore::open(dir.path(), "stats");
        assert!(p.is_none());
        s.put("a", Some(serde_json::json!({"n": 1}))).unwrap();
        let (s2, _) = ExtStore::open(dir.path(), "stats");
        assert_eq!(s2.get("a"), Some(&serde_json::json!({"n": 1})));
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn corrupt_and_newer_files_are_kept_aside_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.json"), "{not json").unwrap();
        let (mut s, p) = ExtStore::open(dir.path(), "x");
        let p = p.expect("reported");
        assert!(p.message.contains("not valid JSON"), "{}", p.message);
        let kept = p.kept_at.unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "{not json");
        s.put("k", Some(1.into())).unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "{not json");

        std::fs::write(
            dir.path().join("y.json"),
            r#"{"schema": 9, "data": {"k": 1}}"#,
        )
        .unwrap();
        let (s, p) = ExtStore::open(dir.path(), "y");
        assert!(s.get("k").is_none());
        let p = p.unwrap();
        assert!(
            p.message.contains("newer Trellis (schema 9"),
            "{}",
            p.message
        );
        assert!(
            std::fs::read_to_string(p.kept_at.unwrap())
                .unwrap()
                .contains("\"schema\": 9")
        );
    }
}
