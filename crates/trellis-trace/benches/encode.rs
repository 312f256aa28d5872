//! What the exporter's thread spends per span: a batch of 512 tool-call spans (the
//! attributes a live session's calls carry) encoded as one OTLP protobuf request, and
//! the same with the batch dropped after it, as the exporter does.
#![allow(clippy::unwrap_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use trellis_trace::json::Resource;
use trellis_trace::span::{Kind, Span, Status, Value, span_id};

fn spans(n: u32) -> Vec<Span> {
    let trace = trellis_trace::trace_id_of(1_764_000_000.123, "demo", "/home/dev/project");
    let turn = span_id(&trace, &[b"turn", &1u32.to_be_bytes()]);
    (0..n)
        .map(|i| {
            let id = format!("call-{i}");
            Span {
                trace_id: trace,
                span_id: span_id(&trace, &[b"call", b"", id.as_bytes(), &1u32.to_be_bytes()]),
                parent: Some(turn),
                name: "execute_tool execute".into(),
                kind: Kind::Internal,
                start: 1_764_000_000_123_000_000 + u64::from(i) * 1_000_000,
                end: 1_764_000_000_124_000_000 + u64::from(i) * 1_000_000,
                attributes: vec![
                    ("gen_ai.operation.name", Value::Static("execute_tool")),
                    ("gen_ai.tool.name", Value::Str("execute".into())),
                    ("gen_ai.tool.call.id", Value::Str(id)),
                    ("gen_ai.tool.type", Value::Static("function")),
                    ("trellis.tool.kind", Value::Static("execute")),
                    ("trellis.tool.status", Value::Static("completed")),
                    (
                        "trellis.tool.title",
                        Value::Str(format!("Run step {i} of the tests")),
                    ),
                    ("trellis.tool.exit_code", Value::Int(0)),
                ],
                status: Status::Unset,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let resource = Resource {
        attributes: vec![
            ("service.name".into(), "trellis".into()),
            ("service.version".into(), "0.1.0".into()),
        ],
    };
    let batch = spans(512);
    let mut g = c.benchmark_group("otlp");
    // The exporter keeps one encoder; a fresh one per request is what it did before.
    let mut kept = trellis_trace::proto::Encoder::default();
    g.bench_function("encode_512_call_spans", |b| {
        b.iter(|| kept.request(&resource, &batch).len())
    });
    g.bench_function("encode_512_call_spans_fresh_buffers", |b| {
        b.iter(|| trellis_trace::proto::request(&resource, &batch))
    });
    g.bench_function("encode_and_drop_512_call_spans", |b| {
        b.iter_batched(
            || batch.clone(),
            |spans| {
                let n = kept.request(&resource, &spans).len();
                drop(spans);
                n
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
