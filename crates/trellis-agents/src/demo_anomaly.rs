//! The demo agent's misbehaving scene (`/anomalies`): the permission bugs users report
//! about agents, played on purpose so the client's detectors can be seen at work. A
//! command starts running while its permission request is still open (both lines go out
//! together, before any answer can come back), and a deletion goes ahead whatever the
//! answer was (refused: the call still runs). Then a request it withdraws with
//! `$/cancel_request` before anyone could answer it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::peer::{Peer, PeerError};

const OPTIONS: &str = r#"[
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]"#;

fn options() -> Value {
    serde_json::from_str(OPTIONS).unwrap_or_default()
}

/// Plays the scene; returns the stop reason and what it tells the user.
pub fn run(peer: &mut Peer, session_id: &str, turn: usize) -> Result<String, PeerError> {
    let up = |id: &str, fields: Value| {
        let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": id});
        if let (Some(u), Some(f)) = (u.as_object_mut(), fields.as_object()) {
            u.extend(f.clone());
        }
        json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session_id, "update": u}})
    };
    let (eager, stubborn, withdrawn) = (
        format!("eager-{turn}"),
        format!("stubborn-{turn}"),
        format!("withdrawn-{turn}"),
    );
    // 1. Runs while asking: the request and the update that starts the call leave in
    //    one write.
    peer.notify(
        "session/update",
        json!({"sessionId": session_id, "update": {"sessionUpdate": "tool_call", "toolCallId": eager,
            "title": "Run make clean", "kind": "execute", "status": "pending",
            "rawInput": {"command": "make clean"}}}),
    )?;
    let id = peer.next_id();
    peer.send_buffered(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
        "params": {"sessionId": session_id, "options": options(),
            "toolCall": {"toolCallId": eager, "title": "Run make clean", "kind": "execute"}}}),
    )?;
    peer.send(&up(&eager, json!({"status": "in_progress"})))?;
    let _ = peer.wait_for(|v| v.get("method").is_none() && v.get("id") == Some(&json!(id)))?;
    peer.send(&up(&eager, json!({"status": "completed"})))?;
    // 2. Goes ahead whatever the answer.
    peer.notify(
        "session/update",
        json!({"sessionId": session_id, "update": {"sessionUpdate": "tool_call", "toolCallId": stubborn,
            "title": "Delete build/", "kind": "delete", "status": "pending",
            "rawInput": {"path": "build/"}}}),
    )?;
    let answer = peer.request(
        "session/request_permission",
        json!({"sessionId": session_id, "options": options(),
            "toolCall": {"toolCallId": stubborn, "title": "Delete build/", "kind": "delete"}}),
    );
    let refused = match &answer {
        Ok(r) => r["outcome"]["optionId"] != "allow",
        Err(_) => true,
    };
    peer.send(&up(&stubborn, json!({"status": "in_progress"})))?;
    peer.send(&up(&stubborn, json!({"status": "completed"})))?;
    // 3. Asks, then withdraws the question before waiting for it.
    peer.notify(
        "session/update",
        json!({"sessionId": session_id, "update": {"sessionUpdate": "tool_call", "toolCallId": withdrawn,
            "title": "Push to origin", "kind": "execute", "status": "pending",
            "rawInput": {"command": "git push"}}}),
    )?;
    let rid = format!("withdrawn-request-{turn}");
    peer.send_buffered(
        &json!({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
        "params": {"sessionId": session_id, "options": options(),
            "toolCall": {"toolCallId": withdrawn, "title": "Push to origin", "kind": "execute"}}}),
    )?;
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}}),
    )?;
    let withdrawn_answer = peer.wait_for_timeout(
        |v| v.get("method").is_none() && v.get("id") == Some(&json!(rid)),
        Duration::from_secs(5),
    );
    peer.send(&up(&withdrawn, json!({"status": "failed"})))?;
    let withdrawn_said = match withdrawn_answer {
        Some(a) if a["result"]["outcome"]["outcome"] == "cancelled" => "answered cancelled",
        Some(_) => "answered before it was withdrawn",
        None => "never answered",
    };
    Ok(format!(
        "I ran make clean before you answered, deleted build/ {} and withdrew the push request ({withdrawn_said}).",
        if refused {
            "although you refused"
        } else {
            "with your leave"
        }
    ))
}
