//! The checks of an index entry's fields, each refusing with a reason what could name
//! something else or change what runs: ids and versions (they name Trellis's
//! directories), command names, paths inside an archive, arguments, environment (no
//! variable that loads other code), archive addresses, installers, and package specs
//! split into name and version.

use serde_json::Value;

/// An id: lowercase letters, digits, `.`, `_`, `-`, starting with a letter or digit
/// (it names a directory of Trellis's: nothing else may get through).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
        && !id.contains("..")
}

pub(super) fn text(
    e: &Value,
    key: &str,
    max: usize,
    required: bool,
) -> Result<Option<String>, String> {
    match &e[key] {
        Value::Null if !required => Ok(None),
        Value::Null => Err(format!("no {key}")),
        Value::String(s) if s.len() > max => Err(format!("{key} is longer than {max} bytes")),
        Value::String(s) if s.chars().any(|c| c.is_control() && c != '\n') => {
            Err(format!("{key} holds control characters"))
        }
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!("{key} is not a string")),
    }
}

/// A version as registries write them: a digit first (a dist-tag such as `latest` or
/// `next` is a name, not a pin), then letters, digits, `.`, `+`, `-`, `_` (it names a
/// directory of Trellis's).
pub fn valid_version(v: &str) -> bool {
    v.len() <= 64
        && v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
}

/// A command name (npx and uvx): one word, no path, nothing a shell would read.
pub fn valid_command_name(c: &str) -> bool {
    valid_command(c)
}

pub(super) fn valid_command(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 128
        && c.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && c.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A path inside an extracted archive: relative, no `..`, no shell metacharacters.
pub(super) fn valid_relative(p: &str) -> bool {
    let p = p.strip_prefix("./").unwrap_or(p);
    !p.is_empty()
        && p.len() <= 256
        && !p.starts_with('/')
        && p.split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
}

pub(super) fn args(e: &Value) -> Result<Vec<String>, String> {
    match &e["args"] {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) if a.len() > 64 => Err("more than 64 args".into()),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) if s.len() <= 1024 && !s.chars().any(char::is_control) => {
                    Ok(s.clone())
                }
                Value::String(_) => Err("an arg is too long or holds control characters".into()),
                _ => Err("an arg is not a string".into()),
            })
            .collect(),
        _ => Err("args is not a list".into()),
    }
}

/// Environment an agent gets. Variables that make a program load other code (the dynamic
/// loader's, an interpreter's startup) are refused: an index must not choose what runs
/// besides the agent.
pub(super) fn env(e: &Value) -> Result<Vec<(String, String)>, String> {
    const LOADERS: [&str; 6] = [
        "LD_",
        "DYLD_",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "BASH_ENV",
    ];
    match &e["env"] {
        Value::Null => Ok(Vec::new()),
        Value::Object(m) if m.len() > 64 => Err("more than 64 environment variables".into()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                let name_ok = !k.is_empty()
                    && k.len() <= 128
                    && k.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !name_ok {
                    return Err(format!(
                        "environment variable `{}` is not a name",
                        k.escape_debug()
                    ));
                }
                if LOADERS.iter().any(|l| k.starts_with(l)) || k == "PATH" {
                    return Err(format!("environment variable {k} would change what runs"));
                }
                match v {
                    Value::String(s) if s.len() <= 4096 && !s.contains('\0') => {
                        Ok((k.clone(), s.clone()))
                    }
                    _ => Err(format!("environment variable {k}: not a short string")),
                }
            })
            .collect(),
        _ => Err("env is not an object".into()),
    }
}

/// An archive's address: https, or http to this machine only (a registry mirrored on
/// loopback); no credentials in it. The host is compared whole (see `crate::address`).
pub(super) fn valid_archive(url: &str) -> bool {
    crate::address::check(url, crate::address::Rule::Secure).is_ok()
}

/// `name@1.2.3` / `@scope/name@1.2.3` (npm) or `name==1.2.3` / `name@1.2.3` (uv).
pub(super) fn split_version(spec: &str, sep: char) -> (&str, Option<&str>) {
    if sep == '=' {
        if let Some((n, v)) = spec.split_once("==") {
            return (n, Some(v));
        }
        if let Some((n, v)) = spec.split_once('@') {
            return (n, Some(v));
        }
        return (spec, None);
    }
    // npm: the version's `@` is not the first character (a scope's is). Found from the
    // second character on, whatever its width.
    let first = spec.chars().next().map_or(0, char::len_utf8);
    match spec[first..].find('@') {
        Some(i) => (&spec[..first + i], Some(&spec[first + i + 1..])),
        None => (spec, None),
    }
}

/// Whether `url` names an installer (`.deb`, `.dmg`…), which the registry's format has
/// none of.
pub fn installer(url: &str) -> bool {
    let name = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    [".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"]
        .iter()
        .any(|s| name.ends_with(s))
}
