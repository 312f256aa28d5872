//! Opening a link in the user's browser, for the agent's URL questions.
//!
//! The opener is `$BROWSER` (its first `:`-separated entry, `%s` standing for the
//! address, else the address appended; run by `sh` with the address as `"$1"`, never
//! pasted into the script) or the system's (`xdg-open`, `open` on macOS). It starts in its
//! own process group with no terminal (stdin, stdout and stderr closed: nothing it prints
//! reaches the screen), is reaped as it ends (a failure is reported and the link copied
//! instead), and is stopped, with its group, when Trellis exits. An opener hands the
//! address to a running browser and ends at once; a browser it had to start is stopped
//! with Trellis, like every process Trellis starts (the orphan reaper sees to those that
//! leave the group).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The openers still running.
#[derive(Default)]
pub struct Openers {
    running: Vec<(Child, String)>,
}

/// What became of an opener that ended.
#[derive(Debug, PartialEq)]
pub enum Ended {
    Opened,
    /// It failed (its status, sanitized for display); the address is the link.
    Failed {
        status: String,
        url: String,
    },
}

impl Openers {
    /// Starts the opener for `url` (the caller checked it with [`crate::ask::openable`]).
    pub fn open(&mut self, url: &str) -> std::io::Result<()> {
        let mut cmd = command(url, std::env::var("BROWSER").ok().as_deref());
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = cmd.spawn()?;
        self.running.push((child, url.to_string()));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Reaps the openers that ended, saying how each did.
    pub fn reap(&mut self) -> Vec<Ended> {
        let mut ended = Vec::new();
        self.running
            .retain_mut(|(child, url)| match child.try_wait() {
                Ok(None) => true,
                Ok(Some(s)) if s.success() => {
                    ended.push(Ended::Opened);
                    false
                }
                Ok(Some(s)) => {
                    ended.push(Ended::Failed {
                        status: s.to_string(),
                        url: std::mem::take(url),
                    });
                    false
                }
                Err(e) => {
                    ended.push(Ended::Failed {
                        status: e.to_string(),
                        url: std::mem::take(url),
                    });
                    false
                }
            });
        ended
    }
}

impl Drop for Openers {
    /// Stops the openers still running, each with its process group: TERM, a grace of
    /// up to 500 ms for the openers themselves, then KILL to every group (what ignored TERM
    /// or outlived its opener in the group goes too); each opener is waited for.
    fn drop(&mut self) {
        if self.running.is_empty() {
            return;
        }
        let groups: Vec<u32> = self.running.iter().map(|(c, _)| c.id()).collect();
        trellis_os::group::stop_blocking(&groups, Duration::from_millis(500), || {
            self.running
                .iter_mut()
                .all(|(c, _)| !matches!(c.try_wait(), Ok(None)))
        });
        for (child, _) in &mut self.running {
            let _ = child.wait();
        }
    }
}

/// The opener's command for `url`, given `$BROWSER`.
fn command(url: &str, browser: Option<&str>) -> Command {
    let entry = browser
        .into_iter()
        .flat_map(|b| b.split(':'))
        .map(str::trim)
        .find(|e| !e.is_empty());
    match entry {
        Some(entry) => {
            let script = if entry.contains("%s") {
                entry.replace("%s", "\"$1\"")
            } else {
                format!("{entry} \"$1\"")
            };
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(script).arg("sh").arg(url);
            cmd
        }
        None => {
            let mut cmd = Command::new(if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            });
            cmd.arg(url);
            cmd
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn argv(cmd: &Command) -> Vec<String> {
        std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_address_is_an_argument_never_part_of_the_script() {
        let url = "https://x.example/$(touch pwned)`id`";
        assert_eq!(
            argv(&command(url, Some("firefox --new-tab:chromium"))),
            ["sh", "-c", "firefox --new-tab \"$1\"", "sh", url]
        );
        assert_eq!(
            argv(&command(url, Some("lynx -dump %s | less"))),
            ["sh", "-c", "lynx -dump \"$1\" | less", "sh", url]
        );
        let system = argv(&command(url, Some(" : ")));
        assert_eq!(system[1], url);
        assert_eq!(system.len(), 2);
    }

    #[test]
    fn openers_are_reaped_and_failures_named() {
        let mut o = Openers::default();
        let mut ok = command("https://a.example", Some("true"));
        let mut bad = command("https://b.example", Some("exit 3;"));
        o.running
            .push((ok.spawn().unwrap(), "https://a.example".into()));
        o.running
            .push((bad.spawn().unwrap(), "https://b.example".into()));
        let mut ended = Vec::new();
        while ended.len() < 2 {
            ended.extend(o.reap());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(ended.contains(&Ended::Opened), "{ended:?}");
        assert!(
            ended
                .iter()
                .any(|e| matches!(e, Ended::Failed { url, .. } if url == "https://b.example")),
            "{ended:?}"
        );
        assert!(o.is_empty());
    }

    #[test]
    #[cfg_attr(
        not(target_os = "linux"),
        ignore = "reads the group's processes from /proc (Linux)"
    )]
    fn openers_still_running_are_stopped_with_their_group() {
        let mut o = Openers::default();
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let script = format!(
            "trap '' TERM; sleep 30 & echo > '{}'; sleep 30; :",
            ready.display()
        );
        let mut cmd = command("https://a.example", Some(&script));
        cmd.process_group(0);
        let child = cmd.spawn().unwrap();
        let pgid = child.id();
        o.running.push((child, "https://a.example".into()));
        // Both ignore TERM once the shell has run its first line: KILL must end them.
        let start = Instant::now();
        while !ready.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the script never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let t = Instant::now();
        drop(o);
        assert!(
            t.elapsed() >= Duration::from_millis(400),
            "the grace was given"
        );
        // No live process is left in the group (the background sleep, no longer the
        // opener's child, may stay a zombie until init reaps it: that is not alive).
        let live = || -> Vec<String> {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
                .filter(|stat| {
                    // After the command's `)`: state, ppid, pgrp.
                    let rest: Vec<&str> = stat
                        .rsplit_once(')')
                        .map_or("", |r| r.1)
                        .split_whitespace()
                        .collect();
                    rest.get(2) == Some(&pgid.to_string().as_str()) && rest.first() != Some(&"Z")
                })
                .collect()
        };
        // A killed process takes a moment to become a zombie.
        let start = Instant::now();
        while !live().is_empty() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(live().is_empty(), "{:?}", live());
    }
}
