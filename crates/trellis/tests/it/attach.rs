//! A session that outlives its terminal (issue 27): `trellis run --detach` starts it in a
//! hub of its own, `trellis attach` shows it as if it had been open all along and answers
//! it, a second controller is refused, leaving the attachment leaves the session running,
//! and stopping the hub ends its sessions on the record with no process left.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::hubkit::{Dirs, Hub, alive, children, text, until};
use crate::tui::Tmux;

#[test]
fn a_detached_session_is_attached_answered_left_running_and_ended_with_its_hub() {
    let d = Dirs::new();
    assert_eq!(d.detach("demo", "fix the TODO"), "default:1");
    // The hub said where it serves, with its pid, in a file of its own.
    let hub_log = d.runtime.join("trellis/default.log");
    let said = std::fs::read_to_string(&hub_log).unwrap();
    let pid: u32 = said
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    let hub = Hub(pid);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&hub_log).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the hub's messages are this user's alone");
    }
    // The command that started it is gone; the session goes on and asks.
    d.until_asking();
    let rows = d.ls();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["hub"].as_str(), rows[0]["key"].as_u64()),
        (Some("default"), Some(1))
    );

    let env = format!("XDG_RUNTIME_DIR={}", d.runtime.display());
    let Some(t) = Tmux::start_env(&["LANG=C.UTF-8", &env], &["attach"], 120, 40) else {
        return;
    };
    // The history as if it had been open here, the pending request in its dialog.
    let s = t.wait_for("[y] Allow");
    assert!(s.contains("fix the TODO"), "{s}");
    // Its keys are the ones that work here: "always" is the hub's, said up front.
    let s = t.wait_for("answer once here");
    assert!(!s.contains("[a] "), "{s}");
    t.wait_for("attached to default:1");
    // One controller at a time: the second is told who has it.
    let second = d.trellis(&["attach", "default:1"]);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    assert!(
        text(&second).contains("trellis attach (pid") && text(&second).contains("--observe"),
        "{}",
        text(&second)
    );
    // "Always" rules are the hub's: only a one-time answer goes from here.
    t.send(&["a"]);
    t.wait_for("rules are the hub's own");
    t.send(&["y"]);
    t.wait_for("Done: the TODO is fixed");
    let log = d.log();
    let deciders: Vec<_> = log
        .lines()
        .filter(|l| l.contains("permission_decided") && l.contains("\"attached\""))
        .collect();
    assert_eq!(deciders.len(), 1, "{log}");
    assert!(
        deciders[0].contains("trellis attach (pid"),
        "{}",
        deciders[0]
    );
    assert!(t.screen().contains("allowed once by trellis attach"));
    // A prompt typed here runs in the hub.
    t.send(&["and the README", "Enter"]);
    until("the prompt to reach the agent", || {
        d.log()
            .lines()
            .any(|l| l.contains("session/prompt") && l.contains("and the README"))
    });
    // That turn asks again; answered here too.
    t.wait_for("[y] Allow");
    t.send(&["y"]);
    until("the second answer", || {
        d.log()
            .lines()
            .filter(|l| l.contains("permission_decided") && l.contains("\"attached\""))
            .count()
            == 2
    });
    // A prompt from elsewhere with terminal controls in it reaches neither the agent nor
    // the log with them.
    let o = d.trellis(&[
        "send",
        "default:1",
        "\u{1b}[2J\u{1b}]0;pwned\u{7}then the docs\u{9b}31m",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    until("the sent prompt to reach the agent", || {
        d.log()
            .lines()
            .any(|l| l.contains("session/prompt") && l.contains("then the docs"))
    });
    let sent = d
        .log()
        .lines()
        .find(|l| l.contains("session/prompt") && l.contains("then the docs"))
        .unwrap()
        .to_string();
    assert!(
        !sent.contains("\\u001b") && !sent.contains("\\u0007") && !sent.contains('\u{9b}'),
        "{sent}"
    );
    assert!(sent.contains("[2J]0;pwnedthen the docs31m"), "{sent}");
    // Leaving the attachment (its terminal closed) leaves the session running.
    drop(t);
    std::thread::sleep(Duration::from_millis(300));
    let rows = d.ls();
    assert_eq!(rows.len(), 1, "the session outlived its attachment");
    assert!(alive(pid));

    // Stopping the hub ends its sessions the way quitting the UI does.
    let kids = children(pid);
    assert!(!kids.is_empty(), "the hub runs the agent");
    drop(hub);
    assert!(!alive(pid));
    for k in kids {
        assert!(!alive(k), "process {k} outlived the hub");
    }
    let log = d.log();
    assert!(
        log.contains(r#""type":"session_ended","reason":"the hub stopped (SIGTERM)""#),
        "{log}"
    );
    assert!(!d.runtime.join("trellis/default.sock").exists());
    assert!(d.ls().is_empty());
}

#[test]
fn detach_refuses_what_only_a_run_that_stays_can_do() {
    let d = Dirs::new();
    let o = d.trellis(&[
        "run",
        "--detach",
        "--prompt",
        "x",
        "--timeout",
        "5s",
        "--summary",
        "s.json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--timeout, --summary belong to a run that stays"),
        "{}",
        text(&o)
    );
    // Options with a default are refused when given too, never dropped in silence.
    let o = d.trellis(&[
        "run", "--detach", "--prompt", "x", "--format", "jsonl", "--on-ask", "fail", "--grace",
        "3s", "--load", "abc",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--format, --load, --grace, --on-ask belong to a run that stays"),
        "{}",
        text(&o)
    );
    // What the hub decides is the hub's: said how to give it there.
    let o = d.trellis(&["run", "--detach", "--prompt", "x", "--allow-drive"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--allow-drive not taken (start the hub with them"));
    // An agent that cannot start is said before any hub starts for it.
    let o = d.trellis(&["run", "--detach", "--prompt", "x", "--agent", "nosuch"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a preset or an installed agent"));
    // Nothing was started.
    assert!(!Path::new(&d.runtime.join("trellis/default.sock")).exists());
}

/// The demo started in a hub from a repository it did not make plays in a scratch
/// workspace of its own, as it does without --detach, and the session is listed where
/// it was asked for.
#[test]
fn a_detached_demo_plays_in_its_own_workspace_and_is_listed_where_asked() {
    let d = Dirs::new();
    let repo = d.work.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "a"]);
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "run",
            "--detach",
            "--agent",
            "demo",
            "--prompt",
            "fix the TODO",
        ])
        .current_dir(&repo)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let hub = Hub(d.hub_pid());
    d.until_asking();
    let row = &d.ls()[0];
    assert_ne!(row["cwd"].as_str(), repo.to_str(), "{row}");
    assert!(
        !repo.join("demo-workspace").exists(),
        "nothing written into the repository"
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sessions", "list", "--json"])
        .current_dir(&repo)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(rows.len(), 1, "listed where it was asked for: {rows:?}");
    assert_eq!(rows[0]["launched_in"].as_str(), repo.to_str());
    drop(hub);
}

/// A hub killed outright (SIGKILL: nothing of Trellis runs to stop anything) leaves no
/// agent behind — the parent-death signal stops it — and its socket is cleared by the
/// next command.
#[test]
fn a_hub_killed_outright_leaves_no_agent_and_its_socket_is_cleared() {
    let d = Dirs::new();
    d.detach("demo", "fix the TODO");
    let pid = d.hub_pid();
    let hub = Hub(pid);
    d.until_asking();
    let kids = children(pid);
    assert!(!kids.is_empty(), "the hub runs the agent");
    let killed = Command::new("kill").args(["-9", &pid.to_string()]).status();
    assert!(killed.unwrap().success());
    until("the hub to die", || !alive(pid));
    until("its agent to die", || kids.iter().all(|k| !alive(*k)));
    assert!(d.ls().is_empty(), "a dead hub lists nothing");
    assert!(
        !d.runtime.join("trellis/default.sock").exists(),
        "and its socket is gone"
    );
    // The session's log holds everything written before the kill.
    assert!(d.log().contains("session/request_permission"));
    drop(hub);
}

/// Two places answer the same 100 requests at the same moment, while one claimant holds
/// five of them for a short lease and another claimed five and died: every request is
/// answered exactly once (the agent counts), the losers are told, the held ones wait for
/// their lease to end, and the dead claimant's are free at once.
#[test]
fn racing_answers_and_claims_answer_each_request_exactly_once() {
    use trellis_hub::client::Client;
    use trellis_hub::wire::{Body, Op};
    let d = Dirs::new();
    let storm = format!(
        "{} agent hostile permission-storm",
        env!("CARGO_BIN_EXE_trellis")
    );
    d.detach(&storm, "go");
    let pid = d.hub_pid();
    let _hub = Hub(pid);
    until("100 requests to wait", || {
        d.ls()
            .first()
            .is_some_and(|r| r["pending"].as_array().is_some_and(|p| p.len() == 100))
    });
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let pending = d.ls()[0]["pending"].as_array().unwrap().clone();
    let id_of = |subject: &str| {
        pending
            .iter()
            .find(|p| p["subject"] == subject)
            .and_then(|p| p["request_id"].as_str())
            .unwrap()
            .to_string()
    };
    let claim = |c: &mut Client, n: usize, lease: u64| match c
        .call(
            Op::Claim {
                session: 1,
                request_id: id_of(&format!("touch s{n}")),
                lease_s: Some(lease),
            },
            None,
        )
        .unwrap()
    {
        Body::Claimed { .. } => {}
        other => panic!("{other:?}"),
    };
    let mut holder = Client::connect(&files, "holder").unwrap();
    for n in 0..5 {
        claim(&mut holder, n, 5);
    }
    let mut dead = Client::connect(&files, "dead").unwrap();
    for n in 5..10 {
        claim(&mut dead, n, 300);
    }
    // A second claimant is told who holds it.
    let mut other = Client::connect(&files, "other").unwrap();
    match other
        .call(
            Op::Claim {
                session: 1,
                request_id: id_of("touch s0"),
                lease_s: None,
            },
            None,
        )
        .unwrap()
    {
        Body::Error { code, message } => {
            assert_eq!(code, "claimed");
            assert!(message.starts_with("holder"), "{message}");
        }
        b => panic!("{b:?}"),
    }
    drop(dead);
    let racer = |name: &'static str| {
        let files = files.clone();
        std::thread::spawn(move || {
            let mut c = Client::connect(&files, name).unwrap();
            let (mut won, mut told, mut held) = (0, 0, 0);
            let start = Instant::now();
            // Each attempt is an operation of its own (a retry of one would get its
            // first outcome back).
            for round in 0.. {
                let Body::Sessions { sessions, .. } = c.call(Op::List, None).unwrap() else {
                    panic!("a list")
                };
                let pending = sessions[0].pending.clone();
                if pending.is_empty() {
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(30), "{pending:?}");
                for p in pending {
                    let op = Op::Decide {
                        session: 1,
                        request_id: p.request_id.clone(),
                        option_id: "yes".into(),
                        claim: None,
                        always: None,
                        reason: None,
                    };
                    match c
                        .call(op, Some(format!("{name}-{round}-{}", p.request_id)))
                        .unwrap()
                    {
                        Body::Done { .. } => won += 1,
                        Body::Error { code, .. } if code == "answered" => told += 1,
                        Body::Error { code, .. } if code == "claimed" => held += 1,
                        Body::Error { code, message } => panic!("{code}: {message}"),
                        b => panic!("{b:?}"),
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (won, told, held)
        })
    };
    let (a, b) = (racer("racer-a"), racer("racer-b"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    drop(holder);
    assert_eq!(a.0 + b.0, 100, "{a:?} {b:?}");
    assert!(
        a.2 + b.2 > 0,
        "the held ones were refused while held: {a:?} {b:?}"
    );
    let log = d.storm_answered_once();
    let decided = log
        .lines()
        .filter(|l| l.contains("permission_decided") && l.contains("\"attached\""))
        .count();
    assert_eq!(decided, 100);
}

/// `trellis --detachable`: the session runs in a hub from the start, so leaving the UI
/// leaves it running, and `attach` comes back to it where it was.
#[test]
fn a_detachable_session_goes_on_after_its_terminal_quits() {
    let d = Dirs::new();
    let env = [
        "LANG=C.UTF-8".to_string(),
        format!("XDG_RUNTIME_DIR={}", d.runtime.display()),
        format!("XDG_DATA_HOME={}", d.data.display()),
    ];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let work = d.work.to_str().unwrap();
    let Some(t) = Tmux::start_env(
        &env,
        &["--detachable", "--agent", "demo", "--cwd", work],
        120,
        40,
    ) else {
        return;
    };
    t.wait_for("attached to default:1");
    let pid = d.hub_pid();
    let _hub = Hub(pid);
    t.send(&["fix the TODO", "Enter"]);
    t.wait_for("[y] Allow");
    // Quitting here leaves the session (and its request) in the hub.
    t.send(&["C-c", "C-c"]);
    t.wait_for("it goes on in its hub");
    drop(t);
    assert!(d.ls().first().is_some_and(|r| r["state"] == "permission"));
    let env = format!("XDG_RUNTIME_DIR={}", d.runtime.display());
    let Some(t) = Tmux::start_env(&["LANG=C.UTF-8", &env], &["attach", "default:1"], 120, 40)
    else {
        return;
    };
    t.wait_for("[y] Allow");
    t.send(&["y"]);
    t.wait_for("Done: the TODO is fixed");
}

/// The hub acts on an attachment's requests only while it controls the session: an
/// observer's answer is refused there, whatever its client does; the controller's goes.
#[test]
fn an_observers_answer_is_refused_by_the_hub() {
    use trellis_hub::client::{Client, Following};
    use trellis_hub::wire::{Body, Op};
    let d = Dirs::new();
    d.detach("demo", "fix the TODO");
    let _hub = Hub(d.hub_pid());
    d.until_asking();
    let request_id = d.ls()[0]["pending"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let files = trellis_hub::place::HubFiles::new(&d.runtime.join("trellis"), "default");
    let decide = |attachment: &str| {
        let mut c = Client::connect(&files, "tester").unwrap();
        c.attachment = Some(attachment.to_string());
        c.call(
            Op::Decide {
                session: 1,
                request_id: request_id.clone(),
                option_id: "allow".into(),
                claim: None,
                always: None,
                reason: None,
            },
            None,
        )
        .unwrap()
    };
    let observer = Following::start(&files, "watcher", 1, true, false)
        .unwrap()
        .unwrap();
    match decide(&observer.attachment) {
        Body::Error { code, message } => {
            assert_eq!(code, "refused");
            assert!(message.starts_with("observing"), "{message}");
        }
        b => panic!("{b:?}"),
    }
    let controller = Following::start(&files, "driver", 1, false, false)
        .unwrap()
        .unwrap();
    assert!(controller.controller);
    assert!(matches!(decide(&controller.attachment), Body::Done { .. }));
    // An attachment that ended acts no more.
    let gone = controller.attachment.clone();
    drop(controller);
    std::thread::sleep(Duration::from_millis(200));
    match decide(&gone) {
        Body::Error { message, .. } => assert!(message.contains("ended"), "{message}"),
        b => panic!("{b:?}"),
    }
    drop(observer);
}

/// Two `run --detach` at the same moment with no hub running: one hub starts, and both
/// sessions run in it.
#[test]
fn two_detached_runs_at_once_share_one_new_hub() {
    let d = Dirs::new();
    let work = d.work.to_str().unwrap().to_string();
    let start = |prompt: &'static str| {
        let (runtime, data, config, work) = (
            d.runtime.clone(),
            d.data.clone(),
            d.config.clone(),
            work.clone(),
        );
        std::thread::spawn(move || {
            Command::new(env!("CARGO_BIN_EXE_trellis"))
                .args([
                    "run", "--detach", "--agent", "demo", "--cwd", &work, "--prompt", prompt,
                ])
                .env("XDG_RUNTIME_DIR", runtime)
                .env("XDG_DATA_HOME", data)
                .env("XDG_CONFIG_HOME", config)
                .output()
                .unwrap()
        })
    };
    let (a, b) = (start("first"), start("second"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{}\n{}",
        text(&a),
        text(&b)
    );
    let _hub = Hub(d.hub_pid());
    let mut keys = vec![
        String::from_utf8_lossy(&a.stdout).trim().to_string(),
        String::from_utf8_lossy(&b.stdout).trim().to_string(),
    ];
    keys.sort();
    assert_eq!(keys, ["default:1", "default:2"]);
    until("both sessions listed", || d.ls().len() == 2);
    assert!(d.ls().iter().all(|r| r["hub"] == "default"));
}
