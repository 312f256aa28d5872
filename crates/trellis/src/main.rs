//! `trellis`: the command-line entry point.
// Every print goes through `say!`/`out!` below, which never panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// `eprintln!` that never panics. A closed or full stderr (`2>&1 | head`) loses the line,
/// never the command: `eprintln!` panics there, and a panic mid-way (exit 101) leaves
/// what the command was doing — a worktree's ending, a session's close — half done.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `eprint!` that never panics (see [`say!`]).
macro_rules! say_part {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}

/// `println!` that never panics: a closed stdout (`| head -1`) stops nothing half way.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `print!` that never panics (see [`out!`]).
macro_rules! out_part {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

#[cfg(feature = "listen")]
mod agent_serve;
mod agents;
#[cfg(feature = "registry")]
mod agents_cmd;
mod answers;
mod artifacts;
mod attach;
mod budgets;
mod builtin_agents;
mod checkpoints;
mod fan;
mod fork;
mod headless;
mod hooks;
mod hub_cmd;
mod launch;
mod log_export;
mod output;
mod pairing;
mod plugin_cmd;
mod plugin_test;
mod project_hooks;
mod registry_agents;
mod run;
mod run_hub;
mod scaffold;
mod serve;
mod session_args;
mod sessions;
mod setup;
mod stats;
mod traces;
mod ui;
mod ui_config;
mod worktree_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The per-update path allocates and frees many small strings; mimalloc keeps that and
/// the page-fault churn of a growing heap cheaper than the system allocator (measured in
/// `benches/headless.rs`). It is built without transparent huge pages (`no_thp`): with
/// them it asks the kernel for 2 MiB pages, and a partly used one is resident whole. At
/// 1,000,000 calls that was a third of the UI's peak (89–121 MB, against 65–74 MB
/// without), for no gain in speed.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "trellis",
    version,
    about = "A fast terminal client for ACP coding agents"
)]
struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/trellis/config.toml; one named here must
    /// exist).
    #[arg(long, global = true, value_parser = existing_file)]
    config: Option<PathBuf>,
    #[command(flatten)]
    session: SessionCli,
    /// Without a command: the full-screen UI on the configured agent (else the demo).
    #[command(subcommand)]
    command: Option<Cmd>,
}

/// A session in the UI: `trellis` and `trellis demo`.
#[derive(clap::Args, Default)]
struct SessionCli {
    #[command(flatten)]
    ui: ui::UiArgs,
    /// With --worktree: copy the uncommitted work of the source (changes to tracked
    /// files, untracked files) into the new worktree; the source is left as it is.
    #[arg(long)]
    carry: bool,
    /// Run the session in a hub of its own (`trellis serve`, started in the background
    /// when none serves) and show it here: quitting leaves it running, `trellis attach`
    /// comes back to it.
    #[arg(long)]
    detachable: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// The full-screen UI on the built-in demo agent.
    Demo(SessionCli),
    /// A recorded session (Trellis log or ACP fixture) in the UI, without an agent.
    Replay {
        file: PathBuf,
        /// Open the inspector on this call.
        #[arg(long)]
        call: Option<String>,
        /// Quit after the first frame (for the startup benchmark).
        #[arg(long, hide = true)]
        exit_after_first_frame: bool,
    },
    /// Run one prompt headless and stream what happens.
    Run(Box<run::RunArgs>),
    /// The same prompt to N sessions at once, each in a new worktree, side by side in the
    /// UI (Alt-c compares them, from git, and lands one): `trellis fan 3 [--agent A]… PROMPT`.
    Fan(fan::FanArgs),
    /// Session logs.
    Log {
        #[command(subcommand)]
        command: LogCmd,
    },
    /// Past sessions: list, search, show, export, rm, reindex.
    Sessions {
        #[command(subcommand)]
        command: sessions::SessionsCmd,
    },
    /// A hub of its own, without a terminal: sessions started in it (`trellis run
    /// --detach`) outlive the terminal that asked for them; reach them with `trellis
    /// ls`, `attach`, `approve`, `send`, `cancel`, `stop`. SIGTERM ends them all.
    Serve(serve::ServeArgs),
    /// A project's own command hooks (`.trellis/hooks.toml`): trust them as they are, or
    /// forget them.
    Hooks {
        #[command(subcommand)]
        command: project_hooks::HooksCmd,
    },
    /// Tokens for a hub's loopback listener (`trellis serve --listen`) and for `trellis
    /// agent serve` (scope agent): new, list, revoke.
    Token {
        #[command(subcommand)]
        command: pairing::TokenCmd,
    },
    /// A single-use pairing code for a phone: the approvals page's address as a QR code
    /// (from the hub that listens: `trellis serve --listen`).
    Pair {
        /// The hub whose listener to use (default: the one that listens).
        #[arg(long)]
        hub: Option<String>,
    },
    /// Every session of every running Trellis of yours, those that need you first.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// The full UI on a running session of a hub (`trellis ls`): its history as if it
    /// had been open here, then live; quitting leaves it running.
    Attach(attach::AttachArgs),
    /// Queue a prompt in a running session (HUB:KEY from `trellis ls`, KEY, or an ACP
    /// session id's first characters).
    Send { session: String, prompt: String },
    /// Cancel a running session's turn.
    Cancel { session: String },
    /// End a running session (as closing it in its UI does).
    Stop { session: String },
    /// Answer the pending permission requests of every running session from this terminal,
    /// once each: a one-time answer by its number, or an "always" answer (`aN`), shown with
    /// the rule it saves and asked where it goes (session, project, global) before saving.
    Approve {
        /// Wait for more requests instead of ending when none is left.
        #[arg(long)]
        wait: bool,
    },
    /// Worktrees Trellis made for sessions: list, land, sync, apply, keep, discard.
    Worktree {
        #[command(subcommand)]
        command: worktree_cmd::WorktreeCmd,
    },
    /// Extensions: what is installed, enabled and granted (the `/status` view).
    Status {
        /// Print the report as JSON (the `status` event of headless runs).
        #[arg(long)]
        json: bool,
    },
    /// Plugins: new, validate, try, install, list, enable, disable, remove, test.
    Plugin {
        #[command(subcommand)]
        command: plugin_cmd::PluginCmd,
    },
    /// Agents of the ACP Registry (`[registry] url`, the public one by default): list,
    /// info.
    #[cfg(feature = "registry")]
    Agents {
        #[command(subcommand)]
        command: agents_cmd::AgentsCmd,
    },
    /// Built-in ACP agents (they speak ACP on stdin/stdout).
    Agent {
        #[command(subcommand)]
        command: builtin_agents::AgentCmd,
    },
    /// Print a shell completion script (e.g. `trellis completions bash > ~/.local/share/bash-completion/completions/trellis`).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff), e.g. `trellis man | man -l -`.
    Man,
}

#[derive(Subcommand)]
enum LogCmd {
    /// Rebuild a session from its log (or a recorded fixture) and print it.
    Show { file: PathBuf },
    /// The session's spans (OpenTelemetry), made from its log: as an OTLP JSON file, or
    /// sent to a collector; the same spans a live export sent.
    Export(log_export::ExportArgs),
}

/// A `--config` given by name: a file that is there (a typo is said, never an empty
/// config taken in silence).
fn existing_file(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_file() => Ok(p),
        Ok(_) => Err("not a file".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `trellis agents list|info`, which only print.
#[cfg(feature = "registry")]
fn lists_agents(cmd: Option<&Cmd>) -> bool {
    matches!(
        cmd,
        Some(Cmd::Agents {
            command: agents_cmd::AgentsCmd::List { .. } | agents_cmd::AgentsCmd::Info { .. }
        })
    )
}

/// No `trellis agents` in a build without the registry.
#[cfg(not(feature = "registry"))]
fn lists_agents(_cmd: Option<&Cmd>) -> bool {
    false
}

/// Takes the secrets that the config's agents elsewhere read from the environment
/// (`token = { env = "…" }`) out of it, so that no process Trellis starts inherits them —
/// an agent's commands, a hook, a plugin — and keeps them for dialing. A config that
/// cannot be read is said later, where it is used.
fn take_secrets(config: Option<PathBuf>) {
    let Ok(config) = ui::load_config(config) else {
        return;
    };
    let names = config.secret_env_names();
    if names.is_empty() {
        return;
    }
    let taken = trellis_os::env::forget_names(&names)
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    trellis_store::config::keep_taken_secrets(taken);
}

fn main() -> ExitCode {
    // Before any thread: the collector's settings are read, then kept from every process
    // Trellis starts.
    traces::take_env();
    let cli = Cli::parse();
    // Still before any thread: the secrets agents elsewhere take from the environment.
    take_secrets(cli.config.clone());
    // The client commands start agents and terminals: whatever those leave behind (a
    // daemon, a `setsid` child) is reparented to us and stopped when we end.
    // A hub started in the background (`--detach`) outlives this command.
    let detaching = match &cli.command {
        Some(Cmd::Run(a)) => a.detach,
        Some(Cmd::Serve(a)) => a.detach,
        None => cli.session.detachable,
        Some(Cmd::Demo(s)) => s.detachable,
        _ => false,
    };
    let client = !detaching
        && matches!(
            cli.command,
            None | Some(Cmd::Demo(_))
                | Some(Cmd::Run(_))
                | Some(Cmd::Serve(_))
                | Some(Cmd::Fan(_))
                | Some(Cmd::Status { .. })
                | Some(Cmd::Plugin { .. })
                | Some(Cmd::Sessions {
                    command: sessions::SessionsCmd::Resume { .. }
                })
        );
    if client && trellis_os::reaper::adopt_orphans() {
        trellis_os::reaper::keep_reaping();
    }
    // The commands that only print end quietly when their reader goes (`| head`).
    let prints = matches!(
        cli.command,
        Some(Cmd::Completions { .. })
            | Some(Cmd::Man)
            | Some(Cmd::Ls { .. })
            | Some(Cmd::Worktree {
                command: worktree_cmd::WorktreeCmd::List { .. }
            })
            | Some(Cmd::Sessions {
                command: sessions::SessionsCmd::List { .. } | sessions::SessionsCmd::Search { .. }
            })
            | Some(Cmd::Token {
                command: pairing::TokenCmd::List
            })
    ) || lists_agents(cli.command.as_ref());
    if prints {
        trellis_os::signals::end_on_sigpipe();
    }
    let result = match cli.command {
        None => ui_session(cli.session, cli.config, false),
        Some(Cmd::Demo(s)) => ui_session(s, cli.config, true),
        Some(Cmd::Sessions {
            command: sessions::SessionsCmd::Resume { id, carry, session },
        }) => sessions::Resume::find(&id, carry)
            .and_then(|r| ui::main(session, cli.config, false, Some(r), false)),
        Some(Cmd::Sessions { command }) if fork::starts_a_session(&command) => {
            fork::main(command, cli.config.as_deref())
        }
        Some(Cmd::Replay {
            file,
            call,
            exit_after_first_frame,
        }) => ui::replay(&file, call.as_deref(), cli.config, exit_after_first_frame),
        Some(Cmd::Run(args)) => run::main(*args, cli.config),
        Some(Cmd::Fan(args)) => fan::main(args, cli.config),
        Some(Cmd::Serve(args)) => serve::main(args, cli.config),
        Some(Cmd::Token { command }) => pairing::token(command),
        Some(Cmd::Hooks { command }) => project_hooks::main(command),
        Some(Cmd::Pair { hub }) => pairing::pair(hub.as_deref()),
        Some(Cmd::Log {
            command: LogCmd::Show { file },
        }) => log_show(&file),
        Some(Cmd::Log {
            command: LogCmd::Export(args),
        }) => log_export::main(args),
        Some(Cmd::Agent { command }) => builtin_agents::main(command),
        #[cfg(feature = "registry")]
        Some(Cmd::Agents { command }) => {
            ui::load_config(cli.config).and_then(|c| agents_cmd::main(command, &c))
        }
        Some(Cmd::Sessions { command }) => sessions::main(command),
        Some(Cmd::Worktree { command }) => worktree_cmd::main(command),
        Some(Cmd::Ls { json }) => hub_cmd::ls(json),
        Some(Cmd::Attach(args)) => attach::main(args, cli.config),
        Some(Cmd::Send { session, prompt }) => hub_cmd::send(&session, &prompt),
        Some(Cmd::Cancel { session }) => hub_cmd::cancel(&session),
        Some(Cmd::Stop { session }) => hub_cmd::stop(&session),
        Some(Cmd::Approve { wait }) => hub_cmd::approve(wait),
        Some(Cmd::Status { json }) => status(cli.config, json),
        Some(Cmd::Plugin { command }) => plugin_cmd::main(command, cli.config),
        Some(Cmd::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "trellis", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Man) => man(),
    };
    if client {
        trellis_os::reaper::stop_descendants(std::time::Duration::from_millis(500));
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("trellis: {}", output::safe(&format!("{e:#}")));
            ExitCode::from(run::EXIT_USAGE)
        }
    }
}

/// The UI on one session (`trellis`, `trellis demo`), or in a hub of its own with
/// `--detachable`.
fn ui_session(s: SessionCli, config: Option<PathBuf>, demo: bool) -> anyhow::Result<ExitCode> {
    if s.detachable {
        serve::detachable(&s.ui, config, demo)
    } else {
        ui::main(s.ui, config, demo, None, s.carry)
    }
}

/// The man page: the top command, then each subcommand as a section of its own (their
/// options included), all from the clap definitions.
fn man() -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let sub = sub.clone().bin_name(format!("trellis {}", sub.get_name()));
        let mut page = Vec::new();
        if sub.has_subcommands() {
            clap_mangen::Man::new(sub.clone()).render_subcommands_section(&mut page)?;
        }
        clap_mangen::Man::new(sub.clone()).render_options_section(&mut page)?;
        out.extend_from_slice(
            format!(".SH \"TRELLIS {}\"\n", sub.get_name().to_uppercase()).as_bytes(),
        );
        if let Some(about) = sub.get_about() {
            out.extend_from_slice(format!("{about}\n").as_bytes());
        }
        // The subcommand's own sections go under its heading.
        out.extend_from_slice(
            String::from_utf8_lossy(&page)
                .replace(".SH ", ".SS ")
                .as_bytes(),
        );
    }
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn status(config: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let config = ui::load_config(config)?;
    let live = setup::Live {
        store: true,
        project: std::env::current_dir().ok(),
        ..setup::Live::default()
    };
    let plugins = setup::session_plugins(&live)?;
    let (host, _rx) = setup::ext_host(&config, &live, &plugins)?;
    host.flush(std::time::Duration::from_secs(2));
    let report = host.status();
    host.shutdown(std::time::Duration::from_secs(3));
    // MCP servers: which agents they are offered to (the agent's capabilities decide).
    let (mcp, problems) = setup::mcp_servers(&config, &plugins)?;
    let mcp_lines: Vec<String> = mcp
        .iter()
        .map(|s| {
            let to = match s.transport.name() {
                "stdio" => "offered to every agent".to_string(),
                t => format!("offered to agents that take {t} servers"),
            };
            format!(
                "{} ({}, from {}): {to}",
                s.name,
                s.transport.name(),
                s.origin
            )
        })
        .chain(problems.iter().map(|p| format!("failed: {p}")))
        .collect();
    let worktrees = worktree_cmd::status_lines();
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["mcp_servers"] = serde_json::json!(mcp_lines);
        v["worktrees"] = serde_json::json!(worktrees);
        out!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for l in report.lines() {
            out!("{}", output::safe(&l));
        }
        if !mcp_lines.is_empty() {
            out!("\nMCP servers");
            for l in &mcp_lines {
                out!("  {}", output::safe(l));
            }
        }
        if let Some((head, rest)) = worktrees.split_first() {
            out!("\n{}", output::safe(head));
            for l in rest {
                out!("  {}", output::safe(l));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn log_show(file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let rebuilt = trellis_driver::replay::rebuild_log(file, |_| {})
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let (session, problems, unreadable) = (rebuilt.session, rebuilt.problems, rebuilt.unreadable);
    // Everything in a log came from outside: print it with control sequences made visible.
    let transcript = trellis_core::summary::transcript_text(&session);
    out_part!("{}", output::safe(&transcript));
    out!();
    out_part!(
        "{}",
        output::safe(&trellis_core::summary::ledger_summary(&session))
    );
    for p in &problems {
        say!("{}: {}", file.display(), output::safe(p));
    }
    if unreadable > problems.len() {
        say!(
            "{}: {} more unreadable lines",
            file.display(),
            unreadable - problems.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
