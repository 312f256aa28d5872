//! Plugins that break the protocol one way each (a crash, a hang, garbage, a flood, a
//! plugin that stops reading, another protocol version), and the priority a plugin runs
//! at: every fault costs only the plugin's own contributions and is explained in
//! `/status`.

use super::*;

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
