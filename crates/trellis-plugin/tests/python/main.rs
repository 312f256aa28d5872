//! Plugin processes end to end through the extension host: a Python plugin written with
//! the SDK (`sdk/python/trellis_plugin.py`) exercising every part of the API, and plugins
//! that break the protocol one way each. Every fault leaves the host and the other
//! extensions working and is explained in `/status`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trellis_core::ext::Capability;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Effect, Event, Policy, Session, update};
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, ExtState, HostMsg, HostOptions, Out};
use trellis_plugin::process::Launch;
use trellis_plugin::{Limits, PluginExt, PluginSpec};

mod faults;
mod sdk_errors;

fn python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python3 is missing: run the suite with scripts/test, which installs it"
    );
    ok
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/plugins")
}

fn sdk() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../sdk/python")
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn spec(name: &str, argv: &[&str], caps: &[Capability], limits: Limits) -> PluginSpec {
    PluginSpec {
        manifest: trellis_core::ext::Manifest {
            name: name.into(),
            version: "1.0.0".into(),
            description: "test".into(),
            capabilities: caps.to_vec(),
            ui_only: false,
        },
        launch: Launch {
            name: name.into(),
            root: fixtures(),
            data: None,
            command: argv.iter().map(|s| s.to_string()).collect(),
            log_file: None,
            env: vec![
                ("PYTHONPATH".into(), sdk()),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
            max_line: 1 << 20,
            on_spawn: None,
        },
        limits,
        hub: false,
    }
}

/// A host with the plugins (granted `grant` each) and one healthy in-process extension
/// beside them.
fn host(
    plugins: Vec<(PluginSpec, Vec<Capability>)>,
) -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    trellis_ext_host::install_panic_guard();
    let mut opts = HostOptions {
        permission_timeout: 3.0,
        failure_limit: 50,
        ..HostOptions::default()
    };
    let mut exts = Vec::new();
    for (s, grant) in plugins {
        opts.config.insert(
            s.manifest.name.clone(),
            ExtConfig {
                enabled: Some(true),
                grant: Some(grant),
                options: json!({"greeting": "hi"}),
            },
        );
        exts.push(Candidate {
            ext: Box::new(PluginExt::new(s)),
            builtin: false,
        });
    }
    exts.push(Candidate {
        ext: Box::new(trellis_builtins_stats()),
        builtin: true,
    });
    ExtHost::new(exts, opts)
}

/// The built-in stats extension stands for "the other extensions".
fn trellis_builtins_stats() -> impl trellis_core::ext::Extension {
    struct Healthy(usize);
    impl trellis_core::ext::Extension for Healthy {
        fn manifest(&self) -> trellis_core::ext::Manifest {
            trellis_core::ext::Manifest {
                name: "healthy".into(),
                version: "1".into(),
                description: "counts".into(),
                capabilities: vec![Capability::Observe],
                ui_only: false,
            }
        }
        fn on_event(
            &mut self,
            _e: &Event,
            _h: &mut dyn trellis_core::ext::Host,
        ) -> Result<(), trellis_core::ext::ExtError> {
            self.0 += 1;
            Ok(())
        }
    }
    Healthy(0)
}

struct S {
    s: Session,
    seq: u64,
}

impl S {
    fn new() -> S {
        S {
            s: Session::new(Policy::Ask),
            seq: 0,
        }
    }
    fn frame(&mut self, dir: Dir, v: Value) -> Vec<Effect> {
        self.seq += 1;
        update(
            &mut self.s,
            Action::Frame {
                seq: self.seq,
                t: self.seq as f64,
                dir,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        )
    }
    fn up(&mut self, u: Value) -> Vec<Effect> {
        self.frame(
            Dir::AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}),
        )
    }
}

/// Feeds effects and pumps host messages until `until` holds (or 15 s pass).
fn pump(
    h: &mut ExtHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
    fx: &[Effect],
    until: impl Fn(&[Out], &ExtHost) -> bool,
) -> Vec<Out> {
    let mut outs = h.on_effects(fx, 1.0);
    h.deliver();
    let start = Instant::now();
    while !until(&outs, h) {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "waited for: {outs:?}\n{}",
            h.status().lines().join("\n")
        );
        while let Ok(m) = rx.try_recv() {
            outs.extend(h.on_msg(m, 1.0));
        }
        outs.extend(h.tick(1.0 + start.elapsed().as_secs_f64()));
        std::thread::sleep(Duration::from_millis(10));
    }
    outs
}

fn status(h: &ExtHost) -> String {
    h.status().lines().join("\n")
}

#[test]
fn a_python_plugin_uses_every_part_of_the_api() {
    if !python() {
        return;
    }
    let sp = spec(
        "everything",
        &["python3", "./everything.py"],
        &[
            Capability::Observe,
            Capability::Ui,
            Capability::CallState,
            Capability::Store,
            Capability::InterceptPermissions,
            Capability::Drive,
        ],
        Limits::default(),
    );
    // Everything but drive is granted.
    let grant = vec![
        Capability::Observe,
        Capability::Ui,
        Capability::CallState,
        Capability::Store,
        Capability::InterceptPermissions,
    ];
    let (mut h, mut rx) = host(vec![(sp, grant)]);
    assert!(
        status(&h).contains("everything 1.0.0 (plugin): ready"),
        "{}",
        status(&h)
    );
    let mut s = S::new();
    let mut fx = s.up(json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"List","kind":"execute","status":"pending","rawInput":{"command":"ls -la"}}));
    fx.extend(s.up(json!({"sessionUpdate":"tool_call","toolCallId":"c2","title":"Remove","kind":"execute","status":"pending","rawInput":{"command":"rm -rf build"}})));
    fx.extend(s.frame(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"c1"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}})));
    fx.extend(s.frame(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":6,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"c2"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}})));
    // Claims `ls` and answers it; passes `rm` on to the dialog.
    let outs = pump(&mut h, &mut rx, &fx, |o, _| {
        o.iter().any(|x| matches!(x, Out::Decide { .. }))
            && o.iter().any(|x| matches!(x, Out::Dialog { .. }))
    });
    assert!(
        outs.contains(&Out::Decide {
            request_id: "5".into(),
            option_id: "ok".into(),
            extension: "everything".into(),
            reason: None,
        }),
        "{outs:?}"
    );
    assert!(
        outs.contains(&Out::Dialog {
            request_id: "6".into()
        }),
        "{outs:?}"
    );
    // Call state, through the host, for the log.
    assert!(
        outs.iter()
            .any(|o| matches!(o, Out::CallState { extension, call_id, value }
        if extension == "everything" && call_id == "c1" && value == &json!({"seen": 1}))),
        "{outs:?}"
    );
    // Its section and status item, pushed on idle.
    assert!(h.flush(Duration::from_secs(10)));
    let sec = &h.ui.sections()[0];
    assert_eq!(sec.title, "Seen calls");
    let rows: Vec<String> = sec.rows.iter().map(|r| r.line.text()).collect();
    assert_eq!(rows, ["c1", "c2"]);
    assert_eq!(sec.rows[0].id.as_deref(), Some("c1"));
    assert_eq!(h.ui.status_line_items(40)[0].text(), "2 seen");
    // A card design, answered by the process for this revision and width.
    h.ui.apply(
        &trellis_ext_host::ui::RowTarget::Card("kind:execute".into()),
        "everything/shell",
    );
    let mut call = (*s.s.ledger.get("c1").unwrap()).clone();
    call.status = trellis_core::ToolStatus::Completed;
    call.raw_output = Some(
        serde_json::value::to_raw_value(&json!({"exit_code": 0}))
            .unwrap()
            .into(),
    );
    call.content = vec![trellis_core::tool_call::ToolContent::Text {
        text: "a b\nshout id-42\n".into(),
    }];
    call.rev = 9;
    assert!(
        h.ui.card(&call, 50).is_none(),
        "the native card until the answer arrives"
    );
    h.ui.send_requests();
    assert!(h.flush(Duration::from_secs(10)));
    h.ui.take_changed();
    h.ui.card(&call, 50);
    h.ui.send_requests();
    assert!(h.flush(Duration::from_secs(10)));
    let card = h.ui.card(&call, 50).expect("designed");
    assert_eq!(card.call[0].text(), "✓ $ ls -la  exit 0");
    assert!(card.call[0].0[1].bold);
    // Designs see the output as displayed: its per-call transform and its rewrite.
    assert_eq!(
        card.result[0].text(),
        "A B\nSHOUT ID-*".replace('\n', " "),
        "{card:?}"
    );
    // Its command: notify with its options, store round trip.
    assert!(h.ui.run_command("hello", "world"));
    let outs = pump(&mut h, &mut rx, &[], |o, _| {
        o.iter().any(|x| matches!(x, Out::Notify(_)))
    });
    assert!(
        outs.contains(&Out::Notify(
            "everything: hello world from everything, options {'greeting': 'hi'}".into()
        )),
        "{outs:?}"
    );
    // Drive is not granted: a specific error, counted in /status.
    let ended = Effect::Emit(Event {
        schema: 1,
        t: 9.0,
        session: Some("S".into()),
        hub_session: None,
        body: trellis_core::EventBody::TurnEnded {
            turn: 1,
            stop_reason: "end_turn".into(),
            unfinished: vec![],
        },
        acp: None,
        wire: Default::default(),
        position: None,
    });
    // The refusal and its report are counted by different threads: wait for both.
    pump(&mut h, &mut rx, &[ended], |_, h| {
        let st = status(h);
        st.contains("refused call drive") && st.contains("failed drive ×1: refused")
    });
    let st = status(&h);
    assert!(st.contains("failed drive ×1: refused with -32001"), "{st}");
    assert!(st.contains("process "), "{st}");
    h.shutdown(Duration::from_secs(5));
}

/// A host running the SDK plugin `tests/plugins/NAME.py`, granted `observe`.
fn observing(name: &str) -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    let caps = [Capability::Observe];
    let script = format!("./{name}.py");
    host(vec![(
        spec(name, &["python3", &script], &caps, Limits::default()),
        caps.to_vec(),
    )])
}

/// The effects of tool calls `range` being announced (`c0`, `c1`…).
fn calls_created(s: &mut S, range: std::ops::Range<usize>) -> Vec<Effect> {
    let mut fx = Vec::new();
    for i in range {
        fx.extend(s.up(json!({"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":"x","kind":"read","status":"pending"})));
    }
    fx
}

/// Trying a plugin (`plugin try`): what it writes into its own folder does not reload it;
/// new code does, once; and reloading an observe-only plugin makes no call in its name it
/// may not make (no `wake failed`, no refused `notify`).
#[test]
fn a_tried_plugin_reloads_for_new_code_only_and_makes_no_call_it_may_not() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let code = |n: u32| {
        format!(
            "import os\nfrom trellis_plugin import Plugin\n\nplugin = Plugin()\nHERE = os.path.dirname(os.path.abspath(__file__))\n\n\n@plugin.on('message_chunk')\ndef seen(event, host):\n    # Its own notes, in its own folder.\n    with open(os.path.join(HERE, 'notes.log'), 'a') as f:\n        f.write(f'v{n} {{os.getpid()}}\\n')\n\n\nplugin.run()\n"
        )
    };
    std::fs::write(dir.path().join("tried.py"), code(1)).unwrap();
    let mut sp = spec(
        "tried",
        &["python3", "./tried.py"],
        &[Capability::Observe],
        Limits {
            watch: true,
            ..Limits::default()
        },
    );
    sp.launch.root = dir.path().to_path_buf();
    let (mut h, mut rx) = host(vec![(sp, vec![Capability::Observe])]);
    let mut s = S::new();
    let notes = dir.path().join("notes.log");
    // It writes its notes for a while (the watcher looks twice a second).
    for n in 1..=6 {
        let fx = chunk(&mut s, n);
        pump(&mut h, &mut rx, &fx, |_, _| true);
        assert!(h.flush(Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(250));
    }
    // One process wrote them all: its own writes did not reload it.
    let pids = |v: &str| -> std::collections::BTreeSet<String> {
        std::fs::read_to_string(&notes)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix(v))
            .map(str::to_string)
            .collect()
    };
    let text = std::fs::read_to_string(&notes).unwrap();
    assert!(text.lines().count() >= 6, "{text}");
    assert_eq!(pids("v1 ").len(), 1, "{text}");
    // New code: reloaded once, and the new code runs.
    std::fs::write(dir.path().join("tried.py"), code(2)).unwrap();
    let start = Instant::now();
    loop {
        let fx = chunk(&mut s, 100);
        pump(&mut h, &mut rx, &fx, |_, _| true);
        assert!(h.flush(Duration::from_secs(10)));
        if std::fs::read_to_string(&notes).unwrap().contains("v2") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{}", status(&h));
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1200));
    let st = status(&h);
    assert!(st.contains("reloaded 1 times"), "{st}");
    assert!(
        !st.contains("wake failed") && !st.contains("refused"),
        "{st}"
    );
    assert_eq!(state(&h, "tried"), ExtState::Ready);
}

/// The last lines a plugin writes on stderr reach `/status` by themselves, without
/// waiting for the plugin's next event.
#[test]
fn the_last_stderr_lines_of_a_burst_reach_the_status_by_themselves() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("talks.py"),
        "import sys, time\nfrom trellis_plugin import Plugin\n\nplugin = Plugin()\n\n\n@plugin.on('message_chunk')\ndef seen(event, host):\n    sys.stderr.write('burst begins\\n')\n    sys.stderr.flush()\n    time.sleep(0.1)\n    sys.stderr.write('burst middle\\n')\n    sys.stderr.write('burst ends\\n')\n    sys.stderr.flush()\n\n\nplugin.run()\n",
    )
    .unwrap();
    let mut sp = spec(
        "talks",
        &["python3", "./talks.py"],
        &[Capability::Observe],
        Limits::default(),
    );
    sp.launch.root = dir.path().to_path_buf();
    let (mut h, mut rx) = host(vec![(sp, vec![Capability::Observe])]);
    let mut s = S::new();
    let fx = chunk(&mut s, 1);
    // One event, then nothing more: the status catches up on its own.
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("│ burst ends")
    });
}

fn faulty(mode: &str, caps: &[Capability], limits: Limits) -> (PluginSpec, Vec<Capability>) {
    (
        spec(mode, &["python3", "./faulty.py", mode], caps, limits),
        caps.to_vec(),
    )
}

fn chunk(s: &mut S, i: usize) -> Vec<Effect> {
    s.up(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":format!("{i}")}}))
}

fn state(h: &ExtHost, name: &str) -> ExtState {
    h.status()
        .extensions
        .iter()
        .find(|e| e.name == name)
        .unwrap()
        .state
        .clone()
}

/// The healthy extension beside the plugin kept receiving events.
fn healthy_intact(h: &ExtHost) {
    let st = h.status();
    let e = st.extensions.iter().find(|e| e.name == "healthy").unwrap();
    assert_eq!(e.state, ExtState::Ready, "{}", status(h));
    assert!(e.failures.is_empty());
}
