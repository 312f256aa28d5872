//! `trellis agent replay FILE`: plays the agent side of a recorded session.
//!
//! Works with the fixture format and with Trellis session logs (same records). Client
//! requests in the recording are waited for (by method) and answered with the recorded
//! response under the live id; agent requests are sent with fresh ids and their answers
//! waited for; notifications and invalid lines are sent as recorded. The recorded session
//! `cwd` is rewritten to the live one in everything the agent sends. Client records and
//! stderr lines are skipped. When the recording ends the agent waits for the client to
//! close, answering further requests with an error — unless a prompt is still open, in
//! which case it exits at once, like an agent dying mid-turn.

use std::collections::HashMap;

use serde_json::{Value, json};
use trellis_core::log::{LogEntry, parse_record};
use trellis_core::wire::Dir;

use crate::peer::{Incoming, Peer, PeerError};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("line {line}: {message}")]
    Record { line: usize, message: String },
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// Said once (see `PeerError::Io`).
    #[error("write failed: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ReplayError {
    fn from(e: std::io::Error) -> Self {
        ReplayError::Io(e)
    }
}

/// One step of the agent's script.
#[derive(Debug, Clone)]
enum Step {
    /// Wait for a client request with this method, remember its live id for the recorded id.
    AwaitRequest {
        method: String,
        recorded_id: Value,
        params: Value,
    },
    /// Send the agent's response to recorded client request `recorded_id`.
    Respond { recorded_id: Value, text: String },
    /// Send a notification or invalid line verbatim (after cwd rewriting).
    Send { text: String },
    /// Send an agent request (id replaced), remember the mapping.
    Request { recorded_id: Value, text: String },
    /// Wait for the client's answer to the agent request `recorded_id` (a terminal the
    /// recorded answer named is then called by the live answer's id).
    AwaitAnswer {
        recorded_id: Value,
        terminal: Option<String>,
    },
}

fn steps_of(text: &str) -> Result<Vec<Step>, ReplayError> {
    let mut steps = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_record(line).map_err(|e| ReplayError::Record {
            line: n + 1,
            message: e.to_string(),
        })?;
        match entry {
            LogEntry::Frame { dir, msg, text, .. } => {
                let id: Value = msg
                    .id
                    .as_deref()
                    .and_then(|s| serde_json::from_str(s).ok())
                    .unwrap_or(Value::Null);
                let text = text.get().to_string();
                match (dir, msg.method.is_some(), msg.id.is_some()) {
                    (Dir::ClientToAgent, true, true) => {
                        let params: Value = msg
                            .params
                            .as_deref()
                            .and_then(|p| serde_json::from_str(p.get()).ok())
                            .unwrap_or(Value::Null);
                        steps.push(Step::AwaitRequest {
                            method: msg.method.unwrap_or_default().into_owned(),
                            recorded_id: id,
                            params,
                        })
                    }
                    (Dir::ClientToAgent, false, true) => {
                        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                        steps.push(Step::AwaitAnswer {
                            recorded_id: id,
                            terminal: answer["result"]["terminalId"].as_str().map(str::to_string),
                        })
                    }
                    (Dir::ClientToAgent, _, false) => {} // client notifications (cancel) are not awaited
                    (Dir::AgentToClient, true, true) => steps.push(Step::Request {
                        recorded_id: id,
                        text,
                    }),
                    (Dir::AgentToClient, true, false) => steps.push(Step::Send { text }),
                    (Dir::AgentToClient, false, _) => steps.push(Step::Respond {
                        recorded_id: id,
                        text,
                    }),
                }
            }
            LogEntry::Invalid {
                dir: Dir::AgentToClient,
                raw,
                ..
            } => steps.push(Step::Send { text: raw }),
            _ => {}
        }
    }
    Ok(steps)
}

fn key(v: &Value) -> String {
    v.to_string()
}

/// What the recording names that the live session names otherwise: the cwd, and the
/// terminals the client made (their ids are the client's own).
#[derive(Default)]
struct Rewrites {
    cwd: Option<(String, String)>,
    /// (`"recorded id"`, `"live id"`), quoted: `term-1` is not part of `term-10`.
    terminals: Vec<(String, String)>,
}

/// Rewrites the recorded cwd and terminal ids to the live ones inside a JSON text.
fn rewrite(text: &str, from: &Rewrites) -> String {
    let mut out = match &from.cwd {
        Some((rec, live)) if rec != live => text.replace(rec.as_str(), live.as_str()),
        _ => text.to_string(),
    };
    for (rec, live) in &from.terminals {
        if rec != live {
            out = out.replace(rec.as_str(), live.as_str());
        }
    }
    out
}

/// Replaces the top-level `id` of a JSON-RPC message text.
fn with_id(text: &str, id: &Value) -> Result<String, ReplayError> {
    let mut v: Value = serde_json::from_str(text).map_err(|e| ReplayError::Record {
        line: 0,
        message: e.to_string(),
    })?;
    v["id"] = id.clone();
    Ok(v.to_string())
}

/// Plays `recording` on stdio.
pub fn run(recording: &str) -> Result<(), ReplayError> {
    let steps = steps_of(recording)?;
    let mut peer = Peer::stdio();
    let mut client_ids: HashMap<String, Value> = HashMap::new(); // recorded → live (client requests)
    let mut agent_ids: HashMap<String, Value> = HashMap::new(); // recorded → live (agent requests)
    let mut rewrites = Rewrites::default();
    let mut prompt_open = false;
    for step in steps {
        match step {
            Step::AwaitRequest {
                method,
                recorded_id,
                params,
            } => {
                let live = loop {
                    let msg = match peer.recv(None) {
                        Some(Incoming::Message(v)) => v,
                        _ => return Ok(()),
                    };
                    let (Some(m), Some(id)) =
                        (msg.get("method").and_then(Value::as_str), msg.get("id"))
                    else {
                        continue;
                    };
                    if m == method {
                        if (method == "session/new" || method == "session/load")
                            && let (Some(rec), Some(live)) =
                                (params["cwd"].as_str(), msg["params"]["cwd"].as_str())
                        {
                            rewrites.cwd = Some((json_inner(rec), json_inner(live)));
                        }
                        break id.clone();
                    }
                    peer.respond_error(
                        id,
                        -32601,
                        &format!("{m} is not in the recording (expected {method})"),
                    )?;
                };
                if method == "session/prompt" {
                    prompt_open = true;
                }
                client_ids.insert(key(&recorded_id), live);
            }
            Step::Respond { recorded_id, text } => {
                let Some(live) = client_ids.remove(&key(&recorded_id)) else {
                    continue;
                };
                let text = rewrite(&text, &rewrites);
                if text.contains("\"stopReason\"") {
                    prompt_open = false;
                }
                peer.send_raw(&with_id(&text, &live)?)?;
            }
            Step::Send { text } => peer.send_raw(&rewrite(&text, &rewrites))?,
            Step::Request { recorded_id, text } => {
                let live = json!(peer.next_id());
                agent_ids.insert(key(&recorded_id), live.clone());
                peer.send_raw(&with_id(&rewrite(&text, &rewrites), &live)?)?;
            }
            Step::AwaitAnswer {
                recorded_id,
                terminal,
            } => {
                let Some(live) = agent_ids.remove(&key(&recorded_id)) else {
                    continue;
                };
                match peer.wait_for(|v| v.get("method").is_none() && v.get("id") == Some(&live)) {
                    Ok(answer) => {
                        if let (Some(rec), Some(now)) =
                            (terminal, answer["result"]["terminalId"].as_str())
                        {
                            rewrites
                                .terminals
                                .push((Value::from(rec).to_string(), Value::from(now).to_string()));
                        }
                    }
                    Err(PeerError::Closed) => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    if prompt_open {
        // The recording stops inside a turn: behave like an agent that died there.
        return Ok(());
    }
    loop {
        match peer.recv(None) {
            Some(Incoming::Message(v)) => {
                if let (Some(m), Some(id)) = (v.get("method").and_then(Value::as_str), v.get("id"))
                {
                    let m = m.to_string();
                    peer.respond_error(
                        &id.clone(),
                        -32603,
                        &format!("the recording has no more turns ({m})"),
                    )?;
                }
            }
            _ => return Ok(()),
        }
    }
}

/// A path as it appears inside a JSON string (escaped, without quotes).
fn json_inner(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}
