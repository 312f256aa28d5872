//! The demo agent's edit of a chosen path (`trellis agent demo --edit PATH`, or the prompt
//! `/edit PATH`): an edit call with a diff that asks permission to create `PATH`, relative
//! to the session's directory, so a path policy (a rule, a hook's `path` glob, a plugin)
//! can be tried offline against exactly the path a real agent would touch.
//!
//! The demo only ever creates: a path that is there already (a file, a link, anything) is
//! never written, and no directory on the way may be a link.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::peer::{Peer, PeerError};

/// What the demo writes into the file it creates.
pub const CONTENT: &str = "written by the Trellis demo agent (--edit)\n";

/// `s` as a path the demo may be asked to edit: relative, below the session's directory
/// (no `..`, no root, nothing empty).
pub fn target(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s.trim());
    let plain = !p.as_os_str().is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(p)
    } else {
        Err(format!(
            "{s:?} is not a path below the session's directory (give a relative path without `..`, such as secrets/key.txt)"
        ))
    }
}

/// What the scene needs from the demo.
pub struct Scene<'a> {
    pub peer: &'a mut Peer,
    pub session_id: &'a str,
    /// The call's id (unique in the session).
    pub call_id: String,
    /// The session's directory.
    pub cwd: &'a Path,
    /// The path to create, relative to `cwd` (checked by [`target`]).
    pub rel: &'a Path,
    /// Write through the client (`fs/write_text_file`), as the story does when offered.
    pub via_client: bool,
}

impl Scene<'_> {
    fn update(&mut self, update: Value) -> Result<(), PeerError> {
        self.peer.notify(
            "session/update",
            json!({"sessionId": self.session_id, "update": update}),
        )?;
        Ok(())
    }

    fn say(&mut self, text: &str) -> Result<(), PeerError> {
        self.update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}}))
    }

    fn settle(&mut self, status: &str, text: Option<&str>) -> Result<(), PeerError> {
        let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": self.call_id,
            "status": status});
        if let Some(t) = text {
            u["content"] = json!([{"type": "content", "content": {"type": "text", "text": t}}]);
        }
        self.update(u)
    }

    /// Runs the scene; returns the stop reason (`cancelled` when the request was).
    pub fn run(mut self) -> Result<&'static str, PeerError> {
        let rel = self.rel.to_string_lossy().into_owned();
        let abs = self.cwd.join(self.rel).to_string_lossy().into_owned();
        let title = format!("Create {rel}");
        self.say(&format!("\n\nI'll create {rel}, as I was asked to."))?;
        self.update(
            json!({"sessionUpdate": "tool_call", "toolCallId": self.call_id,
            "title": title, "kind": "edit", "status": "pending",
            "locations": [{"path": abs}],
            "rawInput": {"path": abs, "content": CONTENT},
            "content": [{"type": "diff", "path": abs, "oldText": null, "newText": CONTENT}]}),
        )?;
        let answer = self.peer.request(
            "session/request_permission",
            json!({"sessionId": self.session_id,
                "toolCall": {"toolCallId": self.call_id, "title": title, "kind": "edit",
                    "locations": [{"path": abs}]},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}),
        );
        let outcome = match answer {
            Ok(r) => r["outcome"].clone(),
            Err(PeerError::Rpc(_)) => json!({"outcome": "cancelled"}),
            Err(e) => return Err(e),
        };
        if outcome["outcome"] == "cancelled" {
            self.settle("failed", Some("The request was cancelled."))?;
            return Ok("cancelled");
        }
        if outcome["outcome"] != "selected" || outcome["optionId"] != "allow" {
            self.settle("failed", Some("The edit was rejected."))?;
            self.say(&format!("Understood, I did not create {rel}."))?;
            return Ok("end_turn");
        }
        self.settle("in_progress", None)?;
        match self.create(&abs) {
            Ok(()) => {
                self.settle("completed", None)?;
                self.say(&format!("Created {rel}."))?;
            }
            Err(why) => {
                self.settle("failed", Some(&why))?;
                self.say(&format!("I could not create {rel}: {why}"))?;
            }
        }
        Ok("end_turn")
    }

    /// Creates the file at `abs` (with its directories), never writing over anything.
    fn create(&mut self, abs: &str) -> Result<(), String> {
        let path = Path::new(abs);
        let mut dir = self.cwd.to_path_buf();
        let parents: Vec<_> = self
            .rel
            .parent()
            .into_iter()
            .flat_map(Path::components)
            .collect();
        for c in parents {
            dir.push(c);
            match dir.symlink_metadata() {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(format!(
                        "{} is not a directory (the demo goes through no link)",
                        dir.display()
                    ));
                }
                Err(_) => std::fs::create_dir(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?,
            }
        }
        if path.symlink_metadata().is_ok() {
            return Err(format!(
                "{abs} is already there: the demo creates new files only, it never writes over one"
            ));
        }
        if self.via_client {
            let sid = self.session_id.to_string();
            self.peer
                .request(
                    "fs/write_text_file",
                    json!({"sessionId": sid, "path": abs, "content": CONTENT}),
                )
                .map(|_| ())
                .map_err(|e| format!("the client did not write it: {e}"))
        } else {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| format!("cannot create {abs}: {e}"))?;
            f.write_all(CONTENT.as_bytes())
                .map_err(|e| format!("cannot write {abs}: {e}"))
        }
    }
}

/// What `/append` adds to the file.
pub const APPENDED: &str = "appended by the Trellis demo agent (/append)\n";

/// The prompt `/append PATH`: a line added, with the demo's own tool, to a file the demo
/// made (one that starts with [`CONTENT`]; anything else is left alone), reported as some
/// agents report such an edit: a diff with the new text and no old text.
pub fn append(
    peer: &mut Peer,
    session_id: &str,
    call_id: &str,
    cwd: &Path,
    rel: &Path,
) -> Result<String, PeerError> {
    let abs = cwd.join(rel);
    let ours = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_file())
        && std::fs::read_to_string(&abs).is_ok_and(|t| t.starts_with(CONTENT));
    if !ours {
        return Ok(format!(
            "{} is not a file the demo made: /append only adds to one (make it with /edit)",
            rel.display()
        ));
    }
    let old = std::fs::read_to_string(&abs).unwrap_or_default();
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(&abs)
        .and_then(|mut f| f.write_all(APPENDED.as_bytes()));
    if let Err(e) = appended {
        return Ok(format!("I could not add to {}: {e}", rel.display()));
    }
    peer.notify(
        "session/update",
        json!({"sessionId": session_id, "update": {"sessionUpdate": "tool_call",
            "toolCallId": call_id, "title": format!("Append to {}", rel.display()),
            "kind": "edit", "status": "completed", "locations": [{"path": abs}],
            "content": [{"type": "diff", "path": abs, "newText": format!("{old}{APPENDED}")}]}}),
    )?;
    Ok(format!("Added a line to {}.", rel.display()))
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn only_paths_below_the_session_are_taken() {
        assert!(target("secrets/key.txt").is_ok());
        assert!(target("./a").is_ok());
        for bad in ["", ".", "/etc/passwd", "../x", "a/../../b", "  "] {
            assert!(target(bad).is_err(), "{bad:?}");
        }
    }
}
