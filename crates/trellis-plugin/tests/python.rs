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
    call.raw_output = Some(serde_json::value::to_raw_value(&json!({"exit_code": 0})).unwrap());
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

#[test]
fn a_plugin_that_crashes_at_start_is_disabled_with_its_stderr_shown() {
    if !python() {
        return;
    }
    let (h, _rx) = host(vec![faulty(
        "crash-start",
        &[Capability::Observe],
        Limits::default(),
    )]);
    let st = status(&h);
    assert!(
        matches!(state(&h, "crash-start"), ExtState::Disabled(r) if r.contains("ended before it answered initialize") && r.contains("exit status 3")),
        "{st}"
    );
    assert!(st.contains("│ boom: cannot import a module"), "{st}");
    healthy_intact(&h);
}

#[test]
fn a_plugin_that_crashes_mid_session_is_restarted_then_disabled_after_too_many_crashes() {
    if !python() {
        return;
    }
    let limits = Limits {
        crashes: 2,
        ..Limits::default()
    };
    let (mut h, mut rx) = host(vec![faulty("crash-mid", &[Capability::Observe], limits)]);
    let mut s = S::new();
    let mut fx = Vec::new();
    for i in 0..3 {
        fx.extend(chunk(&mut s, i));
    }
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("last exit: the process ended (exit status 1)")
    });
    assert!(
        status(&h).contains("│ crashing on the third event"),
        "{}",
        status(&h)
    );
    // After the backoff a new process runs, and the next events reach it…
    pump(&mut h, &mut rx, &[], |_, h| {
        status(h).contains("(protocol v1), restarts 1")
    });
    let mut fx = Vec::new();
    for i in 0..3 {
        fx.extend(chunk(&mut s, 10 + i));
    }
    // …which crashes again: the second crash within the window disables it.
    pump(&mut h, &mut rx, &fx, |_, h| {
        matches!(state(h, "crash-mid"), ExtState::Disabled(_))
    });
    assert!(
        matches!(state(&h, "crash-mid"), ExtState::Disabled(r) if r.contains("crashed 2 times within 300 s")),
        "{}",
        status(&h)
    );
    healthy_intact(&h);
}

/// A permission request for an execute call goes through the plugin and ends at the
/// dialog, never decided by it.
fn request_reaches_the_dialog_unapproved(
    h: &mut ExtHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
) {
    let mut s = S::new();
    let mut fx = s.up(json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"x","kind":"execute","status":"pending"}));
    fx.extend(s.frame(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"c1"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}})));
    let outs = pump(h, rx, &fx, |o, _| {
        o.iter().any(|x| matches!(x, Out::Dialog { .. }))
    });
    assert!(
        !outs.iter().any(|o| matches!(o, Out::Decide { .. })),
        "{outs:?}"
    );
}

#[test]
fn a_hung_plugin_costs_its_cards_and_never_approves_a_request() {
    if !python() {
        return;
    }
    let limits = Limits {
        render_timeout: Duration::from_millis(300),
        offer_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (mut h, mut rx) = host(vec![faulty(
        "hang",
        &[Capability::Observe, Capability::InterceptPermissions],
        limits,
    )]);
    request_reaches_the_dialog_unapproved(&mut h, &mut rx);
    assert!(
        status(&h).contains("no answer to permission/offer within 300 ms"),
        "{}",
        status(&h)
    );
    healthy_intact(&h);
}

#[test]
fn garbage_on_stdout_disconnects_the_plugin_with_the_line_shown_clipped_and_clean() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = host(vec![faulty(
        "garbage",
        &[Capability::Observe],
        Limits::default(),
    )]);
    let mut s = S::new();
    let fx = chunk(&mut s, 1);
    pump(&mut h, &mut rx, &fx, |_, h| {
        matches!(state(h, "garbage"), ExtState::Disabled(_))
    });
    let ExtState::Disabled(r) = state(&h, "garbage") else {
        unreachable!()
    };
    assert!(
        r.starts_with("disconnected: it wrote «Traceback (most recent call last): oops")
            && r.contains(
                "on stdout, which carries the protocol: print to stderr instead (not JSON"
            ),
        "{r}"
    );
    assert!(
        r.contains("«Traceback (most recent call last): oops"),
        "{r}"
    );
    assert!(!r.contains('\x1b') && !r.contains('\x07'), "{r:?}");
    healthy_intact(&h);
}

#[test]
fn a_stderr_flood_is_kept_bounded_and_the_plugin_keeps_working() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = host(vec![faulty(
        "stderr-flood",
        &[Capability::Observe, Capability::Ui],
        Limits::default(),
    )]);
    let mut s = S::new();
    let mut n = 0;
    let start = Instant::now();
    // Until its 10 MB of stderr are read and the plugin still answers.
    loop {
        n += 1;
        let fx = chunk(&mut s, n);
        pump(&mut h, &mut rx, &fx, |_, _| true);
        assert!(h.flush(Duration::from_secs(10)));
        let st = status(&h);
        if st.contains("stderr: 10000 lines")
            && h.ui.sections()[0]
                .rows
                .first()
                .is_some_and(|r| r.line.text() == format!("{n} events"))
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{st}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = status(&h);
    assert_eq!(
        st.matches("  │ xxxx").count(),
        8,
        "the last 8 lines only: {st}"
    );
    assert!(st.len() < 20_000, "bounded: {} bytes", st.len());
    assert_eq!(state(&h, "stderr-flood"), ExtState::Ready);
    healthy_intact(&h);
}

#[test]
fn a_plugin_that_stops_reading_is_disconnected_not_waited_for() {
    if !python() {
        return;
    }
    let limits = Limits {
        backlog: 256 << 10,
        ..Limits::default()
    };
    let (mut h, mut rx) = host(vec![faulty("no-read", &[Capability::Observe], limits)]);
    let mut s = S::new();
    let big = "y".repeat(4096);
    let mut fx = Vec::new();
    for _ in 0..200 {
        fx.extend(s.up(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":big}}),
        ));
    }
    pump(&mut h, &mut rx, &fx, |_, h| {
        matches!(state(h, "no-read"), ExtState::Disabled(_))
    });
    assert!(
        matches!(state(&h, "no-read"), ExtState::Disabled(r) if r.contains("does not keep up")),
        "{}",
        status(&h)
    );
    healthy_intact(&h);
}

#[test]
fn an_ungranted_call_gets_its_own_error_and_a_line_in_status() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = host(vec![faulty(
        "ungranted",
        &[Capability::Ui],
        Limits::default(),
    )]);
    let start = Instant::now();
    loop {
        pump(&mut h, &mut rx, &[], |_, _| true);
        h.flush(Duration::from_secs(5));
        if h.ui.sections().first().is_some_and(|s| !s.rows.is_empty()) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{}", status(&h));
        std::thread::sleep(Duration::from_millis(20));
    }
    let row = h.ui.sections()[0].rows[0].line.text();
    let err: Value = serde_json::from_str(&row).unwrap();
    assert_eq!(err["code"], -32001);
    assert_eq!(err["data"]["capability"], "observe");
    let st = status(&h);
    assert!(
        st.contains("refused call calls ×1 (capability not granted)"),
        "{st}"
    );
    assert!(st.contains("refused call store_put ×1"), "{st}");
    assert!(
        st.contains("failed store/put ×1: capability store was not granted"),
        "{st}"
    );
}

#[test]
fn a_claimed_request_answered_with_an_option_never_offered_is_handed_on() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = host(vec![faulty(
        "bad-option",
        &[Capability::InterceptPermissions],
        Limits::default(),
    )]);
    request_reaches_the_dialog_unapproved(&mut h, &mut rx);
    assert!(status(&h).contains("yolo"), "{}", status(&h));
}

#[test]
fn a_plugin_that_speaks_another_version_is_refused_at_start() {
    if !python() {
        return;
    }
    let (h, _rx) = host(vec![faulty(
        "version",
        &[Capability::Observe],
        Limits::default(),
    )]);
    assert!(
        matches!(state(&h, "version"), ExtState::Disabled(r)
        if r == "version mismatch: the plugin chose protocol version 2, this Trellis speaks 1"),
        "{}",
        status(&h)
    );
    healthy_intact(&h);
}

/// The compatibility rule: a plugin written for v1 without any SDK, frozen, keeps working.
#[test]
fn a_frozen_v1_plugin_keeps_working() {
    if !python() {
        return;
    }
    let sp = spec(
        "v1-frozen",
        &["python3", "./v1-frozen.py"],
        &[Capability::Observe, Capability::Ui],
        Limits::default(),
    );
    let (mut h, mut rx) = host(vec![(sp, vec![Capability::Observe, Capability::Ui])]);
    let mut s = S::new();
    let mut fx = Vec::new();
    for i in 0..3 {
        fx.extend(s.up(json!({"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":"x","kind":"read","status":"pending"})));
    }
    pump(&mut h, &mut rx, &fx, |_, h| {
        h.flush(Duration::from_secs(5));
        h.ui.sections().first().is_some_and(|s| s.count == Some(3))
    });
    assert_eq!(h.ui.sections()[0].rows[0].line.text(), "3 calls");
    assert_eq!(h.ui.status_line_items(40)[0].text(), "v1 3");
    assert_eq!(state(&h, "v1-frozen"), ExtState::Ready, "{}", status(&h));
}

/// Policy (`SCHED_*`) and niceness of each thread of process `pid`, from `/proc`.
fn priorities(pid: u32) -> Vec<(u32, i64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let stat = std::fs::read_to_string(e.unwrap().path().join("stat")).unwrap();
        // The fields after the command's closing parenthesis start at field 3 (state).
        let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        out.push((rest[41 - 3].parse().unwrap(), rest[19 - 3].parse().unwrap()));
    }
    out
}

/// A plugin starts at Trellis's own priority (a machine busy with a build on every core
/// starved it past its start timeout at the lowest one) and, once it has answered
/// `initialize`, every thread of it runs at the lowest (`SCHED_IDLE`, nice 19).
#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "per-thread scheduling policy is Linux's (macOS lowers the whole process)"
)]
fn a_plugin_starts_at_normal_priority_and_then_runs_at_the_lowest() {
    if !python() {
        return;
    }
    let sp = spec(
        "priority",
        &["python3", "./priority.py"],
        &[Capability::Observe],
        Limits::default(),
    );
    let (mut h, mut rx) = host(vec![(sp, vec![Capability::Observe])]);
    pump(&mut h, &mut rx, &[], |_, h| {
        status(h).contains("started with policy")
    });
    let st = status(&h);
    let own = priorities(std::process::id())[0].1;
    assert!(
        st.contains(&format!("started with policy 0 nice {own}")),
        "{st}"
    );
    let pid: u32 = st
        .split("process ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{st}"));
    let threads = priorities(pid);
    assert!(threads.len() >= 2, "{threads:?}");
    // SCHED_IDLE is policy 5.
    assert!(threads.iter().all(|&t| t == (5, 19)), "{threads:?}");
    h.shutdown(Duration::from_secs(5));
}

/// Runs `code` with the SDK importable; its exit status and stderr.
fn python_snippet(code: &str) -> (bool, String) {
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .env("PYTHONPATH", sdk())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_sdk_knows_every_event_type_and_no_other() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t, sys; sys.stderr.write(' '.join(sorted(t.EVENT_TYPES)))",
    );
    assert!(ok, "{err}");
    let mut ours: Vec<&str> = trellis_core::event::EVENT_KINDS.to_vec();
    ours.sort();
    assert_eq!(err, ours.join(" "));
}

#[test]
fn decorators_used_wrongly_fail_at_start_and_a_bare_on_takes_every_event() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on\ndef f(e, h): pass\nassert p._events['*'] == [f]",
    );
    assert!(ok, "a bare @plugin.on: {err}");
    for (code, wants) in [
        (
            "@p.on('tool_call_udpated')\ndef f(e, h): pass",
            "not an event type",
        ),
        ("@p.on(3)\ndef f(e, h): pass", "not an event type"),
        ("@p.on_start('x')\ndef f(h): pass", "decorates a function"),
        ("@p.on_idle()\ndef f(h): pass", "without parentheses"),
        ("@p.setting\ndef f(c, h): pass", "takes arguments"),
        ("@p.command\ndef f(a, h): pass", "takes arguments"),
    ] {
        let (ok, err) = python_snippet(&format!(
            "import trellis_plugin as t\np = t.Plugin()\n{code}"
        ));
        assert!(!ok, "{code}");
        assert!(err.contains(wants), "{code}: {err}");
    }
}

/// Every mistake in declaring a plugin is a `PluginDefinitionError` (never a bare
/// `TypeError`) on one line that starts at the author's line, names the one name that is
/// wrong and, for a misspelling, the name meant.
#[test]
fn declaration_mistakes_are_definition_errors_that_name_the_wrong_name() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on(['tool_call_updated', 'turn_ended'])\ndef f(e, h): pass\nassert p._events['turn_ended'] == [f]",
    );
    assert!(ok, "a list of event types: {err}");
    for (code, wants) in [
        (
            "@p.design\ndef f(c, fa, w, h): pass",
            "<string>:3: @plugin.design takes arguments: @plugin.design(id, label, kind=None, name=None)",
        ),
        (
            "@p.command\ndef f(a, h): pass",
            "<string>:3: @plugin.command takes arguments: @plugin.command(name, description)",
        ),
        (
            "@p.key\ndef f(h): pass",
            "<string>:3: @plugin.key takes arguments: @plugin.key(id, keys, label)",
        ),
        (
            "@p.section\ndef f(r, h): pass",
            "@plugin.section takes arguments",
        ),
        (
            "@p.transform\ndef f(c, x, h): pass",
            "@plugin.transform takes arguments",
        ),
        (
            "@p.on_permission()\ndef f(o, h): pass",
            "<string>:3: @plugin.on_permission takes no arguments: write @plugin.on_permission without parentheses",
        ),
        (
            "@p.design('x', label='X')\ndef f(c, fa, w, h): pass",
            "@plugin.design('x', ...) applies to nothing: give kind=",
        ),
        (
            "@p.design('x', lable='X', kind='edit')\ndef f(c, fa, w, h): pass",
            "@plugin.design has no argument 'lable'; did you mean 'label'?",
        ),
        (
            "@p.design('x')\ndef f(c, fa, w, h): pass",
            "@plugin.design needs label: @plugin.design(id, label, kind=None, name=None)",
        ),
        (
            "p.status_item('n')",
            "<string>:3: plugin.status_item needs label: plugin.status_item(id, label)",
        ),
        (
            "@p.on(['tool_call_updated', 'tool_call_udpated'])\ndef f(e, h): pass",
            "<string>:3: @plugin.on: 'tool_call_udpated' is not an event type; did you mean 'tool_call_updated'?",
        ),
        (
            "t.Plugin(subscriptions=['turn_endd'])",
            "<string>:3: Plugin(subscriptions=...): 'turn_endd' is not an event type; did you mean 'turn_ended'?",
        ),
    ] {
        let (ok, err) = python_snippet(&format!(
            "import trellis_plugin as t\np = t.Plugin()\n{code}"
        ));
        assert!(!ok, "{code}");
        let line = err
            .lines()
            .find(|l| l.contains("PluginDefinitionError: "))
            .unwrap_or_else(|| panic!("{code}: not a PluginDefinitionError: {err}"));
        assert!(line.contains(wants), "{code}: {line}");
    }
    // A name like none of them: the message lists them all, to the last.
    let (_, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on('nonsense')\ndef f(e, h): pass",
    );
    let line = err
        .lines()
        .find(|l| l.contains("PluginDefinitionError: "))
        .unwrap_or_else(|| panic!("{err}"));
    for kind in trellis_core::event::EVENT_KINDS {
        assert!(line.contains(&format!("'{kind}'")), "{kind}: {line}");
    }
}

/// `from trellis_plugin import *` gives every public name of the module, and nothing else.
#[test]
fn the_python_sdks_all_holds_every_public_name() {
    if !python() {
        return;
    }
    let code = r#"
import ast, sys
import trellis_plugin as t
tree = ast.parse(open(t.__file__).read())
public = set()
for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        public.add(node.name)
    elif isinstance(node, ast.Assign):
        public |= {x.id for x in node.targets if isinstance(x, ast.Name)}
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        public.add(node.target.id)
public = {n for n in public if not n.startswith("_")}
missing = sorted(public - set(t.__all__))
extra = sorted(set(t.__all__) - public)
assert not missing and not extra, f"__all__ lacks {missing}, has unknown {extra}"
ns = {}
exec("from trellis_plugin import *", ns)
assert {"data_dir", "text_of", "PluginDefinitionError", "EVENT_TYPES"} <= set(ns), sorted(ns)
"#;
    let (ok, err) = python_snippet(code);
    assert!(ok, "{err}");
}

/// Runs `code` as `plugin.mjs` (with `Plugin` and `EVENT_TYPES` imported from the
/// TypeScript SDK); its exit status and stderr.
fn node_snippet(code: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../sdk/typescript/trellis-plugin.mjs")
        .canonicalize()
        .unwrap();
    let file = dir.path().join("plugin.mjs");
    std::fs::write(
        &file,
        format!(
            "import {{ Plugin, EVENT_TYPES }} from {:?};\n{code}\n",
            format!("file://{}", sdk.display())
        ),
    )
    .unwrap();
    let out = std::process::Command::new("node")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The TypeScript SDK checks its registrations as the Python one checks its decorators:
/// a `PluginDefinitionError` at start, on one line that starts at the author's line and
/// names the one name that is wrong.
#[test]
fn typescript_registrations_used_wrongly_are_definition_errors() {
    if !node() {
        return;
    }
    let (ok, err) = node_snippet(
        "const p = new Plugin();\np.on([\"tool_call_updated\", \"turn_ended\"], () => {});\np.on(null, () => {});\nprocess.stderr.write([...EVENT_TYPES].sort().join(\" \"));",
    );
    assert!(ok, "{err}");
    let mut ours: Vec<&str> = trellis_core::event::EVENT_KINDS.to_vec();
    ours.sort();
    assert_eq!(err, ours.join(" "), "EVENT_TYPES is Trellis's event types");
    for (code, wants) in [
        (
            "p.on(\"tool_call_udpated\", () => {});",
            "plugin.mjs:3: plugin.on: \"tool_call_udpated\" is not an event type; did you mean \"tool_call_updated\"?",
        ),
        (
            "p.on([\"tool_call_updated\", \"tool_call_udpated\"], () => {});",
            "plugin.mjs:3: plugin.on: \"tool_call_udpated\" is not an event type; did you mean \"tool_call_updated\"?",
        ),
        (
            "p.on(\"tool_call_updated\");",
            "plugin.mjs:3: plugin.on(types, fn): fn is undefined, not a function",
        ),
        (
            "new Plugin({ subscriptions: [\"turn_endd\"] });",
            "plugin.mjs:3: new Plugin({ subscriptions }): \"turn_endd\" is not an event type; did you mean \"turn_ended\"?",
        ),
        (
            "new Plugin({ subscription: [] });",
            "plugin.mjs:3: new Plugin(options): no option \"subscription\"; did you mean \"subscriptions\"?",
        ),
        (
            "p.command(\"hello\", async (args, host) => {});",
            "plugin.mjs:3: plugin.command(name, description, fn): description is a function, not a string",
        ),
        (
            "p.design(\"x\", \"X\", { knd: \"edit\" }, () => ({ call: [] }));",
            "plugin.mjs:3: plugin.design(id, label, appliesTo, fn): appliesTo has no field \"knd\"; did you mean \"kind\"?",
        ),
        (
            "p.key(\"k\", \"T\", () => {});",
            "plugin.mjs:3: plugin.key(id, keys, label, fn): label is a function, not a string",
        ),
        (
            "p.onPermission();",
            "plugin.mjs:3: plugin.onPermission(fn): fn is undefined, not a function",
        ),
    ] {
        let (ok, err) = node_snippet(&format!("const p = new Plugin();\n{code}"));
        assert!(!ok, "{code}");
        let line = err
            .lines()
            .find(|l| l.starts_with("PluginDefinitionError: "))
            .unwrap_or_else(|| panic!("{code}: not a PluginDefinitionError: {err}"));
        assert!(line.contains(wants), "{code}: {line}");
    }
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

#[test]
fn an_exception_in_an_event_handler_is_a_counted_failure_with_its_place() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("raises");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..3);
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("KeyError") && status(h).contains("×3")
    });
    let st = status(&h);
    assert!(
        st.contains(
            "failed event tool_call_created ×3: KeyError: 'no such key' (raises.py:9 in on_call)"
        ),
        "{st}"
    );
    assert!(
        !matches!(state(&h, "raises"), ExtState::Ready),
        "a failing plugin is not ready: {st}"
    );
    healthy_intact(&h);
}

/// A host function that refuses (`notify` without `ui`) fails the handler that called it:
/// the failure names the author's line and function, never the SDK's, and the traceback's
/// last lines on stderr (what `/status` keeps) are the author's too.
#[test]
fn a_host_error_is_reported_at_the_authors_line_not_the_sdks() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("notifies");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..2);
    // Both failures counted (the refused calls' count can reach ×2 first).
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("failed event tool_call_created ×2")
    });
    let st = status(&h);
    assert!(
        st.contains("failed event tool_call_created ×2: HostError: ")
            && st.contains("(notifies.py:9 in on_call)"),
        "{st}"
    );
    assert!(!st.contains("trellis_plugin.py"), "{st}");
    assert!(st.contains("│     host.notify(\"a call\")"), "{st}");
}

fn node() -> bool {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "node is missing: run the suite with scripts/test, which installs it"
    );
    ok
}

/// The same in the TypeScript SDK: the refusal arrives on its own, later, yet the failure
/// names the author's call of `host.notify`.
#[test]
fn a_host_error_in_a_typescript_plugin_is_reported_at_the_authors_line() {
    if !node() {
        return;
    }
    let caps = [Capability::Observe];
    let (mut h, mut rx) = host(vec![(
        spec(
            "notifies-ts",
            &["node", "./notifies.mjs"],
            &caps,
            Limits::default(),
        ),
        caps.to_vec(),
    )]);
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..2);
    // Both failures counted (the refused calls' count can reach ×2 first).
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("failed event tool_call_created ×2")
    });
    let st = status(&h);
    assert!(
        st.contains("failed event tool_call_created ×2: HostError: ")
            && st.contains("(notifies.mjs:6 in onCall)"),
        "{st}"
    );
}

#[test]
fn print_goes_to_the_plugins_log_and_the_connection_stays() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("prints");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..3);
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("starting up")
    });
    // Its stderr lines in /status are refreshed as it is handed more.
    let mut seen = String::new();
    for i in 3..40 {
        let more = calls_created(&mut s, i..i + 1);
        pump(&mut h, &mut rx, &more, |_, _| true);
        std::thread::sleep(Duration::from_millis(50));
        seen = status(&h);
        if seen.contains("saw c0") {
            break;
        }
    }
    let st = seen;
    assert!(
        st.contains("│ starting up") && st.contains("│ saw c0"),
        "{st}"
    );
    assert!(matches!(state(&h, "prints"), ExtState::Ready), "{st}");
    assert!(!st.contains("disconnected"), "{st}");
}

#[test]
fn every_public_name_of_the_python_sdk_is_in_the_docs() {
    if !python() {
        return;
    }
    let code = r#"
import inspect, sys
import trellis_plugin as t
names = set()
for cls in (t.Plugin, t.Host):
    names |= {n for n, _ in inspect.getmembers(cls) if not n.startswith("_")}
names |= {n for n in vars(t.Plugin()) if not n.startswith("_")}
names |= {n for n in dir(t) if not n.startswith("_")
          and (getattr(getattr(t, n), "__module__", None) == "trellis_plugin" or n.isupper())}
sys.stderr.write(" ".join(sorted(names)))
"#;
    let (ok, names) = python_snippet(code);
    assert!(ok, "{names}");
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/plugins.md"),
    )
    .unwrap();
    let word = |n: &str| {
        doc.match_indices(n).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + n.len()..].chars().next();
            let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !part(before) && !part(after)
        })
    };
    let missing: Vec<&str> = names.split(' ').filter(|n| !word(n)).collect();
    assert!(missing.is_empty(), "undocumented SDK names: {missing:?}");
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
