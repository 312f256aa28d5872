//! The hostile agent's scenarios about permissions, terminals and ids: storms of requests,
//! a request withdrawn or ignored, options that cannot be answered, floods, escapes from
//! the process group, lingering children, writes that try to leave the roots, odd ids.
//! A part of `crate::hostile`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{BURST, Hostile, LAST_WORDS, answer_kind, permission};
use crate::peer::PeerError;

impl Hostile {
    /// Scenario `permission-storm` (see [`SCENARIOS`]): every answer is counted, and one
    /// that comes again for the same request is a duplicate.
    pub(super) fn permission_storm(&mut self) -> Result<(), PeerError> {
        const STORM: usize = 100;
        let sid = self.session_id.clone();
        let ids: Vec<String> = (0..STORM).map(|i| format!("storm-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            self.peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
                "params": permission(&sid, &format!("s{i}"), &format!("touch s{i}"), "allow_once")}))?;
        }
        let mut outcomes = std::collections::BTreeMap::new();
        for id in &ids {
            let answer = self
                .peer
                .wait_for(|v| v.get("method").is_none() && v.get("id") == Some(&json!(id)))?;
            let outcome = answer
                .pointer("/result/outcome/optionId")
                .or_else(|| answer.pointer("/result/outcome/outcome"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            *outcomes.entry(outcome).or_insert(0usize) += 1;
        }
        // Anything more for these requests is an answer given twice.
        std::thread::sleep(Duration::from_millis(300));
        let mut twice = 0;
        while self
            .peer
            .wait_for_timeout(
                |v| {
                    v.get("method").is_none()
                        && v.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|i| i.starts_with("storm-"))
                },
                Duration::from_millis(50),
            )
            .is_some()
        {
            twice += 1;
        }
        let outcomes: Vec<String> = outcomes.iter().map(|(k, n)| format!("{k}={n}")).collect();
        self.report(
            "storm",
            &format!("{STORM} answered ({}), {twice} twice", outcomes.join(" ")),
        )
    }

    /// Scenario `burst-then-die` (see [`SCENARIOS`]).
    pub(super) fn burst_then_die(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        // Larger than a pipe's buffer in all, so the client is still reading (and
        // answering requests into a closed stdin) when the agent is gone.
        let pad = "x".repeat(400);
        for i in 1..=BURST {
            self.say(&format!("burst {i} of {BURST} {pad}\n"))?;
            if i % 10 == 0 {
                let id = format!("burst-perm-{i}");
                self.peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
                    "params": permission(&sid, &format!("b{i}"), &format!("touch b{i}"), "allow_once")}))?;
            }
        }
        self.say(LAST_WORDS)?;
        std::process::abort()
    }

    /// Scenario `ignore-refusal` (see [`SCENARIOS`]).
    pub(super) fn ignore_refusal(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let answer = self.peer.request(
            "session/request_permission",
            permission(&sid, "c-refused", "rm -rf build", "allow_once"),
        )?;
        self.report("refused?", &answer.to_string())?;
        self.update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c-refused",
            "title": "rm -rf build", "kind": "execute", "status": "completed"}),
        )?;
        // Asks, and runs before the answer.
        self.update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c-eager",
            "title": "make deploy", "kind": "execute", "status": "pending"}),
        )?;
        let id = "perm-eager";
        self.peer.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
            "params": permission(&sid, "c-eager", "make deploy", "allow_once")}),
        )?;
        self.update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c-eager",
            "status": "in_progress"}),
        )?;
        let _ = self.peer.wait_for_timeout(
            |v| v.get("method").is_none() && v.get("id") == Some(&json!(id)),
            Duration::from_secs(5),
        );
        self.update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c-eager",
            "status": "completed"}),
        )?;
        Ok(())
    }

    /// Scenario `cancel-permission` (see [`SCENARIOS`]).
    pub(super) fn cancel_permission(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let id = "perm-cancel";
        let answer = self.withdrawn(
            id,
            "session/request_permission",
            permission(&sid, "c-cancel", "rm -rf build", "allow_once"),
            Duration::from_millis(400),
        )?;
        let outcome = answer.map_or_else(
            || "no answer".to_string(),
            |a| {
                a["result"]["outcome"]["outcome"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            },
        );
        self.report("cancelled permission", &outcome)?;
        Ok(())
    }

    /// Scenario `cancel-wait` (see [`SCENARIOS`]).
    pub(super) fn cancel_wait(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let t = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid, "command": "sleep 30"}),
        )?;
        let tid = t["terminalId"].clone();
        // Withdrawn long before the command ends: answered within 5 s or not at all.
        let answer = self.withdrawn(
            "wait-cancel",
            "terminal/wait_for_exit",
            json!({"sessionId": sid, "terminalId": tid}),
            Duration::from_millis(300),
        )?;
        let code = answer.map_or_else(
            || "no answer".to_string(),
            |a| a["error"]["code"].to_string(),
        );
        self.report("cancelled wait", &code)?;
        // The command itself runs on until killed.
        let out = self.terminal_call("terminal/output", &tid)?;
        self.report("still running", &out["exitStatus"].is_null().to_string())?;
        self.terminal_call("terminal/kill", &tid)?;
        self.terminal_call("terminal/release", &tid)?;
        Ok(())
    }

    /// Scenario `empty-options` (see [`SCENARIOS`]).
    pub(super) fn empty_options(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let a = self.peer.request("session/request_permission", json!({"sessionId": sid,
            "toolCall": {"toolCallId": "c-empty", "title": "no options", "kind": "execute"}, "options": []}))?;
        self.report("empty options", &a.to_string())?;
        let b = self.peer.request(
            "session/request_permission",
            json!({"sessionId": sid,
            "toolCall": {"toolCallId": "c-odd", "title": "odd options", "kind": "execute"},
            "options": [{"optionId": "x", "name": "Maybe", "kind": "perhaps"}]}),
        )?;
        self.report("unknown kinds", &b.to_string())?;
        Ok(())
    }

    /// Scenario `terminal-flood` (see [`SCENARIOS`]).
    pub(super) fn terminal_flood(&mut self) -> Result<(), PeerError> {
        let tid = self.terminal_run("head -c 40000000 /dev/zero | tr '\\0' x")?;
        let out = self.terminal_call("terminal/output", &tid)?;
        let len = out["output"].as_str().map(str::len).unwrap_or(0);
        self.report(
            "terminal output bytes",
            &format!("{len} truncated={}", out["truncated"]),
        )?;
        self.terminal_call("terminal/release", &tid)?;
        Ok(())
    }

    /// Scenario `escapes` (see [`SCENARIOS`]).
    pub(super) fn escapes(&mut self) -> Result<(), PeerError> {
        use std::io::Write;
        let evil = "title\x1b]0;PWNED-TITLE\x07 clip\x1b]52;c;UFdORUQ=\x07 csi\x1b[2J\x1b[31mred\x1b[0m bell\x07 c1\u{9b}31m end";
        self.say(evil)?;
        self.update(json!({"sessionUpdate": "tool_call", "toolCallId": "c-esc",
            "title": evil, "kind": "execute", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": evil}}]}))?;
        let _ = writeln!(std::io::stderr(), "stderr {evil}");
        Ok(())
    }

    /// Scenario `orphans` (see [`SCENARIOS`]).
    pub(super) fn orphans(&mut self) -> Result<(), PeerError> {
        let tid = self.terminal_run("for i in 1 2 3 4 5; do (sleep 0.1 &); done; echo orphaned")?;
        self.terminal_call("terminal/release", &tid)?;
        // The client reaps what it adopted within a few seconds.
        std::thread::sleep(Duration::from_millis(4500));
        let client = std::os::unix::process::parent_id();
        self.report(
            "zombies",
            &trellis_os::reaper::zombies_of(client).len().to_string(),
        )?;
        Ok(())
    }

    /// Scenario `escape-group` (see [`SCENARIOS`]).
    pub(super) fn escape_group(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let marker = format!("trellis-escape-{}", std::process::id());
        // A terminal command that daemonizes a child into a new session.
        let _ = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid, "command": format!(
                "(setsid sh -c 'sleep 600; true {marker}-terminal' >/dev/null 2>&1 &); echo spawned")}),
        )?;
        // The agent's own daemon: double fork + setsid, as MCP servers are started.
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "(setsid sh -c 'sleep 600; true {marker}-daemon' >/dev/null 2>&1 &)"
            ))
            .status();
        self.report("marker", &marker)?;
        let _ = self.peer.request(
            "session/request_permission",
            permission(&sid, "c-escape", "wait", "allow_once"),
        );
        Ok(())
    }

    /// Scenario `linger` (see [`SCENARIOS`]).
    pub(super) fn linger(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let marker = format!("trellis-linger-{}", std::process::id());
        let _ = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid,
            "command": format!("sleep 600; true {marker}-terminal")}),
        )?;
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("sleep 600; true {marker}-child"))
            .spawn();
        self.report("marker", &marker)?;
        let _ = self.peer.request(
            "session/request_permission",
            permission(&sid, "c-linger", "wait", "allow_once"),
        );
        Ok(())
    }

    pub(super) fn write_escape(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let outside = self.outside();
        let target = outside.join("escaped.txt");
        std::fs::write(&target, "untouched\n")?;
        let client = std::os::unix::process::parent_id();
        // The names older clients used for their temporary file, planted for our parent and
        // its neighbours.
        for pid in client.saturating_sub(3)..client + 4 {
            let _ = std::os::unix::fs::symlink(
                &target,
                self.cwd.join(format!(".notes.txt.trellis-{pid}.tmp")),
            );
        }
        let _ = std::os::unix::fs::symlink(&target, self.cwd.join("link-out"));
        let _ = std::os::unix::fs::symlink(&outside, self.cwd.join("dir-out"));
        let _ =
            std::os::unix::fs::symlink(outside.join("dangling-new.txt"), self.cwd.join("dangling"));
        let cwd = self.cwd.display().to_string();
        let attempts: Vec<(&str, String)> = vec![
            ("write notes", format!("{cwd}/notes.txt")),
            ("write through file link", format!("{cwd}/link-out")),
            (
                "write through dir link",
                format!("{cwd}/dir-out/escaped.txt"),
            ),
            ("write through dangling link", format!("{cwd}/dangling")),
            ("write with dotdot", format!("{cwd}/../escaped.txt")),
            ("write absolute outside", target.display().to_string()),
            (
                "write via proc root",
                format!("/proc/self/root{}", target.display()),
            ),
            ("write with nul", format!("{cwd}/a\u{0}b")),
            ("write relative", "notes.txt".to_string()),
        ];
        for (what, path) in attempts {
            let r = self.ask(
                "fs/write_text_file",
                json!({"sessionId": sid, "path": path, "content": "PWNED\n"}),
            )?;
            self.report(what, &r)?;
        }
        let r = self.ask(
            "fs/read_text_file",
            json!({"sessionId": sid, "path": format!("{cwd}/link-out")}),
        )?;
        self.report("read through file link", &r)?;
        let r = self.ask(
            "terminal/create",
            json!({"sessionId": sid, "command": "true", "cwd": outside.display().to_string()}),
        )?;
        self.report("terminal cwd outside", &r)?;
        Ok(())
    }

    pub(super) fn odd_ids(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let params = json!({"sessionId": sid, "path": self.path("nothing.txt")}).to_string();
        for id in ["1.5", "1180591620717411303424", "true", "[1]", "{}"] {
            self.peer.send_raw(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"fs/read_text_file\",\"params\":{params}}}"
            ))?;
            let got = self.peer.wait_for_timeout(
                |v| {
                    v.get("method").is_none()
                        && (v.get("error").is_some() || v.get("result").is_some())
                },
                Duration::from_secs(5),
            );
            self.report(&format!("id {id}"), &answer_kind(got.as_ref()))?;
        }
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"deep\",\"method\":\"fs/read_text_file\",\"params\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        self.peer.send_raw(&deep)?;
        let got = self.peer.wait_for_timeout(
            |v| v.get("method").is_none() && v.get("error").is_some(),
            Duration::from_secs(5),
        );
        self.report("nested 100000 deep", &answer_kind(got.as_ref()))?;
        // An id written with an escape: the client must answer the permission under it.
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"p\\u0031\",\"method\":\"session/request_permission\",\"params\":{}}}",
            permission(&sid, "c-esc-id", "echo escaped id", "allow_once")
        );
        self.peer.send_raw(&line)?;
        let got = self.peer.wait_for_timeout(
            |v| v.get("method").is_none() && v.get("id") == Some(&json!("p1")),
            Duration::from_secs(10),
        );
        self.report("escaped id", &answer_kind(got.as_ref()))?;
        Ok(())
    }
}
