//! `[notify] command`: run for each state change the deck announces.

use std::time::{Duration, Instant};

/// Runs `[notify] command` for an announcement, with the session id, state and agent in
/// its environment (never the prompt or the output). It runs in a process group of its
/// own, dies with Trellis, and is stopped after 10 s.
pub fn run_hook(cmd: &str, a: &crate::Announcement) {
    /// Between SIGTERM and SIGKILL, for the command past its time or what it left.
    const GRACE: Duration = Duration::from_secs(1);
    use std::os::unix::process::CommandExt;
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .env("TRELLIS_SESSION", a.session_id.as_deref().unwrap_or(""))
        .env("TRELLIS_STATE", a.attention.word())
        .env("TRELLIS_AGENT", &a.agent)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    trellis_os::priority::die_with_parent(&mut c);
    let Ok(mut child) = trellis_os::reaper::spawn_owned(&mut c) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("trellis-notify".into())
        .spawn(move || {
            let pid = child.id();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match child.try_wait() {
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50))
                    }
                    Ok(Some(_)) => break,
                    _ => {
                        trellis_os::group::stop_blocking(&[pid], GRACE, || {
                            matches!(child.try_wait(), Ok(Some(_)))
                        });
                        let _ = child.wait();
                        break;
                    }
                }
            }
            // What it left in its group goes with it.
            trellis_os::reaper::disown(pid);
            trellis_os::group::stop_leftovers(pid, GRACE);
        });
}
