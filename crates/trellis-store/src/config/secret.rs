//! Secrets a config names (`token`, `headers` of an agent elsewhere): read from the
//! environment (taken out of it at the start, so that no process Trellis starts sees
//! them), from a file's first line, or written in the config for what is no secret.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// A header value from the environment, a file, or the config itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Secret {
    /// `{ env = "AGENT_TOKEN" }`
    Env { env: String },
    /// `{ file = "~/.config/agent-token" }` (its first line)
    File { file: PathBuf },
    /// Written in the config (for what is no secret).
    Text(String),
}

/// What a secret's value may be, said where one is written otherwise.
const SECRET_SHAPES: &str =
    "a value is { env = \"NAME\" }, { file = \"PATH\" } or text (for what is no secret)";

impl<'de> Deserialize<'de> for Secret {
    /// Read by hand, not as an untagged enum: serde's "did not match any variant" says
    /// nothing of what to write, and `{ env, file }` together would be taken as `env`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            Text(String),
            Table(BTreeMap<String, toml::Value>),
        }
        let table = match Shape::deserialize(d).map_err(|_| D::Error::custom(SECRET_SHAPES))? {
            Shape::Text(t) => return Ok(Secret::Text(t)),
            Shape::Table(t) => t,
        };
        let text = |v: &toml::Value, key: &str| -> Result<String, D::Error> {
            match v.as_str() {
                Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
                Some(_) => Err(D::Error::custom(format!(
                    "{{ {key} = \"\" }}: give the {}",
                    if key == "env" {
                        "variable's name"
                    } else {
                        "file's path"
                    }
                ))),
                None => Err(D::Error::custom(format!("{key} is text: {SECRET_SHAPES}"))),
            }
        };
        match (table.get("env"), table.get("file"), table.len()) {
            (Some(e), None, 1) => Ok(Secret::Env {
                env: text(e, "env")?,
            }),
            (None, Some(f), 1) => Ok(Secret::File {
                file: PathBuf::from(text(f, "file")?),
            }),
            (Some(_), Some(_), 2) => Err(D::Error::custom(
                "{ env } and { file } together: give one of them",
            )),
            _ => {
                let keys: Vec<&str> = table.keys().map(String::as_str).collect();
                Err(D::Error::custom(format!(
                    "{{ {} }}: {SECRET_SHAPES}",
                    keys.join(", ")
                )))
            }
        }
    }
}

/// Secrets taken out of this process's environment at its start (see
/// [`Config::secret_env_names`]): no process Trellis starts inherits them, and
/// [`Secret::value`] reads them here.
static TAKEN: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();

/// Keeps the secrets taken out of the environment (once, at the start).
pub fn keep_taken_secrets(taken: BTreeMap<String, String>) {
    let _ = TAKEN.set(taken);
}

/// The secrets taken out of the environment: for a Trellis of this one's own (a hub
/// started in the background), never an agent or anything else.
pub fn taken_secrets() -> impl Iterator<Item = (&'static String, &'static String)> {
    TAKEN.get().into_iter().flatten()
}

impl Secret {
    /// The value, or why it cannot be had (never the value itself).
    pub fn value(&self) -> Result<String, String> {
        match self {
            Secret::Text(t) => Ok(t.clone()),
            Secret::Env { env } => TAKEN
                .get()
                .and_then(|t| t.get(env).cloned())
                .or_else(|| std::env::var(env).ok())
                .ok_or_else(|| {
                    format!(
                        "the environment variable {env} is not set where this Trellis runs (a hub started before it was set does not have it: trellis serve --stop, then again; {{ file = \"…\" }} does not depend on it)"
                    )
                })
                .and_then(|v| {
                    let v = v.trim();
                    if v.is_empty() {
                        Err(format!("the environment variable {env} is set but empty"))
                    } else {
                        Ok(v.to_string())
                    }
                }),
            Secret::File { file } => {
                let path = crate::paths::expand_home(file);
                let text = first_bytes(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                match text.lines().next().map(str::trim) {
                    Some(l) if !l.is_empty() => Ok(l.to_string()),
                    _ if text.trim().is_empty() => Err(format!("{}: empty", path.display())),
                    // The secret is the first line's: a file that starts with a blank
                    // line has none there.
                    _ => Err(format!(
                        "{}: its first line is blank (the secret is the file's first line)",
                        path.display()
                    )),
                }
            }
        }
    }
}

/// The most of a secret's file read: its first line is the secret.
const SECRET_FILE_CAP: u64 = 64 << 10;

/// The start of the regular file at `path`, as text: a FIFO or a device named by mistake
/// is refused, not waited on or read without end.
fn first_bytes(path: &std::path::Path) -> std::io::Result<String> {
    let (bytes, _) = crate::paths::read_regular(path, SECRET_FILE_CAP)?;
    // The first line, the secret, must be text as it is; the rest is only looked at.
    let first = memchr::memchr(b'\n', &bytes).unwrap_or(bytes.len());
    if std::str::from_utf8(&bytes[..first]).is_err() {
        return Err(std::io::Error::other("its first line is not UTF-8 text"));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
