//! What extensions add to the event stream: one `session/update` frame through the
//! reducer alone, and the same frame plus dispatch to 10 extensions that observe every
//! event (each through its own bounded queue to its worker thread).
//!
//! `stream_cost` counts only the time on the thread that reads the agent (the cost the
//! stream pays); workers run on their own threads and are drained between batches, out
//! of the measured time. `with_workers` measures the same batches including the wait for
//! all ten workers to finish them (the CPU the extensions themselves use, on this 2-core
//! machine sharing the cores with the stream).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use trellis_core::ext::{Capability, ExtError, Extension, Host, Manifest};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Effect, Event, Policy, Session, update};
use trellis_ext_host::{Candidate, ExtHost, HostOptions};

struct Counter {
    name: String,
    seen: Arc<AtomicU64>,
}

impl Extension for Counter {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: self.name.clone(),
            version: "1".into(),
            description: "counts events".into(),
            capabilities: vec![Capability::Observe],
            ui_only: false,
        }
    }
    fn on_event(&mut self, e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        if matches!(e.body, trellis_core::EventBody::ToolCallUpdated { .. }) {
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// The allocator the `trellis` binary uses, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: u64 = 1000;

/// CPU time of the calling thread: what the stream's thread spends, whatever the
/// extensions' workers do on the other core meanwhile.
fn thread_cpu() -> Duration {
    trellis_os::usage::this_thread_cpu()
}

fn frames(n: u64) -> Vec<Message> {
    (0..n)
        .map(|i| {
            let st = if i % 2 == 0 { "in_progress" } else { "completed" };
            let line = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S",
                "update":{"sessionUpdate":"tool_call_update","toolCallId":format!("c{}", i % 64),"status":st,
                "content":[{"type":"content","content":{"type":"text","text":"one line of output\n"}}]}}})
            .to_string();
            let mut m = Message::parse(&line).unwrap();
            m.raw = Some(line.into());
            m
        })
        .collect()
}

fn session() -> Session {
    let mut s = Session::new(Policy::Ask);
    for i in 0..64 {
        let line = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S",
            "update":{"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":"t","kind":"execute","status":"pending"}}})
        .to_string();
        update(
            &mut s,
            Action::Frame {
                seq: i,
                t: 0.0,
                dir: Dir::AgentToClient,
                msg: Message::parse(&line).unwrap(),
            },
        );
    }
    s
}

/// Feeds the 1000 frames to a fresh session (calls get ~16 updates each, as in a real
/// stream); with a host, effects go through it and the batch ends with one hand-over.
fn batch(msgs: &[Message], host: Option<&mut ExtHost>) -> Duration {
    let mut s = session();
    let mut host = host;
    let start = thread_cpu();
    for m in msgs {
        let fx: Vec<Effect> = update(
            &mut s,
            Action::Frame {
                seq: 1,
                t: 1.0,
                dir: Dir::AgentToClient,
                msg: m.clone(),
            },
        );
        match host.as_deref_mut() {
            Some(h) => {
                std::hint::black_box(h.on_effects(&fx, 1.0));
            }
            None => {
                std::hint::black_box(fx);
            }
        }
    }
    if let Some(h) = host.as_deref() {
        h.deliver();
    }
    thread_cpu() - start
}

fn bench(c: &mut Criterion) {
    let msgs = frames(BATCH);
    let mut g = c.benchmark_group("dispatch");
    g.sample_size(20);
    g.bench_function("reducer_only_per_1000", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| batch(&msgs, None)).sum())
    });
    let seen = Arc::new(AtomicU64::new(0));
    let exts: Vec<Candidate> = (0..10)
        .map(|i| Candidate {
            ext: Box::new(Counter {
                name: format!("counter-{i}"),
                seen: seen.clone(),
            }),
            builtin: true,
        })
        .collect();
    let (mut host, _rx) = ExtHost::new(exts, HostOptions::default());
    g.bench_function("stream_cost_10_extensions_per_1000", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                spent += batch(&msgs, Some(&mut host));
                // Let the workers catch up outside the measured time.
                assert!(host.flush(Duration::from_secs(30)));
            }
            spent
        })
    });
    g.bench_function("with_workers_10_extensions_per_1000_wall", |b| {
        b.iter_custom(|iters| {
            let start = std::time::Instant::now();
            for _ in 0..iters {
                batch(&msgs, Some(&mut host));
                assert!(host.flush(Duration::from_secs(30)));
            }
            start.elapsed()
        })
    });
    g.finish();
    let st = host.status();
    assert!(
        st.extensions
            .iter()
            .all(|e| e.state == trellis_ext_host::ExtState::Ready),
        "no extension may be disabled during the benchmark: {:?}",
        st.extensions[0].state
    );
    assert!(seen.load(Ordering::Relaxed) > 0);
}

criterion_group!(benches, bench);
criterion_main!(benches);
