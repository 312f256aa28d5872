//! Event → Python plugin → host: the time from the host dispatching an event to the
//! plugin's host call (`host/notify`, answered) reaching the runtime. One sample per
//! event, sequential (the next event goes out when the previous round trip is done).
//! Criterion reports the mean and median; p50 and p99 of the same samples are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use trellis_core::ext::Capability;
use trellis_core::{Event, EventBody};
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, HostMsg, HostOptions};
use trellis_plugin::process::Launch;
use trellis_plugin::{Limits, PluginExt, PluginSpec};

fn host() -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let sdk = root.join("../../sdk/python").canonicalize().unwrap();
    let spec = PluginSpec {
        manifest: trellis_core::ext::Manifest {
            name: "echo".into(),
            version: "1".into(),
            description: "bench".into(),
            capabilities: vec![Capability::Observe, Capability::Ui],
            ui_only: false,
        },
        launch: Launch {
            name: "echo".into(),
            root: root.join("benches/plugins/echo"),
            data: None,
            command: vec!["python3".into(), "./plugin.py".into()],
            log_file: None,
            env: vec![
                ("PYTHONPATH".into(), sdk.to_string_lossy().into_owned()),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
            max_line: 1 << 20,
            on_spawn: None,
        },
        limits: Limits::default(),
        hub: false,
    };
    let mut opts = HostOptions::default();
    opts.config.insert(
        "echo".into(),
        ExtConfig {
            enabled: Some(true),
            grant: Some(vec![Capability::Observe, Capability::Ui]),
            options: serde_json::Value::Null,
        },
    );
    ExtHost::new(
        vec![Candidate {
            ext: Box::new(PluginExt::new(spec)),
            builtin: false,
        }],
        opts,
    )
}

fn event(i: u64) -> Event {
    Event {
        schema: 1,
        t: i as f64,
        session: Some(Arc::from("S")),
        hub_session: None,
        body: EventBody::MessageChunk {
            role: trellis_core::event::Role::Agent,
            message_id: None,
            text: format!("chunk {i}"),
            subagent: None,
        },
        acp: None,
        wire: Default::default(),
        position: None,
    }
}

/// One round trip: dispatch, then wait for the plugin's notify to reach the runtime.
fn round_trip(
    h: &ExtHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
    i: u64,
) -> Duration {
    let start = Instant::now();
    h.dispatch(&event(i));
    h.deliver();
    loop {
        match rx.blocking_recv() {
            Some(HostMsg::Notify { .. }) => return start.elapsed(),
            Some(_) => continue,
            None => panic!("the host went away"),
        }
    }
}

fn bench(c: &mut Criterion) {
    let (h, mut rx) = host();
    h.flush(Duration::from_secs(10));
    // Warm up, then the samples for the percentiles.
    for i in 0..200 {
        round_trip(&h, &mut rx, i);
    }
    let mut samples: Vec<Duration> = (0..2000)
        .map(|i| round_trip(&h, &mut rx, 1000 + i))
        .collect();
    samples.sort();
    let p = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    eprintln!(
        "event → Python plugin → host round trip over {} events: p50 {:.1} µs, p99 {:.1} µs",
        samples.len(),
        p(0.5).as_secs_f64() * 1e6,
        p(0.99).as_secs_f64() * 1e6
    );
    let mut n = 10_000;
    c.bench_function("event_python_plugin_host_round_trip", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                total += round_trip(&h, &mut rx, n);
            }
            total
        })
    });
    h.shutdown(Duration::from_secs(5));
}

criterion_group!(benches, bench);
criterion_main!(benches);
