//! The demo's one-scene prompts (see [`super`]): `/elicit` and `/elicit-url`, `/compact`,
//! `/plans`, an edit of a chosen path, and the load generator (`--calls N`).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::Demo;
use crate::demo_elicit;
use crate::peer::PeerError;

impl Demo {
    /// `/elicit` (a form) or `/elicit-url` (a link): asks, then says what it got.
    pub(super) fn elicit(&mut self, url: bool) -> Result<&'static str, PeerError> {
        let sid = self.session_id.clone();
        let said = if url {
            demo_elicit::link(&mut self.peer, &sid, self.caps.elicit_url, self.prompts)?
        } else {
            demo_elicit::form(&mut self.peer, &sid, self.caps.elicit_form)?
        };
        self.say("agent_message_chunk", &said)?;
        Ok(if self.peer.cancelled(Duration::ZERO) {
            "cancelled"
        } else {
            "end_turn"
        })
    }

    /// `/compact`: the conversation compacted (a compaction in progress, its summary in
    /// chunks, completed) and a notice about it.
    pub(super) fn compact(&mut self) -> Result<&'static str, PeerError> {
        let id = format!("compaction-{}", self.prompts);
        self.update(
            json!({"sessionUpdate": "compaction_update", "compactionId": id,
            "status": "in_progress"}),
        )?;
        if self.pause() {
            self.update(
                json!({"sessionUpdate": "compaction_update", "compactionId": id,
                "status": "cancelled"}),
            )?;
            return Ok("cancelled");
        }
        for piece in [
            "The user asked to fix the TODO in the demo workspace.\n",
            "I read README.md, found the TODO in src/lib.rs, fixed it, and ran the tests.\n",
            "Next: nothing pending.",
        ] {
            self.update(
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": id,
                "content": {"type": "text", "text": piece}}),
            )?;
        }
        self.update(
            json!({"sessionUpdate": "compaction_update", "compactionId": id,
            "status": "completed"}),
        )?;
        self.update(json!({"sessionUpdate": "notice", "severity": "info",
            "title": "Context compacted",
            "description": "Earlier turns are now a summary; the files are unchanged."}))?;
        Ok("end_turn")
    }

    /// `/plans`: plans by id — a checklist worked through, a Markdown design, a file —
    /// and one of them removed at the end.
    pub(super) fn plans(&mut self) -> Result<&'static str, PeerError> {
        let items = |done: usize| {
            let entries: Vec<Value> = ["Write the failing test", "Fix the parser", "Run the suite"]
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let status = match i.cmp(&done) {
                        std::cmp::Ordering::Less => "completed",
                        std::cmp::Ordering::Equal => "in_progress",
                        std::cmp::Ordering::Greater => "pending",
                    };
                    json!({"content": c, "priority": "medium", "status": status})
                })
                .collect();
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "fix",
                "entries": entries}})
        };
        self.update(json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown",
            "planId": "design", "content": "# Design\n\n- Parse lazily\n- Keep errors with their spans\n"}}))?;
        self.update(
            json!({"sessionUpdate": "plan_update", "plan": {"type": "file",
            "planId": "notes", "uri": "file:///home/dev/app/PLAN.md"}}),
        )?;
        for done in 0..=3 {
            self.update(items(done))?;
            if self.pause() {
                return Ok("cancelled");
            }
        }
        self.update(json!({"sessionUpdate": "plan_removed", "planId": "design"}))?;
        self.say(
            "agent_message_chunk",
            "The fix plan is done; the design plan is dropped.",
        )?;
        Ok("end_turn")
    }

    /// The edit of a chosen path (`crate::demo_edit`), as call `base`.
    pub(super) fn edit_scene(&mut self, base: &str, rel: &Path) -> Result<&'static str, PeerError> {
        let cwd = self
            .workspace
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let call_id = self.id(base);
        crate::demo_edit::Scene {
            peer: &mut self.peer,
            session_id: &self.session_id,
            call_id,
            cwd: &cwd,
            rel,
            via_client: self.caps.write,
        }
        .run()
    }

    /// Load mode: `calls` execute calls of `lines` lines each, as fast as possible.
    pub(super) fn load(&mut self) -> Result<&'static str, PeerError> {
        let sid = self.session_id.clone();
        let line = "0123456789 the quick brown fox jumps over the lazy dog 0123456789";
        let mut body = String::with_capacity(self.opts.lines * (line.len() + 8));
        for i in 0..self.opts.calls {
            let id = self.id(&format!("load-{i}"));
            self.peer.send_buffered(&json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid,
                "update": {"sessionUpdate": "tool_call", "toolCallId": id, "title": format!("Generate chunk {i}"),
                    "kind": "execute", "status": "in_progress", "rawInput": {"command": format!("gen {i}")}}}}))?;
            body.clear();
            for l in 0..self.opts.lines {
                body.push_str(&format!("{l:>4} {line}\n"));
            }
            self.peer.send_buffered(&json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid,
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": body}}]}}}))?;
            if i % 256 == 255 && self.peer.cancelled(Duration::ZERO) {
                self.peer.flush()?;
                return Ok("cancelled");
            }
        }
        self.peer.flush()?;
        Ok("end_turn")
    }
}
