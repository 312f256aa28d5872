//! Where a dialed agent's paths are on this machine: an agent that shares this machine's
//! files through a mount (a devcontainer with the project at `/workspace`) names them
//! by its own paths. [`PathMap`] turns them into local ones for the ledger (locations and
//! diffs, so follow-edits and the inspector show what is here) and for its file requests,
//! and the session's directory into the agent's.
//!
//! A path is mapped by whole components (`/workspace` covers `/workspace/src`, not
//! `/workspace2`), by the longest prefix that covers it; one with a `..` component is
//! never mapped (it could leave the shared directory).

use serde::{Deserialize, Serialize};

use crate::tool_call::{ToolCallPatch, ToolContent};

/// One shared directory: the agent's path, and this machine's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathPair {
    pub remote: String,
    pub local: String,
}

/// A dialed agent's shared directories (empty: its paths are this machine's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PathMap(Vec<PathPair>);

/// `path` below `prefix` (by whole components): the rest, without its leading `/`.
fn below<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    if prefix == "/" {
        return path.strip_prefix('/');
    }
    let rest = path.strip_prefix(prefix)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

fn join(base: &str, rest: &str) -> String {
    match (rest.is_empty(), base.ends_with('/')) {
        (true, _) => base.to_string(),
        (false, true) => format!("{base}{rest}"),
        (false, false) => format!("{base}/{rest}"),
    }
}

/// A path as given, without a trailing `/` (but the root's).
fn trimmed(p: &str) -> String {
    let t = p.trim_end_matches('/');
    if t.is_empty() { "/".into() } else { t.into() }
}

impl PathMap {
    /// The map of `pairs` (the agent's path, this machine's): both absolute, neither with
    /// a `..` component, each agent path once.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Result<PathMap, String> {
        let mut out: Vec<PathPair> = Vec::new();
        for (remote, local) in pairs {
            for (side, p) in [("the agent's", &remote), ("this machine's", &local)] {
                if !p.starts_with('/') {
                    return Err(format!("{p:?}: {side} path must be absolute"));
                }
                if p.split('/').any(|c| c == "..") {
                    return Err(format!("{p:?}: {side} path may not have a `..` in it"));
                }
            }
            let (remote, local) = (trimmed(&remote), trimmed(&local));
            if out.iter().any(|p| p.remote == remote) {
                return Err(format!("{remote:?} is mapped twice"));
            }
            if out.iter().any(|p| p.local == local) {
                return Err(format!(
                    "{local:?} is given for two of the agent's paths: which to send would be a guess"
                ));
            }
            out.push(PathPair { remote, local });
        }
        Ok(PathMap(out))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn pairs(&self) -> &[PathPair] {
        &self.0
    }

    /// The pair whose `side` covers `path` the longest way, and the rest of it.
    fn find<'a>(
        &'a self,
        path: &'a str,
        side: impl Fn(&PathPair) -> &str,
    ) -> Option<(&'a PathPair, &'a str)> {
        if path.split('/').any(|c| c == "..") {
            return None;
        }
        self.0
            .iter()
            .filter_map(|p| below(path, side(p)).map(|rest| (p, rest)))
            .max_by_key(|(p, _)| side(p).len())
    }

    /// The agent's `path` on this machine, if it is in a shared directory.
    pub fn to_local(&self, path: &str) -> Option<String> {
        self.find(path, |p| &p.remote)
            .map(|(p, rest)| join(&p.local, rest))
    }

    /// This machine's `path` as the agent sees it, if it is in a shared directory.
    pub fn to_remote(&self, path: &str) -> Option<String> {
        self.find(path, |p| &p.local)
            .map(|(p, rest)| join(&p.remote, rest))
    }

    /// `text` (a message for the agent) with this machine's shared directories named as
    /// the agent names them: an error about a file it asked for speaks of its path, and
    /// shows nothing of this machine's layout there.
    pub fn in_their_words(&self, text: &str) -> String {
        let mut pairs: Vec<&PathPair> = self.0.iter().collect();
        pairs.sort_by_key(|p| std::cmp::Reverse(p.local.len()));
        let mut out = text.to_string();
        for p in pairs.into_iter().filter(|p| p.local != "/") {
            out = out.replace(&p.local, &p.remote);
        }
        out
    }

    /// The patch's locations and diffs with local paths (a path outside the shared
    /// directories is left as the agent gave it).
    pub fn localize(&self, patch: &mut ToolCallPatch) {
        for l in patch.locations.iter_mut().flatten() {
            if let Some(p) = self.to_local(&l.path) {
                l.path = p;
            }
        }
        for c in patch.content.iter_mut().flatten() {
            if let ToolContent::Diff { path, .. } = c
                && let Some(p) = self.to_local(path)
            {
                *path = p;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> PathMap {
        PathMap::new([
            ("/workspace".into(), "/home/u/proj".into()),
            ("/workspace/vendor/".into(), "/srv/vendor".into()),
        ])
        .unwrap()
    }

    #[test]
    fn paths_map_by_whole_components_and_the_longest_prefix() {
        let m = map();
        assert_eq!(m.to_local("/workspace").as_deref(), Some("/home/u/proj"));
        assert_eq!(
            m.to_local("/workspace/src/a.rs").as_deref(),
            Some("/home/u/proj/src/a.rs")
        );
        assert_eq!(
            m.to_local("/workspace/vendor/x/y.c").as_deref(),
            Some("/srv/vendor/x/y.c")
        );
        assert_eq!(m.to_local("/workspace2/a"), None);
        assert_eq!(m.to_local("/etc/passwd"), None);
        assert_eq!(m.to_local("relative/a.rs"), None);
        assert_eq!(
            m.to_remote("/home/u/proj/src").as_deref(),
            Some("/workspace/src")
        );
        assert_eq!(m.to_remote("/home/u/project"), None);
    }

    #[test]
    fn nothing_leaves_a_shared_directory() {
        let m = map();
        assert_eq!(m.to_local("/workspace/../etc/passwd"), None);
        assert_eq!(m.to_remote("/home/u/proj/../../etc"), None);
        assert!(PathMap::new([("/w/..".into(), "/h".into())]).is_err());
        assert!(PathMap::new([("w".into(), "/h".into())]).is_err());
        assert!(PathMap::new([("/w".into(), "h".into())]).is_err());
        assert!(PathMap::new([("/w".into(), "/a".into()), ("/w/".into(), "/b".into())]).is_err());
        assert!(PathMap::new([("/v".into(), "/a".into()), ("/w".into(), "/a/".into())]).is_err());
        let root = PathMap::new([("/".into(), "/mnt/box".into())]).unwrap();
        assert_eq!(
            root.to_local("/etc/hosts").as_deref(),
            Some("/mnt/box/etc/hosts")
        );
    }

    #[test]
    fn messages_for_the_agent_name_its_paths() {
        assert_eq!(
            map().in_their_words("file not found: /home/u/proj/src/a.rs (roots: /home/u/proj)"),
            "file not found: /workspace/src/a.rs (roots: /workspace)"
        );
        assert_eq!(
            map().in_their_words("/srv/vendor/x: denied"),
            "/workspace/vendor/x: denied"
        );
    }

    #[test]
    fn a_patch_shows_local_paths() {
        let mut patch = ToolCallPatch {
            tool_call_id: "c".into(),
            locations: Some(vec![
                crate::tool_call::Location {
                    path: "/workspace/src/a.rs".into(),
                    line: Some(3),
                },
                crate::tool_call::Location {
                    path: "/tmp/x".into(),
                    line: None,
                },
            ]),
            content: Some(vec![ToolContent::Diff {
                path: "/workspace/src/a.rs".into(),
                old_text: None,
                new_text: "x".into(),
            }]),
            ..ToolCallPatch::default()
        };
        map().localize(&mut patch);
        let l = patch.locations.unwrap();
        assert_eq!(l[0].path, "/home/u/proj/src/a.rs");
        assert_eq!(l[1].path, "/tmp/x");
        assert!(matches!(
            &patch.content.unwrap()[0],
            ToolContent::Diff { path, .. } if path == "/home/u/proj/src/a.rs"
        ));
    }
}
