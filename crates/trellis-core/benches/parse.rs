//! Reading the agent's lines: `Message::parse` on the four lines of one tool call of the
//! headless floor's stream (a message chunk, the call, its start, its end with 20 lines
//! of output), as the reader thread reads each. Compare builds with criterion's saved
//! baselines (`--save-baseline` on one, `--baseline` on the other).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trellis_core::wire::Message;

fn lines() -> Vec<String> {
    let text: String = (1..=20)
        .map(|l| format!("[00001:{l:03}] out 1.{l} lorem ipsum dolor sit amet consectetur o\\n"))
        .collect();
    vec![
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-25607-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Step 1 of 100000: running the next tool.\n\n"}}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-25607-1","update":{"sessionUpdate":"tool_call","toolCallId":"call_00001","title":"Run `bench-tool --step 1`","kind":"execute","status":"pending","rawInput":{"command":"bench-tool","args":["--step","1"],"cwd":"."},"locations":[{"path":"src/module_1.py","line":1}]}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-25607-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_00001","status":"in_progress"}}}"#.to_string(),
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess-25607-1","update":{{"sessionUpdate":"tool_call_update","toolCallId":"call_00001","status":"completed","content":[{{"type":"content","content":{{"type":"text","text":"{text}"}}}}]}}}}}}"#
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let lines = lines();
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("one tool call's four lines", |b| {
        b.iter(|| {
            for l in &lines {
                let m = Message::parse(std::hint::black_box(l)).unwrap();
                assert!(m.decoded.is_some());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
