//! The demo agent's subagent scene (`/subagents`): the agent delegates to a child session,
//! as ACP subagents do. It announces the child (`subagent_update`), starts a call whose
//! content names it (`session` content), messages it (`session_message`), and the child
//! thinks, reads, searches, asks permission for an edit under its own session id, says
//! what it found and goes idle; the parent's call then completes. A client without the
//! `subagents` capability gets the same work reported in the parent session instead (as
//! ACP asks of agents).

use std::time::Duration;

use serde_json::{Value, json};

use crate::peer::{Peer, PeerError};

const EDIT_OPTIONS: &str = r#"[
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]"#;

/// What the scene needs from the demo.
pub struct Scene<'a> {
    pub peer: &'a mut Peer,
    pub session_id: &'a str,
    /// The client advertised `subagents`.
    pub supported: bool,
    /// Suffix that keeps ids unique per prompt.
    pub turn: usize,
    pub lib_path: String,
    pub delay: Duration,
}

/// The ids of one turn's scene.
struct Names {
    parent: String,
    child: String,
    /// Who does the work: the child, or the parent when the client does not follow
    /// subagents.
    who: String,
    /// The parent's call that delegates to the child.
    task: String,
    edit: String,
    lib: String,
    t: usize,
}

impl Scene<'_> {
    fn notify(&mut self, session: &str, update: Value) -> Result<(), PeerError> {
        self.peer.notify(
            "session/update",
            json!({"sessionId": session, "update": update}),
        )?;
        Ok(())
    }

    fn say(&mut self, session: &str, kind: &str, id: &str, text: &str) -> Result<(), PeerError> {
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        for part in words.chunks(5) {
            self.notify(
                session,
                json!({"sessionUpdate": kind, "messageId": id,
                    "content": {"type": "text", "text": part.concat()}}),
            )?;
        }
        Ok(())
    }

    fn pause(&mut self) -> bool {
        self.peer.cancelled(self.delay)
    }

    /// Runs the scene; returns the stop reason.
    pub fn run(mut self) -> Result<&'static str, PeerError> {
        let n = self.names();
        self.delegate(&n)?;
        if self.pause() {
            return self.cancelled(&n.parent, &n.child, &n.task);
        }
        let Some((source, hits)) = self.explore(&n)? else {
            return self.cancelled(&n.parent, &n.child, &n.task);
        };
        let Some((allowed, new)) = self.ask_to_edit(&n, &source)? else {
            return self.cancelled(&n.parent, &n.child, &n.task);
        };
        let said = self.edited(&n, allowed, &new, hits.len())?;
        self.report(&n, &said)?;
        Ok("end_turn")
    }

    /// The scene's ids for this turn.
    fn names(&self) -> Names {
        let parent = self.session_id.to_string();
        let t = self.turn;
        let child = format!("{parent}-explorer-{t}");
        // Without the capability, the child stays inside: the parent reports the work.
        let who = if self.supported {
            child.clone()
        } else {
            parent.clone()
        };
        Names {
            task: format!("task-{t}"),
            edit: format!("c-edit-{t}"),
            lib: self.lib_path.clone(),
            parent,
            child,
            who,
            t,
        }
    }

    /// The parent announces the child and the call that delegates to it.
    fn delegate(&mut self, n: &Names) -> Result<(), PeerError> {
        let (parent, child, t) = (&n.parent, &n.child, n.t);
        self.say(
            parent,
            "agent_message_chunk",
            &format!("intro-{t}"),
            "I'll hand the search to a subagent.",
        )?;
        if self.supported {
            self.notify(
                parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "title": "Explorer", "description": "Finds the TODOs in src/ and fixes them",
                    "state": {"state": "running"}, "capabilities": {"cancel": {}}}),
            )?;
        }
        let mut content = vec![];
        if self.supported {
            content.push(json!({"type": "session", "sessionId": child}));
        }
        self.notify(
            parent,
            json!({"sessionUpdate": "tool_call", "toolCallId": n.task, "title": "Delegate: find and fix the TODOs",
                "kind": "other", "status": "in_progress", "content": content,
                "rawInput": {"subagent": "explorer", "prompt": "Find the TODOs in src/ and fix them"}}),
        )?;
        if self.supported {
            self.notify(
                parent,
                json!({"sessionUpdate": "session_message", "messageId": format!("to-child-{t}"),
                    "senderSessionId": parent, "recipientSessionId": child,
                    "content": [{"type": "text", "text": "Find the TODOs in src/ and fix them."}]}),
            )?;
        }
        Ok(())
    }

    /// The child reads the file and searches it: the file's text and the TODO lines, or
    /// `None` when the turn was cancelled meanwhile.
    fn explore(&mut self, n: &Names) -> Result<Option<(String, Vec<String>)>, PeerError> {
        let (who, lib, t) = (&n.who, &n.lib, n.t);
        self.say(
            who,
            "agent_thought_chunk",
            &format!("think-{t}"),
            "Start with src/lib.rs, then search the rest.",
        )?;
        let (read, search) = (format!("c-read-{t}"), format!("c-search-{t}"));
        self.notify(
            who,
            json!({"sessionUpdate": "tool_call", "toolCallId": read, "title": "Read src/lib.rs",
                "kind": "read", "status": "in_progress", "locations": [{"path": lib}], "rawInput": {"path": lib}}),
        )?;
        let source = std::fs::read_to_string(lib).unwrap_or_default();
        self.notify(
            who,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": read, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": source}}]}),
        )?;
        if self.pause() {
            return Ok(None);
        }
        let hits: Vec<String> = source
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("TODO"))
            .map(|(i, l)| format!("src/lib.rs:{}: {}", i + 1, l.trim()))
            .collect();
        self.notify(
            who,
            json!({"sessionUpdate": "tool_call", "toolCallId": search, "title": "Search TODO in src/",
                "kind": "search", "status": "completed", "rawInput": {"pattern": "TODO", "path": "src/"},
                "content": [{"type": "content", "content": {"type": "text", "text": hits.join("\n")}}]}),
        )?;
        if self.pause() {
            return Ok(None);
        }
        Ok(Some((source, hits)))
    }

    /// The child asks permission under its own session id (the client must show it,
    /// attributed to the child, and answer it): whether it was allowed and the new text,
    /// or `None` when the turn was cancelled.
    fn ask_to_edit(
        &mut self,
        n: &Names,
        source: &str,
    ) -> Result<Option<(bool, String)>, PeerError> {
        let (who, lib, edit) = (&n.who, &n.lib, &n.edit);
        let new = source.replace("    // TODO: check for overflow\n", "");
        self.notify(
            who,
            json!({"sessionUpdate": "tool_call", "toolCallId": edit, "title": "Edit src/lib.rs",
                "kind": "edit", "status": "pending", "locations": [{"path": lib}],
                "rawInput": {"path": lib, "old_string": "// TODO: check for overflow", "new_string": ""},
                "content": [{"type": "diff", "path": lib, "oldText": source, "newText": new}]}),
        )?;
        self.child_state(n, json!({"state": "requires_action"}))?;
        let options: Value = serde_json::from_str(EDIT_OPTIONS).unwrap_or_default();
        let answer = self.peer.request(
            "session/request_permission",
            json!({"sessionId": who, "toolCall": {"toolCallId": edit, "title": "Edit src/lib.rs", "kind": "edit"},
                "options": options}),
        );
        let outcome = match answer {
            Ok(r) => r["outcome"].clone(),
            Err(PeerError::Rpc(_)) => json!({"outcome": "cancelled"}),
            Err(e) => return Err(e),
        };
        if outcome["outcome"] == "cancelled" {
            return Ok(None);
        }
        self.child_state(n, json!({"state": "running"}))?;
        Ok(Some((outcome["optionId"] == "allow", new)))
    }

    /// The edit is made (or not, when refused); what the child says about it.
    fn edited(
        &mut self,
        n: &Names,
        allowed: bool,
        new: &str,
        hits: usize,
    ) -> Result<String, PeerError> {
        let (who, edit) = (&n.who, &n.edit);
        Ok(if allowed {
            std::fs::write(&n.lib, new).map_err(PeerError::Io)?;
            self.notify(
                who,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": edit, "status": "completed"}),
            )?;
            format!("Found {hits} TODO and removed it from src/lib.rs.")
        } else {
            self.notify(
                who,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": edit, "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "The edit was rejected."}}]}),
            )?;
            format!("Found {hits} TODO; the edit was rejected, so it stays.")
        })
    }

    /// The child says what it did and goes idle; the parent's call completes with it.
    fn report(&mut self, n: &Names, said: &str) -> Result<(), PeerError> {
        let (parent, t) = (&n.parent, n.t);
        self.say(
            &n.who,
            "agent_message_chunk",
            &format!("child-said-{t}"),
            said,
        )?;
        self.child_state(n, json!({"state": "idle", "stopReason": "end_turn"}))?;
        let mut content = vec![];
        if self.supported {
            content.push(json!({"type": "session", "sessionId": n.child}));
        }
        content.push(json!({"type": "content", "content": {"type": "text", "text": said}}));
        self.notify(
            parent,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": n.task, "status": "completed",
                "content": content}),
        )?;
        self.say(
            parent,
            "agent_message_chunk",
            &format!("outro-{t}"),
            "The subagent is done.",
        )
    }

    /// The child's state, announced by the parent (when the client follows subagents).
    fn child_state(&mut self, n: &Names, state: Value) -> Result<(), PeerError> {
        if !self.supported {
            return Ok(());
        }
        let parent = n.parent.clone();
        self.notify(
            &parent,
            json!({"sessionUpdate": "subagent_update", "sessionId": n.child, "state": state}),
        )
    }

    /// The turn was cancelled: the child stops too.
    fn cancelled(
        &mut self,
        parent: &str,
        child: &str,
        task: &str,
    ) -> Result<&'static str, PeerError> {
        if self.supported {
            self.notify(
                parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "idle", "stopReason": "cancelled"}}),
            )?;
        }
        self.notify(
            parent,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": task, "status": "failed"}),
        )?;
        Ok("cancelled")
    }
}
