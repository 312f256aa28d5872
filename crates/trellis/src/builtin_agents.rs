//! `trellis agent …`: the agents built into the binary — the demo (and its load mode),
//! a recorded session played back, the hostile scenarios — and `serve`, which puts any
//! stdio agent behind WebSocket and streamable HTTP.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum AgentCmd {
    /// The scripted demo agent; with --calls, a load generator.
    Demo {
        /// Load mode: tool calls per prompt.
        #[arg(long, default_value_t = 0)]
        calls: usize,
        /// Load mode: output lines per call.
        #[arg(long, default_value_t = 20)]
        lines: usize,
        /// Pause between story steps, in milliseconds.
        #[arg(long, default_value_t = 120)]
        delay_ms: u64,
        /// Advertise `session/load` (replaying a short history when asked).
        #[arg(long)]
        load_session: bool,
        /// Advertise `session/resume` (reloading without replaying history).
        #[arg(long)]
        resume_session: bool,
        /// Advertise `session/fork` (a draft of the protocol).
        #[arg(long)]
        fork_session: bool,
        /// Require a login before `session/new`, done once FILE exists (offered as a
        /// terminal method to clients that take one, and through `authenticate`).
        #[arg(long, value_name = "FILE")]
        login_file: Option<PathBuf>,
        /// Log in on the terminal (what the terminal method runs), then exit.
        #[arg(long, requires = "login_file")]
        login: bool,
        /// Play in the session's directory even when it is in a git repository the demo
        /// did not make (it writes `demo-workspace/` there). Without it, the demo writes
        /// only where no repository is, or into a worktree Trellis made.
        #[arg(long)]
        here: bool,
        /// After its own edit, also ask to create PATH (relative to the session's
        /// directory): try a path policy (a rule, a hook, a plugin) offline. The prompt
        /// `/edit PATH` does the same at any time; `/append PATH` then adds a line to it
        /// with the demo's own tool, reported without its old text (as some agents do).
        #[arg(long, value_name = "PATH", value_parser = trellis_agents::demo_edit::target)]
        edit: Option<PathBuf>,
    },
    /// Play the agent side of a recorded session (fixture or Trellis log).
    Replay { file: PathBuf },
    /// An agent that misbehaves on purpose, one way per scenario (for testing clients);
    /// `list` lists the scenarios.
    Hostile { scenario: String },
    /// Serve an agent that speaks ACP on stdio over WebSocket and streamable HTTP, for
    /// Trellis elsewhere to dial (`--agent ws://…/acp` or `http://…/acp`): run it inside a
    /// devcontainer, a VM or a sandbox. One agent process per connection (a WebSocket, or
    /// a streamable-HTTP connection from its `initialize` to its `DELETE`), whatever
    /// sessions the client opens on it; it ends with the connection.
    #[cfg(feature = "listen")]
    Serve(crate::agent_serve::ServeArgs),
}

pub fn main(cmd: AgentCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        AgentCmd::Demo {
            calls,
            lines,
            delay_ms,
            load_session,
            resume_session,
            fork_session,
            login_file,
            login,
            here,
            edit,
        } => {
            if let (true, Some(f)) = (login, &login_file) {
                let ok = trellis_agents::demo_login::interactive(f)?;
                return Ok(if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let opts = trellis_agents::demo::DemoOptions {
                calls,
                lines,
                delay: std::time::Duration::from_millis(delay_ms),
                load_session,
                resume_session,
                fork_session,
                login_file,
                here,
                edit,
            };
            trellis_agents::demo::run(opts)?;
        }
        AgentCmd::Replay { file } => {
            let text = trellis_store::paths::read_text(&file, trellis_store::paths::LOG_CAP)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            trellis_agents::replay::run(&text)?;
        }
        AgentCmd::Hostile { scenario } if scenario == "list" => {
            for (name, what) in trellis_agents::hostile::SCENARIOS {
                out!("{name:22} {what}");
            }
        }
        AgentCmd::Hostile { scenario } => trellis_agents::hostile::run(&scenario)?,
        #[cfg(feature = "listen")]
        AgentCmd::Serve(args) => return crate::agent_serve::main(args),
    }
    Ok(ExitCode::SUCCESS)
}
