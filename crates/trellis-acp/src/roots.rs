//! Confinement of client-service paths to the session's roots.
//!
//! Invariant: a path is accepted only if it is absolute, has no `..` component, and its
//! real location (symlinks resolved, for the longest existing prefix) lies under a root's
//! real location. Everything else is refused with a message naming the path.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Roots {
    roots: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RootsError {
    #[error("path {0} is not absolute")]
    NotAbsolute(String),
    #[error("path {0} contains `..`")]
    ParentDir(String),
    #[error("path {path} is outside the session roots ({roots}){how}")]
    Outside {
        path: String,
        roots: String,
        /// How, when the path as written is inside: a link in it leads out.
        how: &'static str,
    },
}

impl Roots {
    /// Roots are canonicalized now; a root that does not exist is kept as given.
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Roots {
        Roots {
            roots: roots
                .into_iter()
                .map(|r| std::fs::canonicalize(&r).unwrap_or(r))
                .collect(),
        }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.roots
    }

    /// True when the real (already resolved) path `real` lies under a root.
    pub fn contains(&self, real: &Path) -> bool {
        self.roots.iter().any(|r| real.starts_with(r))
    }

    /// The real path `path` stands for, if it is inside a root.
    pub fn check(&self, path: &Path) -> Result<PathBuf, RootsError> {
        let shown = path.display().to_string();
        if !path.is_absolute() {
            return Err(RootsError::NotAbsolute(shown));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(RootsError::ParentDir(shown));
        }
        let real = resolve(path);
        if self.contains(&real) {
            Ok(real)
        } else {
            let linked = self.roots.iter().any(|r| path.starts_with(r));
            Err(RootsError::Outside {
                how: if linked {
                    ": a symbolic link in it leads out"
                } else {
                    ""
                },
                path: shown,
                roots: self
                    .roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }
}

/// Canonicalizes the longest existing prefix and appends the rest.
fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confines_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        let roots = Roots::new([root.clone()]);
        assert!(roots.check(&root.join("src/new/file.rs")).is_ok());
        assert!(matches!(
            roots.check(Path::new("src/a")),
            Err(RootsError::NotAbsolute(_))
        ));
        assert!(matches!(
            roots.check(&root.join("../x")),
            Err(RootsError::ParentDir(_))
        ));
        assert!(matches!(
            roots.check(Path::new("/etc/passwd")),
            Err(RootsError::Outside { .. })
        ));
        std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
        assert!(matches!(
            roots.check(&root.join("escape/passwd")),
            Err(RootsError::Outside { .. })
        ));
    }
}
