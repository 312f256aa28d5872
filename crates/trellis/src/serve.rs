//! `trellis serve`: a hub as a process of its own, and `trellis run --detach`, which
//! starts a session in one. Sessions there outlive the terminal that asked for them; they
//! are reached with `trellis ls`, `attach`, `approve`, `send`, `cancel` and `stop`, and
//! end the way quitting the UI ends them when the hub is stopped (SIGTERM, SIGINT,
//! SIGHUP).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use std::os::unix::fs::OpenOptionsExt;

use anyhow::Context;
use trellis_hub::place::{HubFiles, clear_if_stale, runtime_dir, valid_name};

use crate::output::safe;

/// The hub `trellis run --detach` uses when none is named.
pub const DEFAULT_HUB: &str = "default";

/// How long `--detach` waits for the new hub to answer.
const START_WAIT: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The hub's name (letters, digits, `-`, `_`): `trellis ls` shows sessions as
    /// NAME:KEY, and `trellis run --detach --hub NAME` starts sessions in it.
    #[arg(long, default_value = DEFAULT_HUB)]
    pub name: String,
    /// Start the hub in the background (its own session, no terminal) and return once
    /// it answers; its messages go to NAME.log beside its socket.
    #[arg(long)]
    pub detach: bool,
}

/// `trellis serve`.
pub fn main(
    args: ServeArgs,
    ui: crate::ui::UiArgs,
    config_path: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !valid_name(&args.name) {
        anyhow::bail!(
            "{}: a hub's name is letters, digits, - and _",
            safe(&args.name)
        );
    }
    if args.detach {
        let pid = start_detached(&args.name, config_path.as_deref())?;
        match pid {
            Some(pid) => println!("hub {} serving in the background (pid {pid})", args.name),
            None => println!("hub {} is already serving", args.name),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let config = crate::ui::load_config(config_path)?;
    let launch = crate::launch::Launch {
        config,
        permission: ui.permission.clone(),
        plugins: ui.plugin.clone(),
        allow_drive: ui.allow_drive,
        exit_after_first_frame: false,
    };
    let notify = crate::ui::notify_of(&launch.config);
    let dir = runtime_dir()?;
    let rt = crate::ui::runtime()?;
    let said = rt.block_on(async move {
        let mut deck = trellis_tui::deck::Deck::empty();
        deck.notify = notify;
        deck.worktrees = Some(Box::new(crate::worktree_cmd::Ops));
        let served = trellis_hub::serve::serve(&dir, &args.name)
            .with_context(|| format!("cannot serve hub {}", args.name))?;
        eprintln!(
            "trellis: hub {} serving on {} (pid {})",
            args.name,
            served.files.sock.display(),
            std::process::id()
        );
        deck.hub = Some(served);
        deck.opener = Some(crate::ui::opener(launch));
        anyhow::Ok(trellis_tui::serve_deck(deck).await?)
    })?;
    for line in said {
        eprintln!("trellis: {}", safe(&line));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether hub `name` is alive and answers.
fn answers(files: &HubFiles) -> bool {
    trellis_hub::client::Client::connect(files, "trellis serve")
        .and_then(|mut c| c.call(trellis_hub::wire::Op::List, None))
        .is_ok()
}

/// Starts hub `name` in the background unless it already serves: `Some(pid)` of the new
/// one, once it answers on its socket.
pub fn start_detached(name: &str, config: Option<&std::path::Path>) -> anyhow::Result<Option<u32>> {
    let dir = runtime_dir()?;
    let files = HubFiles::new(&dir, name);
    if !clear_if_stale(&files) && answers(&files) {
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
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("serve")
        .arg("--name")
        .arg(name)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err);
    // Asked to outlive this process and its terminal.
    trellis_os::priority::detach(&mut cmd);
    let mut child = cmd.spawn().context("cannot start the hub")?;
    let pid = child.id();
    let until = Instant::now() + START_WAIT;
    loop {
        if answers(&files) {
            // Not waited for: it outlives this command (init reaps it in the end).
            drop(child);
            return Ok(Some(pid));
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            anyhow::bail!(
                "the hub exited ({status}): {}",
                safe(said.lines().last().unwrap_or("no message"))
            );
        }
        if Instant::now() > until {
            anyhow::bail!(
                "the hub did not answer within {}s (see {})",
                START_WAIT.as_secs(),
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What `trellis run --detach` starts.
pub struct Detached {
    pub hub: String,
    pub agent: String,
    pub cwd: PathBuf,
    pub worktree: bool,
    pub prompt: String,
}

/// `trellis run --detach`: the session starts in a hub (started in the background when
/// none serves) and this command returns at once, naming it.
pub fn run_detached(d: Detached, config: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    if !valid_name(&d.hub) {
        anyhow::bail!("{}: a hub's name is letters, digits, - and _", safe(&d.hub));
    }
    start_detached(&d.hub, config)?;
    let cwd = std::path::absolute(&d.cwd).with_context(|| format!("{}", d.cwd.display()))?;
    if !cwd.is_dir() {
        anyhow::bail!("{}: not a directory", cwd.display());
    }
    let mut c = crate::hub_cmd::client(&d.hub, "trellis run --detach")?;
    let body = c.call(
        trellis_hub::wire::Op::New {
            agent: d.agent,
            cwd: cwd.to_string_lossy().into_owned(),
            worktree: d.worktree,
            prompt: Some(d.prompt),
        },
        Some(crate::hub_cmd::operation_id()),
    )?;
    match body {
        trellis_hub::wire::Body::Started { session, said } => {
            for line in said {
                eprintln!("trellis: {}", safe(&line));
            }
            println!("{}:{session}", d.hub);
            eprintln!(
                "trellis: the session runs in hub {h}: trellis attach {h}:{session} (trellis ls lists it)",
                h = d.hub
            );
            Ok(ExitCode::SUCCESS)
        }
        trellis_hub::wire::Body::Error { code, message } => {
            eprintln!("trellis: {}: {}", safe(&code), safe(&message));
            Ok(ExitCode::from(1))
        }
        _ => anyhow::bail!("the hub answered something else"),
    }
}
