//! Process groups. Trellis starts the agent, each terminal command, each plugin and the
//! browser opener as the leader of a group of its own, so whatever they start stays in it
//! (unless it leaves on purpose: see [`crate::reaper`]) and one signal reaches them all.
//!
//! Every stop is the same sequence: `SIGTERM` to the group, up to a grace period for the
//! leader to end, then `SIGKILL` to the group whatever happened, for what the leader left
//! running in it.

use std::future::Future;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Sends `sig` to process group `pgid`; a group already gone is fine. Groups 0 and 1 are
/// never signalled (0 would be Trellis's own group, 1 init's).
pub fn signal(pgid: u32, sig: Signal) {
    if let Ok(id) = i32::try_from(pgid)
        && id > 1
    {
        let _ = killpg(Pid::from_raw(id), sig);
    }
}

/// Sends `sig` to the single process `pid` (never 0, 1 or a group).
pub fn signal_process(pid: u32, sig: Signal) {
    if let Ok(id) = i32::try_from(pid)
        && id > 1
    {
        let _ = kill(Pid::from_raw(id), sig);
    }
}

/// Stops `groups`: `SIGTERM` now, up to `grace` for `ended` to resolve (the leader's
/// exit, as the caller waits for it), then `SIGKILL` to every group. Returns whether
/// `ended` resolved within the grace period.
pub async fn stop(groups: &[u32], grace: Duration, ended: impl Future<Output = ()>) -> bool {
    for &g in groups {
        signal(g, Signal::SIGTERM);
    }
    let in_time = tokio::time::timeout(grace, ended).await.is_ok();
    for &g in groups {
        signal(g, Signal::SIGKILL);
    }
    in_time
}

/// [`stop`] for a caller without a runtime: `ended` is asked every 10 ms.
pub fn stop_blocking(groups: &[u32], grace: Duration, mut ended: impl FnMut() -> bool) -> bool {
    for &g in groups {
        signal(g, Signal::SIGTERM);
    }
    let start = Instant::now();
    let in_time = loop {
        if ended() {
            break true;
        }
        if start.elapsed() >= grace {
            break false;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    for &g in groups {
        signal(g, Signal::SIGKILL);
    }
    in_time
}

/// Whether process group `pgid` has no process left (a zombie leader not yet waited for
/// still counts).
pub fn empty(pgid: u32) -> bool {
    match i32::try_from(pgid) {
        Ok(id) if id > 1 => killpg(Pid::from_raw(id), None) == Err(nix::errno::Errno::ESRCH),
        _ => true,
    }
}

/// The leader of group `pgid` has ended (and been waited for): what it left running in its
/// group is stopped by the same sequence, `SIGTERM`, up to `grace` for the group to
/// empty, then `SIGKILL`. Returns at once when nothing was left.
pub fn stop_leftovers(pgid: u32, grace: Duration) {
    if !empty(pgid) {
        stop_blocking(&[pgid], grace, || empty(pgid));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    /// A group whose leader has exited, leaving `script`'s background child in it.
    fn left_behind(script: &str) -> u32 {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", script]).process_group(0);
        let mut leader = c.spawn().unwrap();
        let pgid = leader.id();
        leader.wait().unwrap();
        pgid
    }

    #[test]
    fn leftovers_end_by_term_and_those_that_ignore_it_by_kill() {
        let polite = left_behind("sleep 30 & exit 0");
        assert!(!super::empty(polite), "the sleep is left behind");
        let start = Instant::now();
        super::stop_leftovers(polite, Duration::from_secs(5));
        assert!(super::empty(polite));
        assert!(start.elapsed() < Duration::from_secs(4), "TERM was enough");

        let stubborn = left_behind("sh -c 'trap \"\" TERM; sleep 30' & sleep 0.2; exit 0");
        assert!(!super::empty(stubborn));
        super::stop_leftovers(stubborn, Duration::from_millis(300));
        // SIGKILL is delivered at once; the kernel takes a moment to empty the group.
        let until = Instant::now() + Duration::from_secs(5);
        while !super::empty(stubborn) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(super::empty(stubborn), "KILL after the grace period");
    }
}
