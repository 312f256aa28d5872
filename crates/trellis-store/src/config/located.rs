//! Where a config error is: the file, the line and the dotted key at fault, for parse
//! errors (from the TOML parser's span) and for values that parse but mean nothing.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {key}: {message}", place(path, *line))]
    Invalid {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// Its text says the cause; the cause is not also the error's source, or a printer of
    /// the chain (`{:#}`) said it twice (`cannot read: not a regular file: not a regular
    /// file`).
    #[error("{path}: cannot read: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The line (1-based) where `key` of `table` is written: `key = …`, a dotted `key.… = …`,
/// or the `[table.key]` section. `hooks[2]` is the third `[[hooks]]` table.
pub(super) fn line_of(text: &str, table: &str, key: &str) -> Option<usize> {
    let (base, index) = match table.strip_suffix(']').and_then(|t| t.split_once('[')) {
        Some((base, i)) => (base, i.parse::<usize>().ok()),
        None => (table, None),
    };
    // Quotes and the spaces around dots do not change a key.
    let bare = |k: &str| -> String {
        k.split('.')
            .map(|p| p.trim().trim_matches('"'))
            .collect::<Vec<_>>()
            .join(".")
    };
    let own = if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    };
    let mut in_table = table.is_empty();
    let mut seen = 0usize;
    for (n, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            let name = bare(t.trim_matches(|c| c == '[' || c == ']'));
            if index.is_none() && name == own {
                return Some(n + 1);
            }
            in_table = match index {
                Some(i) if name == base && t.starts_with("[[") => {
                    seen += 1;
                    seen == i + 1
                }
                Some(_) => false,
                None => name == table,
            };
        } else if in_table
            && let Some(k) = t.split('=').next().map(bare)
            && (k == key || k.starts_with(&format!("{key}.")))
        {
            return Some(n + 1);
        }
    }
    None
}

/// `path:line`, or `path` when the line is not known.
fn place(path: &Path, line: usize) -> String {
    if line == 0 {
        path.display().to_string()
    } else {
        format!("{}:{line}", path.display())
    }
}

/// Parses any TOML document into `T`, with errors that name file, line and key.
pub fn parse_toml<T: for<'de> Deserialize<'de>>(text: &str, path: &Path) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
        let line = text[..offset].matches('\n').count() + 1;
        let message = e.message().trim().to_string();
        let key = key_at(text, offset, &message);
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            key,
            message,
        }
    })
}

/// The dotted key an error points at: the table header above `offset` plus the key on its
/// line (or the field the message names).
fn key_at(text: &str, offset: usize, message: &str) -> String {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[offset..]
        .find('\n')
        .map(|i| offset + i)
        .unwrap_or(text.len());
    let line = &text[line_start..line_end];
    let mut table = String::new();
    for l in before[..line_start].lines() {
        let l = l.trim();
        if l.starts_with('[') {
            table = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        }
    }
    let own = line.trim();
    let key = if own.starts_with('[') {
        own.trim_matches(|c| c == '[' || c == ']')
            .trim()
            .to_string()
    } else if let Some((k, _)) = own.split_once('=') {
        let k = k.trim().trim_matches('"').to_string();
        if table.is_empty() {
            k
        } else {
            format!("{table}.{k}")
        }
    } else {
        table
    };
    // "unknown field `x`" names the key better than the span does.
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
    {
        return if key.is_empty() {
            field.to_string()
        } else if key.ends_with(field) {
            key
        } else {
            format!("{key}.{field}")
        };
    }
    if key.is_empty() {
        "(top level)".into()
    } else {
        key
    }
}
