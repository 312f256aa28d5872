//! How much of the machine a background process gets, and how it ends with Trellis.
//! Plugins start at normal priority (a busy machine would starve their start) and drop to
//! the lowest once they answered (`docs/plugins.md`).

use std::process::Command;

/// The lowest niceness: what background work (plugins, their feeders) runs at.
pub const LOWEST: i32 = 19;

/// Sets the niceness of process `pid`; failures are ignored (a priority is a preference).
#[allow(unsafe_code)]
pub fn set_nice(pid: u32, nice: i32) {
    // SAFETY: setpriority(2) on one process or thread id; no memory is involved.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice);
    }
}

/// Lowers the priority of the calling thread. Linux gives threads a niceness of their
/// own; elsewhere the nice value is the process's, and a thread is left as it is.
pub fn lower_this_thread(nice: i32) {
    #[cfg(target_os = "linux")]
    if let Ok(tid) = u32::try_from(nix::unistd::gettid().as_raw()) {
        set_nice(tid, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Puts the calling thread at niceness `nice` and, on Linux, in the `SCHED_IDLE` class:
/// work that may wait for any other (a session's index, read while its turn streams).
/// The threads it starts inherit both.
pub fn idle_this_thread(nice: i32) {
    lower_this_thread(nice);
    #[cfg(target_os = "linux")]
    if let Ok(tid) = u32::try_from(nix::unistd::gettid().as_raw()) {
        idle_class(tid);
    }
}

/// Puts process `pid` (on Linux, also a thread) in the `SCHED_IDLE` class: it runs on CPU
/// time nothing else wants. Elsewhere there is no such class; the niceness alone applies.
#[allow(unsafe_code)]
pub fn idle_class(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler(2) reads `param` (a valid local) for one process id.
        unsafe {
            libc::sched_setscheduler(pid as libc::pid_t, libc::SCHED_IDLE, &param);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

/// Puts process `pid` at niceness `nice` and in the idle class, every thread it has so
/// far (Linux: threads have their own, listed in `/proc`; those it starts later inherit
/// it). Elsewhere the process's niceness covers its threads.
pub fn lower_process(pid: u32, nice: i32) {
    #[cfg(target_os = "linux")]
    let threads: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    #[cfg(not(target_os = "linux"))]
    let threads: Vec<u32> = Vec::new();
    for id in if threads.is_empty() {
        vec![pid]
    } else {
        threads
    } {
        set_nice(id, nice);
        idle_class(id);
    }
}

/// The process `cmd` starts is killed by the kernel if Trellis dies without stopping it
/// (SIGKILL, a crash): Linux's parent-death signal, armed between fork and exec, and the
/// child refuses to start if Trellis is already gone. Elsewhere there is no such signal:
/// such a process is stopped when Trellis ends normally, through its group.
#[allow(unsafe_code)]
pub fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = nix::unistd::getpid();
        // SAFETY: the closure runs in the child between fork and exec; it calls only
        // async-signal-safe system calls (prctl, getppid) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)?;
                // Trellis died before the signal was armed: do not start at all.
                if nix::unistd::getppid() != parent {
                    return Err(std::io::Error::other("trellis exited"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// The process `cmd` starts is on its own: a session of its own (`setsid`: no controlling
/// terminal, out of the caller's process group, so neither the terminal's hangup nor a
/// signal to the caller's group reaches it). For a process asked to outlive Trellis (a
/// hub started with `--detach`), never for an agent or a terminal.
#[allow(unsafe_code)]
pub fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // setsid(2), which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
}
