//! CPU time and peak memory this process used (`--stats`, the benchmarks), and the C
//! heap's free memory given back to the system.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::{TimeVal, TimeValLike};

/// What this process used so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    /// Peak resident memory, KiB (Linux's unit; macOS reports bytes and is converted).
    pub max_rss_kib: i64,
    /// CPU (user + system) of its children it waited for (another process's: Linux only).
    pub children: Duration,
}

/// This process's usage so far (zero when the system will not say).
pub fn this_process() -> Usage {
    let children = match getrusage(UsageWho::RUSAGE_CHILDREN) {
        Ok(u) => duration(u.user_time()) + duration(u.system_time()),
        Err(_) => Duration::ZERO,
    };
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => Usage {
            user: duration(u.user_time()),
            system: duration(u.system_time()),
            #[cfg(target_vendor = "apple")]
            max_rss_kib: kib(u.max_rss()) / 1024,
            #[cfg(not(target_vendor = "apple"))]
            max_rss_kib: kib(u.max_rss()),
            children,
        },
        Err(_) => Usage {
            children,
            ..Usage::default()
        },
    }
}

/// Another process's usage so far, read from `/proc` (Linux; `None` elsewhere, or when it
/// is gone): for benchmarks that watch the UI from outside.
pub fn of_process(pid: u32) -> Option<Usage> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let f: Vec<u64> = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(0))
            .collect();
        let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|&t| t > 0)
            .unwrap_or(100) as u64;
        let ticks = |i: usize| Duration::from_millis(f.get(i).copied().unwrap_or(0) * 1000 / tick);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let hwm = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        // After the command's name: utime and stime are the 12th and 13th fields, then
        // the waited-for children's.
        Some(Usage {
            user: ticks(11),
            system: ticks(12),
            max_rss_kib: hwm,
            children: ticks(13) + ticks(14),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// The threads of another process with each one's name and CPU time (user + system) so
/// far, read from `/proc/PID/task` (Linux; empty elsewhere): for benchmarks that say where
/// the UI's time goes.
pub fn threads_of(pid: u32) -> Vec<(u32, String, Duration)> {
    #[cfg(target_os = "linux")]
    {
        let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|&t| t > 0)
            .unwrap_or(100) as u64;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let f: Vec<u64> = stat[close + 1..]
                .split_whitespace()
                .map(|w| w.parse().unwrap_or(0))
                .collect();
            let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
            out.push((
                tid,
                stat[open + 1..close].to_string(),
                Duration::from_millis(ticks * 1000 / tick),
            ));
        }
        out
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Vec::new()
    }
}

fn duration(tv: TimeVal) -> Duration {
    Duration::from_micros(u64::try_from(tv.num_microseconds()).unwrap_or_default())
}

/// CPU time of the calling thread (benchmarks measure one thread while others work).
pub fn this_thread_cpu() -> Duration {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID) {
        Ok(t) => Duration::from(t),
        Err(_) => Duration::ZERO,
    }
}

/// `c_long` is 32 bits on some targets, 64 on others.
#[allow(clippy::useless_conversion)]
fn kib(v: std::ffi::c_long) -> i64 {
    i64::from(v)
}

/// Gives the C heap's free memory back to the system (glibc's `malloc_trim`): SQLite's
/// allocations come from it, not from the Rust allocator, and glibc keeps what a thread
/// freed in that thread's arena. A session's index thread frees its full-text term hash
/// (megabytes) at each commit and then waits: eight of them held some 20 MB between
/// their reads. Elsewhere (musl, macOS) nothing is done.
#[allow(unsafe_code)]
pub fn trim_c_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim(3) only returns free pages of glibc's heaps to the system; it
    // takes no pointer and leaves every allocation in use where it is.
    unsafe {
        libc::malloc_trim(0);
    }
}
