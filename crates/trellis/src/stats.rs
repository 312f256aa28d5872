//! Process resource figures for `--stats` (used by the benchmarks).

/// (user CPU seconds, system CPU seconds, peak RSS in KiB) of this process.
pub fn self_usage() -> (f64, f64, i64) {
    let u = trellis_os::usage::this_process();
    (u.user.as_secs_f64(), u.system.as_secs_f64(), u.max_rss_kib)
}
