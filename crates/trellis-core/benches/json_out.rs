//! Writing events as JSON, side by side: serde_json, the compact writer (serde's derived
//! impls), and the event encoder headless runs and plugins use, on a finished tool call's
//! event (20 lines of output, as the headless
//! floor's agent sends); and the string escape alone, on such an output and on the short
//! strings an event is mostly made of (ids, names, paths).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trellis_core::tool_call::ToolContent;
use trellis_core::{Event, EventBody, SCHEMA_VERSION, ToolCall};

fn event() -> Event {
    let text: String = (1..=20)
        .map(|l| format!("[00001:{l:03}] out 1.{l} lorem ipsum dolor sit amet consectetur o\n"))
        .collect();
    let mut call = ToolCall::placeholder("call_00001".into(), 0.5, 1);
    call.title = "Run `bench-tool --step 1`".into();
    call.raw_input = Some(
        trellis_core::RawJson::from_string(
            r#"{"command":"bench-tool","args":["--step","1"],"cwd":"."}"#.into(),
        )
        .unwrap(),
    );
    call.content.push(ToolContent::Text {
        text: trellis_core::bulk::Text::new(text),
    });
    Event {
        schema: SCHEMA_VERSION,
        t: 0.092598166,
        session: Some("sess-25607-1".into()),
        hub_session: None,
        body: EventBody::ToolCallCreated {
            call: Arc::new(call),
        },
        acp: None,
        wire: Default::default(),
        position: Some(1),
    }
}

fn bench(c: &mut Criterion) {
    let ev = event();
    let len = serde_json::to_vec(&ev).unwrap().len();
    let mut g = c.benchmark_group("event_json");
    g.throughput(Throughput::Bytes(len as u64));
    let mut buf = Vec::with_capacity(4096);
    g.bench_function("serde_json", |b| {
        b.iter(|| {
            buf.clear();
            serde_json::to_writer(&mut buf, &ev).unwrap();
            buf.len()
        })
    });
    g.bench_function("compact_json", |b| {
        b.iter(|| {
            buf.clear();
            trellis_core::compact_json::to_vec_into(&mut buf, &ev).unwrap();
            buf.len()
        })
    });
    g.bench_function("event_json", |b| {
        b.iter(|| {
            buf.clear();
            trellis_core::event_json::write_event(&mut buf, &ev).unwrap();
            buf.len()
        })
    });
    g.finish();

    let text: String = (1..=20)
        .map(|i| format!("[00001:{i:03}] out 1.{i} lorem ipsum dolor sit amet consectetur o\n"))
        .collect();
    let shorts = [
        "id",
        "call_00001",
        "execute",
        "completed",
        "src/module_1.py",
        "Run `bench-tool --step 1`",
        "session",
        "sess-25137-1",
    ];
    let mut g = c.benchmark_group("escape");
    g.bench_function("output_20_lines", |b| {
        b.iter(|| {
            buf.clear();
            trellis_core::compact_json::write_str(&mut buf, &text);
            buf.len()
        })
    });
    g.bench_function("short_strings_8", |b| {
        b.iter(|| {
            buf.clear();
            for s in shorts {
                trellis_core::compact_json::write_str(&mut buf, s);
            }
            buf.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
