//! Traces (issue "Fleet-ready headless runs", items 8–10): a demo run with a subagent and
//! a permission wait exports its spans live to an OTLP/HTTP receiver (decoded with the
//! official protobuf definitions); the same log exported offline gives the same spans; a
//! dead collector changes nothing but the dropped count; the context reaches the agent.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// The resource attributes of each request received.
type Resources = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// An OTLP/HTTP receiver: every request's spans, decoded.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    resources: Resources,
}

fn receiver() -> Receiver {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let resources: Resources = Arc::default();
    let (s, r) = (spans.clone(), resources.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (s, r) = (s.clone(), r.clone());
            std::thread::spawn(move || serve(stream, &s, &r));
        }
    });
    Receiver {
        url,
        spans,
        resources,
    }
}

fn serve(
    stream: std::net::TcpStream,
    spans: &Mutex<Vec<Span>>,
    resources: &Mutex<Vec<Vec<(String, String)>>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(line.starts_with("POST /v1/traces "), "{line}");
        let mut len = 0;
        let mut content_type = String::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap(),
                "content-type" => content_type = v.trim().to_string(),
                _ => {}
            }
        }
        assert_eq!(content_type, "application/x-protobuf");
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).unwrap();
        let req = ExportTraceServiceRequest::decode(&body[..]).expect("official protobuf");
        for rs in req.resource_spans {
            let attrs = rs
                .resource
                .map(|r| {
                    r.attributes
                        .into_iter()
                        .map(|kv| (kv.key, text(kv.value.and_then(|v| v.value))))
                        .collect()
                })
                .unwrap_or_default();
            resources.lock().unwrap().push(attrs);
            for ss in rs.scope_spans {
                spans.lock().unwrap().extend(ss.spans);
            }
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
}

fn text(v: Option<Value>) -> String {
    match v {
        Some(Value::StringValue(s)) => s,
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(Value::ArrayValue(a)) => a
            .values
            .into_iter()
            .map(|v| text(v.value))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn attr(s: &Span, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(kv.value.clone().and_then(|v| v.value)))
}

fn run(dir: &Path, data: &Path, endpoint: &str, prompt: &str, summary: &Path) -> Output {
    run_agent("demo", dir, data, endpoint, (prompt, summary))
}

fn run_agent(
    agent: &str,
    dir: &Path,
    data: &Path,
    endpoint: &str,
    (prompt, summary): (&str, &Path),
) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--agent",
            agent,
            "--permission",
            "allow-once",
            "--prompt",
            prompt,
        ])
        .arg("--cwd")
        .arg(dir)
        .arg("--summary")
        .arg(summary)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_RESOURCE_ATTRIBUTES", "ci.run.id=42,team=a%20b")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn log_of(data: &Path) -> std::path::PathBuf {
    let day = std::fs::read_dir(data.join("trellis/sessions"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::read_dir(day)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
}

/// A span as compared between two exports.
fn key(s: &Span) -> (Vec<u8>, Vec<u8>, String, u64, u64, BTreeMap<String, String>) {
    (
        s.span_id.clone(),
        s.parent_span_id.clone(),
        s.name.clone(),
        s.start_time_unix_nano,
        s.end_time_unix_nano,
        s.attributes
            .iter()
            .map(|kv| (kv.key.clone(), text(kv.value.clone().and_then(|v| v.value))))
            .collect(),
    )
}

/// `trellis log export LOG --otlp` sends exactly `spans` (a live export's).
fn same_spans_from_the_log(log: &Path, spans: &[Span]) {
    let offline = receiver();
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["log", "export"])
        .arg(log)
        .args(["--otlp", &format!("{}/v1/traces", offline.url)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut a: Vec<_> = spans.iter().map(key).collect();
    let mut b: Vec<_> = offline.spans.lock().unwrap().iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn a_session_exports_its_span_tree_live_and_the_same_spans_from_its_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let live = receiver();
    let summary = tmp.path().join("summary.json");
    let o = run(&work, &data, &live.url, "/subagents", &summary);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans = live.spans.lock().unwrap().clone();
    let by_id: BTreeMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    assert_eq!(by_id.len(), spans.len(), "span ids are unique");
    let trace = &spans[0].trace_id;
    assert!(spans.iter().all(|s| &s.trace_id == trace), "one trace");
    let name_of = |id: &[u8]| by_id.get(id).map(|s| s.name.clone()).unwrap_or_default();
    // The tree: one session span, turns under it, calls under their turn, permission
    // waits under their call, the subagent's calls under the call that started it.
    let roots: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].name, "session demo");
    let turns: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent demo")
        .collect();
    assert_eq!(turns.len(), 1);
    let turn = turns[0];
    assert_eq!(turn.kind, 3, "CLIENT");
    assert_eq!(turn.parent_span_id, roots[0].span_id);
    assert_eq!(
        attr(turn, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attr(turn, "gen_ai.agent.name").as_deref(), Some("demo"));
    assert_eq!(
        attr(turn, "gen_ai.response.finish_reasons").as_deref(),
        Some("end_turn")
    );
    assert!(attr(turn, "gen_ai.conversation.id").is_some_and(|c| !c.is_empty()));
    let calls: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert!(
        calls.len() >= 2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for c in &calls {
        assert!(attr(c, "gen_ai.tool.call.id").is_some());
        assert!(c.end_time_unix_nano >= c.start_time_unix_nano);
        let parent = name_of(&c.parent_span_id);
        assert!(
            parent == "invoke_agent demo" || parent.starts_with("execute_tool "),
            "{} under {parent}",
            c.name
        );
    }
    let nested: Vec<_> = calls
        .iter()
        .filter(|c| attr(c, "trellis.subagent").is_some())
        .collect();
    assert!(!nested.is_empty(), "the subagent's calls");
    for c in &nested {
        assert!(
            name_of(&c.parent_span_id).starts_with("execute_tool "),
            "{}",
            c.name
        );
    }
    let waits: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("permission "))
        .collect();
    assert!(!waits.is_empty());
    for w in &waits {
        assert!(name_of(&w.parent_span_id).starts_with("execute_tool "));
        assert!(attr(w, "trellis.permission.decider").is_some_and(|d| d.contains("allow-once")));
    }
    // Arguments and outputs only when asked for.
    assert!(
        calls
            .iter()
            .all(|c| attr(c, "gen_ai.tool.call.arguments").is_none())
    );
    // The resource: service.name and OTEL_RESOURCE_ATTRIBUTES, decoded.
    let res = live.resources.lock().unwrap()[0].clone();
    assert!(
        res.contains(&("service.name".into(), "trellis".into())),
        "{res:?}"
    );
    assert!(res.contains(&("ci.run.id".into(), "42".into())), "{res:?}");
    assert!(res.contains(&("team".into(), "a b".into())), "{res:?}");
    // The summary names the trace and says how the export went.
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let hex: String = trace.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(s["trace_id"], serde_json::json!(hex));
    assert_eq!(
        s["trace_export"]["exported"],
        serde_json::json!(spans.len())
    );
    assert_eq!(s["trace_export"]["dropped"], serde_json::json!(0));
    // The context went to the agent with every prompt.
    let log = log_of(&data);
    let text = std::fs::read_to_string(&log).unwrap();
    let prompt = text
        .lines()
        .find(|l| l.contains("\"session/prompt\""))
        .unwrap();
    assert!(
        prompt.contains(&format!("\"traceparent\":\"00-{hex}-")),
        "{prompt}"
    );

    // The same log, exported later: the same spans.
    same_spans_from_the_log(&log, &spans);
}

#[test]
fn a_dead_collector_changes_nothing_but_the_dropped_count() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let summary = tmp.path().join("summary.json");
    let o = run(
        &work,
        &data,
        &format!("http://127.0.0.1:{port}"),
        "fix the TODO",
        &summary,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["trace_export"]["exported"], 0);
    assert!(s["trace_export"]["dropped"].as_u64().unwrap() > 0, "{s}");
    assert!(s["trace_export"]["error"].as_str().is_some(), "{s}");
}

/// A collector that accepts and never answers (or answers after Trellis is gone): the
/// spans still on their way at the end count as dropped, with the reason, and
/// `exported + dropped` is every span made.
#[test]
fn spans_still_on_their_way_at_the_end_are_counted_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let summary = tmp.path().join("summary.json");
    let o = run(&work, &data, &url, "fix the TODO", &summary);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let e = &s["trace_export"];
    let made = e["made"].as_u64().unwrap();
    assert!(made > 0, "{s}");
    assert_eq!(e["exported"], 0, "{s}");
    assert_eq!(e["dropped"].as_u64(), Some(made), "{s}");
    assert!(
        e["error"].as_str().unwrap().contains("still on their way"),
        "{s}"
    );
}

/// The collector's address, headers and credentials never reach the agent (nor its
/// commands): it gets TRACEPARENT, nothing of the collector's.
#[test]
fn the_collectors_settings_never_reach_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let live = receiver();
    let seen = tmp.path().join("agent-env");
    let agent = format!(
        "sh -c 'env > {}; exec {} agent demo'",
        seen.display(),
        env!("CARGO_BIN_EXE_trellis")
    );
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--agent",
            &agent,
            "--permission",
            "allow-once",
            "--prompt",
            "fix the TODO",
        ])
        .arg("--cwd")
        .arg(&work)
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &live.url)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20SECRETHDR",
        )
        .env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-key=SECRETTRACES")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.contains("TRACEPARENT="), "{env}");
    assert!(!env.contains("OTEL_EXPORTER_OTLP"), "{env}");
    assert!(!env.contains("SECRET"), "{env}");
    // And the spans still went where they were asked to go.
    assert!(!live.spans.lock().unwrap().is_empty());
}

/// What an agent sends is bounded in every attribute, not only in content: a tool call
/// whose title, name and id are 1 MiB each is exported with none of them past 4 KiB.
#[test]
fn every_attribute_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let live = receiver();
    let summary = tmp.path().join("summary.json");
    let agent = format!("{} agent hostile huge-title", env!("CARGO_BIN_EXE_trellis"));
    let o = run_agent(&agent, &work, &data, &live.url, ("go", &summary));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans = live.spans.lock().unwrap().clone();
    let call = spans
        .iter()
        .find(|s| attr(s, "trellis.tool.title").is_some_and(|t| t.starts_with("TTT")))
        .unwrap_or_else(|| panic!("the call's span among {}", spans.len()));
    for kv in &call.attributes {
        let v = text(kv.value.clone().and_then(|v| v.value));
        assert!(v.len() <= 4100, "{} is {} bytes", kv.key, v.len());
    }
    assert!(
        call.name.len() <= 260,
        "the name is {} bytes",
        call.name.len()
    );
}

/// The commands an agent runs through Trellis (`terminal/create`) are spans under their
/// call, with their exit; the log gives the same spans later.
#[test]
fn terminal_commands_are_spans_under_their_call() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let live = receiver();
    let summary = tmp.path().join("summary.json");
    let o = run(&work, &data, &live.url, "fix the TODO", &summary);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans = live.spans.lock().unwrap().clone();
    let by_id: BTreeMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let terminals: Vec<_> = spans.iter().filter(|s| s.name == "terminal").collect();
    assert!(
        !terminals.is_empty(),
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for t in &terminals {
        let parent = by_id.get(&t.parent_span_id).expect("its call's span");
        assert!(parent.name.starts_with("execute_tool "), "{}", parent.name);
        assert!(
            attr(t, "trellis.terminal.exit_code").is_some()
                || attr(t, "trellis.terminal.signal").is_some()
        );
        assert!(t.start_time_unix_nano >= parent.start_time_unix_nano);
    }
    // The same log, exported later: the same spans.
    same_spans_from_the_log(&log_of(&data), &spans);
}

/// An agent that runs one command through Trellis's terminal and says what the command
/// saw as `TRACEPARENT`.
const TRACED_COMMAND_AGENT: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
ids = [100]
def request(method, params):
    ids[0] += 1
    send({"jsonrpc": "2.0", "id": ids[0], "method": method, "params": params})
    while True:
        m = read()
        if m.get("id") == ids[0] and "method" not in m:
            return m.get("result")
def update(sid, u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})
while True:
    m = read()
    method = m.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
    elif method == "session/prompt":
        sid = m["params"]["sessionId"]
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "run-1", "title": "Run the tests", "kind": "execute", "status": "pending"})
        tid = request("terminal/create", {"sessionId": sid, "command": "echo TP=$TRACEPARENT"})["terminalId"]
        # The command ends before the call shows its terminal (as a quick one does).
        request("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "run-1", "status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}]})
        out = request("terminal/output", {"sessionId": sid, "terminalId": tid})["output"]
        request("terminal/release", {"sessionId": sid, "terminalId": tid})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "run-1", "status": "completed"})
        update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": out}})
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"stopReason": "end_turn"}})
    elif "id" in m and method is not None:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A command run through Trellis's terminal gets the trace context of its own terminal
/// span, which is under its tool call: what the command traces (a test run) nests there —
/// also when the command ended before the agent's update showed its terminal in the call.
#[test]
fn a_commands_traceparent_names_its_terminal_span_under_its_call() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, data) = (tmp.path().join("w"), tmp.path().join("data"));
    std::fs::create_dir_all(&work).unwrap();
    let agent = tmp.path().join("agent.py");
    std::fs::write(&agent, TRACED_COMMAND_AGENT).unwrap();
    let live = receiver();
    let summary = tmp.path().join("summary.json");
    let o = run_agent(
        &format!("python3 {}", agent.display()),
        &work,
        &data,
        &live.url,
        ("go", &summary),
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tp = out
        .split("TP=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no TRACEPARENT seen: {out}"))
        .to_string();
    let spans = live.spans.lock().unwrap().clone();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let terminal = spans
        .iter()
        .find(|s| s.name == "terminal")
        .expect("a terminal span");
    assert_eq!(
        tp,
        format!(
            "00-{}-{}-01",
            hex(&terminal.trace_id),
            hex(&terminal.span_id)
        )
    );
    let call = spans
        .iter()
        .find(|s| s.span_id == terminal.parent_span_id)
        .expect("the terminal's call");
    assert_eq!(call.name, "execute_tool execute");
    assert_eq!(attr(call, "gen_ai.tool.call.id").as_deref(), Some("run-1"));
    // The log, exported later, puts it in the same place.
    same_spans_from_the_log(&log_of(&data), &spans);
}

/// `/status` in the UI says where spans go and how many were dropped, without the
/// credentials an endpoint may carry.
#[test]
fn the_ui_status_counts_spans_a_dead_collector_dropped() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("OTEL_EXPORTER_OTLP_ENDPOINT=http://me:hunter2@127.0.0.1:{port}");
    let Some(t) = crate::tui::Tmux::start_env(
        &["LANG=C.UTF-8", &endpoint],
        &["--agent", "demo", "--permission", "allow-once"],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("Done: the TODO is fixed");
    // The turn's spans went to a port nobody listens on: wait until they are counted.
    let start = std::time::Instant::now();
    loop {
        t.send(&["/status", "Enter"]);
        t.wait_for("Status · extensions");
        t.send(&["End"]);
        let s = t.wait_for("Traces:");
        assert!(!s.contains("hunter2"), "{s}");
        if !s.contains(" 0 dropped") {
            assert!(
                s.contains(&format!("to http://127.0.0.1:{port}/v1/traces")),
                "{s}"
            );
            assert!(s.contains("failed:"), "{s}");
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "nothing dropped: {s}"
        );
        t.send(&["Escape"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
