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
    /// Also serve the approvals page and its calls on this loopback address
    /// (`127.0.0.1:PORT`; port 0 picks one): for a phone through `ssh -L` or a tunnel you
    /// run. Tokens only (`trellis pair`, `trellis token new`); other addresses are refused.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
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
    if let Some(a) = args.listen
        && !a.ip().is_loopback()
    {
        anyhow::bail!(
            "--listen {a}: loopback addresses only (127.0.0.1, ::1); reach it from elsewhere through ssh -L or a tunnel you run"
        );
    }
    if args.detach {
        let pid = start_detached(&args.name, config_path.as_deref(), args.listen)?;
        match pid {
            Some(pid) => {
                println!("hub {} serving in the background (pid {pid})", args.name);
                // The listener's address (a port 0 was chosen by the system).
                let log = runtime_dir()?.join(format!("{}.log", args.name));
                let said = std::fs::read_to_string(log).unwrap_or_default();
                if let Some(l) = said.lines().find(|l| l.contains("approvals page on")) {
                    println!("{}", safe(l.trim_start_matches("trellis: ")));
                }
            }
            None if args.listen.is_some() => anyhow::bail!(
                "hub {} is already serving: --listen applies to a hub it starts (trellis serve --name OTHER --listen …)",
                args.name
            ),
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
        deck.worktrees = Some(std::sync::Arc::new(crate::worktree_cmd::Ops));
        let listen = args.listen.map(|a| (a, token_store()));
        let served = trellis_hub::serve::serve_listening(&dir, &args.name, listen)
            .with_context(|| format!("cannot serve hub {}", args.name))?;
        eprintln!(
            "trellis: hub {} serving on {} (pid {})",
            args.name,
            served.files.sock.display(),
            std::process::id()
        );
        if let Some(l) = &served.listening {
            eprintln!(
                "trellis: approvals page on http://{} (trellis pair --hub {} for a phone)",
                l.addr, args.name
            );
        }
        deck.set_hub(served);
        if let Some((host, rx)) = launch.hub_host()? {
            deck.set_hub_wide(host, rx);
        }
        deck.opener = Some(crate::ui::opener(launch));
        anyhow::Ok(trellis_tui::serve_deck(deck).await?)
    })?;
    for line in said {
        eprintln!("trellis: {}", safe(&line));
    }
    crate::traces::flush();
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
pub fn start_detached(
    name: &str,
    config: Option<&std::path::Path>,
    listen: Option<std::net::SocketAddr>,
) -> anyhow::Result<Option<u32>> {
    let dir = runtime_dir()?;
    let files = HubFiles::new(&dir, name);
    if !clear_if_stale(&files) && answers(&files) {
        return Ok(None);
    }
    // One starter at a time (two `run --detach` at once): the second finds the first's
    // hub answering once it may go on.
    let spawn_lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(format!("{name}.starting")))
        .with_context(|| format!("cannot start hub {name}"))?;
    spawn_lock.lock()?;
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
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("serve").arg("--name").arg(name);
    if let Some(a) = listen {
        cmd.arg("--listen").arg(a.to_string());
    }
    cmd.stdin(std::process::Stdio::null())
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
    start_detached(&d.hub, config, None)?;
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

/// `trellis --detachable`: the session starts in the default hub (started in the
/// background when none serves) and this terminal attaches to it.
pub fn detachable(
    ui: &crate::ui::UiArgs,
    config_path: Option<PathBuf>,
    demo: bool,
) -> anyhow::Result<ExitCode> {
    let refused = given(&[
        ("--permission", ui.permission.is_some()),
        ("--plugin", !ui.plugin.is_empty()),
        ("--load", ui.load.is_some()),
        ("--allow-drive", ui.allow_drive),
    ]);
    if !refused.is_empty() {
        anyhow::bail!(
            "--detachable starts the session in a hub, which decides with its own settings: {} not taken (give them to trellis serve)",
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
    let cwd = std::path::absolute(ui.cwd.clone().unwrap_or_else(|| PathBuf::from(".")))?;
    if !cwd.is_dir() {
        anyhow::bail!("{}: not a directory", cwd.display());
    }
    start_detached(DEFAULT_HUB, config_path.as_deref(), None)?;
    let mut c = crate::hub_cmd::client(DEFAULT_HUB, "trellis --detachable")?;
    let key = match c.call(
        trellis_hub::wire::Op::New {
            agent,
            cwd: cwd.to_string_lossy().into_owned(),
            worktree: ui.worktree.is_some(),
            prompt: None,
        },
        Some(crate::hub_cmd::operation_id()),
    )? {
        trellis_hub::wire::Body::Started { session, said } => {
            for line in said {
                eprintln!("trellis: {}", safe(&line));
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

/// Where the listener's tokens are kept.
pub fn token_store() -> trellis_hub::tokens::Store {
    let dir = trellis_store::Paths::from_env()
        .map(|p| p.data_dir)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("trellis-{}", trellis_os::uid())));
    trellis_hub::tokens::Store::new(dir.join("tokens.json"))
}

#[derive(clap::Subcommand)]
pub enum TokenCmd {
    /// Make a token (shown once): `--scope` read, prompt, approve or admin (may repeat).
    New {
        #[arg(long)]
        label: String,
        #[arg(long = "scope", value_name = "SCOPE", default_value = "approve")]
        scopes: Vec<String>,
        /// How long it lives (`30d`, `12h`, `90m`; `never`).
        #[arg(long, default_value = "30d")]
        ttl: String,
    },
    /// The tokens there are (never the tokens themselves).
    List,
    /// Revoke a token by id or label: refused from the next request on.
    Revoke { id_or_label: String },
}

fn ttl_of(s: &str) -> anyhow::Result<Option<Duration>> {
    if s == "never" {
        return Ok(None);
    }
    let (n, unit) = s.split_at(s.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = n
        .parse()
        .map_err(|_| anyhow::anyhow!("--ttl {s}: a number and d, h or m (or never)"))?;
    let secs = match unit {
        "d" => n * 86_400,
        "h" => n * 3_600,
        "m" => n * 60,
        _ => anyhow::bail!("--ttl {s}: a number and d, h or m (or never)"),
    };
    Ok(Some(Duration::from_secs(secs)))
}

/// `trellis token new|list|revoke`.
pub fn token(cmd: TokenCmd) -> anyhow::Result<ExitCode> {
    use trellis_hub::tokens::Scope;
    let store = token_store();
    match cmd {
        TokenCmd::New { label, scopes, ttl } => {
            let label = trellis_text::one_line(&label).trim().to_string();
            if label.is_empty() || label.len() > 64 {
                anyhow::bail!("--label: one line of 1 to 64 characters");
            }
            let scopes = scopes
                .iter()
                .map(|s| {
                    Scope::parse(s).ok_or_else(|| {
                        anyhow::anyhow!("--scope {s}: one of read, prompt, approve, admin")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (t, secret) = store.mint(&label, &scopes, ttl_of(&ttl)?)?;
            println!("{secret}");
            eprintln!(
                "trellis: token {} ({}) made; it is shown only now. Send it as Authorization: Bearer …, never in a URL.",
                t.id, t.label
            );
        }
        TokenCmd::List => {
            let now = trellis_hub::tokens::now();
            for t in store.list()? {
                let scopes: Vec<&str> = t.scopes.iter().map(|s| s.name()).collect();
                let life = match t.expires {
                    None => "never expires".to_string(),
                    Some(e) if e <= now => "expired".to_string(),
                    Some(e) => format!("expires in {}h", (e - now) / 3600),
                };
                println!(
                    "{}  {:<24} {:<20} {life}",
                    t.id,
                    safe(&t.label),
                    scopes.join(",")
                );
            }
        }
        TokenCmd::Revoke { id_or_label } => match store.revoke(&id_or_label)? {
            0 => anyhow::bail!("no token {}", safe(&id_or_label)),
            n => println!("revoked {n} token(s)"),
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// `trellis pair`: a single-use code from the hub's listener, as an address and a QR
/// code to open on a phone.
pub fn pair(hub: &str) -> anyhow::Result<ExitCode> {
    let mut c = crate::hub_cmd::client(hub, "trellis pair")
        .with_context(|| format!("no hub {hub} (trellis serve --listen 127.0.0.1:PORT)"))?;
    match c.call(trellis_hub::wire::Op::Pair, None)? {
        trellis_hub::wire::Body::Paired { url, expires_s } => {
            let qr = qrcode::QrCode::new(url.as_bytes())?;
            let art = qr
                .render::<qrcode::render::unicode::Dense1x2>()
                .quiet_zone(true)
                .build();
            println!("{art}");
            println!("{url}");
            eprintln!(
                "trellis: open it on the phone within {} minutes (once); the address is this machine's loopback: reach it through ssh -L or a tunnel you run",
                expires_s / 60
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

/// The names of `flags` that were given (a flag and whether it was).
pub(crate) fn given<'a>(flags: &[(&'a str, bool)]) -> Vec<&'a str> {
    flags
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect()
}
