//! A hub in the background: started detached (its own session, no terminal) and waited
//! for until it answers, and the commands that hand it a session (`trellis --detachable`,
//! `trellis run --detach`, a fork into the hub).

use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

use trellis_hub::place::{HubFiles, clear_if_stale, runtime_dir, valid_name};

use super::{DEFAULT_HUB, START_WAIT, Settings, answers, given};
use crate::output::safe;

/// Starts hub `name` in the background unless it already serves: `Some(pid)` of the new
/// one, once it answers on its socket. `settings`: what its sessions get.
pub fn start_detached(
    name: &str,
    config: Option<&std::path::Path>,
    listen: Option<(std::net::SocketAddr, Vec<String>)>,
    settings: &Settings,
) -> anyhow::Result<Option<u32>> {
    let dir = runtime_dir()?;
    let files = HubFiles::new(&dir, name);
    if !clear_if_stale(&files) && answers(&files) {
        return Ok(None);
    }
    // One starter at a time (two `run --detach` at once): the second finds the first's
    // hub answering once it may go on. The file goes when its starter is done.
    let starting = Starting::take(&dir.join(format!("{name}.starting")))
        .with_context(|| format!("cannot start hub {name}"))?;
    if answers(&files) {
        return Ok(None);
    }
    // Its messages go to a file made for it, in the private directory.
    let log = dir.join(format!("{name}.log"));
    match std::fs::remove_file(&log) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("{}", log.display())),
    }
    let err = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&log)
        .with_context(|| format!("{}", log.display()))?;
    let exe = std::env::current_exe().context("cannot find the trellis executable")?;
    let mut cmd = std::process::Command::new(exe);
    // A config that is not there (the default path, unwritten) is the hub's default too.
    if let Some(c) = config.filter(|c| c.is_file()) {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("serve").arg("--name").arg(name);
    if let Some((a, hosts)) = listen {
        cmd.arg("--listen").arg(a.to_string());
        for h in hosts {
            cmd.arg("--allow-host").arg(h);
        }
    }
    cmd.args(settings.args());
    // The hub exports its sessions' traces where this process would.
    crate::traces::hand_on(&mut cmd);
    // A hub of this one's own dials its agents with the same secrets.
    for (k, v) in trellis_store::config::taken_secrets() {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err);
    // Asked to outlive this process and its terminal.
    trellis_os::priority::detach(&mut cmd);
    let mut child = cmd.spawn().context("cannot start the hub")?;
    let pid = child.id();
    let until = Instant::now() + START_WAIT;
    let started = loop {
        if answers(&files) {
            // Not waited for: it outlives this command (init reaps it in the end).
            drop(child);
            break Ok(Some(pid));
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            break Err(anyhow::anyhow!(
                "the hub exited ({status}): {}",
                safe(said.lines().last().unwrap_or("no message"))
            ));
        }
        if Instant::now() > until {
            break Err(anyhow::anyhow!(
                "the hub did not answer within {}s (see {})",
                START_WAIT.as_secs(),
                log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(starting);
    started
}

/// The lock a hub's starter holds while it starts one (`NAME.starting`, beside its
/// socket): taken on the file that is at the path (a starter that finished meanwhile
/// removed the one waited on), removed by its holder when done.
struct Starting {
    file: std::fs::File,
    path: PathBuf,
}

impl Starting {
    fn take(path: &std::path::Path) -> std::io::Result<Starting> {
        use std::os::unix::fs::MetadataExt;
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)?;
            file.lock()?;
            let held = file.metadata()?;
            match std::fs::symlink_metadata(path) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    return Ok(Starting {
                        file,
                        path: path.to_path_buf(),
                    });
                }
                // Removed (or replaced) by the starter before: take the one there now.
                _ => continue,
            }
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// What `trellis run --detach` starts.
pub struct Detached {
    pub hub: String,
    pub agent: String,
    /// None: the agent's own default (the demo's scratch workspace).
    pub cwd: Option<PathBuf>,
    pub worktree: bool,
    /// The worktree's label (none: one made up).
    pub worktree_label: Option<String>,
    /// Sent once the agent is ready (none: the session waits for one).
    pub prompt: Option<String>,
    /// A fork of an earlier session, before its turn (none: after the last).
    pub fork: Option<(String, Option<u32>)>,
}

/// This directory, as a hub records where its session was asked for.
fn here() -> Option<String> {
    std::env::current_dir()
        .ok()
        .map(|d| d.to_string_lossy().into_owned())
}

/// `trellis run --detach`: the session starts in a hub (started in the background when
/// none serves) and this command returns at once, naming it.
pub fn run_detached(d: Detached, config: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    if !valid_name(&d.hub) {
        anyhow::bail!("{}: a hub's name is letters, digits, - and _", safe(&d.hub));
    }
    let cwd = match &d.cwd {
        Some(c) => {
            let cwd = std::path::absolute(c).with_context(|| format!("{}", c.display()))?;
            if !cwd.is_dir() {
                anyhow::bail!("{}: not a directory", cwd.display());
            }
            Some(cwd.to_string_lossy().into_owned())
        }
        None => None,
    };
    if let Some(pid) = start_detached(&d.hub, config, None, &Settings::default())? {
        // A hub started for this session is said where the user looks (a typo in --hub
        // starts a hub of that name).
        say!(
            "trellis: started hub {} in the background (pid {pid}; trellis serve --stop --name {} stops it)",
            d.hub,
            d.hub
        );
    }
    let mut c = crate::hub_cmd::client(&d.hub, "trellis run --detach")?;
    let body = c.call(
        trellis_hub::wire::Op::New {
            agent: d.agent,
            cwd,
            worktree: d.worktree,
            worktree_label: d.worktree_label,
            prompt: d.prompt,
            launched_in: here(),
            fork: d
                .fork
                .map(|(session, at)| trellis_hub::wire::ForkOf { session, at }),
        },
        Some(crate::hub_cmd::operation_id()),
    )?;
    match body {
        trellis_hub::wire::Body::Started { session, said } => {
            for line in said {
                say!("trellis: {}", safe(&line));
            }
            out!("{}:{session}", d.hub);
            say!(
                "trellis: the session runs in hub {h}: trellis attach {h}:{session} (trellis ls lists it)",
                h = d.hub
            );
            Ok(ExitCode::SUCCESS)
        }
        trellis_hub::wire::Body::Error { code, message } => {
            say!("trellis: {}: {}", safe(&code), safe(&message));
            Ok(ExitCode::from(1))
        }
        _ => anyhow::bail!("the hub answered something else"),
    }
}

/// `trellis --detachable`: the session starts in the default hub (started in the
/// background when none serves) and this terminal attaches to it.
pub fn detachable(
    ui: &crate::session_args::UiArgs,
    config_path: Option<PathBuf>,
    demo: bool,
) -> anyhow::Result<ExitCode> {
    if ui.load.is_some() {
        anyhow::bail!(
            "--detachable starts a new session in a hub: --load not taken (load a session without --detachable)"
        );
    }
    let refused = given(&[
        ("--permission", ui.policy.permission.is_some()),
        ("--plugin", !ui.policy.plugin.is_empty()),
        ("--allow-drive", ui.policy.allow_drive),
    ]);
    if !refused.is_empty() {
        anyhow::bail!(
            "--detachable starts the session in a hub, which decides with its own settings: {} not taken (start the hub with them — trellis serve --detach and the same flags — or run without --detachable)",
            refused.join(", ")
        );
    }
    if ui.worktree.as_ref().is_some_and(|w| w.label.is_some()) {
        anyhow::bail!("--detachable makes the worktree's label itself: --worktree without one");
    }
    let config = crate::ui::load_config(config_path.clone())?;
    let agent = match ui.one_agent()? {
        Some(a) => a,
        None if demo => "demo".into(),
        None => config
            .default_agent
            .clone()
            .unwrap_or_else(|| "demo".into()),
    };
    crate::agents::check(&agent, &config)?;
    // The demo without --cwd plays in a scratch workspace of its own (with --worktree,
    // in a worktree of this directory); any other agent works here.
    let cwd = match &ui.cwd {
        None if agent == "demo" && ui.worktree.is_none() => None,
        c => {
            let cwd = std::path::absolute(c.clone().unwrap_or_else(|| PathBuf::from(".")))?;
            if !cwd.is_dir() {
                anyhow::bail!("{}: not a directory", cwd.display());
            }
            Some(cwd)
        }
    };
    start_detached(
        DEFAULT_HUB,
        config_path.as_deref(),
        None,
        &Settings::default(),
    )?;
    let mut c = crate::hub_cmd::client(DEFAULT_HUB, "trellis --detachable")?;
    let key = match c.call(
        trellis_hub::wire::Op::New {
            agent,
            cwd: cwd.map(|c| c.to_string_lossy().into_owned()),
            worktree: ui.worktree.is_some(),
            worktree_label: None,
            prompt: None,
            launched_in: here(),
            fork: None,
        },
        Some(crate::hub_cmd::operation_id()),
    )? {
        trellis_hub::wire::Body::Started { session, said } => {
            for line in said {
                say!("trellis: {}", safe(&line));
            }
            session
        }
        trellis_hub::wire::Body::Error { code, message } => {
            anyhow::bail!("{}: {}", safe(&code), safe(&message))
        }
        _ => anyhow::bail!("the hub answered something else"),
    };
    crate::attach::main(
        crate::attach::AttachArgs {
            session: Some(format!("{DEFAULT_HUB}:{key}")),
            observe: false,
            take: false,
        },
        config_path,
    )
}
