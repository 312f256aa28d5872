//! Session logs as Trellis writes them, made up for tests and benchmarks of what reads
//! logs (the session index, exports).

use serde_json::{Value, json};

/// Appends one log record.
fn push(s: &mut String, t: f64, dir: &str, msg: Value) {
    s.push_str(&json!({"t": t, "dir": dir, "msg": msg}).to_string());
    s.push('\n');
}

/// The header record of a log.
fn header(agent: &str, cwd: &str, started: f64) -> Value {
    json!({"type": "session_log", "schema": 1, "agent": agent, "cwd": cwd,
           "trellis": "0.1.0", "started": started})
}

/// A `session/update` notification for session `sid`.
fn update(sid: &str, u: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update",
           "params": {"sessionId": sid, "update": u}})
}

/// A session log as Trellis writes it: header, then `turns` turns, each with a prompt,
/// a streamed message and one terminal command whose output names `word`.
pub fn log_text(agent: &str, cwd: &str, started: f64, turns: u32, word: &str) -> String {
    let mut s = String::new();
    let mut line = |t: f64, dir: &str, msg: Value| push(&mut s, t, dir, msg);
    line(0.0, "client", header(agent, cwd, started));
    line(
        0.1,
        "client_to_agent",
        json!({"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": {"cwd": cwd}}),
    );
    line(
        0.2,
        "agent_to_client",
        json!({"jsonrpc": "2.0", "id": 0, "result": {"sessionId": format!("acp-{agent}")}}),
    );
    for n in 1..=turns {
        s.push_str(&turn_text(agent, n, word));
    }
    s
}

pub fn turn_text(agent: &str, n: u32, word: &str) -> String {
    let mut s = String::new();
    let sid = format!("acp-{agent}");
    let t = n as f64;
    let mut line = |dir: &str, msg: Value| push(&mut s, t, dir, msg);
    let update = |u: Value| update(&sid, u);
    line(
        "client_to_agent",
        json!({"jsonrpc": "2.0", "id": format!("p{n}"), "method": "session/prompt",
               "params": {"sessionId": sid, "prompt": [{"type": "text", "text": format!("please build turn {n}")}]}}),
    );
    for chunk in ["Running the ", "build now", "."] {
        line(
            "agent_to_client",
            update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}}),
            ),
        );
    }
    let call = format!("call-{n}");
    line(
        "agent_to_client",
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": "cargo build",
                      "kind": "execute", "status": "in_progress",
                      "rawInput": {"command": format!("cargo build --turn {n}")}}),
        ),
    );
    line(
        "agent_to_client",
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                      "content": [{"type": "terminal", "terminalId": format!("term-{n}")}]}),
        ),
    );
    line(
        "client",
        json!({"type": "terminal_output", "terminal_id": format!("term-{n}"),
               "data": format!("Compiling {word} v0.1\nwarning: unused\n")}),
    );
    line(
        "agent_to_client",
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                      "status": if n.is_multiple_of(2) { "failed" } else { "completed" }}),
        ),
    );
    line(
        "agent_to_client",
        update(json!({"sessionUpdate": "session_info_update", "title": format!("Build {agent}")})),
    );
    line(
        "agent_to_client",
        json!({"jsonrpc": "2.0", "id": format!("p{n}"), "result": {"stopReason": "end_turn"}}),
    );
    s
}

/// The log of the demo's load (`trellis agent demo --calls N --lines L`): one turn of
/// `calls` calls, each announced, then completed with `lines` lines of text output.
pub fn load_log(calls: usize, lines: usize, started: f64) -> String {
    let mut s = String::with_capacity(calls * (lines * 72 + 600));
    let mut line = |t: f64, dir: &str, msg: Value| push(&mut s, t, dir, msg);
    line(0.0, "client", header("demo", "/home/dev/demo", started));
    line(
        0.1,
        "client_to_agent",
        json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt",
               "params": {"sessionId": "demo", "prompt": [{"type": "text", "text": "load"}]}}),
    );
    let body: String = (0..lines)
        .map(|i| {
            format!("{i:4} 0123456789 the quick brown fox jumps over the lazy dog 0123456789\n")
        })
        .collect();
    let update = |u: Value| update("demo", u);
    for i in 0..calls {
        let t = 0.1 + i as f64 * 1e-5;
        line(
            t,
            "agent_to_client",
            update(
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("load-{i}"),
                          "title": format!("Generate chunk {i}"), "kind": "execute",
                          "status": "in_progress", "rawInput": {"command": format!("gen {i}")}}),
            ),
        );
        line(
            t,
            "agent_to_client",
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("load-{i}"),
                          "status": "completed",
                          "content": [{"type": "content", "content": {"type": "text", "text": body}}]}),
            ),
        );
    }
    line(
        1.0,
        "agent_to_client",
        json!({"jsonrpc": "2.0", "id": "p", "result": {"stopReason": "end_turn"}}),
    );
    s
}
