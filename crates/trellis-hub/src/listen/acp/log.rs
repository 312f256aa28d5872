//! Reading a followed session's log for an ACP client: what is pending, and what comes.
//! The log is read a batch of records at a time, at the client's pace (a full history of a
//! long session never sits in memory; the session itself never waits: it writes its log,
//! the client reads it), and a client that stops reading is let go.

use std::collections::HashMap;
use std::io::{BufRead, Seek};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Seen, notification};
use crate::wire;

/// Records read at a time.
const BATCH: usize = 256;
/// How long a client may leave what is sent to it unread before it is let go.
pub(super) const STALL: Duration = Duration::from_secs(10);

/// The agent's permission requests in `log` (before byte `to`) nobody answered yet.
pub(super) async fn pending_requests(log: &str, to: u64) -> Vec<(String, Value)> {
    let mut asked: Vec<(String, Value)> = Vec::new();
    let mut from = 0;
    while from < to {
        let (recs, next) = read_some(log, from, to).await;
        for rec in recs {
            let msg = &rec["msg"];
            if rec["dir"] == "agent_to_client" && msg["method"] == "session/request_permission" {
                asked.push((canonical(&msg["id"]), msg["params"].clone()));
            } else if rec["dir"] == "client_to_agent" && msg.get("method").is_none() {
                let id = canonical(&msg["id"]);
                asked.retain(|(r, _)| *r != id);
            }
        }
        if next == from {
            break;
        }
        from = next;
    }
    asked
}

/// A JSON-RPC id as the hub names requests: its JSON (`1`, `"storm-0"`).
pub(super) fn canonical(id: &Value) -> String {
    id.to_string()
}

/// Up to [`BATCH`] whole records of `log` from byte `from` (before `to`), and where the
/// next read starts; off the runtime's threads.
async fn read_some(log: &str, from: u64, to: u64) -> (Vec<Value>, u64) {
    let log = log.to_string();
    tokio::task::spawn_blocking(move || read_batch(&log, from, to))
        .await
        .unwrap_or((Vec::new(), from))
}

fn read_batch(log: &str, from: u64, to: u64) -> (Vec<Value>, u64) {
    let Ok(mut f) = std::fs::File::open(log) else {
        return (Vec::new(), from);
    };
    if f.seek(std::io::SeekFrom::Start(from)).is_err() {
        return (Vec::new(), from);
    }
    let mut r = std::io::BufReader::new(f);
    let mut out = Vec::new();
    let mut at = from;
    let mut line = String::new();
    while at < to && out.len() < BATCH {
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
    (out, at)
}

/// Follows the session's log from byte `from` as the hub says it grows: the agent's
/// updates go to the client, its permission requests and answers to the facade, every
/// answer to a permission request to the client as `_trellis/permission_resolved`. Ends
/// with the session, or with a client that leaves [`STALL`] of what was sent unread
/// (`Seen::Stalled`).
pub(super) async fn follow_log(
    log: std::path::PathBuf,
    mut from: u64,
    mut progress: tokio::sync::watch::Receiver<wire::Progress>,
    session: u32,
    tx: super::Outbox,
    seen: mpsc::UnboundedSender<Seen>,
) {
    let log = log.to_string_lossy().into_owned();
    let id = session.to_string();
    // Requests whose decider was recorded, waiting for their answer frame.
    let mut decided: HashMap<String, Value> = HashMap::new();
    let out = |line: String| {
        let tx = tx.clone();
        async move { tx.send(line).await }
    };
    loop {
        let now = progress.borrow_and_update().clone();
        let (to, ended) = (now.log_len, now.ended);
        while from < to {
            let (recs, next) = read_some(&log, from, to).await;
            if next == from {
                break;
            }
            from = next;
            for rec in &recs {
                let msg = &rec["msg"];
                let agent = rec["dir"] == "agent_to_client";
                let line = if agent && msg["method"] == "session/update" {
                    let mut params = msg["params"].clone();
                    params["sessionId"] = json!(id);
                    notification("session/update", params)
                } else if agent && msg["method"] == "session/request_permission" {
                    let _ = seen.send(Seen::Asks(canonical(&msg["id"]), msg["params"].clone()));
                    continue;
                } else if agent && msg.get("method").is_none() && msg.get("result").is_some() {
                    let _ = seen.send(Seen::Answered(canonical(&msg["id"]), msg["result"].clone()));
                    continue;
                } else if rec["dir"] == "client_to_agent" && msg["method"] == "session/prompt" {
                    let _ = seen.send(Seen::Prompted(canonical(&msg["id"])));
                    continue;
                } else if msg["type"] == "permission_decided" {
                    // Recorded as the hub names it: already the id's JSON.
                    let named = msg["request_id"].as_str().unwrap_or_default();
                    decided.insert(named.to_string(), msg["decider"].clone());
                    continue;
                } else if rec["dir"] == "client_to_agent"
                    && msg.get("method").is_none()
                    && let Some(by) = decided.remove(&canonical(&msg["id"]))
                {
                    notification(
                        "_trellis/permission_resolved",
                        json!({
                            "sessionId": id,
                            "requestId": msg["id"],
                            "outcome": msg["result"]["outcome"],
                            "resolvedBy": by,
                        }),
                    )
                } else {
                    continue;
                };
                if !out(line).await {
                    let _ = seen.send(Seen::Stalled);
                    return;
                }
            }
        }
        if ended || progress.changed().await.is_err() {
            return;
        }
    }
}
