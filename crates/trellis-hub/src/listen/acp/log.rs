//! Reading a followed session's log for an ACP client: what is pending, and what comes.

use std::collections::HashMap;
use std::io::{BufRead, Seek};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Seen, notification};
use crate::wire;

/// The agent's permission requests in `log` (before byte `to`) nobody answered yet.
pub(super) fn pending_requests(log: &str, to: u64) -> Vec<(String, Value)> {
    let mut asked: Vec<(String, Value)> = Vec::new();
    for rec in records(log, 0, to) {
        let msg = &rec["msg"];
        if rec["dir"] == "agent_to_client" && msg["method"] == "session/request_permission" {
            asked.push((canonical(&msg["id"]), msg["params"].clone()));
        } else if rec["dir"] == "client_to_agent" && msg.get("method").is_none() {
            let id = canonical(&msg["id"]);
            asked.retain(|(r, _)| *r != id);
        }
    }
    asked
}

/// A JSON-RPC id as the hub names requests (a string as is, a number as its digits).
pub(super) fn canonical(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The whole records of `log` between bytes `from` and `to`.
fn records(log: &str, from: u64, to: u64) -> Vec<Value> {
    let Ok(mut f) = std::fs::File::open(log) else {
        return Vec::new();
    };
    if f.seek(std::io::SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut r = std::io::BufReader::new(f);
    let mut out = Vec::new();
    let mut at = from;
    let mut line = String::new();
    while at < to {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !line.ends_with('\n') {
                    break;
                }
                at += n as u64;
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// Follows the session's log from byte `from` as the hub says it grows: the agent's
/// updates go to the client, its permission requests and answers to the facade, every
/// answer to a permission request to the client as `_trellis/permission_resolved`.
pub(super) async fn follow_log(
    log: std::path::PathBuf,
    mut from: u64,
    mut progress: tokio::sync::watch::Receiver<wire::Progress>,
    session: u32,
    tx: mpsc::UnboundedSender<String>,
    seen: mpsc::UnboundedSender<Seen>,
) {
    let log = log.to_string_lossy().into_owned();
    let id = session.to_string();
    // Requests whose decider was recorded, waiting for their answer frame.
    let mut decided: HashMap<String, Value> = HashMap::new();
    loop {
        let now = progress.borrow_and_update().clone();
        let (to, ended) = (now.log_len, now.ended);
        let recs = tokio::task::block_in_place(|| records(&log, from, to));
        for rec in &recs {
            let msg = &rec["msg"];
            let agent = rec["dir"] == "agent_to_client";
            if agent && msg["method"] == "session/update" {
                let mut params = msg["params"].clone();
                params["sessionId"] = json!(id);
                let _ = tx.send(notification("session/update", params));
            } else if agent && msg["method"] == "session/request_permission" {
                let _ = seen.send(Seen::Asks(canonical(&msg["id"]), msg["params"].clone()));
            } else if agent && msg.get("method").is_none() && msg.get("result").is_some() {
                let _ = seen.send(Seen::Answered(canonical(&msg["id"]), msg["result"].clone()));
            } else if rec["dir"] == "client_to_agent" && msg["method"] == "session/prompt" {
                let _ = seen.send(Seen::Prompted(canonical(&msg["id"])));
            } else if msg["type"] == "permission_decided" {
                decided.insert(canonical(&msg["request_id"]), msg["decider"].clone());
            } else if rec["dir"] == "client_to_agent"
                && msg.get("method").is_none()
                && let Some(by) = decided.remove(&canonical(&msg["id"]))
            {
                let _ = tx.send(notification(
                    "_trellis/permission_resolved",
                    json!({
                        "sessionId": id,
                        "requestId": canonical(&msg["id"]),
                        "outcome": msg["result"]["outcome"],
                        "resolvedBy": by,
                    }),
                ));
            }
        }
        from = from.max(to);
        if ended || progress.changed().await.is_err() {
            return;
        }
    }
}
