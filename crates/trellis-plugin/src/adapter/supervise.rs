//! Supervision of the plugin process: start and `initialize`, stop, crash accounting
//! with backoff and the crash limit, restarts, hot reload when trying a plugin, and the
//! lines `/status` shows about the process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use trellis_core::ext::{ExtError, Host};

use super::{PluginExt, lock};
use crate::process::Proc;
use crate::protocol::{self, HostInfo, InitializeParams, InitializeResult, VERSIONS};

impl PluginExt {
    /// Watches the package (twice a second) while the host lives; a change wakes the
    /// worker, which restarts the process.
    pub(super) fn watch(&self) {
        let root = self.spec.launch.root.clone();
        let changed = self.changed.clone();
        let wake = self.wake_fn();
        let alive = Arc::downgrade(&self.waker);
        let _ = std::thread::Builder::new()
            .name("plugin-watch".into())
            .spawn(move || {
                let mut last = fingerprint(&root);
                while alive.upgrade().is_some() {
                    std::thread::sleep(Duration::from_millis(500));
                    let now = fingerprint(&root);
                    if now != last {
                        last = now;
                        changed.store(true, std::sync::atomic::Ordering::Release);
                        wake();
                    }
                }
            });
    }

    /// The files changed (trying a plugin): a new process with the new code. The first
    /// registration stands (new contributions need a new session).
    pub(super) fn reload(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        if !self
            .changed
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        self.kill();
        self.reloads += 1;
        self.crashes.clear();
        self.restart_at = None;
        self.start(host)?;
        // Said on the screen only through what the plugin was granted (`/status` counts
        // the reloads either way): the host never makes a call in its name it may not make.
        if host.granted().contains(&trellis_core::ext::Capability::Ui) {
            host.notify(&format!("plugin {} reloaded", self.name()))
                .map_err(ExtError::from)?;
        }
        Ok(())
    }

    /// Disabled, and its files changed since (trying a plugin): a new process with the new
    /// code, under the first registration. A plugin that never registered (it failed at
    /// start) has no registration for its new code to run under: a new session gives it
    /// one.
    pub(super) fn revive_changed(&mut self, host: &mut dyn Host) -> Option<Result<(), String>> {
        if !self
            .changed
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            return None;
        }
        if self.registration.is_none() {
            return Some(Err(
                "it failed at start, so its new code runs in a new session: quit and start again"
                    .into(),
            ));
        }
        self.kill();
        self.reloads += 1;
        self.crashes.clear();
        self.restart_at = None;
        Some(
            self.start(host)
                .map_err(|e| format!("its new code failed too: {e}")),
        )
    }

    /// Starts the process and runs `initialize`.
    pub(super) fn start(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        self.generation += 1;
        let proc = Proc::spawn(
            &self.spec.launch,
            self.generation,
            self.tx.clone(),
            self.stderr.clone(),
            self.wake_fn(),
        )
        .map_err(ExtError::Fatal)?;
        self.proc = Some(proc);
        let params = InitializeParams {
            protocol: protocol::PROTOCOL.into(),
            versions: VERSIONS.to_vec(),
            host: HostInfo {
                name: "trellis".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            name: self.name().to_string(),
            granted: host
                .granted()
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            options: host.options(),
            restarts: self.restarts,
        };
        let limit = self.spec.limits.start_timeout;
        let v = match self.request(host, "initialize", &params, limit) {
            Ok(v) => v,
            Err(e) => {
                self.kill();
                return Err(match e {
                    ExtError::Fatal(m) => ExtError::Fatal(m),
                    other if self.registration.is_none() => {
                        ExtError::Fatal(format!("did not start: {other}"))
                    }
                    other => other,
                });
            }
        };
        let r: InitializeResult = serde_json::from_value(v).map_err(|e| {
            self.kill();
            ExtError::Fatal(format!("its answer to initialize is not valid: {e}"))
        })?;
        if !VERSIONS.contains(&r.version) {
            self.kill();
            return Err(ExtError::Fatal(format!(
                "version mismatch: the plugin chose protocol version {}, this Trellis speaks {}",
                r.version,
                VERSIONS
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        self.version = r.version;
        // Started: from now on it runs on CPU time the agent and the client do not want.
        if let Some(p) = &self.proc {
            p.lower_priority();
        }
        match &self.registration {
            None => {
                self.acp = r.registration.acp_payloads;
                self.registration = Some(r.registration);
            }
            Some(old) if *old != r.registration => host.report(
                "restart",
                "the restarted process registered different contributions; the first registration stands",
            ),
            Some(_) => {}
        }
        Ok(())
    }

    /// Stops the process (its whole group).
    pub(super) fn kill(&mut self) -> Option<String> {
        self.outbuf.clear();
        self.outbuf_bytes = 0;
        let mut p = self.proc.take()?;
        Some(p.stop(Duration::from_millis(300)))
    }

    /// The process ended or broke: restart later, or give up.
    pub(super) fn crashed(&mut self, why: String) -> ExtError {
        let exit = self.kill();
        let why = match exit {
            Some(e) if !why.contains("exit") => format!("{why} ({e})"),
            _ => why,
        };
        self.last_exit = Some(why.clone());
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.spec.limits.window)
        {
            self.crashes.pop_front();
        }
        let n = self.crashes.len() as u32;
        if n >= self.spec.limits.crashes {
            let f = format!(
                "crashed {n} times within {} s; last: {why}",
                self.spec.limits.window.as_secs()
            );
            self.fatal = Some(f.clone());
            return ExtError::Fatal(f);
        }
        let backoff = Duration::from_millis(500) * 2u32.saturating_pow(n.saturating_sub(1));
        let at = now + backoff;
        self.restart_at = Some(at);
        // Wake the worker when the restart is due (it may have nothing else to do).
        let wake = self.wake_fn();
        let _ = std::thread::Builder::new()
            .name("plugin-restart".into())
            .spawn(move || {
                std::thread::sleep(backoff);
                wake();
            });
        ExtError::Failed(format!("the plugin process ended: {why}; restarting"))
    }

    /// Makes sure a process runs: `Ok(false)` while it is down (waiting to restart).
    pub(super) fn ensure(&mut self, host: &mut dyn Host) -> Result<bool, ExtError> {
        if let Some(f) = &self.fatal {
            return Err(ExtError::Fatal(f.clone()));
        }
        if self.proc.is_some() {
            return Ok(true);
        }
        match self.restart_at {
            Some(at) if Instant::now() < at => Ok(false),
            _ => {
                self.restart_at = None;
                self.restarts += 1;
                match self.start(host) {
                    Ok(()) => Ok(true),
                    Err(e) => {
                        if let Some(f) = &self.fatal {
                            return Err(ExtError::Fatal(f.clone()));
                        }
                        if self.restart_at.is_some() {
                            // Its end was handled (and counted) already.
                            return Err(e);
                        }
                        Err(self.crashed(e.to_string()))
                    }
                }
            }
        }
    }

    /// Keeps `/status` current: the process, restarts, lost events, stderr's tail.
    pub(super) fn diagnostics(&mut self, host: &mut dyn Host) {
        let mut s = lock(&self.stderr);
        // Said again when its stderr or its process changed since it was last said.
        let process = self
            .proc
            .as_ref()
            .map(|p| (p.pid(), self.reloads, self.restarts));
        if !s.dirty && self.said_process == Some(process) && self.last_exit.is_none() {
            return;
        }
        s.dirty = false;
        self.said_process = Some(process);
        let mut lines = Vec::new();
        match &self.proc {
            Some(p) => lines.push(format!(
                "process {} (protocol v{}), restarts {}{}",
                p.pid(),
                self.version,
                self.restarts,
                if self.spec.limits.watch {
                    format!(", reloaded {} times (watching its files)", self.reloads)
                } else {
                    String::new()
                }
            )),
            None => lines.push(format!("process not running, restarts {}", self.restarts)),
        }
        if let Some(e) = &self.last_exit {
            lines.push(format!("last exit: {e}"));
        }
        if self.lost > 0 {
            lines.push(format!(
                "{} events not delivered while the process was down",
                self.lost
            ));
        }
        if s.total > 0 {
            lines.push(format!(
                "stderr: {} lines ({} bytes){}; last {}:",
                s.total,
                s.bytes,
                match &self.spec.launch.log_file {
                    Some(p) => format!(", logged to {}", p.display()),
                    None => String::new(),
                },
                s.lines.len().min(8)
            ));
            let skip = s.lines.len().saturating_sub(8);
            for l in s.lines.iter().skip(skip) {
                lines.push(format!("  │ {l}"));
            }
        }
        drop(s);
        host.set_diagnostics(lines);
    }
}

/// A cheap summary of a package's files (names, sizes, modification times).
/// Directories whose files are not a plugin's code: what it writes, what tools make.
const NOT_CODE_DIRS: &[&str] = &[
    ".git",
    "__pycache__",
    "node_modules",
    "target",
    "data",
    "logs",
    ".venv",
    "venv",
];

/// Files whose change means new code (or a new manifest): a plugin that writes its own
/// log, database or cache into its folder is not reloaded for it.
fn is_code(path: &std::path::Path) -> bool {
    const CODE: &[&str] = &[
        "py", "pyi", "js", "mjs", "cjs", "ts", "mts", "cts", "toml", "rs", "lua", "rb", "sh",
        "bash", "go", "java", "kt", "php", "pl", "exs", "ex",
    ];
    // JSON is data unless it is a package's own description.
    let named = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    if matches!(
        named,
        "package.json" | "tsconfig.json" | "package-lock.json"
    ) {
        return true;
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| CODE.contains(&e.to_ascii_lowercase().as_str()))
        // A file without an extension is an executable entry (`bin/plugin`).
        || path.extension().is_none()
}

fn fingerprint(root: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![root.to_path_buf()];
    let mut n = 0;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            n += 1;
            if n > crate::package::MAX_FILES {
                return h.finish();
            }
            let p = e.path();
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                let skip = p
                    .file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| NOT_CODE_DIRS.contains(&f) || f.starts_with('.'));
                if !skip {
                    stack.push(p);
                }
                continue;
            }
            if !is_code(&p) {
                continue;
            }
            p.hash(&mut h);
            m.len().hash(&mut h);
            m.modified().ok().hash(&mut h);
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What a plugin writes into its own folder changes nothing; its code does.
    #[test]
    fn only_code_changes_a_packages_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("plugin.py"), "x = 1\n").unwrap();
        std::fs::write(d.path().join("plugin.toml"), "name = 'p'\n").unwrap();
        let a = fingerprint(d.path());
        std::fs::write(d.path().join("notes.log"), "event\n").unwrap();
        std::fs::create_dir(d.path().join("data")).unwrap();
        std::fs::write(d.path().join("data").join("state.json"), "{}").unwrap();
        std::fs::create_dir(d.path().join("__pycache__")).unwrap();
        std::fs::write(d.path().join("__pycache__").join("plugin.pyc"), "b").unwrap();
        std::fs::write(d.path().join("cache.sqlite"), "b").unwrap();
        assert_eq!(fingerprint(d.path()), a, "writes of its own are not code");
        std::fs::write(d.path().join("plugin.py"), "x = 22\n").unwrap();
        assert_ne!(fingerprint(d.path()), a, "new code is");
        let b = fingerprint(d.path());
        std::fs::create_dir(d.path().join("lib")).unwrap();
        std::fs::write(d.path().join("lib").join("helper.py"), "y = 1\n").unwrap();
        assert_ne!(fingerprint(d.path()), b, "code in a folder of its own too");
    }
}
