//! One frame of a long session at 200×50: 100, 10 000 and 100 000 tool calls of 20
//! output lines each, every tenth call expanded (a read with a 5-line preview). The frame
//! is drawn into ratatui's `TestBackend`, so it measures our work (layout, rendering,
//! diffing the buffer), not the terminal. Also: opening the inspector at 10 000 calls.
//!
//! With `TRELLIS_BENCH_MILLION=1`, the same at 10 000 and 1 000 000 calls whose finished
//! chunks left memory (as in a live session: `trellis_core::cold`, the output in a "log"
//! read back on demand): a frame at the bottom, a frame scrolled to the top (frozen
//! calls), the frame after a resize, and opening the inspector on calls spread over the session, a different
//! chunk each time (every open decodes one).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// As in the `trellis` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Policy, Session, ToolKind, update};
use trellis_tui::{App, Clock, draw};
use trellis_view::{OutputPolicies, OutputPolicy};

fn session(calls: usize) -> Session {
    session_with_events(calls).0
}

/// The "log": every call's output is the same body.
struct Body;
impl trellis_core::bulk::BulkSource for Body {
    fn text(&self, _seq: u64, _item: usize) -> Option<String> {
        Some(body())
    }
}

fn body() -> String {
    (0..20)
        .map(|l| format!("{l:>4} the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// [`session`] with finished chunks frozen as they finish.
fn frozen_session(calls: usize) -> Session {
    build(calls, true).0
}

/// The session and the events its frames produced (for extensions).
fn session_with_events(calls: usize) -> (Session, Vec<trellis_core::Event>) {
    build(calls, false)
}

fn build(calls: usize, freeze: bool) -> (Session, Vec<trellis_core::Event>) {
    let mut s = Session::new(Policy::Ask);
    if freeze {
        s.ledger.set_cold(trellis_core::cold::Cold::new(
            std::sync::Arc::new(trellis_core::cold::MemorySpill::default()),
            std::sync::Arc::new(Body),
        ));
    }
    let mut seq = 0;
    let mut events = Vec::new();
    let mut feed = |s: &mut Session, v: serde_json::Value, dir: Dir| {
        seq += 1;
        for fx in update(
            s,
            Action::Frame {
                seq,
                t: seq as f64 * 1e-3,
                dir,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        ) {
            // With freezing, nobody keeps the events (a driver hands them on).
            if let trellis_core::Effect::Emit(e) = fx
                && !freeze
            {
                events.push(e);
            }
        }
    };
    feed(
        &mut s,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        Dir::ClientToAgent,
    );
    let body = body();
    for i in 0..calls {
        if freeze && i % 512 == 0 {
            s.ledger.settle();
        }
        let kind = if i % 10 == 0 { "read" } else { "execute" };
        let up = |u: serde_json::Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}});
        feed(
            &mut s,
            up(
                json!({"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":format!("Call {i}"),"kind":kind,"status":"in_progress"}),
            ),
            Dir::AgentToClient,
        );
        feed(
            &mut s,
            up(
                json!({"sessionUpdate":"tool_call_update","toolCallId":format!("c{i}"),"status":"completed",
            "content":[{"type":"content","content":{"type":"text","text":body}}]}),
            ),
            Dir::AgentToClient,
        );
        if i % 50 == 0 {
            feed(
                &mut s,
                up(
                    json!({"sessionUpdate":"agent_message_chunk","messageId":format!("m{i}"),"content":{"type":"text","text":"Some **markdown** with `code` and a list:\n\n- one\n- two\n"}}),
                ),
                Dir::AgentToClient,
            );
        }
    }
    if freeze {
        s.ledger.settle();
    }
    (s, events)
}

/// Two more sections of ten rows each, beside the three built-in ones.
struct Panels;

impl trellis_core::ext::Extension for Panels {
    fn manifest(&self) -> trellis_core::ext::Manifest {
        trellis_core::ext::Manifest {
            name: "panels".into(),
            version: "1".into(),
            description: "bench".into(),
            capabilities: vec![trellis_core::ext::Capability::Ui],
            ui_only: true,
        }
    }
    fn register(
        &mut self,
        _h: &mut dyn trellis_core::ext::Host,
    ) -> Result<trellis_core::ext::Registration, trellis_core::ext::ExtError> {
        Ok(trellis_core::ext::Registration {
            subscriptions: Some(Vec::new()),
            sections: ["Builds", "Reviews"]
                .iter()
                .map(|t| trellis_core::ext::SectionDecl {
                    id: t.to_lowercase(),
                    title: t.to_string(),
                    max_rows: 6,
                    collapsed: false,
                })
                .collect(),
            ..Default::default()
        })
    }
    fn on_idle(
        &mut self,
        h: &mut dyn trellis_core::ext::Host,
    ) -> Result<(), trellis_core::ext::ExtError> {
        for id in ["builds", "reviews"] {
            h.set_section(
                id,
                trellis_core::ext::SectionBody {
                    rows: (0..10)
                        .map(|i| {
                            trellis_core::ext::SectionRow::clickable(
                                format!("{id} {i} \x1b[32m✓\x1b[0m 日本語 row text that is long"),
                                format!("{i}"),
                            )
                        })
                        .collect(),
                    count: Some(10),
                },
            )?;
        }
        Ok(())
    }
}

/// A session of `calls` calls with the built-in extensions plus [`Panels`] (five
/// sections) and card designs chosen for execute and read calls.
fn app_with_extensions(calls: usize) -> (App, Terminal<TestBackend>) {
    app_with(calls, Vec::new())
}

/// Where [`counters`] writes its plugins: a directory of the bench's own, removed when the
/// plugins' group is done ([`bench`]) instead of left in the system's temporary directory.
static PLUGIN_DIR: std::sync::Mutex<Option<tempfile::TempDir>> = std::sync::Mutex::new(None);

/// Three Python plugins subscribed to every event, each pushing a status item.
fn counters() -> Vec<trellis_ext_host::Candidate> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let sdk = root.join("../../sdk/python").canonicalize().unwrap();
    let owned = tempfile::Builder::new()
        .prefix("trellis-frame-bench-")
        .tempdir()
        .unwrap();
    let dir = owned.path().to_path_buf();
    *PLUGIN_DIR.lock().unwrap() = Some(owned);
    (1..=3)
        .map(|i| {
            let p = dir.join(format!("counter-{i}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(
                p.join("plugin.py"),
                format!(
                    "from trellis_plugin import Plugin\nplugin = Plugin()\nplugin.status_item('n', 'Counter {i}')\n\
                     seen = [0]\n\n@plugin.on()\ndef count(event, host):\n    seen[0] += 1\n\n\
                     @plugin.on_idle\ndef idle(host):\n    host.set_status_item('n', f'{{seen[0]}} events')\n\n\
                     plugin.run()\n"
                ),
            )
            .unwrap();
            let name = format!("counter-{i}");
            let spec = trellis_plugin::PluginSpec {
                manifest: trellis_core::ext::Manifest {
                    name: name.clone(),
                    version: "1".into(),
                    description: "bench".into(),
                    capabilities: vec![
                        trellis_core::ext::Capability::Observe,
                        trellis_core::ext::Capability::Ui,
                    ],
                    ui_only: false,
                },
                launch: trellis_plugin::process::Launch {
                    name,
                    root: p,
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
                limits: trellis_plugin::Limits::default(),
                hub: false,
            };
            trellis_ext_host::Candidate {
                ext: Box::new(trellis_plugin::PluginExt::new(spec)),
                builtin: false,
            }
        })
        .collect()
}

/// [`app_with_extensions`] and three plugin processes subscribed to everything.
fn app_with_plugins(calls: usize) -> (App, Terminal<TestBackend>) {
    app_with(calls, counters())
}

fn app_with(
    calls: usize,
    plugins: Vec<trellis_ext_host::Candidate>,
) -> (App, Terminal<TestBackend>) {
    let (s, events) = session_with_events(calls);
    let mut exts: Vec<trellis_ext_host::Candidate> = trellis_builtins::all()
        .into_iter()
        .map(|ext| trellis_ext_host::Candidate { ext, builtin: true })
        .collect();
    exts.push(trellis_ext_host::Candidate {
        ext: Box::new(Panels),
        builtin: true,
    });
    let mut opts = trellis_ext_host::HostOptions::default();
    for p in &plugins {
        opts.config.insert(
            p.ext.manifest().name,
            trellis_ext_host::ExtConfig {
                enabled: Some(true),
                grant: Some(vec![
                    trellis_core::ext::Capability::Observe,
                    trellis_core::ext::Capability::Ui,
                ]),
                options: serde_json::Value::Null,
            },
        );
    }
    exts.extend(plugins);
    let (host, rx) = trellis_ext_host::ExtHost::new(exts, opts);
    for e in &events {
        host.dispatch(e);
    }
    host.flush(std::time::Duration::from_secs(60));
    host.ui.apply(
        &trellis_ext_host::ui::RowTarget::Card("kind:execute".into()),
        "cards/terminal",
    );
    host.ui.apply(
        &trellis_ext_host::ui::RowTarget::Card("kind:read".into()),
        "cards/compact",
    );
    let mut app = App::new(s, "bench".into(), false);
    app.set_ext(host, rx);
    app.view.policies = OutputPolicies {
        by_kind: vec![(ToolKind::Read, OutputPolicy::Preview(5))],
        failed_preview: 3,
    };
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    settle(&mut app, &mut term);
    // The designed cards asked for by those frames arrive; the next frames have them.
    let host = app.driver.host.as_ref().unwrap();
    host.flush(std::time::Duration::from_secs(60));
    assert_eq!(host.ui.sections().len(), 5);
    settle(&mut app, &mut term);
    (app, term)
}

fn app(calls: usize) -> (App, Terminal<TestBackend>) {
    app_of(session(calls))
}

/// The app over `s`, a read call's output previewed, after its first frame.
fn app_of(s: Session) -> (App, Terminal<TestBackend>) {
    let mut app = App::new(s, "bench".into(), false);
    app.view.policies = OutputPolicies {
        by_kind: vec![(ToolKind::Read, OutputPolicy::Preview(5))],
        failed_preview: 3,
    };
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    // The first frames lay the whole transcript out once (the first one is measured
    // apart, below).
    settle(&mut app, &mut term);
    (app, term)
}

/// Draws until the transcript's layout has caught up (returns the frames it took).
fn settle(app: &mut App, term: &mut Terminal<TestBackend>) -> usize {
    let mut frames = 0;
    loop {
        term.draw(|f| draw(f, app, Clock { now: 1.0, frame: 0 }))
            .unwrap();
        frames += 1;
        if !app.view.settling() {
            return frames;
        }
    }
}

/// One frame after another of the app `make(calls)` builds, for each size.
fn frames(
    c: &mut Criterion,
    group: &str,
    sizes: &[usize],
    make: fn(usize) -> (App, Terminal<TestBackend>),
) {
    let mut g = c.benchmark_group(group);
    g.sample_size(30);
    for &calls in sizes {
        let (mut app, mut term) = make(calls);
        let mut frame = 0;
        g.bench_with_input(BenchmarkId::from_parameter(calls), &calls, |b, _| {
            b.iter(|| {
                frame += 1;
                // A different spinner frame each time, so the buffer really changes.
                term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame }))
                    .unwrap();
            })
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    frames(c, "frame_200x50", &[100, 10_000, 100_000], app);
    // The same frame with five contributed sections in the sidebar and designed cards.
    frames(
        c,
        "frame_200x50_extensions",
        &[100, 10_000],
        app_with_extensions,
    );
    // The same with three plugin processes: frames draw from the host's copy, so they
    // cost what they cost without them.
    frames(c, "frame_200x50_plugins", &[10_000], app_with_plugins);
    // The plugins stopped with their app: their directory goes.
    drop(PLUGIN_DIR.lock().unwrap().take());

    let mut g = c.benchmark_group("inspector");
    g.sample_size(30);
    let (mut app, mut term) = app(10_000);
    g.bench_function("open_at_10000_calls", |b| {
        b.iter(|| {
            app.inspector = None;
            app.cursor = Some(app.driver.session.transcript.len() / 2);
            app.open_inspector();
            term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame: 0 }))
                .unwrap();
        })
    });
    g.finish();
    if std::env::var("TRELLIS_BENCH_MILLION").as_deref() == Ok("1") {
        frozen(c);
    }

    // Several sessions (issue 30): bringing a 100 000-call session to the front. Once
    // with a session never drawn before (it streamed in the background), once going back
    // and forth between two that were.
    let mut g = c.benchmark_group("switch_session");
    g.sample_size(10);
    let deck_of = |a: App, b: App| {
        let opened = |app| trellis_tui::deck::Opened {
            app,
            restart: None,
            source: "/bench".into(),
            branch: None,
            from: None,
        };
        let mut d = trellis_tui::deck::Deck::new(opened(a), "bench".into());
        d.add(opened(b), "bench".into());
        d.show(0);
        d
    };
    g.bench_function("first_frame_100000_calls_never_drawn", |b| {
        // Timed by hand around the switch and the frame alone: building the two sessions
        // and dropping them afterwards are not the frame's cost.
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let (front, _) = self::app(100);
                let back = App::new(session(100_000), "bench".into(), false);
                let mut deck = deck_of(front, back);
                let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
                let start = std::time::Instant::now();
                deck.show(1);
                term.draw(|f| {
                    trellis_tui::rail::draw_deck(f, &mut deck, Clock { now: 1.0, frame: 0 })
                })
                .unwrap();
                total += start.elapsed();
                drop((deck, term));
            }
            total
        })
    });
    let (a, _) = self::app(100_000);
    let (b, _) = self::app(100_000);
    let mut deck = deck_of(a, b);
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    g.bench_function("back_and_forth_100000_calls", |b| {
        b.iter(|| {
            let next = 1 - deck.sessions.front;
            deck.show(next);
            term.draw(|f| trellis_tui::rail::draw_deck(f, &mut deck, Clock { now: 1.0, frame: 0 }))
                .unwrap()
                .area
        })
    });
    g.finish();

    let mut g = c.benchmark_group("first_layout");
    g.sample_size(10);
    g.bench_function("10000_calls", |b| {
        b.iter_batched(
            || {
                (
                    App::new(session(10_000), "bench".into(), false),
                    Terminal::new(TestBackend::new(200, 50)).unwrap(),
                )
            },
            |(mut app, mut term)| {
                term.draw(|f| draw(f, &mut app, Clock { now: 1.0, frame: 0 }))
                    .unwrap()
                    .area
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Frames and inspector opens at 10 000 and 1 000 000 calls, finished chunks frozen.
fn frozen(c: &mut Criterion) {
    for calls in [10_000, 1_000_000] {
        let (mut app, mut term) = app_of(frozen_session(calls));
        let frozen = app.driver.session.ledger.cold().map_or(0, |c| c.stats().0);
        eprintln!("{calls} calls: {frozen} frozen");
        let mut g = c.benchmark_group("frozen");
        g.sample_size(30);
        let mut frame = 0;
        g.bench_function(BenchmarkId::new("frame_bottom", calls), |b| {
            b.iter(|| {
                frame += 1;
                term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame }))
                    .unwrap();
            })
        });
        app.top = Some(0);
        g.bench_function(BenchmarkId::new("frame_top", calls), |b| {
            b.iter(|| {
                frame += 1;
                term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame }))
                    .unwrap();
            })
        });
        app.top = None;
        // A resize: the frame after the width changed by one column (a terminal being
        // dragged sends one after another).
        let mut narrow = false;
        g.bench_function(BenchmarkId::new("resize", calls), |b| {
            b.iter(|| {
                narrow = !narrow;
                term.backend_mut()
                    .resize(if narrow { 199 } else { 200 }, 50);
                term.autoresize().unwrap();
                term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame: 0 }))
                    .unwrap();
            })
        });
        term.backend_mut().resize(200, 50);
        term.autoresize().unwrap();
        // And all it takes to lay everything out again after one (in the background, a
        // frame every 100 ms in the UI): once, as a figure.
        let t = std::time::Instant::now();
        let n = settle(&mut app, &mut term);
        eprintln!(
            "{calls} calls: a resize settles in {n} frames, {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        // A different chunk each open (97 chunks on, and one call further).
        let entries = app.driver.session.transcript.len();
        let mut k = 0usize;
        g.bench_function(BenchmarkId::new("inspector_open", calls), |b| {
            b.iter(|| {
                k += 1;
                app.inspector = None;
                app.cursor = Some((k * 97 * 512 + k) % entries);
                app.open_inspector();
                term.draw(|f| draw(f, &mut app, Clock { now: 2.0, frame: 0 }))
                    .unwrap();
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
