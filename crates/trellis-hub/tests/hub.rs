//! A hub's socket end to end: requests answered by the hub's loop, bounded lines, a
//! client that stops reading, stale sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use trellis_hub::client::{Client, list_all};
use trellis_hub::place::{HubFiles, hubs};
use trellis_hub::serve::{Reply, serve};
use trellis_hub::wire::{Body, HubInfo, Op, Response, SessionInfo};

fn session(key: u32) -> SessionInfo {
    SessionInfo {
        key,
        acp_id: Some(format!("acp-{key}")),
        agent: "demo".into(),
        state: "permission".into(),
        rank: 0,
        title: "t".into(),
        cwd: "/w".into(),
        source: "/w".into(),
        branch: None,
        for_s: 1,
        pending: Vec::new(),
        ..Default::default()
    }
}

#[test]
fn requests_reach_the_hub_loop_and_bad_clients_are_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut served = rt.block_on(async { serve(&dir, "h1") }).unwrap();
    // A second hub of the same name is refused.
    assert!(rt.block_on(async { serve(&dir, "h1") }).is_err());
    // The hub's loop: lists one session, records who decided.
    let handler = rt.spawn(async move {
        let mut seen = Vec::new();
        while let Some(call) = served.calls.recv().await {
            let id = call.request.id;
            let body = match call.request.op {
                // Connections that ended (the flood's, the silent one's).
                Op::Hangup => continue,
                Op::List => Body::Sessions {
                    hub: HubInfo {
                        name: "h1".into(),
                        pid: std::process::id(),
                        ..Default::default()
                    },
                    sessions: vec![session(1)],
                },
                op => {
                    seen.push((op, call.request.client.clone(), call.pid));
                    Body::Done { said: "ok".into() }
                }
            };
            let _ = call.reply.send(Reply::Once(Response { id, body }));
            if seen.len() == 2 {
                return (seen, served);
            }
        }
        panic!("the socket closed")
    });
    let dir2 = dir.clone();
    let listed = std::thread::spawn(move || list_all(&dir2, "test"))
        .join()
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.as_ref().unwrap()[0], session(1));
    // A client that writes an endless line is dropped; one that never reads its answers
    // does not hold the others up.
    let files = HubFiles::new(&dir, "h1");
    let mut flood = UnixStream::connect(&files.sock).unwrap();
    let _ = flood.write_all(&vec![b'x'; 200_000]);
    let mut buf = [0u8; 16];
    flood
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    assert!(matches!(flood.read(&mut buf), Ok(0) | Err(_)), "dropped");
    let mut silent = UnixStream::connect(&files.sock).unwrap();
    for _ in 0..50 {
        let _ = silent.write_all(b"{\"id\":9,\"op\":\"list\"}\n");
    }
    let dir3 = dir.clone();
    std::thread::spawn(move || {
        let mut c = Client::connect(&HubFiles::new(&dir3, "h1"), "approver").unwrap();
        for s in [1, 2] {
            let b = c
                .call(Op::Cancel { session: s }, Some(format!("op-{s}")))
                .unwrap();
            assert_eq!(b, Body::Done { said: "ok".into() });
        }
    })
    .join()
    .unwrap();
    let (seen, served) = rt.block_on(handler).unwrap();
    assert_eq!(seen[0].1, "approver");
    assert_eq!(seen[0].2, Some(std::process::id() as i32), "the peer's pid");
    // The hub goes: its files go with it, and nothing lists it.
    drop(served);
    drop(rt);
    assert!(hubs(&dir).is_empty());
}

#[test]
fn a_dead_hubs_socket_is_cleared_and_its_name_served_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    // What a killed hub leaves: a socket file and an unheld lock.
    let files = HubFiles::new(&dir, "old");
    let l = std::os::unix::net::UnixListener::bind(&files.sock).unwrap();
    drop(l);
    std::fs::write(&files.lock, "").unwrap();
    assert_eq!(hubs(&dir).len(), 1);
    assert!(list_all(&dir, "t").is_empty(), "a dead hub lists nothing");
    assert!(!files.sock.exists(), "and its socket is gone");
    // Its name can be served again.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _ = std::os::unix::net::UnixListener::bind(&files.sock).unwrap();
    let served = rt.block_on(async { serve(&dir, "old") }).unwrap();
    assert!(served.files.sock.exists());
}

/// A followed session: the follower that reads gets the newest progress (skipping what
/// it was too slow for) and the end; one that stops reading is dropped, and publishing
/// never waited for either.
#[test]
fn followers_get_the_latest_progress_and_a_stalled_one_is_dropped() {
    use trellis_hub::client::Following;
    use trellis_hub::watch::Watched;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut served = rt.block_on(async { serve(&dir, "f") }).unwrap();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let (end_tx, end_rx) = tokio::sync::oneshot::channel::<()>();
    let hub = rt.spawn(async move {
        let watched = Watched::default();
        // Two followers: one reads, one never does.
        for _ in 0..2 {
            let call = served.calls.recv().await.unwrap();
            let id = call.request.id;
            let Op::Watch { observe, .. } = call.request.op else {
                panic!("{:?}", call.request.op)
            };
            let follow = watched
                .attach(&call.request.client, observe, false)
                .unwrap();
            let body = Body::Watching {
                log: "/nowhere".into(),
                agent: "demo".into(),
                controller: follow.lease.is_some(),
                you: call.request.client.clone(),
                attachment: follow.attachment.id.clone(),
            };
            let _ = call
                .reply
                .send(Reply::Follow(Response { id, body }, follow));
        }
        go_rx.await.unwrap();
        // Far more progress than a socket buffer holds, at the pace of a busy session.
        for n in 1..=20_000u64 {
            watched.publish(n, "working", false);
            tokio::task::yield_now().await;
        }
        watched.publish(20_000, "done", false);
        // The reading follower is told the end once the stalled one was dropped.
        end_rx.await.unwrap();
        watched.publish(20_000, "done", true);
        drop(watched);
        served
    });
    let files = HubFiles::new(&dir, "f");
    let reader = {
        let files = files.clone();
        std::thread::spawn(move || {
            let mut f = Following::start(&files, "reader", 1, false, false)
                .unwrap()
                .unwrap();
            assert!(f.controller);
            let mut seen = Vec::new();
            while let Some(p) = f.progress().unwrap() {
                seen.push(p);
            }
            seen
        })
    };
    // Wait for the reader to be attached before the second follower comes.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut stalled = UnixStream::connect(&files.sock).unwrap();
    stalled
        .write_all(b"{\"id\":1,\"op\":\"watch\",\"session\":1,\"observe\":true}\n")
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    go_tx.send(()).unwrap();
    // It reads nothing while the session goes on, longer than a write may wait; then
    // its connection ends (after what the socket buffered) without the session's end:
    // it was dropped.
    std::thread::sleep(std::time::Duration::from_secs(7));
    stalled
        .set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    let mut got = Vec::new();
    stalled.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(
        !text.contains("\"ended\":true"),
        "dropped before the end ({} bytes read)",
        got.len()
    );
    end_tx.send(()).unwrap();
    let seen = reader.join().unwrap();
    let last = seen.last().unwrap();
    assert!(
        last.ended && last.state == "done" && last.log_len == 20_000,
        "{last:?}"
    );
    assert!(seen.windows(2).all(|w| w[0].log_len <= w[1].log_len));
    let served = rt.block_on(hub).unwrap();
    drop(served);
}

/// Another user never gets an answer, even through a socket left open to everyone: the
/// peer's uid is checked on every connection. Run as root (CI), the client is switched to
/// `nobody` with `setpriv`; elsewhere the test says it cannot run.
#[test]
fn another_users_connection_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    if trellis_os::uid() != 0 {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test as root: it switches the client to another user"
        );
        eprintln!("NOT RUN: another_users_connection_is_refused needs root to switch users");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut served = rt.block_on(async { serve(&dir, "open") }).unwrap();
    // As if someone had opened the socket to everyone.
    std::fs::set_permissions(&served.files.sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let answered = rt.spawn(async move {
        let call = served.calls.recv().await;
        (call.map(|c| c.request.client), served)
    });
    let script = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.settimeout(10)\ns.connect({:?})\ntry:\n  s.sendall(b'{{\"id\":1,\"op\":\"list\",\"client\":\"nobody\"}}\\n')\n  print(s.recv(4096).decode() or 'CLOSED')\nexcept (ConnectionResetError, BrokenPipeError):\n  print('CLOSED')",
        HubFiles::new(&dir, "open").sock.to_string_lossy()
    );
    // The system's python, which any user may run (not a user's shim).
    let out = std::process::Command::new("setpriv")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["python3", "-c", &script])
        .output()
        .unwrap_or_else(|e| panic!("setpriv and python3 are needed (.ci/run installs them): {e}"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said.trim(),
        "CLOSED",
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The hub's loop never saw the request; this user's own client is answered.
    let mine = std::thread::spawn({
        let dir = dir.clone();
        move || {
            Client::connect(&HubFiles::new(&dir, "open"), "me").map(|mut c| c.call(Op::List, None))
        }
    });
    let (first, served) = rt.block_on(answered).unwrap();
    assert_eq!(
        first.as_deref(),
        Some("me"),
        "the other user's request reached the hub"
    );
    drop(served);
    drop(mine);
}

/// Every example of `docs/attach.md`'s wire block is a request or an answer as the code
/// reads it, with nothing in it the code would drop.
#[test]
fn the_docs_wire_examples_are_what_the_code_reads() {
    use trellis_hub::wire::Request;
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/attach.md"),
    )
    .unwrap();
    let block = doc
        .split("```json wire\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a wire block");
    let mut n = 0;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let original: serde_json::Value = serde_json::from_str(line).unwrap();
        let again = if original.get("op").is_some() {
            serde_json::to_value(serde_json::from_str::<Request>(line).unwrap()).unwrap()
        } else {
            serde_json::to_value(serde_json::from_str::<Response>(line).unwrap()).unwrap()
        };
        for (k, v) in original.as_object().unwrap() {
            assert_eq!(again.get(k), Some(v), "{k} of {line}");
        }
        n += 1;
    }
    assert!(n >= 15, "{n} examples");
}

/// A link planted where a hub's socket goes is replaced, never followed: what it pointed
/// to is untouched.
#[test]
fn a_link_planted_at_the_socket_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let target = tmp.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let files = HubFiles::new(&dir, "h");
    std::os::unix::fs::symlink(&target, &files.sock).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let served = rt.block_on(async { serve(&dir, "h") }).unwrap();
    let m = std::fs::symlink_metadata(&files.sock).unwrap();
    assert!(!m.file_type().is_symlink(), "a socket of its own now");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    drop(served);
    drop(rt);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

/// The client speaks only to a socket of its user's at the hub's path: a link planted
/// there (to a socket that would answer with sessions of its own) or a file that is not
/// a socket is refused, said for that hub, and never connected to.
#[test]
fn a_client_speaks_only_to_a_socket_of_its_own_user() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let elsewhere = tmp.path().join("fake.sock");
    let fake = std::os::unix::net::UnixListener::bind(&elsewhere).unwrap();
    fake.set_nonblocking(true).unwrap();
    // Both names are held, as a live hub's are: nothing clears them as stale.
    let linked = HubFiles::new(&dir, "linked");
    let _held = trellis_hub::place::try_hold(&linked).unwrap().unwrap();
    std::os::unix::fs::symlink(&elsewhere, &linked.sock).unwrap();
    let plain = HubFiles::new(&dir, "plain");
    let _held2 = trellis_hub::place::try_hold(&plain).unwrap().unwrap();
    std::fs::write(&plain.sock, "").unwrap();
    let listed = list_all(&dir, "t");
    let said: Vec<(String, String)> = listed
        .into_iter()
        .map(|(h, r)| (h, r.expect_err("refused")))
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].1.contains("is a link"), "{said:?}");
    assert!(said[1].1.contains("is not a socket"), "{said:?}");
    assert!(
        fake.accept().is_err(),
        "the planted socket was never connected to"
    );
}

/// Idle connections to the hub's socket never keep a client out: a newcomer takes the
/// place of the longest idle one, at once.
#[test]
fn idle_connections_make_room_for_a_newcomer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut served = rt.block_on(async { serve(&dir, "idle") }).unwrap();
    rt.spawn(async move {
        while let Some(call) = served.calls.recv().await {
            let id = call.request.id;
            let body = Body::Sessions {
                hub: HubInfo {
                    name: "idle".into(),
                    ..Default::default()
                },
                sessions: vec![session(1)],
            };
            let _ = call.reply.send(Reply::Once(Response { id, body }));
        }
        drop(served);
    });
    let files = HubFiles::new(&dir, "idle");
    // More idle connections than the hub holds, and one more holding half a line.
    let mut idle: Vec<UnixStream> = (0..40)
        .map(|_| UnixStream::connect(&files.sock).unwrap())
        .collect();
    idle[0].write_all(b"{\"id\":1,").unwrap();
    // (Within the client's own wait: before, it waited for an idle one to leave.)
    let listed = list_all(&dir, "newcomer");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.as_ref().unwrap()[0], session(1), "{listed:?}");
    // The oldest idle connections were the ones let go.
    idle[0]
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(matches!(idle[0].read(&mut buf), Ok(0) | Err(_)));
    drop(rt);
}
