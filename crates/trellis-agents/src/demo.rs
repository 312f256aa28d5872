//! `trellis agent demo`: a real ACP agent with a scripted session.
//!
//! The story works in `<session cwd>/demo-workspace`, which it creates and seeds: a thought,
//! a plan, a read, a search, an edit with a diff that asks permission, a command run through
//! the client's terminal with live output, a failing command, and messages in between. It
//! uses the client's fs and terminal services when they are advertised and the disk
//! otherwise. Between steps it honours `session/cancel` (the cancel point of the script).
//!
//! Prompts starting with a command play one scene of the ACP surface instead: `/compact`
//! (compaction and a notice), `/plans` (plans by id), `/elicit` and `/elicit-url` (the
//! agent's questions), `/subagents` (a child session that asks permission; see
//! [`crate::demo_subagent`]), `/anomalies` (the permission bugs the client detects, and a
//! request withdrawn with `$/cancel_request`; see [`crate::demo_anomaly`]).
//!
//! With `calls > 0` it is a load generator: `calls` execute cards of `lines` lines each,
//! streamed as fast as the pipe takes them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::peer::{Incoming, Peer, PeerError};
use crate::{demo_anomaly, demo_history, demo_login, demo_subagent};

#[path = "demo_scenes.rs"]
mod scenes;
#[path = "demo_services.rs"]
mod services;
#[path = "demo_story.rs"]
mod story;

#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Load mode: number of tool calls per prompt (0 = the scripted story).
    pub calls: usize,
    /// Load mode: output lines per call.
    pub lines: usize,
    /// Pause between story steps.
    pub delay: Duration,
    /// Advertise `loadSession` and answer `session/load` by replaying a short history
    /// (a client's resume against an agent that can reload).
    pub load_session: bool,
    /// Advertise `sessionCapabilities.resume` and answer `session/resume` (no replay).
    pub resume_session: bool,
    /// Advertise `sessionCapabilities.fork` and answer `session/fork` (a draft of the
    /// protocol): the new session says it remembers the one it forked.
    pub fork_session: bool,
    /// Require a login, done once this file exists (see `crate::demo_login`).
    pub login_file: Option<PathBuf>,
    /// Play in the session's directory even when it is in a git repository the demo did
    /// not make (asked for: `trellis agent demo --here`). Without it the demo writes only
    /// into a directory that is in no repository, or into a worktree Trellis made.
    pub here: bool,
    /// After its own edit, the story also asks to create this path (relative to the
    /// session's directory; see `crate::demo_edit`): a path policy tried offline.
    pub edit: Option<PathBuf>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            calls: 0,
            lines: 20,
            delay: Duration::from_millis(120),
            load_session: false,
            resume_session: false,
            fork_session: false,
            login_file: None,
            here: false,
            edit: None,
        }
    }
}

#[derive(Default)]
struct ClientCaps {
    read: bool,
    write: bool,
    terminal: bool,
    /// `sessionCapabilities.configOptions.boolean`: boolean options may be offered.
    boolean_options: bool,
    /// `auth.terminal`: the client can run a login in its terminal.
    terminal_login: bool,
    /// `elicitation.form` / `elicitation.url`: the client answers forms / opens links.
    elicit_form: bool,
    elicit_url: bool,
    /// `subagents`: the client follows child sessions.
    subagents: bool,
}

/// The demo's config options: a model (grouped choices), a thought level, and a switch
/// (offered only to clients that take boolean options).
struct DemoConfig {
    model: String,
    thought: String,
    web: bool,
}

impl Default for DemoConfig {
    fn default() -> DemoConfig {
        DemoConfig {
            model: "demo-fast".into(),
            thought: "medium".into(),
            web: false,
        }
    }
}

impl DemoConfig {
    fn options(&self, boolean: bool) -> Value {
        let mut v = vec![
            json!({"id": "model", "name": "Model", "category": "model", "type": "select",
                "description": "Which demo model answers",
                "currentValue": self.model, "options": [
                    {"group": "quick", "name": "Quick", "options": [
                        {"value": "demo-fast", "name": "Demo Fast", "description": "answers at once"}]},
                    {"group": "careful", "name": "Careful", "options": [
                        {"value": "demo-deep", "name": "Demo Deep", "description": "thinks first"},
                        {"value": "demo-max", "name": "Demo Max"}]}]}),
            json!({"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select",
                "currentValue": self.thought, "options": [
                    {"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"},
                    {"value": "high", "name": "High"}]}),
        ];
        if boolean {
            v.push(
                json!({"id": "web_search", "name": "Web search", "type": "boolean",
                "currentValue": self.web}),
            );
        }
        Value::Array(v)
    }

    /// Applies `session/set_config_option`; an error message for what is not allowed.
    fn set(&mut self, params: &Value, boolean: bool) -> Result<(), String> {
        let id = params["configId"].as_str().unwrap_or("");
        let value = &params["value"];
        let pick = |choices: &[&str], v: &Value| -> Result<String, String> {
            v.as_str()
                .filter(|s| choices.contains(s))
                .map(str::to_string)
                .ok_or_else(|| format!("{v} is not a value of {id}"))
        };
        match id {
            "model" => self.model = pick(&["demo-fast", "demo-deep", "demo-max"], value)?,
            "thought_level" => self.thought = pick(&["low", "medium", "high"], value)?,
            "web_search" if boolean && params["type"] == "boolean" => {
                self.web = value.as_bool().ok_or("web_search takes a boolean")?;
            }
            _ => return Err(format!("unknown config option {id}")),
        }
        Ok(())
    }
}

struct Demo {
    peer: Peer,
    opts: DemoOptions,
    caps: ClientCaps,
    config: DemoConfig,
    session_id: String,
    workspace: PathBuf,
    prompts: usize,
    /// Files it seeded into a git work tree (a worktree Trellis made, or `--here`) and has
    /// not said yet: there they are part of the work, so they go on the record as an edit
    /// of its own with its first prompt.
    unsaid: Vec<(&'static str, &'static str)>,
    /// The session this one forked (`session/fork`), said with the first answer.
    forked: Option<String>,
}

/// Runs the agent until the client closes stdin.
pub fn run(opts: DemoOptions) -> Result<(), PeerError> {
    let mut demo = Demo {
        peer: Peer::stdio(),
        opts,
        caps: ClientCaps::default(),
        config: DemoConfig::default(),
        session_id: String::new(),
        workspace: PathBuf::new(),
        prompts: 0,
        unsaid: Vec::new(),
        forked: None,
    };
    loop {
        let msg = match demo.peer.recv(None) {
            Some(Incoming::Message(v)) => v,
            Some(Incoming::Closed) | None => return Ok(()),
        };
        let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id"))
        else {
            continue; // notifications outside a turn (a late cancel) and stray responses
        };
        let id = id.clone();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "initialize" => demo.initialize(&id, &params)?,
            "authenticate" => match (&demo.opts.login_file, params["methodId"].as_str()) {
                (Some(f), Some(demo_login::AGENT_METHOD)) => match demo_login::mark(f) {
                    Ok(()) => demo.peer.respond(&id, json!({}))?,
                    Err(e) => {
                        demo.peer
                            .respond_error(&id, -32603, &format!("cannot log in: {e}"))?
                    }
                },
                _ => demo
                    .peer
                    .respond_error(&id, -32602, "no such authentication method")?,
            },
            "session/new" | "session/load" | "session/resume"
                if !demo_login::logged_in(demo.opts.login_file.as_deref()) =>
            {
                demo.peer
                    .respond_error(&id, -32000, "Authentication required")?;
            }
            "session/new" => demo.new_session(&id, &params)?,
            "session/load" if demo.opts.load_session => {
                let cwd = params["cwd"].as_str().unwrap_or(".").to_string();
                demo.workspace = Path::new(&cwd).join("demo-workspace");
                demo.session_id = params["sessionId"].as_str().unwrap_or("").to_string();
                // The history, replayed as updates before the answer (as ACP asks).
                for (kind, text) in [
                    ("user_message_chunk", "(replayed) the earlier prompt"),
                    ("agent_message_chunk", "(replayed) what I answered then"),
                ] {
                    demo.peer.notify(
                        "session/update",
                        json!({"sessionId": demo.session_id, "update": {
                            "sessionUpdate": kind, "content": {"type": "text", "text": text}}}),
                    )?;
                }
                demo.peer.respond(
                    &id,
                    json!({"configOptions": demo.config.options(demo.caps.boolean_options)}),
                )?;
            }
            "session/fork" if demo.opts.fork_session => {
                let cwd = params["cwd"].as_str().unwrap_or(".").to_string();
                demo.workspace = Path::new(&cwd).join("demo-workspace");
                let from = params["sessionId"].as_str().unwrap_or("").to_string();
                demo.session_id = format!("{from}-fork-{}", std::process::id());
                demo.forked = Some(from);
                demo.peer.respond(
                    &id,
                    json!({"sessionId": demo.session_id,
                        "configOptions": demo.config.options(demo.caps.boolean_options)}),
                )?;
            }
            "session/resume" if demo.opts.resume_session => {
                let cwd = params["cwd"].as_str().unwrap_or(".").to_string();
                demo.workspace = Path::new(&cwd).join("demo-workspace");
                demo.session_id = params["sessionId"].as_str().unwrap_or("").to_string();
                demo.peer.respond(
                    &id,
                    json!({"configOptions": demo.config.options(demo.caps.boolean_options)}),
                )?;
            }
            "session/list" if demo.opts.load_session || demo.opts.resume_session => {
                demo.peer.respond(&id, demo_history::listed(&params))?
            }
            "session/set_mode" => demo.peer.respond(&id, json!({}))?,
            "session/set_config_option" => {
                match demo.config.set(&params, demo.caps.boolean_options) {
                    Ok(()) => demo.peer.respond(
                        &id,
                        json!({"configOptions": demo.config.options(demo.caps.boolean_options)}),
                    )?,
                    Err(e) => demo.peer.respond_error(&id, -32602, &e)?,
                }
            }
            "session/prompt" => {
                let stop = demo.prompt(&params)?;
                demo.peer.respond(&id, json!({"stopReason": stop}))?;
            }
            other => demo
                .peer
                .respond_error(&id, -32601, &format!("Method not found: {other}"))?,
        }
    }
}

impl Demo {
    /// The demo writes its workspace into `cwd` only when that is in no git repository,
    /// in a worktree Trellis made, or when asked (`--here`).
    fn may_write(&self, cwd: &Path) -> Result<(), String> {
        if self.opts.here {
            return Ok(());
        }
        match foreign_repository(cwd) {
            Some(top) => Err(format!(
                "the demo agent does not write into a repository it did not make ({} is in the git repository at {}): run `trellis demo` without --cwd for a scratch workspace, add --worktree to play in a worktree of it, or start the agent with `trellis agent demo --here`",
                cwd.display(),
                top.display()
            )),
            None => Ok(()),
        }
    }

    /// `initialize`: what the client can do, and what the demo offers (its options say
    /// whether it loads, resumes and lists sessions, and how one logs in).
    fn initialize(&mut self, id: &Value, params: &Value) -> Result<(), PeerError> {
        let caps = &params["clientCapabilities"];
        self.caps = ClientCaps {
            read: caps["fs"]["readTextFile"].as_bool().unwrap_or(false),
            write: caps["fs"]["writeTextFile"].as_bool().unwrap_or(false),
            terminal: caps["terminal"].as_bool().unwrap_or(false),
            boolean_options: caps["session"]["configOptions"]["boolean"].is_object(),
            terminal_login: caps["auth"]["terminal"].as_bool().unwrap_or(false),
            elicit_form: caps["elicitation"]["form"].is_object(),
            elicit_url: caps["elicitation"]["url"].is_object(),
            subagents: caps["subagents"].is_object(),
        };
        self.peer.respond(
            id,
            json!({
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": self.opts.load_session,
                    "sessionCapabilities": self.session_capabilities(),
                    "promptCapabilities": {"embeddedContext": true}},
                "agentInfo": {"name": "trellis-demo", "title": "Trellis demo agent", "version": env!("CARGO_PKG_VERSION")},
                "authMethods": demo_login::methods(self.opts.login_file.as_deref(), self.caps.terminal_login)
            }),
        )?;
        Ok(())
    }

    /// `session/new`: the scratch workspace seeded beside the session's directory.
    fn new_session(&mut self, id: &Value, params: &Value) -> Result<(), PeerError> {
        let cwd = params["cwd"].as_str().unwrap_or(".").to_string();
        if let Err(why) = self.may_write(Path::new(&cwd)) {
            self.peer.respond_error(id, -32602, &why)?;
            return Ok(());
        }
        self.workspace = Path::new(&cwd).join("demo-workspace");
        match seed_workspace(&self.workspace) {
            Ok(made) => {
                let in_git = Path::new(&cwd)
                    .ancestors()
                    .any(|d| std::fs::symlink_metadata(d.join(".git")).is_ok());
                if in_git {
                    self.unsaid = made;
                }
            }
            Err(e) => {
                self.peer.respond_error(
                    id,
                    -32603,
                    &format!("cannot create the demo workspace: {e}"),
                )?;
                return Ok(());
            }
        }
        self.session_id = format!("demo-{}", std::process::id());
        self.peer.respond(
            id,
            json!({
                "sessionId": self.session_id,
                "modes": {"currentModeId": "default", "availableModes": [
                    {"id": "default", "name": "Default"}, {"id": "yolo", "name": "Allow everything"}]},
                "configOptions": self.config.options(self.caps.boolean_options)
            }),
        )?;
        Ok(())
    }

    /// What it offers for sessions: resume, list, fork as asked for.
    fn session_capabilities(&self) -> Value {
        let mut caps = match (self.opts.resume_session, self.opts.load_session) {
            (true, _) => {
                json!({"resume": {}, "list": {}, "additionalDirectories": {}, "systemPrompt": {}})
            }
            (false, true) => json!({"list": {}, "additionalDirectories": {}, "systemPrompt": {}}),
            (false, false) => json!({"additionalDirectories": {}, "systemPrompt": {}}),
        };
        if self.opts.fork_session {
            caps["fork"] = json!({});
        }
        caps
    }

    /// `session/prompt`: the scene a prompt asks for (a slash command), the load of
    /// `--calls`, or the story; returns the stop reason.
    fn prompt(&mut self, params: &Value) -> Result<&'static str, PeerError> {
        self.prompts += 1;
        self.say_seeded()?;
        if let Some(from) = self.forked.take() {
            self.say(
                "agent_message_chunk",
                &format!("(forked from {from}: I remember our conversation) "),
            )?;
        }
        let text = params["prompt"][0]["text"].as_str().unwrap_or("");
        let stop = if text.trim_start().starts_with("/compact") {
            self.compact()?
        } else if text.trim_start().starts_with("/plans") {
            self.plans()?
        } else if text.trim_start().starts_with("/anomalies") {
            let said = demo_anomaly::run(&mut self.peer, &self.session_id, self.prompts)?;
            self.say("agent_message_chunk", &said)?;
            "end_turn"
        } else if text.trim_start().starts_with("/subagents") {
            let lib = self.path("src/lib.rs");
            demo_subagent::Scene {
                peer: &mut self.peer,
                session_id: &self.session_id,
                supported: self.caps.subagents,
                turn: self.prompts,
                lib_path: lib,
                delay: self.opts.delay,
            }
            .run()?
        } else if let Some(rest) = text.trim_start().strip_prefix("/edit") {
            match crate::demo_edit::target(rest) {
                Ok(rel) => self.edit_scene("edit-path", &rel)?,
                Err(e) => {
                    self.say("agent_message_chunk", &format!("/edit PATH: {e}"))?;
                    "end_turn"
                }
            }
        } else if let Some(rest) = text.trim_start().strip_prefix("/append ") {
            let said = match crate::demo_edit::target(rest) {
                Ok(rel) => {
                    let id = self.id("append");
                    let cwd = self
                        .workspace
                        .parent()
                        .unwrap_or(&self.workspace)
                        .to_path_buf();
                    crate::demo_edit::append(&mut self.peer, &self.session_id, &id, &cwd, &rel)?
                }
                Err(e) => format!("/append PATH: {e}"),
            };
            self.say("agent_message_chunk", &said)?;
            "end_turn"
        } else if let Some((_, why)) = text.split_once("rejected the tool call") {
            // A reject's reason, told as the next message: taken to heart, in words
            // that show what arrived.
            let why = why.split_once("Reason: ").map_or(why, |(_, r)| r);
            self.say(
                "agent_message_chunk",
                &format!(
                    "Understood, I will not do that. Your reason: {}",
                    why.trim()
                ),
            )?;
            "end_turn"
        } else if text.trim_start().starts_with("/elicit-url") {
            self.elicit(true)?
        } else if text.trim_start().starts_with("/elicit") {
            self.elicit(false)?
        } else if self.opts.calls > 0 {
            self.load()?
        } else {
            self.story()?
        };
        Ok(stop)
    }
}

/// The top of the git work tree `dir` is in, unless it is a worktree Trellis made (under
/// its data directory's `worktrees/`): a repository the demo must not write into.
pub fn foreign_repository(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let top = dir
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())?
        .to_path_buf();
    let trellis = trellis_store::Paths::from_env()
        .and_then(|p| std::fs::canonicalize(p.data_dir.join("worktrees")).ok());
    match trellis {
        Some(t) if top.starts_with(&t) => None,
        _ => Some(top),
    }
}

const README: &str = "# demo-workspace\n\nA scratch project the Trellis demo agent plays in.\n";
const LIB_RS: &str = "/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    // TODO: check for overflow\n    a + b\n}\n";

/// Seeds the demo's project in `dir`: the files it wrote (those already there are left).
fn seed_workspace(dir: &Path) -> std::io::Result<Vec<(&'static str, &'static str)>> {
    std::fs::create_dir_all(dir.join("src"))?;
    let mut made = Vec::new();
    for (name, text) in [("README.md", README), ("src/lib.rs", LIB_RS)] {
        let p = dir.join(name);
        if !p.exists() {
            std::fs::write(p, text)?;
            made.push((name, text));
        }
    }
    Ok(made)
}

impl Demo {
    /// The files seeded into a git work tree, as a completed edit on the record (once):
    /// what the demo wrote there is what the comparison and a land count, so it is what
    /// the demo reports too.
    fn say_seeded(&mut self) -> Result<(), PeerError> {
        if self.unsaid.is_empty() {
            return Ok(());
        }
        let content: Vec<Value> = std::mem::take(&mut self.unsaid)
            .into_iter()
            .map(|(name, text)| {
                json!({"type": "diff", "path": self.path(name), "oldText": null, "newText": text})
            })
            .collect();
        self.update(json!({"sessionUpdate": "tool_call", "toolCallId": "seed",
            "title": "Create demo-workspace/ (the demo's own project)", "kind": "edit",
            "status": "completed", "content": content}))
    }

    fn update(&mut self, update: Value) -> Result<(), PeerError> {
        let sid = self.session_id.clone();
        self.peer.notify(
            "session/update",
            json!({"sessionId": sid, "update": update}),
        )?;
        Ok(())
    }

    fn say(&mut self, kind: &str, text: &str) -> Result<(), PeerError> {
        let mid = format!("m{}-{kind}-{}", self.prompts, text.len());
        // Stream in a few chunks, as real agents do.
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        for part in words.chunks(6) {
            self.update(json!({"sessionUpdate": kind, "messageId": mid,
                "content": {"type": "text", "text": part.concat()}}))?;
        }
        Ok(())
    }

    /// Pauses between steps; true when the turn was cancelled meanwhile.
    fn pause(&mut self) -> bool {
        self.peer.cancelled(self.opts.delay)
    }

    /// A call id unique in the session: the story's ids, suffixed from the second prompt
    /// on (`read-1`, then `read-1.2`…), so a new turn never rewrites an earlier turn's calls.
    fn id(&self, base: &str) -> String {
        if self.prompts > 1 {
            format!("{base}.{}", self.prompts)
        } else {
            base.to_string()
        }
    }

    fn call(&mut self, id: &str, fields: Value) -> Result<(), PeerError> {
        let id = self.id(id);
        let mut u = json!({"sessionUpdate": "tool_call", "toolCallId": id});
        merge(&mut u, fields);
        self.update(u)
    }

    fn call_update(&mut self, id: &str, fields: Value) -> Result<(), PeerError> {
        let id = self.id(id);
        let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": id});
        merge(&mut u, fields);
        self.update(u)
    }

    fn plan(&mut self, done: usize) -> Result<(), PeerError> {
        let steps = [
            "Read the README",
            "Find TODOs",
            "Fix the TODO in src/lib.rs",
            "Run the tests",
        ];
        let entries: Vec<Value> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let status = if i < done { "completed" } else if i == done { "in_progress" } else { "pending" };
                json!({"content": s, "priority": if i == 2 { "high" } else { "medium" }, "status": status})
            })
            .collect();
        self.update(json!({"sessionUpdate": "plan", "entries": entries}))
    }

    fn path(&self, rel: &str) -> String {
        self.workspace.join(rel).to_string_lossy().into_owned()
    }
}

fn merge(into: &mut Value, fields: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), fields) {
        a.extend(b);
    }
}
