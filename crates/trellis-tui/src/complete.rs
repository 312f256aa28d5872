//! Prompt completion: `@path` from the files under the session cwd, `/command` from the
//! agent's available commands. Pure apart from the directory walk, which is bounded.

use std::path::{Path, PathBuf};

/// Directories never walked for `@` completion.
const SKIP: [&str; 6] = [
    ".git",
    "target",
    "node_modules",
    ".venv",
    "__pycache__",
    ".hg",
];
/// At most this many files are considered (a huge tree must not stall a keypress).
const MAX_FILES: usize = 5000;

/// Relative paths of files under `root` (breadth-first, bounded, sorted per directory).
pub fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([PathBuf::new()]);
    while let Some(rel) = queue.pop_front() {
        let Ok(rd) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            match e.file_type() {
                Ok(t) if t.is_dir() && !SKIP.contains(&name.as_str()) => queue.push_back(path),
                Ok(t) if t.is_file() => out.push(path.to_string_lossy().into_owned()),
                _ => {}
            }
            if out.len() >= MAX_FILES {
                return out;
            }
        }
    }
    out
}

/// The word being typed before byte `cursor`: (start byte, word).
pub fn word_at(text: &str, cursor: usize) -> (usize, &str) {
    let before = &text[..cursor];
    let start = before
        .rfind(char::is_whitespace)
        .map(|i| i + 1)
        .unwrap_or(0);
    (start, &before[start..])
}

/// Candidates for the word at the cursor, each a full replacement of the word.
pub fn candidates(
    text: &str,
    cursor: usize,
    cwd: Option<&Path>,
    commands: &[String],
) -> Vec<String> {
    let (start, word) = word_at(text, cursor);
    if let Some(prefix) = word.strip_prefix('@') {
        let Some(cwd) = cwd else { return Vec::new() };
        let lower = prefix.to_lowercase();
        let mut hits: Vec<String> = files_under(cwd)
            .into_iter()
            .filter(|f| {
                f.starts_with(prefix) || (!prefix.is_empty() && f.to_lowercase().contains(&lower))
            })
            .map(|f| format!("@{f}"))
            .collect();
        // Prefix matches first, then shorter paths.
        hits.sort_by_key(|h| (!h[1..].starts_with(prefix), h.len()));
        hits.truncate(50);
        return hits;
    }
    if start == 0
        && let Some(prefix) = word.strip_prefix('/')
    {
        return commands
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| format!("/{c}"))
            .collect();
    }
    Vec::new()
}

/// Longest common prefix of the candidates.
pub fn common_prefix(c: &[String]) -> String {
    let Some(first) = c.first() else {
        return String::new();
    };
    let mut end = first.len();
    for other in &c[1..] {
        end = end.min(
            first
                .bytes()
                .zip(other.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    first[..end].to_string()
}

/// Files the prompt names with `@path` that exist under `cwd` (sent as resource links).
pub fn mentioned_files(text: &str, cwd: Option<&Path>) -> Vec<PathBuf> {
    let Some(cwd) = cwd else { return Vec::new() };
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|p| cwd.join(p.trim_end_matches([',', '.', ';', ':', ')'])))
        .filter(|p| p.is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_paths_and_commands() {
        let dir = std::env::temp_dir().join(format!("trellis-complete-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        for f in [
            "src/lib.rs",
            "src/main.rs",
            "src/deep/mod.rs",
            "README.md",
            "target/junk.rs",
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        let c = candidates("look at @src/m", 14, Some(&dir), &[]);
        assert_eq!(c, vec!["@src/main.rs"]);
        let c = candidates("@src/", 5, Some(&dir), &[]);
        assert_eq!(common_prefix(&c), "@src/");
        assert!(c.contains(&"@src/deep/mod.rs".to_string()));
        assert!(
            !candidates("@junk", 5, Some(&dir), &[])
                .iter()
                .any(|c| c.contains("target"))
        );
        let cmds = vec!["explain".to_string(), "test".to_string()];
        assert_eq!(candidates("/te", 3, None, &cmds), vec!["/test"]);
        assert!(
            candidates("say /te", 7, None, &cmds).is_empty(),
            "commands only as the first word"
        );
        assert_eq!(
            mentioned_files("see @README.md, and @nope", Some(&dir)),
            vec![dir.join("README.md")]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
