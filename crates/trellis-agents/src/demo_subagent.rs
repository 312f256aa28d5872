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
        let parent = self.session_id.to_string();
        let t = self.turn;
        let child = format!("{parent}-explorer-{t}");
        let task = format!("task-{t}");
        self.say(
            &parent,
            "agent_message_chunk",
            &format!("intro-{t}"),
            "I'll hand the search to a subagent.",
        )?;
        // Without the capability, the child stays inside: the parent reports the work.
        let who = if self.supported {
            self.notify(
                &parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "title": "Explorer", "description": "Finds the TODOs in src/ and fixes them",
                    "state": {"state": "running"}, "capabilities": {"cancel": {}}}),
            )?;
            child.clone()
        } else {
            parent.clone()
        };
        let mut content = vec![];
        if self.supported {
            content.push(json!({"type": "session", "sessionId": child}));
        }
        self.notify(
            &parent,
            json!({"sessionUpdate": "tool_call", "toolCallId": task, "title": "Delegate: find and fix the TODOs",
                "kind": "other", "status": "in_progress", "content": content,
                "rawInput": {"subagent": "explorer", "prompt": "Find the TODOs in src/ and fix them"}}),
        )?;
        if self.supported {
            self.notify(
                &parent,
                json!({"sessionUpdate": "session_message", "messageId": format!("to-child-{t}"),
                    "senderSessionId": parent, "recipientSessionId": child,
                    "content": [{"type": "text", "text": "Find the TODOs in src/ and fix them."}]}),
            )?;
        }
        if self.pause() {
            return self.cancelled(&parent, &child, &task);
        }
        self.say(
            &who,
            "agent_thought_chunk",
            &format!("think-{t}"),
            "Start with src/lib.rs, then search the rest.",
        )?;
        let lib = self.lib_path.clone();
        let (read, search, edit) = (
            format!("c-read-{t}"),
            format!("c-search-{t}"),
            format!("c-edit-{t}"),
        );
        self.notify(
            &who,
            json!({"sessionUpdate": "tool_call", "toolCallId": read, "title": "Read src/lib.rs",
                "kind": "read", "status": "in_progress", "locations": [{"path": lib}], "rawInput": {"path": lib}}),
        )?;
        let source = std::fs::read_to_string(&lib).unwrap_or_default();
        self.notify(
            &who,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": read, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": source}}]}),
        )?;
        if self.pause() {
            return self.cancelled(&parent, &child, &task);
        }
        let hits: Vec<String> = source
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("TODO"))
            .map(|(i, l)| format!("src/lib.rs:{}: {}", i + 1, l.trim()))
            .collect();
        self.notify(
            &who,
            json!({"sessionUpdate": "tool_call", "toolCallId": search, "title": "Search TODO in src/",
                "kind": "search", "status": "completed", "rawInput": {"pattern": "TODO", "path": "src/"},
                "content": [{"type": "content", "content": {"type": "text", "text": hits.join("\n")}}]}),
        )?;
        if self.pause() {
            return self.cancelled(&parent, &child, &task);
        }
        // The child asks permission under its own session id: the client must show it,
        // attributed to the child, and answer it.
        let old = source.clone();
        let new = old.replace("    // TODO: check for overflow\n", "");
        self.notify(
            &who,
            json!({"sessionUpdate": "tool_call", "toolCallId": edit, "title": "Edit src/lib.rs",
                "kind": "edit", "status": "pending", "locations": [{"path": lib}],
                "rawInput": {"path": lib, "old_string": "// TODO: check for overflow", "new_string": ""},
                "content": [{"type": "diff", "path": lib, "oldText": old, "newText": new}]}),
        )?;
        if self.supported {
            self.notify(
                &parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "requires_action"}}),
            )?;
        }
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
            return self.cancelled(&parent, &child, &task);
        }
        let allowed = outcome["optionId"] == "allow";
        if self.supported {
            self.notify(
                &parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "running"}}),
            )?;
        }
        let said = if allowed {
            std::fs::write(&lib, &new).map_err(PeerError::Io)?;
            self.notify(
                &who,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": edit, "status": "completed"}),
            )?;
            format!("Found {} TODO and removed it from src/lib.rs.", hits.len())
        } else {
            self.notify(
                &who,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": edit, "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "The user rejected this edit."}}]}),
            )?;
            format!(
                "Found {} TODO; the edit was rejected, so it stays.",
                hits.len()
            )
        };
        self.say(
            &who,
            "agent_message_chunk",
            &format!("child-said-{t}"),
            &said,
        )?;
        if self.supported {
            self.notify(
                &parent,
                json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "idle", "stopReason": "end_turn"}}),
            )?;
        }
        let mut content = vec![];
        if self.supported {
            content.push(json!({"type": "session", "sessionId": child}));
        }
        content.push(json!({"type": "content", "content": {"type": "text", "text": said}}));
        self.notify(
            &parent,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": task, "status": "completed",
                "content": content}),
        )?;
        self.say(
            &parent,
            "agent_message_chunk",
            &format!("outro-{t}"),
            "The subagent is done.",
        )?;
        Ok("end_turn")
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
