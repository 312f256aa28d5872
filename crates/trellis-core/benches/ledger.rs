//! Ledger and reducer throughput.
//!
//! `ledger_apply`: merging pre-decoded updates into the ledger (the merge rule alone).
//! `reduce_update_frame`: a whole `session/update` frame through `update` — envelope
//! already parsed, params decoded, merged, event built — as the live client does it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Ledger, Policy, Session, ToolCallPatch, update};

const CALLS: usize = 1000;

fn body(lines: usize) -> String {
    (0..lines)
        .map(|l| format!("{l:>4} the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

fn frames(lines: usize) -> Vec<String> {
    let text = body(lines);
    let mut v = Vec::new();
    for i in 0..CALLS {
        let id = format!("c{i}");
        v.push(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":
            {"sessionUpdate":"tool_call","toolCallId":id,"title":"t","kind":"execute","status":"in_progress"}}}).to_string());
        v.push(
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":
            {"sessionUpdate":"tool_call_update","toolCallId":id,"status":"completed",
             "content":[{"type":"content","content":{"type":"text","text":text}}]}}})
            .to_string(),
        );
    }
    v
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ledger");
    g.sample_size(20);
    g.throughput(Throughput::Elements((CALLS * 2) as u64));
    let patches: Vec<ToolCallPatch> = frames(20)
        .iter()
        .map(|f| {
            let v: serde_json::Value = serde_json::from_str(f).unwrap();
            serde_json::from_str(&v["params"]["update"].to_string()).unwrap()
        })
        .collect();
    g.bench_function("ledger_apply", |b| {
        b.iter_batched(
            || patches.clone(),
            |ps| {
                let mut l = Ledger::default();
                for p in ps {
                    l.apply(p, true, 0.0, 1);
                }
                l
            },
            BatchSize::LargeInput,
        )
    });
    let msgs: Vec<Message> = frames(20)
        .iter()
        .map(|f| Message::parse(f).unwrap())
        .collect();
    g.bench_function("reduce_update_frame", |b| {
        b.iter_batched(
            || msgs.clone(),
            |ms| {
                let mut s = Session::new(Policy::Ask);
                for (i, msg) in ms.into_iter().enumerate() {
                    update(
                        &mut s,
                        Action::Frame {
                            seq: i as u64,
                            t: 0.0,
                            dir: Dir::AgentToClient,
                            msg,
                        },
                    );
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    let lines = frames(20);
    g.bench_function("parse_envelope", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter(|l| Message::parse(l).is_ok_and(|m| m.params.is_some()))
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
