//! Every call that depends on the operating system lives in `trellis-os` (item: "macOS,
//! where most agent users are"): this test reads the workspace's product code and
//! benchmarks and fails on any such call found elsewhere, naming the file and the line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// What only `trellis-os` may say: Linux-only system calls and files, raw signal and
/// process calls (whose portable forms are here), the signal handlers.
const SYSTEM_SPECIFIC: &[&str] = &[
    "libc::prctl",
    "PR_SET_",
    "libc::syscall",
    "SYS_gettid",
    "SCHED_IDLE",
    "libc::sched_setscheduler",
    "libc::setpriority",
    "libc::getrusage",
    "libc::clock_gettime",
    "libc::kill",
    "libc::waitpid",
    "libc::getppid",
    "\"/proc",
    "/proc/self/fd",
    "F_GETPATH",
    "F_SETPIPE_SZ",
    "tokio::signal",
    "nix::",
];

/// Mentions that are not calls, each with why.
const ALLOWED: &[(&str, &str, &str)] = &[(
    "crates/trellis-agents/src/hostile_scenes.rs",
    "/proc/self/root",
    "a path the hostile agent asks Trellis to write through: an attack, not a call",
)];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            // Tests may look at the system to check what Trellis did; product code and
            // benchmarks may not call it.
            if name != "tests" && name != "target" && name != "node_modules" {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `line` names `pat` as a whole path (`nix::` but not `std::os::unix::`).
fn mentions(line: &str, pat: &str) -> bool {
    line.match_indices(pat).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn system_specific_calls_live_only_in_trellis_os() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("examples"), &mut files);
    assert!(files.len() > 50, "the workspace was not found: {root:?}");
    let mut found = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("crates/trellis-os/") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        // A file's unit tests (its `#[cfg(test)]` module, at its end) are tests.
        let product = text.split("\n#[cfg(test)]").next().unwrap_or("");
        for (n, line) in product.lines().enumerate() {
            for pat in SYSTEM_SPECIFIC {
                let allowed = ALLOWED
                    .iter()
                    .any(|(file, what, _)| rel == *file && line.contains(what));
                if mentions(line, pat) && !allowed {
                    found.push(format!("{rel}:{}: {pat}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "system-specific calls outside trellis-os:\n{}",
        found.join("\n")
    );
}
