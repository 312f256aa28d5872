//! `trellis agent serve --listen ADDR -- CMD…`: an agent that speaks ACP on stdio, served
//! over WebSocket and streamable HTTP for Trellis elsewhere to dial (see
//! `trellis_hub::agent_serve`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::output::safe;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Where to listen: a loopback address (127.0.0.1:PORT) unless TLS is given or the
    /// address is reached only through a proxy or port forward of yours (--proxied).
    /// Port 0 picks a free one (said on stderr).
    #[arg(long, value_name = "ADDR", value_parser = crate::serve::listen_addr)]
    listen: std::net::SocketAddr,
    /// A certificate chain (PEM) for TLS: clients dial wss://.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A non-loopback address without TLS, reached only through something of yours
    /// that protects it: `docker run -p 127.0.0.1:PORT:PORT`, `ssh -L`, a TLS proxy.
    #[arg(long)]
    proxied: bool,
    /// Agents (connections) at once; one process each.
    #[arg(long, default_value_t = 8, value_name = "N")]
    max_agents: usize,
    /// The agents' working directory (default: this one).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The agent's command line (`trellis agent demo` for the demo).
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Serves until SIGINT, SIGTERM or SIGHUP; every agent ends with its connection, and all
/// of them with this process.
pub fn main(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut command = args.command;
    if command.first().is_some_and(|c| c == "trellis") {
        command[0] = std::env::current_exe()
            .context("cannot find the trellis executable")?
            .to_string_lossy()
            .into_owned();
    }
    let cwd = match args.cwd {
        Some(d) => std::fs::canonicalize(&d).with_context(|| format!("--cwd {}", d.display()))?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let shown = safe(&command.join(" ")).into_owned();
    // A command that cannot run is said now, not to each client that dials.
    if let Some(why) = crate::agents::missing_program(&command) {
        anyhow::bail!("cannot serve {shown}: {}", safe(&why));
    }
    let tls = args.tls_cert.zip(args.tls_key);
    let (ws, http) = if tls.is_some() {
        ("wss", "https")
    } else {
        ("ws", "http")
    };
    let opts = trellis_hub::agent_serve::Options {
        addr: args.listen,
        command,
        cwd,
        store: crate::serve::token_store(),
        tls,
        proxied: args.proxied,
        max_agents: args.max_agents,
        say: std::sync::Arc::new(|line: String| {
            say!("trellis: {}", trellis_text::one_line(&safe(&line)));
        }),
    };
    // What an agent leaves behind comes to this process, and goes with it.
    if trellis_os::reaper::adopt_orphans() {
        trellis_os::reaper::keep_reaping();
    }
    let rt = crate::ui::runtime()?;
    let sig = rt.block_on(async move {
        let serving = trellis_hub::agent_serve::serve(opts).map_err(anyhow::Error::msg)?;
        say!(
            "trellis: serving {shown} on {ws}://{addr}/acp and {http}://{addr}/acp (pid {}); clients need a token of scope agent (trellis token new --scope agent)",
            std::process::id(),
            addr = serving.addr,
        );
        let mut signals = trellis_os::signals::Signals::new(true)?;
        let sig = signals.recv().await;
        // Clients are told, and each agent stopped with its connection's stop sequence.
        let left = serving.stop(std::time::Duration::from_secs(3)).await;
        anyhow::Ok((sig, left))
    })?;
    let (sig, left) = sig;
    // What is left (an agent slow to end, what its agents left behind) goes with the
    // server.
    drop(rt);
    let stopped = trellis_os::reaper::stop_descendants(std::time::Duration::from_secs(1));
    say!(
        "trellis: stopped by {sig}; every client was told, {left} connection(s) still open then, {stopped} process(es) left ended with it"
    );
    Ok(ExitCode::SUCCESS)
}
