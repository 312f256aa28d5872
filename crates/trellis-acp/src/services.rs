//! The client methods the agent calls (`session/request_permission`, `elicitation/create`,
//! `fs/*`, `terminal/*`): routed by the SDK's dispatch handler, which never awaits.
//!
//! Invariants: permission requests and elicitations are parked for the driver (keyed by the
//! canonical id); requests naming another session, and elicitations of a mode not
//! advertised, are refused; file requests run on the blocking pool with
//! a time bound; every path is confined to the session's roots.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::{Responder, UntypedMessage, V1};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::lock;
use crate::recorder::Recorder;
use crate::responders::{Parked, Responders, id_key};
use crate::roots::Roots;
use crate::spec::Caps;
use crate::terminal::{Spawn, Terminals};

/// What the handlers serve requests with.
pub(crate) struct Services {
    pub(crate) roots: Arc<Roots>,
    /// This connection's ACP session, once set up: requests naming another are refused.
    pub(crate) session: Arc<Mutex<Option<String>>>,
    /// Subagents (child sessions) the agent announced on this session or on one of them:
    /// their permission requests and elicitations are this session's.
    pub(crate) children: Mutex<std::collections::HashSet<String>>,
    pub(crate) cwd: PathBuf,
    pub(crate) caps: Caps,
    pub(crate) terminals: Terminals,
    pub(crate) recorder: Recorder,
    /// A dialed agent's shared directories: the paths it names are mapped to this
    /// machine's (empty: they are this machine's).
    pub(crate) paths: trellis_core::path_map::PathMap,
}

impl Services {
    /// The agent's `path` on this machine: through the shared directories, when there
    /// are any (a path outside them is not this machine's to serve).
    fn here(&self, path: &std::path::Path) -> Result<PathBuf, agent_client_protocol::Error> {
        if self.paths.is_empty() {
            return Ok(path.to_path_buf());
        }
        path.to_str()
            .and_then(|p| self.paths.to_local(p))
            .map(PathBuf::from)
            .ok_or_else(|| {
                rpc_error(
                    -32602,
                    format!(
                        "{}: not in a directory this machine shares with the agent",
                        path.display()
                    ),
                )
            })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadParams {
    path: PathBuf,
    line: Option<u32>,
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WriteParams {
    path: PathBuf,
    content: String,
}

#[derive(Deserialize)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateParams {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
    cwd: Option<PathBuf>,
    output_byte_limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TermParams {
    terminal_id: String,
}

fn rpc_error(code: i32, message: impl Into<String>) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(code, message)
}

fn params<T: for<'de> Deserialize<'de>>(v: &Value) -> Result<T, agent_client_protocol::Error> {
    serde_json::from_value(v.clone()).map_err(|e| rpc_error(-32602, format!("invalid params: {e}")))
}

/// Longest a file request may take before it is answered with an error (the blocking
/// thread is left to finish on its own; the session goes on).
const FS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves a file request on the blocking pool, bounded by [`FS_TIMEOUT`]: a slow or
/// hung file system never stalls the connection.
fn fs_task(
    responder: Responder<Value, V1>,
    paths: &trellis_core::path_map::PathMap,
    work: impl FnOnce() -> Result<Value, crate::fs::FsError> + Send + 'static,
) {
    let paths = paths.clone();
    tokio::spawn(async move {
        let r = match tokio::time::timeout(FS_TIMEOUT, tokio::task::spawn_blocking(work)).await {
            Ok(Ok(Ok(v))) => Ok(v),
            // In the agent's words: its paths, not this machine's.
            Ok(Ok(Err(e))) => Err(rpc_error(e.code(), paths.in_their_words(&e.to_string()))),
            Ok(Err(e)) => Err(rpc_error(-32603, format!("file request failed: {e}"))),
            Err(_) => Err(rpc_error(
                -32603,
                format!("file request took longer than {} s", FS_TIMEOUT.as_secs()),
            )),
        };
        let _ = match r {
            Ok(v) => responder.respond(v),
            Err(e) => responder.respond_with_error(e),
        };
    });
}

impl Services {
    /// Follows `subagent_update` notifications (in arrival order, before any request of the
    /// child they announce): the children whose requests are accepted.
    pub(crate) fn observe(&self, n: &UntypedMessage) {
        if n.method() != "session/update" {
            return;
        }
        let p = n.params();
        let update = &p["update"];
        if update["sessionUpdate"] != "subagent_update" {
            return;
        }
        let (Some(parent), Some(child)) = (
            p.get("sessionId").and_then(Value::as_str),
            update.get("sessionId").and_then(Value::as_str),
        ) else {
            return;
        };
        let mine = lock(&self.session).clone();
        let mut children = lock(&self.children);
        let known_parent = mine.as_deref().is_none_or(|m| m == parent) || children.contains(parent);
        if known_parent
            && mine.as_deref() != Some(child)
            && children.len() < trellis_core::subagents::MAX_SUBAGENTS
        {
            children.insert(child.to_string());
        }
    }
}

/// Routes one agent request. Never awaits: slow work goes to a spawned task.
pub(crate) fn route(
    s: &Services,
    responders: &Arc<Mutex<Responders>>,
    req: UntypedMessage,
    responder: Responder<Value, V1>,
) {
    let (method, p) = req.into_parts();
    let theirs = p.get("sessionId").and_then(Value::as_str);
    let mine = lock(&s.session).clone();
    let other_session = match (mine.as_deref(), theirs) {
        (Some(mine), Some(theirs)) => mine != theirs && !lock(&s.children).contains(theirs),
        _ => false,
    };
    let to = Asked {
        theirs,
        other_session,
        responders,
    };
    match method.as_str() {
        "session/request_permission" | "elicitation/create" => ask(s, &to, &method, &p, responder),
        m if m.starts_with("fs/") => fs_request(s, m, &p, responder),
        m if m.starts_with("terminal/") => terminal_request(s, m, &p, responder),
        other => not_found(other, responder),
    }
}

/// Who a request that waits for the driver is for.
struct Asked<'a> {
    /// The session it names.
    theirs: Option<&'a str>,
    /// It names a session that is neither this one nor one of its subagents.
    other_session: bool,
    responders: &'a Arc<Mutex<Responders>>,
}

fn answer(responder: Responder<Value, V1>, r: Result<Value, agent_client_protocol::Error>) {
    let _ = match r {
        Ok(v) => responder.respond(v),
        Err(e) => responder.respond_with_error(e),
    };
}

fn not_found(method: &str, responder: Responder<Value, V1>) {
    let msg = format!("Method not found: {method} (not supported or not advertised by Trellis)");
    answer(responder, Err(rpc_error(-32601, msg)));
}

/// Parks a request for the driver's answer (or answers it with one that came first).
fn park(responders: &Arc<Mutex<Responders>>, parked: Parked, responder: Responder<Value, V1>) {
    let key = id_key(&responder);
    let mut r = lock(responders);
    match r.answers.remove(&key) {
        Some(v) => {
            let _ = responder.respond(v);
        }
        None => {
            r.waiting.insert(key, (parked, responder));
        }
    }
}

/// A permission request or a question: checked, then parked for the driver.
fn ask(s: &Services, to: &Asked<'_>, method: &str, p: &Value, responder: Responder<Value, V1>) {
    let (theirs, other_session) = (to.theirs, to.other_session);
    match method {
        "session/request_permission" => {
            if other_session || theirs.is_none() {
                let msg = format!(
                    "permission request for {}: not this connection's session",
                    theirs.unwrap_or("no session")
                );
                return answer(responder, Err(rpc_error(-32602, msg)));
            }
            park(to.responders, Parked::Permission, responder);
        }
        "elicitation/create" if s.caps.elicitation_form || s.caps.elicitation_url => {
            // Tied to a session (this one) or to a request of the setup (no session id).
            if other_session {
                let msg = format!(
                    "elicitation for {}: not this connection's session",
                    theirs.unwrap_or_default()
                );
                return answer(responder, Err(rpc_error(-32602, msg)));
            }
            let offered = match p.get("mode").and_then(Value::as_str) {
                Some("form") => s.caps.elicitation_form,
                Some("url") => s.caps.elicitation_url,
                _ => false,
            };
            // The reducer reads the same params; what it cannot decode, it refuses too.
            let decodes = trellis_core::elicitation::parse("", &p.to_string()).is_ok();
            if !offered || !decodes {
                let mode = p.get("mode").map(Value::to_string).unwrap_or("none".into());
                let msg = if offered {
                    "malformed elicitation".to_string()
                } else {
                    format!("elicitation mode {mode} is not supported here")
                };
                return answer(responder, Err(rpc_error(-32602, msg)));
            }
            park(to.responders, Parked::Elicitation, responder);
        }
        other => not_found(other, responder),
    }
}

/// `fs/*`: on the blocking pool, bounded.
fn fs_request(s: &Services, method: &str, p: &Value, responder: Responder<Value, V1>) {
    match method {
        "fs/read_text_file" if s.caps.read_text_file => {
            match params::<ReadParams>(p).and_then(|mut p| {
                p.path = s.here(&p.path)?;
                Ok(p)
            }) {
                Ok(p) => {
                    let roots = s.roots.clone();
                    fs_task(responder, &s.paths, move || {
                        crate::fs::read_text(&roots, &p.path, p.line, p.limit)
                            .map(|content| json!({"content": content}))
                    });
                }
                Err(e) => answer(responder, Err(e)),
            }
        }
        "fs/write_text_file" if s.caps.write_text_file => {
            match params::<WriteParams>(p).and_then(|mut p| {
                p.path = s.here(&p.path)?;
                Ok(p)
            }) {
                Ok(p) => {
                    let roots = s.roots.clone();
                    let recorder = s.recorder.clone();
                    let request_id = id_key(&responder);
                    fs_task(responder, &s.paths, move || {
                        let (old, existed) =
                            crate::fs::write_text_said(&roots, &p.path, &p.content)?;
                        // `file_written` (with the old content) is recorded after the write
                        // and before the response, so extensions see it first.
                        recorder.local(trellis_core::LocalRecord::FileWritten {
                            request_id,
                            old,
                            existed: Some(existed),
                        });
                        Ok(json!({}))
                    });
                }
                Err(e) => answer(responder, Err(e)),
            }
        }
        other => not_found(other, responder),
    }
}

/// A `terminal/*` request's terminal: one of the agent's (the user's own commands are
/// never the agent's to read, wait on, kill or release: unknown to it).
fn agents_terminal(p: &Value) -> Result<TermParams, agent_client_protocol::Error> {
    let t = params::<TermParams>(p)?;
    if crate::terminal::is_users(&t.terminal_id) {
        return Err(rpc_error(
            -32602,
            format!("unknown terminal {}", t.terminal_id),
        ));
    }
    Ok(t)
}

/// `terminal/*`: at once, or on a spawned task for a wait.
fn terminal_request(s: &Services, method: &str, p: &Value, responder: Responder<Value, V1>) {
    match method {
        "terminal/create" if s.caps.terminal => {
            let r = params::<CreateParams>(p).and_then(|p| {
                let cwd = match &p.cwd {
                    Some(c) => s
                        .roots
                        .check(&s.here(c)?)
                        .map_err(|e| rpc_error(-32602, s.paths.in_their_words(&e.to_string())))?,
                    None => s.cwd.clone(),
                };
                s.terminals
                    .create(Spawn {
                        command: p.command,
                        args: p.args,
                        env: p.env.into_iter().map(|e| (e.name, e.value)).collect(),
                        cwd,
                        output_byte_limit: p.output_byte_limit,
                    })
                    .map(|id| json!({"terminalId": id}))
                    .map_err(|e| rpc_error(-32603, e.to_string()))
            });
            answer(responder, r);
        }
        "terminal/output" if s.caps.terminal => {
            let r = agents_terminal(p).and_then(|p| {
                s.terminals
                    .output(&p.terminal_id)
                    .map(|o| {
                        let mut v = json!({"output": o.output, "truncated": o.truncated});
                        if let Some(exit) = o.exit {
                            v["exitStatus"] =
                                json!({"exitCode": exit.exit_code, "signal": exit.signal});
                        }
                        v
                    })
                    .map_err(|e| rpc_error(-32602, e.to_string()))
            });
            answer(responder, r);
        }
        "terminal/wait_for_exit" if s.caps.terminal => match agents_terminal(p) {
            Ok(p) => {
                let terms = s.terminals.clone();
                // The agent may stop waiting (`$/cancel_request`, which the SDK routes to
                // the request): answered then as cancelled (-32800); the command runs on.
                let cancel = responder.cancellation();
                tokio::spawn(async move {
                    let r = cancel
                        .run_until_cancelled(async {
                            terms
                                .wait_for_exit(&p.terminal_id)
                                .await
                                .map(|e| json!({"exitCode": e.exit_code, "signal": e.signal}))
                                .map_err(|e| rpc_error(-32602, e.to_string()))
                        })
                        .await;
                    answer(responder, r);
                });
            }
            Err(e) => answer(responder, Err(e)),
        },
        "terminal/kill" | "terminal/release" if s.caps.terminal => {
            let r = agents_terminal(p)
                .and_then(|p| {
                    let done = if method == "terminal/kill" {
                        s.terminals.kill(&p.terminal_id)
                    } else {
                        s.terminals.release(&p.terminal_id)
                    };
                    done.map_err(|e| rpc_error(-32602, e.to_string()))
                })
                .map(|_| json!({}));
            answer(responder, r);
        }
        other => not_found(other, responder),
    }
}

#[cfg(test)]
mod tests {
    /// The user's own commands (`!cmd`) run in terminals the agent cannot name: it can
    /// neither read their output nor wait on, kill or release them.
    #[test]
    fn an_agent_cannot_name_the_users_terminals() {
        let users = serde_json::json!({"sessionId": "s", "terminalId": "user-3"});
        let e = super::agents_terminal(&users).err().unwrap();
        assert!(e.to_string().contains("unknown terminal user-3"), "{e}");
        let own = serde_json::json!({"sessionId": "s", "terminalId": "term-3"});
        assert_eq!(super::agents_terminal(&own).unwrap().terminal_id, "term-3");
        assert!(!crate::terminal::is_users("users-1") && !crate::terminal::is_users("user"));
    }
}
