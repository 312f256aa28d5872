//! `trellis` (the full-screen UI), `trellis demo` and `trellis replay FILE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use trellis_core::Session;
use trellis_core::permission::Policy;
use trellis_core::session::LocalRecord;
use trellis_store::{Config, LogWriter, Paths};
use trellis_tui::{App, Connection};

use crate::setup::{FileSink, policy_from};

#[derive(clap::Args, Default)]
pub struct UiArgs {
    /// Agent preset or command line (default: the configured default, else the demo).
    #[arg(long, global = true)]
    pub agent: Option<String>,
    /// Session working directory (default: the current directory; a scratch one for demo).
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,
    /// Decide permission requests without asking: allow-once, allow-reads, reject or a
    /// rules file (default: ask in the dialog).
    #[arg(long, global = true)]
    pub permission: Option<String>,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The UI on a live agent.
pub fn main(
    args: UiArgs,
    config_path: Option<PathBuf>,
    force_demo: bool,
) -> anyhow::Result<ExitCode> {
    let paths = Paths::from_env();
    let config_file = config_path.or_else(|| paths.as_ref().map(|p| p.config_file()));
    let config = match &config_file {
        Some(f) => Config::load(f)?,
        None => Config::default(),
    };
    let agent = if force_demo {
        "demo".to_string()
    } else {
        args.agent
            .clone()
            .or_else(|| config.default_agent.clone())
            .unwrap_or_else(|| "demo".into())
    };
    let resolved = crate::agents::resolve(&agent, &config, args.cwd.as_deref())?;
    let policy = match args.permission.as_deref() {
        Some(_) => policy_from(args.permission.as_deref(), &config)?.0,
        None => Policy::Ask,
    };
    let writer = match &paths {
        Some(p) => LogWriter::create_in(&p.sessions_dir(), &resolved.name),
        None => anyhow::bail!("no data directory for the session log"),
    }
    .context("cannot create the session log")?;
    let log_path = writer.path().to_path_buf();
    let log_for_app = log_path.clone();
    let cwd = resolved.spec.cwd.to_string_lossy().into_owned();
    let name = resolved.name.clone();
    let rt = runtime()?;
    rt.block_on(async move {
        let (handle, rx) = trellis_acp::start(resolved.spec, Box::new(FileSink(writer)));
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        handle.recorder().local(LocalRecord::SessionLog {
            schema: trellis_core::SCHEMA_VERSION,
            agent: name.clone(),
            cwd,
            trellis: env!("CARGO_PKG_VERSION").into(),
            started,
        });
        let mut app = App::new(Session::new(policy), name, false);
        app.log_path = Some(log_for_app);
        trellis_tui::run(app, Some(Connection { handle, rx })).await
    })?;
    eprintln!("trellis: session log: {}", log_path.display());
    Ok(ExitCode::SUCCESS)
}

/// A recorded session (Trellis log or fixture) in the UI, without an agent.
pub fn replay(file: &Path) -> anyhow::Result<ExitCode> {
    let text =
        trellis_store::read_log(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut session = Session::new(Policy::Ask);
    let problems = trellis_core::log::rebuild(&mut session, text.lines(), |_| {});
    let name = if session.agent.name.is_empty() {
        "recording".to_string()
    } else {
        session.agent.name.clone()
    };
    let mut app = App::new(session, name, true);
    app.log_path = Some(file.to_path_buf());
    if let Some(p) = problems.first() {
        app.message = Some(format!(
            "{} unreadable log lines (first: {p})",
            problems.len()
        ));
    }
    runtime()?.block_on(trellis_tui::run(app, None))?;
    Ok(ExitCode::SUCCESS)
}
