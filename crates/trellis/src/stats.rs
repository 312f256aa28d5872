//! Process resource figures for `--stats` (used by the benchmarks).

/// (user CPU seconds, system CPU seconds, peak RSS in KiB) of this process.
#[allow(unsafe_code)]
pub fn self_usage() -> (f64, f64, i64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and has no other effects.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime), ru.ru_maxrss)
}
