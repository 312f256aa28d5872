//! Command hooks (`[[hooks]]` in the config): the smallest way to extend Trellis. A hook
//! runs a command line on an event, the event as JSON on its stdin (the shape plugins get,
//! `docs/events.md`). On `permission_requested` it may decide: exit 0 with nothing on
//! stdout is no opinion; exit 2 rejects (stderr is the reason); `{"decision": "allow" |
//! "reject", "reason": …}` on stdout decides. Hooks are one extension (`hooks`), so they
//! take their place in the permission chain like any (declared order, exactly once), run
//! on its worker (never while a frame is drawn), and a hook that fails or times out never
//! approves anything.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use trellis_core::ext::{
    Capability, Claim, ExtError, Extension, Host, Manifest, PermissionAsk, Registration,
};
use trellis_core::permission::record::OptionKind;
use trellis_core::{Event, EventBody, ToolCall};

/// What a hook's output may be, at most (the rest is dropped).
const OUTPUT_LIMIT: u64 = 64 * 1024;
/// A hook's time unless it says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a hook past its time, or what a hook left running, has between SIGTERM and
/// SIGKILL (short: a permission may be waiting).
const LEFTOVER_GRACE: Duration = Duration::from_millis(200);

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// How the user's config names it: `hooks[1]` (`project hooks[0]` for a project's).
    pub name: String,
    /// An event type of `docs/events.md`.
    pub on: String,
    /// The command line, run by the user's shell.
    pub run: String,
    /// Only calls of this kind.
    pub kind: Option<String>,
    /// Only calls whose title matches this glob.
    pub title: Option<String>,
    /// Only calls touching a path that matches this glob (relative to the session's
    /// directory unless it starts with `/` or `**`).
    pub path: Option<String>,
    /// Only calls in this status (`completed`, `failed`…).
    pub status: Option<String>,
    pub timeout: Duration,
}

/// How one run went.
#[derive(Debug, Clone, PartialEq)]
enum Ran {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// Past its time (why, in words).
    TimedOut(String),
    Failed(String),
}

/// A hook's word on a permission request.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    NoOpinion,
    Allow(String),
    Reject(String),
    /// Failed, timed out, or said something that is not an answer: never an approval.
    Fault(String),
}

impl Hook {
    /// Its name and the start of its command, as the user wrote them: `hooks[1]
    /// (notify-send …)`.
    pub fn label(&self) -> String {
        let run = trellis_text::one_line(self.run.trim());
        format!("{} ({})", self.name, trellis_text::clip(&run, 40))
    }

    /// Whether the hook is for `call` (a hook with call matchers is for calls only).
    fn wants(&self, call: Option<&ToolCall>, cwd: Option<&str>) -> bool {
        let has_matchers = self.kind.is_some()
            || self.title.is_some()
            || self.path.is_some()
            || self.status.is_some();
        let Some(call) = call else {
            return !has_matchers;
        };
        self.kind.as_deref().is_none_or(|k| call.kind.as_str() == k)
            && self
                .status
                .as_deref()
                .is_none_or(|s| call.status.as_str() == s)
            && self
                .title
                .as_deref()
                .is_none_or(|g| trellis_core::glob::glob_match_text(g, &call.display_title()))
            && self.path.as_deref().is_none_or(|g| {
                trellis_core::enrich::paths_of(call).iter().any(|p| {
                    trellis_core::glob::subject(g, p, cwd)
                        .is_some_and(|s| trellis_core::glob::glob_match(g, &s))
                })
            })
    }

    /// Runs the command with `input` on its stdin, in a process group of its own that dies
    /// with Trellis. Its timeout bounds the whole run, its output read to the end
    /// included: at the deadline its group is killed and its pipes are abandoned — a
    /// process it left behind holding them (`setsid sleep 377 &`) never holds the hooks
    /// worker, nor the permission chain behind it.
    fn run(&self, input: &[u8]) -> Ran {
        use std::os::unix::process::CommandExt;
        let shell = std::env::var("SHELL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "sh".into());
        let mut c = Command::new(shell);
        c.arg("-c")
            .arg(&self.run)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        trellis_os::priority::die_with_parent(&mut c);
        let mut child = match trellis_os::reaper::spawn_owned(&mut c) {
            Ok(ch) => ch,
            Err(e) => return Ran::Failed(format!("cannot run it: {e}")),
        };
        let pid = child.id();
        let deadline = Instant::now() + self.timeout;
        // Its stdin, written on a thread of its own (never joined: a hook that does not
        // read it must not hold us).
        if let Some(mut stdin) = child.stdin.take() {
            let input = input.to_vec();
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        // Its output, read on threads that hand over what they read as it comes; each
        // ends at its pipe's end, whenever that is.
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Option<Vec<u8>>)>();
        let pipes: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        let mut open = 0;
        for (i, pipe) in pipes.into_iter().enumerate() {
            let Some(pipe) = pipe else { continue };
            open += 1;
            let tx = tx.clone();
            std::thread::spawn(move || drain(pipe, i, &tx));
        }
        drop(tx);
        let mut output = [Vec::new(), Vec::new()];
        let mut exited = None;
        loop {
            if exited.is_none() {
                exited = child.try_wait().ok().flatten();
            }
            if exited.is_some() && open == 0 {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match rx.recv_timeout((deadline - now).min(Duration::from_millis(5))) {
                Ok((i, Some(chunk))) => output[i].extend_from_slice(&chunk),
                Ok((_, None)) => open -= 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => open = 0,
            }
        }
        // A hook past its time is stopped, and whatever it left in its group goes with it:
        // the one stop sequence, TERM, a short grace, KILL.
        if exited.is_none() {
            trellis_os::group::stop_blocking(&[pid], LEFTOVER_GRACE, || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            let _ = child.wait();
        }
        trellis_os::reaper::disown(pid);
        trellis_os::group::stop_leftovers(pid, LEFTOVER_GRACE);
        let secs = self.timeout.as_secs_f64();
        match exited {
            None => Ran::TimedOut(format!("timed out after {secs} s")),
            Some(_) if open > 0 => Ran::TimedOut(format!(
                "its output stayed open past its {secs} s (a process it started holds it): abandoned"
            )),
            Some(s) => {
                let [stdout, stderr] = output.map(|b| String::from_utf8_lossy(&b).into_owned());
                Ran::Exited {
                    code: s.code(),
                    stdout,
                    stderr,
                }
            }
        }
    }
}

/// Reads `pipe` to its end, handing over the first [`OUTPUT_LIMIT`] bytes as they come
/// (the rest is read and dropped, so the hook never blocks on a full pipe); `None` at the
/// end. A receiver gone (the run over) stops nothing: the pipe is still read to its end.
fn drain(
    mut pipe: Box<dyn Read + Send>,
    i: usize,
    tx: &std::sync::mpsc::Sender<(usize, Option<Vec<u8>>)>,
) {
    let mut kept = 0u64;
    let mut buf = vec![0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept).min(n as u64) as usize;
                if room > 0 {
                    kept += room as u64;
                    let _ = tx.send((i, Some(buf[..room].to_vec())));
                }
            }
        }
    }
    let _ = tx.send((i, None));
}

fn decision(ran: Ran) -> Decision {
    // One line, its colours dropped (a script's red "no" reads as words on a card).
    let one = |s: &str| {
        let plain = trellis_text::plain_text(&trellis_text::ansi::ansi_lines(s.trim()));
        trellis_text::sanitize::one_line(plain.trim()).into_owned()
    };
    match ran {
        Ran::TimedOut(why) => Decision::Fault(why),
        Ran::Failed(e) => Decision::Fault(e),
        Ran::Exited {
            code: Some(2),
            stderr,
            ..
        } => Decision::Reject(one(&stderr)),
        Ran::Exited {
            code: Some(0),
            stdout,
            ..
        } if stdout.trim().is_empty() => Decision::NoOpinion,
        Ran::Exited {
            code: Some(0),
            stdout,
            ..
        } => match serde_json::from_str::<serde_json::Value>(stdout.trim()) {
            Ok(v) => {
                let reason = one(v["reason"].as_str().unwrap_or(""));
                match v["decision"].as_str() {
                    Some("allow") => Decision::Allow(reason),
                    Some("reject") => Decision::Reject(reason),
                    _ => Decision::Fault(
                        "stdout is not {\"decision\": \"allow\" | \"reject\"}".into(),
                    ),
                }
            }
            Err(_) => Decision::Fault("stdout is not JSON".into()),
        },
        Ran::Exited { code, stderr, .. } => Decision::Fault(format!(
            "exited {}{}",
            code.map_or("by a signal".to_string(), |c| c.to_string()),
            if stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", one(&stderr))
            }
        )),
    }
}

/// Counts per hook, for `/status`.
#[derive(Debug, Default, Clone)]
struct Count {
    runs: u64,
    failed: u64,
    last: Option<String>,
}

/// The hooks of the config, as one extension.
pub struct Hooks {
    hooks: Vec<Hook>,
    counts: Vec<Count>,
}

impl Hooks {
    pub fn new(hooks: Vec<Hook>) -> Hooks {
        let counts = vec![Count::default(); hooks.len()];
        Hooks { hooks, counts }
    }

    fn diagnostics(&self, host: &mut dyn Host) {
        let lines = self
            .hooks
            .iter()
            .zip(&self.counts)
            .map(|(h, c)| {
                format!(
                    "{} on {}: {} run(s), {} failed{}",
                    h.label(),
                    h.on,
                    c.runs,
                    c.failed,
                    c.last
                        .as_ref()
                        .map(|l| format!(" — last: {l}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        host.set_diagnostics(lines);
    }

    fn note(&mut self, i: usize, ran: &Ran, host: &mut dyn Host) -> bool {
        let c = &mut self.counts[i];
        c.runs += 1;
        let failed = match ran {
            Ran::Exited { code: Some(0), .. } => None,
            // Why, in its own words: the last line it wrote on stderr.
            Ran::Exited { code, stderr, .. } => Some(format!(
                "exited {}{}",
                code.map_or("by a signal".to_string(), |c| c.to_string()),
                stderr
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(|l| format!(": {}", trellis_text::one_line(l)))
                    .unwrap_or_default()
            )),
            Ran::TimedOut(why) => Some(why.clone()),
            Ran::Failed(e) => Some(e.clone()),
        };
        if let Some(f) = &failed {
            c.failed += 1;
            c.last = Some(f.clone());
            host.report(&self.hooks[i].label(), f);
        }
        failed.is_none()
    }
}

impl Extension for Hooks {
    fn manifest(&self) -> Manifest {
        let mut capabilities = vec![Capability::Observe];
        if self.hooks.iter().any(|h| h.on == "permission_requested") {
            capabilities.push(Capability::InterceptPermissions);
        }
        Manifest {
            name: "hooks".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "command hooks from the config ([[hooks]])".into(),
            capabilities,
            ui_only: false,
        }
    }

    fn register(&mut self, host: &mut dyn Host) -> Result<Registration, ExtError> {
        let mut subs: Vec<String> = self
            .hooks
            .iter()
            .filter(|h| h.on != "permission_requested")
            .map(|h| h.on.clone())
            .collect();
        subs.sort();
        subs.dedup();
        self.diagnostics(host);
        Ok(Registration {
            subscriptions: Some(subs),
            ..Registration::default()
        })
    }

    fn on_event(&mut self, event: &Event, host: &mut dyn Host) -> Result<(), ExtError> {
        let kind = event.body.kind();
        let call = match &event.body {
            EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
                Some(call.clone())
            }
            _ => None,
        };
        let cwd = host.session().cwd;
        let input = serde_json::to_vec(event).unwrap_or_default();
        for i in 0..self.hooks.len() {
            let h = &self.hooks[i];
            if h.on != kind || !h.wants(call.as_deref(), cwd.as_deref()) {
                continue;
            }
            let ran = h.run(&input);
            self.note(i, &ran, host);
        }
        self.diagnostics(host);
        Ok(())
    }

    fn on_permission(
        &mut self,
        ask: &PermissionAsk,
        host: &mut dyn Host,
    ) -> Result<Claim, ExtError> {
        let cwd = host.session().cwd;
        let input = serde_json::to_vec(&serde_json::json!({
            "type": "permission_requested",
            "request_id": ask.request_id,
            "call": &*ask.call,
            "options": ask.options,
        }))
        .unwrap_or_default();
        let mut claim = Claim::Pass;
        for i in 0..self.hooks.len() {
            let h = &self.hooks[i];
            if h.on != "permission_requested" || !h.wants(Some(&ask.call), cwd.as_deref()) {
                continue;
            }
            let ran = h.run(&input);
            // Exit 2 is an answer here, not a failure.
            let d = decision(ran.clone());
            if !matches!(d, Decision::Reject(_)) {
                self.note(i, &ran, host);
            } else {
                self.counts[i].runs += 1;
            }
            let (want, reason) = match d {
                Decision::NoOpinion => continue,
                Decision::Fault(why) => {
                    self.counts[i].last = Some(format!("no answer: {why}"));
                    continue;
                }
                Decision::Allow(r) => (OptionKind::AllowOnce, r),
                Decision::Reject(r) => (OptionKind::RejectOnce, r),
            };
            let Some(option) = ask.options.iter().find(|o| o.kind == want) else {
                self.counts[i].last = Some("the agent offered no such choice".into());
                continue;
            };
            self.counts[i].last = Some(format!(
                "{} {}{}",
                if want == OptionKind::AllowOnce {
                    "allowed"
                } else {
                    "rejected"
                },
                trellis_text::one_line(&ask.call.display_title()),
                if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                }
            ));
            host.respond_permission_because(&ask.request_id, &option.option_id, &reason)?;
            claim = Claim::Claim;
            break;
        }
        self.diagnostics(host);
        Ok(claim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(on: &str, run: &str) -> Hook {
        Hook {
            name: "hooks[0]".into(),
            on: on.into(),
            run: run.into(),
            kind: None,
            title: None,
            path: None,
            status: None,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn answers_from_exit_codes_and_stdout() {
        let d = |run: &str| decision(hook("x", run).run(b"{}"));
        assert_eq!(d("true"), Decision::NoOpinion);
        assert_eq!(
            d("echo no rm >&2; exit 2"),
            Decision::Reject("no rm".into())
        );
        // A script's colours and other controls are dropped: words only.
        assert_eq!(
            d(r"printf 'policy \033[31mno edits\033[0m \007' >&2; exit 2"),
            Decision::Reject("policy no edits".into())
        );
        assert_eq!(
            d(r#"echo '{"decision":"allow","reason":"fine"}'"#),
            Decision::Allow("fine".into())
        );
        assert!(matches!(d("echo maybe"), Decision::Fault(_)));
        assert!(matches!(d("exit 1"), Decision::Fault(_)));
        // Its stdin is the event.
        assert_eq!(
            d(r#"read l; [ "$l" = "{}" ] && echo '{"decision":"reject"}'"#),
            Decision::Reject(String::new())
        );
        let mut slow = hook("x", "sleep 5");
        slow.timeout = Duration::from_millis(200);
        let t = Instant::now();
        assert!(matches!(slow.run(b""), Ran::TimedOut(_)));
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    /// A hook that leaves a process of another session holding its output is given up on
    /// at its deadline: its answer is no answer, said in words, and the run returns.
    #[test]
    fn an_escaped_child_holding_the_output_is_abandoned_at_the_deadline() {
        let mut h = hook(
            "x",
            r#"setsid sleep 377.4242 & echo '{"decision":"allow"}'; sleep 0.2"#,
        );
        h.timeout = Duration::from_millis(800);
        let ran = h.run(b"{}");
        let Ran::TimedOut(why) = &ran else {
            panic!("{ran:?}")
        };
        assert!(why.contains("output stayed open"), "{why}");
        assert!(
            matches!(decision(ran), Decision::Fault(_)),
            "never an approval"
        );
        // What it left is this test's to end.
        let _ = Command::new("pkill")
            .args(["-f", "sleep 377.4242"])
            .status();
    }

    /// Output past the limit is read and dropped: a hook that writes a lot still ends.
    #[test]
    fn a_hook_writing_past_the_limit_is_not_blocked() {
        let ran = hook("x", "head -c 1000000 /dev/zero; echo done >&2").run(b"");
        let Ran::Exited {
            code,
            stdout,
            stderr,
        } = ran
        else {
            panic!("{ran:?}")
        };
        assert_eq!(code, Some(0));
        assert_eq!(stdout.len() as u64, OUTPUT_LIMIT);
        assert_eq!(stderr.trim(), "done");
    }
}
