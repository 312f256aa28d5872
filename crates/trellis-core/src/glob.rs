//! Globs for permission rules, on `globset` (linear-time matching, `{a,b}` alternatives,
//! `[…]` classes), and lexical path normalization.
//!
//! - Path globs: `*` and `?` stay within one path component, `**` crosses them. A glob
//!   that starts with `/` or `**` is matched against the whole (normalized, absolute)
//!   path; any other glob is relative to the session cwd and only matches paths under it.
//! - Text globs (titles, commands): `*` crosses `/`.
//!
//! Paths are normalized lexically before matching (`.` dropped, `..` removed with the
//! component before it, relative paths joined to the cwd), so `src/../../etc/passwd` is
//! matched as the `/etc/passwd` it names, never as something under `src/`.

use globset::{GlobBuilder, GlobMatcher};

/// Which kind of text a glob matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobKind {
    Path,
    Text,
}

/// Compiles `pattern`; the error says what is wrong with it.
pub fn compile(pattern: &str, kind: GlobKind) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(kind == GlobKind::Path)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

/// True when the path glob is matched against absolute paths (starts with `/` or `**`).
pub fn is_absolute_glob(pattern: &str) -> bool {
    pattern.starts_with('/') || pattern.starts_with("**")
}

/// `path` normalized lexically: joined to `cwd` when relative (and a cwd is known), `.`
/// components dropped, `..` removing the component before it (never above the root).
pub fn normalize(path: &str, cwd: Option<&str>) -> String {
    let joined;
    let full = match cwd {
        Some(cwd) if !path.starts_with('/') => {
            joined = format!("{cwd}/{path}");
            joined.as_str()
        }
        _ => path,
    };
    let absolute = full.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in full.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let body = parts.join("/");
    if absolute { format!("/{body}") } else { body }
}

/// The path to match a glob against: the normalized absolute path for absolute globs, the
/// path relative to the normalized cwd for relative ones (`None`: not under the cwd).
pub fn subject(pattern: &str, path: &str, cwd: Option<&str>) -> Option<String> {
    let path = normalize(path, cwd);
    if is_absolute_glob(pattern) {
        return Some(path);
    }
    let cwd = normalize(cwd?, None);
    let rest = path.strip_prefix(cwd.trim_end_matches('/'))?;
    let rest = rest.strip_prefix('/')?;
    Some(rest.to_string())
}

/// True when the path `text` matches `pattern` in full (`*` stops at `/`). For one-off
/// checks; rules keep their compiled globs.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    compile(pattern, GlobKind::Path).is_ok_and(|g| g.is_match(text))
}

/// True when free text (a title, a command line) matches `pattern`; `*` crosses `/`.
pub fn glob_match_text(pattern: &str, text: &str) -> bool {
    compile(pattern, GlobKind::Text).is_ok_and(|g| g.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("git *", "git status"));
        assert!(!glob_match("git *", "rm -rf /"));
        assert!(glob_match("src/*.rs", "src/main.rs"));
        assert!(!glob_match("src/*.rs", "src/a/main.rs"));
        assert!(glob_match("src/**/*.rs", "src/a/b/main.rs"));
        assert!(glob_match("src/**/*.rs", "src/main.rs"));
        assert!(glob_match("**/.env", "/home/x/.env"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*", ""));
        assert!(glob_match("*.{rs,toml}", "Cargo.toml"));
        assert!(glob_match("[ab]x", "bx"));
        assert!(glob_match_text("ls *", "ls /tmp/x"));
        assert!(compile("a[", GlobKind::Path).is_err());
    }

    #[test]
    fn normalization_is_lexical() {
        assert_eq!(normalize("/w/src/../../etc/passwd", None), "/etc/passwd");
        assert_eq!(normalize("src/./a.rs", Some("/w")), "/w/src/a.rs");
        assert_eq!(normalize("/../../x", None), "/x");
        assert_eq!(
            subject("src/**", "/w/src/../../etc/passwd", Some("/w")),
            None
        );
        assert_eq!(
            subject("src/**", "/w/src/a.rs", Some("/w/")).as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(subject("src/**", "/wx/src/a.rs", Some("/w")), None);
    }

    #[test]
    fn matching_is_linear() {
        // Exponential for a backtracking matcher; globset compiles to an automaton.
        let g = compile("*a*a*a*a*a*a*a*a*b", GlobKind::Text).unwrap();
        assert!(!g.is_match("a".repeat(4000)));
    }
}
