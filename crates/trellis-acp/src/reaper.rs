//! No process Trellis starts outlives it, however far it wandered. Process groups cover
//! the agent and each terminal command; this covers what leaves them: anything an agent or
//! a command double-forks or moves to a new session (`setsid`, daemons, MCP servers started
//! in the background). On Linux Trellis makes itself a child subreaper, so such orphans are
//! reparented to Trellis instead of init; when Trellis ends, every process still below it
//! is stopped (SIGTERM, a grace period, SIGKILL).
//!
//! Only the client commands (the UI, `trellis run`) do this, never the built-in agents.

use std::time::{Duration, Instant};

/// Makes this process the subreaper of its descendants. Returns whether the system
/// supports it (Linux); elsewhere orphans go to init as usual.
#[allow(unsafe_code)]
pub fn adopt_orphans() -> bool {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag on this process; it takes
    // no pointers.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// Every process below `root` (children, their children, …), from `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let fields = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let mut it = fields.split_whitespace();
        let state = it.next().unwrap_or("");
        let ppid = it.next().and_then(|s| s.parse::<u32>().ok());
        // Zombies are gone already; they only wait to be reaped.
        if let Some(ppid) = ppid
            && state != "Z"
        {
            parent_of.push((pid, ppid));
        }
    }
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

#[allow(unsafe_code)]
fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) sends a signal; it has no memory effects.
    unsafe {
        libc::kill(pid as i32, sig);
    }
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
        signal(p, libc::SIGTERM);
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
            signal(p, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
        left = descendants(me);
    }
    first.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_are_found_through_the_tree() {
        // (Only read here: stopping descendants in a test process would stop the other
        // tests' children too; the end-to-end tests stop real sessions.)
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 5 & sleep 5")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let below_child = descendants(child.id());
        assert_eq!(below_child.len(), 2, "{below_child:?}");
        let below_me = descendants(std::process::id());
        assert!(below_me.contains(&child.id()));
        assert!(below_child.iter().all(|p| below_me.contains(p)));
        child.kill().unwrap();
        child.wait().unwrap();
        for p in below_child {
            signal(p, libc::SIGKILL);
        }
    }
}
