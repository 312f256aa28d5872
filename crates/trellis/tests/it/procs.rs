//! The processes the tests look at, read one portable way: `/proc` on Linux, `ps`
//! elsewhere (macOS). Every test that asks whether a process lives, what it started or
//! what it runs asks here.

/// One process: its id, its parent's, whether it is a zombie, its command line.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub zombie: bool,
    pub cmdline: String,
}

/// Every process this user can see.
pub(crate) fn table() -> Vec<Proc> {
    #[cfg(target_os = "linux")]
    {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                // After the command's `)`: state, ppid.
                let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
                let zombie = rest.next()? == "Z";
                let ppid = rest.next()?.parse().ok()?;
                let cmdline = std::fs::read(e.path().join("cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                    .unwrap_or_default();
                Some(Proc {
                    pid,
                    ppid,
                    zombie,
                    cmdline,
                })
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let Ok(out) = std::process::Command::new("ps")
            .args(["-A", "-o", "pid=,ppid=,stat=,command="])
            .output()
        else {
            return Vec::new();
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let pid = w.next()?.parse().ok()?;
                let ppid = w.next()?.parse().ok()?;
                let zombie = w.next()?.starts_with('Z');
                Some(Proc {
                    pid,
                    ppid,
                    zombie,
                    cmdline: w.collect::<Vec<_>>().join(" "),
                })
            })
            .collect()
    }
}

/// Whether `pid` exists at all (a zombie not yet reaped counts).
pub(crate) fn exists(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }
    #[cfg(not(target_os = "linux"))]
    {
        table().iter().any(|p| p.pid == pid)
    }
}

/// Whether `pid` lives (a zombie is gone for our purposes).
pub(crate) fn alive(pid: u32) -> bool {
    table().iter().any(|p| p.pid == pid && !p.zombie)
}

/// The processes whose parent is `pid`.
pub(crate) fn children(pid: u32) -> Vec<u32> {
    table()
        .iter()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect()
}

/// Every process descending from `pid`.
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let all = table();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(all.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    out.remove(0);
    out
}

/// The command lines holding `marker`.
pub(crate) fn with_cmdline(marker: &str) -> Vec<String> {
    table()
        .into_iter()
        .filter(|p| p.cmdline.contains(marker))
        .map(|p| p.cmdline)
        .collect()
}

/// The command line of `pid` (empty when it is gone).
pub(crate) fn cmdline(pid: u32) -> String {
    table()
        .into_iter()
        .find(|p| p.pid == pid)
        .map(|p| p.cmdline)
        .unwrap_or_default()
}

/// The resident memory of `pid`, in KiB.
pub(crate) fn rss_kib(pid: u32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::process::Command::new("ps")
            .args(["-o", "rss=", "-p", &pid.to_string()])
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(0)
    }
}
