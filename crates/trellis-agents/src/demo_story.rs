//! The demo's scripted session (the story a prompt like `fix the TODO` plays): a
//! thought, a plan, a read, a search, an edit that asks permission, tests run in the
//! client's terminal, a failing command. A part of `crate::demo`.

use serde_json::json;

use super::Demo;
use crate::peer::PeerError;

impl Demo {
    /// The story's edit of `lib` (holding `old`), asked for first: whether it was allowed
    /// (`None`: the turn was cancelled meanwhile).
    fn fix_the_todo(&mut self, lib: &str, old: &str) -> Result<Option<bool>, PeerError> {
        let new = old.replace(
            "    // TODO: check for overflow\n    a + b\n",
            "    a.checked_add(b).expect(\"overflow in add\")\n",
        );
        self.call("edit-1", json!({"title": "Edit src/lib.rs", "kind": "edit", "status": "pending",
            "locations": [{"path": lib, "line": 3}], "rawInput": {"path": lib, "old_string": "a + b", "new_string": "a.checked_add(b)"},
            "content": [{"type": "diff", "path": lib, "oldText": old, "newText": new}]}))?;
        let sid = self.session_id.clone();
        let answer = self.peer.request("session/request_permission", json!({"sessionId": sid,
            "toolCall": {"toolCallId": self.id("edit-1"), "title": "Edit src/lib.rs", "kind": "edit"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "allow-always", "name": "Always allow edits", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                {"optionId": "reject-always", "name": "Never allow edits", "kind": "reject_always"}]}));
        let outcome = match answer {
            Ok(r) => r["outcome"].clone(),
            Err(PeerError::Rpc(_)) => json!({"outcome": "cancelled"}),
            Err(e) => return Err(e),
        };
        let allowed = outcome["outcome"] == "selected"
            && matches!(outcome["optionId"].as_str(), Some("allow" | "allow-always"));
        if outcome["outcome"] == "cancelled" {
            return Ok(None);
        }
        if allowed {
            self.call_update("edit-1", json!({"status": "in_progress"}))?;
            self.write_file(lib, &new)?;
            self.call_update("edit-1", json!({"status": "completed"}))?;
            self.say("agent_message_chunk", "The edit is in. Now the tests.")?;
        } else {
            self.call_update("edit-1", json!({"status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "The edit was rejected."}}]}))?;
            self.say(
                "agent_message_chunk",
                "Understood, I left the file alone. I'll still run the tests.",
            )?;
        }
        Ok(Some(allowed))
    }

    /// The scripted session. Returns the stop reason.
    pub(super) fn story(&mut self) -> Result<&'static str, PeerError> {
        macro_rules! step {
            () => {
                if self.pause() {
                    return Ok("cancelled");
                }
            };
        }
        self.update(
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "explain", "description": "Explain the workspace"},
            {"name": "test", "description": "Run the tests", "input": {"hint": "filter"}},
            {"name": "compact", "description": "Compact the conversation"},
            {"name": "plans", "description": "Keep several plans"},
            {"name": "edit", "description": "Ask to create a file (try a path policy)", "input": {"hint": "PATH"}}]}),
        )?;
        self.say("agent_thought_chunk", "The user wants the TODO fixed. I should read the README, find the TODO, fix it, and run the tests.")?;
        self.plan(0)?;
        self.update(json!({"sessionUpdate": "session_info_update", "title": "Fix the TODO in the demo workspace"}))?;
        self.say(
            "agent_message_chunk",
            "I'll start by reading the README of the demo workspace.",
        )?;
        step!();

        // A read.
        let readme = self.path("README.md");
        self.call(
            "read-1",
            json!({"title": "Read README.md", "kind": "read", "status": "pending",
            "locations": [{"path": readme, "line": 1}], "rawInput": {"path": readme}}),
        )?;
        self.call_update("read-1", json!({"status": "in_progress"}))?;
        let text = self.read_file(&readme)?;
        self.call_update(
            "read-1",
            json!({"status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": text}}]}),
        )?;
        self.plan(1)?;
        step!();

        // A search.
        let lib = self.path("src/lib.rs");
        self.call(
            "search-1",
            json!({"title": "Search for TODO", "kind": "search", "status": "in_progress",
            "rawInput": {"pattern": "TODO", "path": self.workspace.to_string_lossy()}}),
        )?;
        let old = std::fs::read_to_string(&lib).unwrap_or_default();
        let hits: Vec<String> = old
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("TODO"))
            .map(|(i, l)| format!("src/lib.rs:{}: {}", i + 1, l.trim()))
            .collect();
        self.call_update("search-1", json!({"status": "completed", "locations": [{"path": lib, "line": 3}],
            "content": [{"type": "content", "content": {"type": "text", "text": hits.join("\n")}}]}))?;
        self.plan(2)?;
        self.say(
            "agent_message_chunk",
            "Found one TODO. I'll make `add` check for overflow.",
        )?;
        step!();

        // An edit with a diff that asks permission.
        let Some(allowed) = self.fix_the_todo(&lib, &old)? else {
            return Ok("cancelled");
        };
        if let Some(rel) = self.opts.edit.clone() {
            step!();
            if self.edit_scene("edit-2", &rel)? == "cancelled" {
                return Ok("cancelled");
            }
        }
        self.plan(3)?;
        step!();

        // A command with live output through the client's terminal.
        let cmd = "for i in 1 2 3; do echo \"test add_$i ... \\033[32mok\\033[0m\"; sleep 0.05; done; echo '3 passed'";
        self.call(
            "exec-1",
            json!({"title": "Run the tests", "kind": "execute", "status": "pending",
            "rawInput": {"command": cmd, "cwd": self.workspace.to_string_lossy()}}),
        )?;
        let (out, code) = self.run_command("exec-1", cmd)?;
        let tests_passed = code == 0;
        let status = if code == 0 { "completed" } else { "failed" };
        let mut fields = json!({"status": status, "rawOutput": {"exitCode": code}});
        if !self.caps.terminal {
            fields["content"] =
                json!([{"type": "content", "content": {"type": "text", "text": out}}]);
        }
        self.call_update("exec-1", fields)?;
        step!();

        // A failing command.
        let bad = "cat missing-file.txt";
        self.call(
            "exec-2",
            json!({"title": "Show the changelog", "kind": "execute", "status": "pending",
            "rawInput": {"command": bad}}),
        )?;
        let (out, code) = self.run_command("exec-2", bad)?;
        let mut fields = json!({"status": if code == 0 { "completed" } else { "failed" }, "rawOutput": {"exitCode": code}});
        if !self.caps.terminal {
            fields["content"] =
                json!([{"type": "content", "content": {"type": "text", "text": out}}]);
        }
        self.call_update("exec-2", fields)?;
        self.plan(4)?;
        self.update(
            json!({"sessionUpdate": "usage_update", "used": 5321, "size": 200000,
            "cost": {"amount": 0.0123, "currency": "USD"}}),
        )?;
        // What was done, as it happened (a rejected edit fixed nothing).
        let fixed = if allowed {
            "the TODO is fixed"
        } else {
            "the TODO is still there, since you rejected the edit"
        };
        let tests = if tests_passed {
            "the tests pass"
        } else {
            "the tests did not pass"
        };
        self.say(
            "agent_message_chunk",
            &format!(
                "Done: {fixed}, and {tests}. There is no changelog yet, so that last command failed."
            ),
        )?;
        Ok("end_turn")
    }
}
