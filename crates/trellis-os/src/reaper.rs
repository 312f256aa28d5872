//! No process Trellis starts outlives it, however far it wandered. Process groups cover
//! the agent and each terminal command; this covers what leaves them: anything an agent or
//! a command double-forks or moves to a new session (`setsid`, daemons, MCP servers started
//! in the background). On Linux Trellis makes itself a child subreaper, so such orphans are
//! reparented to Trellis instead of init; when Trellis ends, every process still below it
//! is stopped (SIGTERM, a grace period, SIGKILL).
//!
//! Only the client commands (the UI, `trellis run`) do this, never the built-in agents.
//!
//! Linux only: the subreaper flag and the process table in `/proc`. Elsewhere (macOS has
//! neither) orphans go to init as usual and only process groups stop what Trellis started:
//! [`adopt_orphans`] says so by returning `false`, and the table is empty.
//!
//! Adopted orphans that exit are reaped while Trellis runs (a scan every few seconds), so a
//! long session does not collect zombies; Trellis's own children (the agent, terminal
//! commands) are left to the runtime that waits for them ([`own`]).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// Children the async runtime waits for itself: never reaped here.
static OWNED: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Marks `pid` as a child the runtime waits for (the agent, a terminal command).
pub fn own(pid: u32) {
    let mut g = match OWNED.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.get_or_insert_with(HashSet::new).insert(pid);
}

/// Starts `cmd` as a child this process waits for itself: it is marked owned before the
/// reaper can see it (the mark is taken under the lock the reaper reads), so a child that
/// ends at once is never reaped behind its waiter's back. [`disown`] it once waited for.
pub fn spawn_owned(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut g = match OWNED.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let child = cmd.spawn()?;
    g.get_or_insert_with(HashSet::new).insert(child.id());
    Ok(child)
}

/// Forgets a child marked by [`own`] or [`spawn_owned`] once it has been waited for (its
/// pid may be reused by an orphan the reaper must reap).
pub fn disown(pid: u32) {
    let mut g = match OWNED.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(s) = g.as_mut() {
        s.remove(&pid);
    }
}

fn owned(pid: u32) -> bool {
    let g = match OWNED.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.as_ref().is_some_and(|s| s.contains(&pid))
}

/// One process of the table: its id, its parent's, and whether it is a zombie.
#[derive(Debug, Clone, Copy)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub zombie: bool,
}

/// Every process the system lists (Linux: `/proc`; elsewhere none).
pub fn table() -> Vec<Proc> {
    #[cfg(target_os = "linux")]
    {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
                // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let mut it = stat.rsplit_once(')')?.1.split_whitespace();
                let state = it.next()?;
                let ppid = it.next()?.parse::<u32>().ok()?;
                Some(Proc {
                    pid,
                    ppid,
                    zombie: state == "Z",
                })
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// Zombie children of process `parent` (ended, and nobody reaped them).
pub fn zombies_of(parent: u32) -> Vec<u32> {
    table()
        .into_iter()
        .filter(|p| p.zombie && p.ppid == parent)
        .map(|p| p.pid)
        .collect()
}

/// The children of `parent` (from the process table).
pub fn children_of(parent: u32) -> Vec<u32> {
    table()
        .into_iter()
        .filter(|p| p.ppid == parent)
        .map(|p| p.pid)
        .collect()
}

/// Zombie children of this process that nobody else waits for: adopted orphans that ended.
fn adopted_zombies() -> Vec<u32> {
    let mut z = zombies_of(std::process::id());
    z.retain(|&pid| !owned(pid));
    z
}

/// Reaps adopted orphans that ended; returns how many.
pub fn reap_adopted() -> usize {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    adopted_zombies()
        .into_iter()
        .filter_map(|pid| i32::try_from(pid).ok())
        .filter(|&pid| {
            !matches!(
                waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
                Ok(WaitStatus::StillAlive) | Err(_)
            )
        })
        .count()
}

/// Starts a thread that reaps adopted orphans every few seconds while the process runs.
pub fn keep_reaping() {
    let _ = std::thread::Builder::new()
        .name("trellis-reaper".into())
        .spawn(|| {
            loop {
                std::thread::sleep(Duration::from_secs(3));
                reap_adopted();
            }
        });
}

/// Makes this process the subreaper of its descendants. Returns whether the system
/// supports it (Linux); elsewhere orphans go to init as usual.
pub fn adopt_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Every process below `root` (children, their children, …); zombies are gone already.
pub fn descendants(root: u32) -> Vec<u32> {
    let parent_of: Vec<(u32, u32)> = table()
        .into_iter()
        .filter(|p| !p.zombie)
        .map(|p| (p.pid, p.ppid))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(child, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            out.push(child);
            frontier.push(child);
        }
    }
    out
}

fn signal(pid: u32, sig: Signal) {
    crate::group::signal_process(pid, sig);
}

/// Stops every process still below this one: SIGTERM, up to `grace` for them to go, then
/// SIGKILL (looking again each round: orphans of a stopped parent come to us). Returns how
/// many were found.
pub fn stop_descendants(grace: Duration) -> usize {
    let me = std::process::id();
    let first = descendants(me);
    if first.is_empty() {
        return 0;
    }
    for &p in &first {
        signal(p, Signal::SIGTERM);
    }
    let start = Instant::now();
    let mut left = descendants(me);
    while !left.is_empty() && start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(20));
        left = descendants(me);
    }
    for _ in 0..5 {
        if left.is_empty() {
            break;
        }
        for &p in &left {
            signal(p, Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
        left = descendants(me);
    }
    first.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn owned_children_are_never_reaped_here() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        own(child.id());
        std::thread::sleep(Duration::from_millis(100));
        // It is a zombie child of ours now, but the one who spawned it waits for it.
        assert!(!adopted_zombies().contains(&child.id()));
        reap_adopted();
        assert!(child.wait().unwrap().success(), "its status is still there");
    }

    #[test]
    fn descendants_are_found_through_the_tree() {
        // (Only read here: stopping descendants in a test process would stop the other
        // tests' children too; the end-to-end tests stop real sessions.)
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 5 & sleep 5")
            .spawn()
            .unwrap();
        // Ours to wait for: the reaper another test runs must leave it alone.
        own(child.id());
        std::thread::sleep(Duration::from_millis(100));
        let below_child = descendants(child.id());
        assert_eq!(below_child.len(), 2, "{below_child:?}");
        let below_me = descendants(std::process::id());
        assert!(below_me.contains(&child.id()));
        assert!(below_child.iter().all(|p| below_me.contains(p)));
        child.kill().unwrap();
        child.wait().unwrap();
        for p in below_child {
            signal(p, Signal::SIGKILL);
        }
    }
}
