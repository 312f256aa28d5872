//! Processes, signals and every call that depends on the operating system, in one place.
//!
//! Trellis starts other programs (the agent, terminal commands, plugins, a browser) and must
//! stop them all, whatever happens; it checks where an open file really is; it handles the
//! signals that end a session. Each of these depends on the system, so each lives here,
//! behind `cfg`, with the macOS equivalent where one exists and a fail-closed answer where
//! none does:
//!
//! | what | Linux | macOS | elsewhere |
//! |---|---|---|---|
//! | signal a process group ([`group`]) | `killpg` | `killpg` | `killpg` (any Unix) |
//! | adopt orphans ([`reaper`]) | `PR_SET_CHILD_SUBREAPER`, `/proc` | not possible: process groups only | same |
//! | a descriptor's real path ([`fd::path_of`]) | `/proc/self/fd` | `fcntl(F_GETPATH)` | an error: callers refuse |
//! | a roomier pipe from the agent ([`fd::grow_pipe`]) | `fcntl(F_SETPIPE_SZ)` | none: the usual pipe, read as before | same |
//! | plugin dies with Trellis ([`priority::die_with_parent`]) | `PR_SET_PDEATHSIG` | not possible: stopped at exit | same |
//! | background priority ([`priority`]) | per-thread nice, `SCHED_IDLE` | process nice | process nice |
//! | CPU time ([`usage`]) | `getrusage` | `getrusage` | `getrusage` |
//! | the C heap's free memory back ([`usage::trim_c_heap`]) | `malloc_trim` (glibc) | none: the system allocator's own | same |
//! | did a tree change ([`watch`]) | inotify | none: the caller looks itself | same |
//! | a TCP peer gone without a word ([`net`]) | keepalive, its timing set | keepalive, its timing set | keepalive, the system's timing |
//!
//! A test (`tests/confined.rs`) fails when a system-specific call appears anywhere else in
//! the workspace.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod env;
pub mod fd;
pub mod group;
pub mod lock;
pub mod net;
pub mod priority;
pub mod reaper;
pub mod signals;
pub mod usage;
pub mod watch;

pub use nix::sys::signal::Signal;

/// The user this process runs as (for files and sockets that must be the user's alone).
pub fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// Whether process `pid` exists (another user's counts).
pub fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// The name of signal number `sig` (`SIGKILL`), or `signal N` for one this system does not
/// name.
pub fn signal_name(sig: i32) -> String {
    match Signal::try_from(sig) {
        Ok(s) => s.as_str().to_string(),
        Err(_) => format!("signal {sig}"),
    }
}
