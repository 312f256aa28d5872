//! `trellis serve`: a hub as a process of its own, and `trellis run --detach`, which
//! starts a session in one. Sessions there outlive the terminal that asked for them; they
//! are reached with `trellis ls`, `attach`, `approve`, `send`, `cancel` and `stop`, and
//! end the way quitting the UI ends them when the hub is stopped (SIGTERM, SIGINT,
//! SIGHUP).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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
    /// A hub that is already serving takes the listener now.
    #[arg(long, value_name = "ADDR", value_parser = listen_addr)]
    pub listen: Option<std::net::SocketAddr>,
    /// A host name the listener answers besides 127.0.0.1, [::1] and localhost (the name
    /// of a tunnel you run to it); requests naming any other host are refused, so a web
    /// page cannot reach the listener by making its own name resolve to this machine.
    #[arg(long, value_name = "NAME", requires = "listen", value_parser = host_name)]
    pub allow_host: Vec<String>,
    /// Stop the hub: every session in it closes as quitting the UI closes it, then the
    /// hub ends.
    #[arg(long, conflicts_with_all = ["detach", "listen"])]
    pub stop: bool,
    /// What every session started in the hub gets.
    #[command(flatten)]
    pub policy: crate::ui::PolicyArgs,
}

/// A name `--allow-host` takes: a DNS name, lowercased.
/// A `--listen` address: `IP:PORT`, or `localhost:PORT` for the loopback address (the
/// name a user types first; other names are not resolved: a listener's address is exact).
pub(crate) fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    if let Some(port) = s
        .strip_prefix("localhost:")
        .and_then(|p| p.parse::<u16>().ok())
    {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err("an address and a port: 127.0.0.1:PORT (or localhost:PORT, [::1]:PORT); port 0 picks a free one".into())
}

fn host_name(name: &str) -> Result<String, String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    #[cfg(not(feature = "listen"))]
    return Err(format!(
        "{name}: this build has no listener (cargo feature `listen`)"
    ));
    #[cfg(feature = "listen")]
    if trellis_hub::listen::valid_host_name(&name) {
        Ok(name)
    } else {
        Err("a host name is letters, digits, - and . (no port, no scheme)".into())
    }
}

/// What a hub's new sessions get: its `--permission`, `--plugin` and `--allow-drive`.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub permission: Option<String>,
    pub plugins: Vec<PathBuf>,
    pub allow_drive: bool,
}

impl Settings {
    fn of(ui: &crate::ui::PolicyArgs) -> anyhow::Result<Settings> {
        // Absolute, so the hub (started elsewhere, in the background) finds them.
        let abs = |p: &PathBuf| std::path::absolute(p).with_context(|| p.display().to_string());
        let permission = match &ui.permission {
            Some(p) if !["reject", "allow-once", "allow-reads", "rules"].contains(&p.as_str()) => {
                Some(abs(&PathBuf::from(p))?.to_string_lossy().into_owned())
            }
            p => p.clone(),
        };
        Ok(Settings {
            permission,
            plugins: ui.plugin.iter().map(abs).collect::<anyhow::Result<_>>()?,
            allow_drive: ui.allow_drive,
        })
    }

    /// Given on the command line at all.
    fn any(&self) -> bool {
        self.permission.is_some() || !self.plugins.is_empty() || self.allow_drive
    }

    /// The flags that give them to `trellis serve`.
    fn args(&self) -> Vec<std::ffi::OsString> {
        let mut out = Vec::new();
        if let Some(p) = &self.permission {
            out.extend(["--permission".into(), p.into()]);
        }
        for p in &self.plugins {
            out.extend(["--plugin".into(), p.clone().into_os_string()]);
        }
        if self.allow_drive {
            out.push("--allow-drive".into());
        }
        out
    }
}

/// `trellis serve`.
pub fn main(args: ServeArgs, config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    // What the hub has to say on its own goes where `trellis serve` says things.
    trellis_hub::notices::on_notice(|line| say!("trellis: {line}"));
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
    if args.stop {
        return stop(&args.name);
    }
    let settings = Settings::of(&args.policy)?;
    // A hub of that name serves already: it keeps its settings, and takes a listener.
    if let Some(info) = running(&args.name) {
        return already_serving(&args, &settings, &info);
    }
    if args.detach {
        let listen = args.listen.map(|a| (a, args.allow_host.clone()));
        let pid = start_detached(&args.name, config_path.as_deref(), listen, &settings)?;
        match pid {
            Some(pid) => {
                out!("hub {} serving in the background (pid {pid})", args.name);
                // The listener's address (a port 0 was chosen by the system).
                let log = runtime_dir()?.join(format!("{}.log", args.name));
                let said = std::fs::read_to_string(log).unwrap_or_default();
                if let Some(l) = said.lines().find(|l| l.contains("approvals page on")) {
                    out!("{}", safe(l.trim_start_matches("trellis: ")));
                }
            }
            None => {
                // Started meanwhile by another command: the same checks as above.
                if let Some(info) = running(&args.name) {
                    return already_serving(&args, &settings, &info);
                }
                out!("hub {} is already serving", args.name);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let config = crate::ui::load_config(config_path)?;
    let (policy, _) = crate::setup::policy_from(settings.permission.as_deref(), &config)?;
    let launch = crate::launch::Launch {
        config,
        permission: settings.permission.clone(),
        plugins: settings.plugins.clone(),
        allow_drive: settings.allow_drive,
        exit_after_first_frame: false,
    };
    let notify = crate::ui::notify_of(&launch.config);
    let dir = runtime_dir()?;
    let rt = crate::ui::runtime()?;
    let said = rt.block_on(async move {
        let mut deck = trellis_deck::Sessions::<trellis_deck::Headless>::empty();
        deck.notify = notify;
        deck.worktrees = Some(std::sync::Arc::new(crate::worktree_cmd::Ops));
        deck.settings = trellis_deck::HubSettings {
            policy: Some(match launch.permission {
                Some(_) => policy.describe(),
                // Without one, requests wait for someone to answer (approve, attach, a
                // phone), unless the config's rules decide.
                None => launch.policy(Vec::new())?.describe(),
            }),
            plugins: launch
                .plugins
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            allow_drive: launch.allow_drive,
        };
        let listen = args.listen.map(|addr| trellis_hub::serve::Listen {
            addr,
            store: token_store(),
            hosts: args.allow_host.clone(),
        });
        let served =
            trellis_hub::serve::serve_listening(&dir, &args.name, listen, Some(token_store()))
                .with_context(|| format!("cannot serve hub {}", args.name))?;
        say!(
            "trellis: hub {} serving on {} (pid {}); new sessions: permission policy {}",
            args.name,
            served.files.sock.display(),
            std::process::id(),
            deck.settings.policy.as_deref().unwrap_or("ask"),
        );
        if let Some(addr) = served.listening_on() {
            say!("trellis: approvals page on http://{addr} (trellis pair for a phone)");
        }
        deck.set_hub(served);
        if let Some((host, rx)) = launch.hub_host()? {
            deck.set_hub_wide(host, rx);
        }
        deck.opener = Some(crate::ui::opener(
            launch,
            crate::launch::Launch::open_headless,
        ));
        anyhow::Ok(trellis_deck::serve(deck).await?)
    })?;
    for line in said {
        say!("trellis: {}", safe(&line));
    }
    crate::traces::flush();
    Ok(ExitCode::SUCCESS)
}

/// What hub `name` says of itself, when it serves and answers.
fn running(name: &str) -> Option<trellis_hub::wire::HubInfo> {
    let dir = runtime_dir().ok()?;
    let files = HubFiles::new(&dir, name);
    if clear_if_stale(&files) {
        return None;
    }
    match trellis_hub::client::Client::connect(&files, "trellis serve")
        .and_then(|mut c| c.call(trellis_hub::wire::Op::List, None))
    {
        Ok(trellis_hub::wire::Body::Sessions { hub, .. }) => Some(hub),
        _ => None,
    }
}

/// `trellis serve` for a hub that serves already: it keeps the settings it was started
/// with (a different one asked for is an error, saying how to get it), and takes the
/// listener asked for.
fn already_serving(
    args: &ServeArgs,
    settings: &Settings,
    info: &trellis_hub::wire::HubInfo,
) -> anyhow::Result<ExitCode> {
    let name = &args.name;
    if info.kind != "serve" {
        anyhow::bail!(
            "{name} is the socket of a {} (pid {}), not a hub of its own: choose another --name",
            if info.kind == "run" {
                "headless run"
            } else {
                "UI"
            },
            info.pid
        );
    }
    let now = info.policy.as_deref().unwrap_or("ask");
    if settings.any() {
        let asked = settings
            .permission
            .clone()
            .unwrap_or_else(|| "(its default)".into());
        anyhow::bail!(
            "hub {name} is already serving (pid {}) with permission policy {now}{}: it keeps the settings it started with, so {asked} was not taken; stop it first (trellis serve --stop --name {name}) or start another (--name OTHER)",
            info.pid,
            if info.plugins.is_empty() {
                String::new()
            } else {
                format!(" and plugins {}", info.plugins.join(", "))
            },
        );
    }
    if let Some(addr) = args.listen {
        let mut c = crate::hub_cmd::client(name, "trellis serve --listen")?;
        match c.call(
            trellis_hub::wire::Op::Listen {
                addr: addr.to_string(),
                hosts: args.allow_host.clone(),
            },
            None,
        )? {
            trellis_hub::wire::Body::Listening { addr, already } => {
                if already {
                    out!("hub {name} listens already: approvals page on http://{addr}");
                } else {
                    out!("hub {name} now listens: approvals page on http://{addr}");
                }
                say!("trellis: trellis pair makes a code for a phone");
            }
            trellis_hub::wire::Body::Error { message, .. } => {
                anyhow::bail!("hub {name} took no listener: {}", safe(&message))
            }
            _ => anyhow::bail!("hub {name} answered something else"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "hub {name} is already serving (pid {}; permission policy {now}{})",
        info.pid,
        info.listening
            .as_deref()
            .map(|a| format!("; approvals page on http://{a}"))
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// How long `--stop` waits for the hub to end.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// `trellis serve --stop`: the hub closes its sessions and ends; waits until it has.
fn stop(name: &str) -> anyhow::Result<ExitCode> {
    let dir = runtime_dir()?;
    let files = HubFiles::new(&dir, name);
    let Some(info) = running(name) else {
        anyhow::bail!("no hub {name} is serving (trellis ls lists what runs)");
    };
    let mut c = crate::hub_cmd::client(name, "trellis serve --stop")?;
    match c.call(trellis_hub::wire::Op::Shutdown, None) {
        Ok(trellis_hub::wire::Body::Done { said }) => out!("hub {name}: {}", safe(&said)),
        Ok(trellis_hub::wire::Body::Error { message, .. }) => {
            anyhow::bail!("hub {name} was not stopped: {}", safe(&message))
        }
        Ok(_) => anyhow::bail!("hub {name} answered something else"),
        // Gone before its answer reached us (it was ending): whether it ended is what
        // the wait below finds out.
        Err(_) => {}
    }
    let until = Instant::now() + STOP_WAIT;
    while trellis_os::alive(info.pid) && !clear_if_stale(&files) {
        if Instant::now() > until {
            anyhow::bail!(
                "hub {name} (pid {}) did not end within {} s",
                info.pid,
                STOP_WAIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out!("hub {name} stopped");
    Ok(ExitCode::SUCCESS)
}

/// Whether hub `name` is alive and answers.
fn answers(files: &HubFiles) -> bool {
    trellis_hub::client::Client::connect(files, "trellis serve")
        .and_then(|mut c| c.call(trellis_hub::wire::Op::List, None))
        .is_ok()
}

mod detach;
pub use detach::{Detached, detachable, run_detached, start_detached};

/// Where the listener's tokens are kept.
pub fn token_store() -> trellis_hub::tokens::Store {
    let dir = trellis_store::Paths::from_env()
        .map(|p| p.data_dir)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("trellis-{}", trellis_os::uid())));
    trellis_hub::tokens::Store::new(dir.join("tokens.json"))
}

/// The names of `flags` that were given (a flag and whether it was).
pub(crate) fn given<'a>(flags: &[(&'a str, bool)]) -> Vec<&'a str> {
    flags
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_listen_address_may_say_localhost_but_no_other_name() {
        use super::listen_addr;
        assert_eq!(
            listen_addr("localhost:8700").unwrap().to_string(),
            "127.0.0.1:8700"
        );
        assert_eq!(listen_addr("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert_eq!(listen_addr("0.0.0.0:9").unwrap().to_string(), "0.0.0.0:9");
        for bad in ["example.com:80", "localhost", "localhost:99999", ":80", ""] {
            assert!(listen_addr(bad).is_err(), "{bad}");
        }
    }
}
