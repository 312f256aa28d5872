//! `trellis agent hostile SCENARIO`: an ACP agent that misbehaves on purpose, one way per
//! scenario, for the end-to-end tests of Trellis's trust boundary (and for anyone checking a
//! client by hand).
//!
//! Every scenario sets up a session normally (unless it is about setup), then, on the
//! prompt, does its one bad thing and reports what it observed as an agent message
//! (`report: …` lines), so a test can check both sides. Files it plants live in the session
//! cwd and its parent directory (the "outside" a client must never touch).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::peer::{Incoming, Peer, PeerError};

#[path = "hostile_scenes.rs"]
mod scenes;

/// The scenarios, with what each does.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "write-escape",
        "plants links at temporary names and outside, then asks for writes through them",
    ),
    (
        "fifo",
        "asks to read a FIFO, a directory and a device-like path, then a normal file",
    ),
    ("blank-lines", "writes a blank line after every message"),
    ("bad-utf8", "writes a message with invalid UTF-8 on stdout"),
    (
        "stderr-flood",
        "writes invalid UTF-8 and then 8 MiB on stderr before answering",
    ),
    (
        "odd-ids",
        "sends requests with ids of every odd type, a deeply nested one, and an escaped id",
    ),
    (
        "foreign-session",
        "sends an update without sessionId and a permission request for another session",
    ),
    (
        "die-with-permissions",
        "starts a terminal, asks 200 permissions at once, then exits without waiting",
    ),
    (
        "permission-storm",
        "asks 100 permissions at once, waits for every answer, reports how many came and how many twice",
    ),
    (
        "huge-title",
        "makes a tool call whose title, name and id are each 1 MiB, then ends its turn",
    ),
    (
        "call-flood",
        "makes 20 000 tool calls, each with a 200-byte result, then ends its turn",
    ),
    (
        "burst-then-die",
        "writes 300 messages with a permission request after every tenth, then aborts without reading",
    ),
    (
        "empty-options",
        "asks permissions with no options and with unknown option kinds",
    ),
    (
        "ignore-refusal",
        "asks a permission, then runs the call whatever the answer, and runs another while asking",
    ),
    (
        "cancel-permission",
        "asks a permission, cancels it with $/cancel_request after 0.4 s, reports the answer",
    ),
    (
        "cancel-wait",
        "waits for a 30 s command to exit, withdraws the wait with $/cancel_request, reports the answer",
    ),
    ("hang-init", "never answers initialize"),
    (
        "hang-settings",
        "offers a config option and never answers session/set_config_option",
    ),
    ("hang-session", "answers initialize, never session/new"),
    (
        "terminal-login-anyway",
        "offers only a terminal login to a client that did not advertise one, and requires it",
    ),
    (
        "terminal-flood",
        "runs a command printing 40 MB through a terminal without a byte limit",
    ),
    (
        "escapes",
        "writes terminal escape sequences in messages, titles, output and stderr",
    ),
    (
        "linger",
        "starts a terminal and a child of its own, both sleeping, then never ends the turn",
    ),
    (
        "escape-group",
        "like linger, but everything leaves its process group: setsid, double forks",
    ),
    (
        "orphans",
        "orphans short-lived processes through a terminal, then counts the client's zombies",
    ),
];

/// Messages `burst-then-die` writes before its last words.
pub const BURST: usize = 300;
/// The last message `burst-then-die` writes before it aborts.
pub const LAST_WORDS: &str = "last words: the burst is over\n";

struct Hostile {
    peer: Peer,
    session_id: String,
    cwd: PathBuf,
}

/// Runs the agent until the client closes stdin.
pub fn run(scenario: &str) -> Result<(), PeerError> {
    if !SCENARIOS.iter().any(|(s, _)| *s == scenario) {
        return Err(PeerError::Io(std::io::Error::other(format!(
            "unknown scenario {scenario}"
        ))));
    }
    let mut h = Hostile {
        peer: Peer::stdio(),
        session_id: format!("hostile-{}", std::process::id()),
        cwd: PathBuf::from("."),
    };
    loop {
        let msg = match h.peer.recv(None) {
            Some(Incoming::Message(v)) => v,
            Some(Incoming::Closed) | None => return Ok(()),
        };
        let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id"))
        else {
            continue;
        };
        let id = id.clone();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "initialize" if scenario == "hang-init" => {}
            "initialize" => {
                let methods = if scenario == "terminal-login-anyway" {
                    json!([{"type": "terminal", "id": "tui-login", "name": "Log in\u{1b}[2J here",
                        "args": ["--login", "a b"], "env": {"LOGIN_MODE": "1"}}])
                } else {
                    json!([])
                };
                h.respond(
                    &id,
                    json!({"protocolVersion": 1, "agentCapabilities": {},
                        "agentInfo": {"name": "trellis-hostile", "version": env!("CARGO_PKG_VERSION")},
                        "authMethods": methods}),
                    scenario,
                )?
            }
            "session/new" if scenario == "terminal-login-anyway" => {
                h.peer
                    .respond_error(&id, -32000, "Authentication required")?;
            }
            "session/new" if scenario == "hang-session" => {}
            "session/new" => {
                h.cwd = PathBuf::from(params["cwd"].as_str().unwrap_or("."));
                let sid = h.session_id.clone();
                let mut result = json!({"sessionId": sid});
                if scenario == "hang-settings" {
                    result["configOptions"] = json!([{"id": "model", "name": "Model",
                        "type": "select", "currentValue": "a",
                        "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}]);
                }
                h.respond(&id, result, scenario)?;
            }
            "session/set_config_option" if scenario == "hang-settings" => {}
            "session/prompt" => {
                let stop = h.play(scenario)?;
                if scenario == "linger" || scenario == "escape-group" {
                    continue;
                }
                h.respond(&id, json!({"stopReason": stop}), scenario)?;
            }
            other => h
                .peer
                .respond_error(&id, -32601, &format!("Method not found: {other}"))?,
        }
    }
}

impl Hostile {
    fn respond(&mut self, id: &Value, result: Value, scenario: &str) -> Result<(), PeerError> {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        self.send_line(&line, scenario)
    }

    fn send_line(&mut self, line: &str, scenario: &str) -> Result<(), PeerError> {
        if scenario == "blank-lines" {
            self.peer
                .send_bytes(format!("{line}\n\n \r\n").as_bytes())?;
        } else {
            self.peer.send_raw(line)?;
        }
        Ok(())
    }

    fn update(&mut self, update: Value) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        self.peer.notify(
            "session/update",
            json!({"sessionId": sid, "update": update}),
        )?;
        Ok(())
    }

    fn say(&mut self, text: &str) -> Result<(), PeerError> {
        self.update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}}))
    }

    fn report(&mut self, what: &str, outcome: &str) -> Result<(), PeerError> {
        self.say(&format!("report: {what}: {outcome}\n"))
    }

    /// A client request; the answer as `ok` or `error: message`.
    fn ask(&mut self, method: &str, params: Value) -> Result<String, PeerError> {
        match self.peer.request(method, params) {
            Ok(_) => Ok("ok".into()),
            Err(PeerError::Rpc(e)) => Ok(format!(
                "error: {}",
                e.get("message").and_then(Value::as_str).unwrap_or("?")
            )),
            Err(e) => Err(e),
        }
    }

    /// Runs `command` in a client terminal until it exits; returns the terminal id.
    fn terminal_run(&mut self, command: &str) -> Result<Value, PeerError> {
        let sid = self.session_id.clone();
        let t = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid, "command": command}),
        )?;
        let tid = t["terminalId"].clone();
        self.terminal_call("terminal/wait_for_exit", &tid)?;
        Ok(tid)
    }

    /// Sends request `id`, withdraws it with `$/cancel_request` `after` later, and returns
    /// the client's answer (`None`: none within 5 s).
    fn withdrawn(
        &mut self,
        id: &str,
        method: &str,
        params: Value,
        after: Duration,
    ) -> Result<Option<Value>, PeerError> {
        self.peer
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        std::thread::sleep(after);
        self.peer.send(
            &json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}}),
        )?;
        Ok(self.peer.wait_for_timeout(
            |v| v.get("method").is_none() && v.get("id") == Some(&json!(id)),
            Duration::from_secs(5),
        ))
    }

    /// A `terminal/*` request about terminal `tid`.
    fn terminal_call(&mut self, method: &str, tid: &Value) -> Result<Value, PeerError> {
        let sid = self.session_id.clone();
        self.peer
            .request(method, json!({"sessionId": sid, "terminalId": tid}))
    }

    fn path(&self, rel: &str) -> String {
        self.cwd.join(rel).display().to_string()
    }

    fn outside(&self) -> PathBuf {
        self.cwd.parent().unwrap_or(Path::new("/")).to_path_buf()
    }

    fn play(&mut self, scenario: &str) -> Result<&'static str, PeerError> {
        match scenario {
            "write-escape" => self.write_escape()?,
            "fifo" => self.fifo()?,
            "blank-lines" => self.blank_lines()?,
            "bad-utf8" => self.bad_utf8()?,
            "stderr-flood" => self.stderr_flood()?,
            "odd-ids" => self.odd_ids()?,
            "foreign-session" => self.foreign_session()?,
            "die-with-permissions" => self.die_with_permissions()?,
            "burst-then-die" => self.burst_then_die()?,
            "ignore-refusal" => self.ignore_refusal()?,
            "cancel-permission" => self.cancel_permission()?,
            "cancel-wait" => self.cancel_wait()?,
            "empty-options" => self.empty_options()?,
            "terminal-flood" => self.terminal_flood()?,
            "escapes" => self.escapes()?,
            "orphans" => self.orphans()?,
            "escape-group" => self.escape_group()?,
            "linger" => self.linger()?,
            "permission-storm" => self.permission_storm()?,
            "call-flood" => self.call_flood()?,
            "huge-title" => self.huge_title()?,
            _ => {}
        }
        Ok("end_turn")
    }

    /// Scenario `fifo` (see [`SCENARIOS`]).
    fn fifo(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let fifo = self.cwd.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        self.report(
            "mkfifo",
            &format!("{}", made.map(|s| s.success()).unwrap_or(false)),
        )?;
        for (what, path) in [
            ("read fifo", self.path("pipe")),
            ("read directory", self.cwd.display().to_string()),
        ] {
            let r = self.ask("fs/read_text_file", json!({"sessionId": sid, "path": path}))?;
            self.report(what, &r)?;
        }
        std::fs::write(self.cwd.join("plain.txt"), "plain\n")?;
        let r = self.ask(
            "fs/read_text_file",
            json!({"sessionId": sid, "path": self.path("plain.txt")}),
        )?;
        self.report("read plain file", &r)?;
        Ok(())
    }

    /// Scenario `blank-lines` (see [`SCENARIOS`]).
    fn blank_lines(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        for text in ["one ", "two ", "three"] {
            let line = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text}}}})
            .to_string();
            self.send_line(&line, "blank-lines")?;
        }
        Ok(())
    }

    /// Scenario `bad-utf8` (see [`SCENARIOS`]).
    fn bad_utf8(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        let head = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"{sid}\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"caf"
        );
        let mut line = head.into_bytes();
        line.extend_from_slice(b"\xe9 \xff\xfe bytes\"}}}}\n");
        self.peer.send_bytes(&line)?;
        self.say(" and then more text")?;
        Ok(())
    }

    /// Scenario `stderr-flood` (see [`SCENARIOS`]).
    fn stderr_flood(&mut self) -> Result<(), PeerError> {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        err.write_all(b"bad byte \xff on stderr\n")?;
        let line = "x".repeat(1023) + "\n";
        for _ in 0..(8 << 10) {
            err.write_all(line.as_bytes())?;
        }
        err.write_all(b"the last stderr line\n")?;
        err.flush()?;
        self.say("stderr written")?;
        Ok(())
    }

    /// Scenario `foreign-session` (see [`SCENARIOS`]).
    fn foreign_session(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        self.peer.notify(
            "session/update",
            json!({"update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "GHOST-NO-SESSION"}}}),
        )?;
        self.peer.notify(
            "session/update",
            json!({"sessionId": "someone-else", "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "GHOST-OTHER-SESSION"}}}),
        )?;
        let r = self.ask(
            "session/request_permission",
            permission("other", "c-foreign", "rm -rf ~", "allow_once"),
        )?;
        self.report("permission for another session", &r)?;
        let r = self.ask(
            "session/request_permission",
            json!({
            "toolCall": {"toolCallId": "c-none", "title": "no session"},
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]}),
        )?;
        self.report("permission without session", &r)?;
        let answer = self.peer.request(
            "session/request_permission",
            permission(&sid, "c-own", "echo mine", "allow_once"),
        )?;
        self.report("own permission", &answer.to_string())?;
        Ok(())
    }

    /// Scenario `die-with-permissions` (see [`SCENARIOS`]).
    fn die_with_permissions(&mut self) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        // A terminal left running too: the client must stop it when the agent dies.
        let marker = format!("trellis-die-{}", std::process::id());
        let _ = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid, "command": format!("sleep 600; true {marker}-terminal")}),
        );
        self.report("marker", &marker)?;
        for i in 0..200 {
            let id = format!("perm-{i}");
            self.peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
                "params": permission(&sid, &format!("c{i}"), &format!("touch f{i}"), "allow_once")}))?;
        }
        std::thread::sleep(Duration::from_millis(300));
        std::process::exit(3)
    }

    /// Scenario `huge-title` (see [`SCENARIOS`]).
    fn huge_title(&mut self) -> Result<(), PeerError> {
        let mib = |c: &str| c.repeat(1 << 20);
        let id = format!("huge-{}", mib("i"));
        self.update(json!({"sessionUpdate": "tool_call", "toolCallId": id,
            "title": mib("T"), "kind": "read", "status": "in_progress",
            "_meta": {"claudeCode": {"toolName": mib("n")}}}))?;
        self.update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": "completed"}),
        )?;
        Ok(())
    }

    /// Scenario `call-flood` (see [`SCENARIOS`]).
    fn call_flood(&mut self) -> Result<(), PeerError> {
        const CALLS: usize = 20_000;
        let result = "r".repeat(200);
        for i in 0..CALLS {
            let id = format!("flood-{i}");
            self.update(json!({"sessionUpdate": "tool_call", "toolCallId": id,
                "title": format!("read part {i}"), "kind": "read", "status": "in_progress"}))?;
            self.update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": result}}]}),
            )?;
        }
        self.say(&format!("{CALLS} calls made"))?;
        Ok(())
    }
}

fn answer_kind(v: Option<&Value>) -> String {
    match v {
        None => "silence".into(),
        Some(v) if v.get("error").is_some() => format!("error {}", v["error"]["code"]),
        Some(v) => format!("result {}", v["result"]),
    }
}

fn permission(session: &str, call: &str, command: &str, kind: &str) -> Value {
    json!({"sessionId": session,
        "toolCall": {"toolCallId": call, "title": command, "kind": "execute", "rawInput": {"command": command}},
        "options": [{"optionId": "yes", "name": "Allow", "kind": kind},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
}
