//! `trellis` (the full-screen UI), `trellis demo` and `trellis replay FILE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use trellis_core::Session;
use trellis_core::permission::Policy;
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
    /// Also run the plugin package at PATH, for this session only, granted what it asks
    /// for; its process restarts when its files change (`trellis plugin try`).
    #[arg(long = "plugin", global = true, value_name = "PATH")]
    pub plugin: Vec<PathBuf>,
    /// Continue the agent's session SESSION_ID (`session/resume` or `session/load`), one
    /// the local history may not have (the sessions picker resumes the agent's own
    /// sessions with it).
    #[arg(long, value_name = "SESSION_ID")]
    pub load: Option<String>,
    /// Run the session in a git worktree of its own, made now: `--worktree` (a made-up
    /// label), `--worktree=LABEL`, `--worktree=required` or `required:LABEL` (no
    /// worktree, no session). Branch `trellis/<label>` from HEAD, the tree under
    /// Trellis's data directory; end it with `trellis worktree land|apply|keep|discard`.
    #[arg(long, global = true, value_name = "LABEL", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = crate::worktree_cmd::parse_ask)]
    pub worktree: Option<crate::worktree_cmd::Ask>,
    /// Quit after the first frame (for the startup benchmark).
    #[arg(long, global = true, hide = true)]
    pub exit_after_first_frame: bool,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The UI on a live agent.
pub fn load_config(config_path: Option<PathBuf>) -> anyhow::Result<Config> {
    let config_file = config_path.or_else(|| Paths::from_env().map(|p| p.config_file()));
    Ok(match &config_file {
        Some(f) => Config::load(f)?,
        None => Config::default(),
    })
}

pub fn main(
    args: UiArgs,
    config_path: Option<PathBuf>,
    force_demo: bool,
    resume: Option<crate::sessions::Resume>,
    carry: bool,
) -> anyhow::Result<ExitCode> {
    let paths = Paths::from_env();
    let config = load_config(config_path)?;
    let agent = if force_demo {
        "demo".to_string()
    } else {
        args.agent
            .clone()
            .or_else(|| resume.as_ref().and_then(|r| r.agent.clone()))
            .or_else(|| config.default_agent.clone())
            .unwrap_or_else(|| "demo".into())
    };
    let cwd = args
        .cwd
        .clone()
        .or_else(|| resume.as_ref().and_then(|r| r.cwd.clone()));
    let mut resolved = crate::agents::resolve(&agent, &config, cwd.as_deref())?;
    let worktree =
        crate::worktree_cmd::isolate(args.worktree.as_ref(), carry, &mut resolved, &config)?;
    let agent_arg = agent.clone();
    if let Some(r) = &resume {
        resolved.spec.load_session = r.row.acp_id.clone();
    }
    if let Some(id) = &args.load {
        resolved.spec.load_session = Some(id.clone());
    }
    let continues = resume.as_ref().map(|r| r.row.path.clone());
    let command = resolved.command.clone();
    // The flag, else the config's [permissions] policy, else ask in the dialog; rules
    // saved from "always" answers (global and this project's) come first.
    let live = crate::setup::Live {
        store: true,
        headless: false,
        project: Some(resolved.spec.cwd.clone()),
        try_plugins: args.plugin.clone(),
    };
    let plugins = crate::setup::session_plugins(&live)?;
    let (host, host_rx) = crate::setup::ext_host(&config, &live, &plugins)?;
    let (mcp, mcp_problems) = crate::setup::mcp_servers(&config, &plugins)?;
    let mut resolved = resolved;
    resolved.spec.mcp_servers = mcp;
    resolved.spec.keep_lines = host.wants_acp();
    // The UI lends the terminal for an agent's login (`authMethods` of type terminal).
    resolved.spec.caps.terminal_login = true;
    resolved.spec.caps.elicitation_url = true;
    let cwd_now = resolved.spec.cwd.to_string_lossy().into_owned();
    let saved = trellis_tui::rules::load(&host, &cwd_now);
    let stored: Vec<_> = saved.iter().map(|r| r.rule.clone()).collect();
    let policy = match policy_from(args.permission.as_deref(), &config)? {
        (
            Policy::Rules {
                mut rules,
                fallback,
            },
            true,
        ) => {
            rules.splice(0..0, stored);
            Policy::Rules { rules, fallback }
        }
        (p, true) => p,
        (_, false) => {
            let mut rules = stored;
            rules.extend(config.permissions.rules.iter().cloned());
            if rules.is_empty() {
                Policy::Ask
            } else {
                Policy::Rules {
                    rules,
                    fallback: trellis_core::permission::Verdict::Ask,
                }
            }
        }
    };
    let writer = match &paths {
        Some(p) => LogWriter::create_in(&p.sessions_dir(), &resolved.name),
        None => anyhow::bail!("no data directory for the session log"),
    }
    .context("cannot create the session log")?;
    let log_path = writer.path().to_path_buf();
    let log_for_app = log_path.clone();
    let log_for_index = log_path.clone();
    let exit_after_first_frame = args.exit_after_first_frame;
    let cwd = resolved.spec.cwd.to_string_lossy().into_owned();
    let name = resolved.name.clone();
    // Check the UI settings before starting the agent: a config error stops here.
    apply_ui_config(
        &mut App::new(Session::default(), String::new(), false),
        &config,
    )?;
    let theme = if std::env::var_os("NO_COLOR").is_some() {
        trellis_view::Theme::plain()
    } else {
        trellis_view::Theme::default()
    };
    let rt = runtime()?;
    let spec = resolved.spec.clone();
    let restart_log = log_path.clone();
    // Ctrl-R after the agent ended: the same agent, appending to the same log.
    let restart: trellis_tui::Restart = Box::new(move |origin| {
        let writer =
            LogWriter::open(&restart_log).map_err(|e| format!("{}: {e}", restart_log.display()))?;
        let (handle, rx) = trellis_acp::start_at(spec.clone(), Box::new(FileSink(writer)), origin);
        Ok(Connection { handle, rx })
    });
    let plugin_registry = Paths::from_env()
        .map(|p| trellis_plugin::registry::Registry::new(p.data_dir, Some(PathBuf::from(&cwd))));
    let said = rt.block_on(async move {
        let (handle, rx) = trellis_acp::start(resolved.spec, Box::new(FileSink(writer)));
        crate::setup::record_header(
            &handle,
            (&name, &command),
            &cwd,
            continues.as_deref(),
            worktree,
        );
        let (session, carry) = match resume {
            Some(r) => r.session(policy),
            None => (Session::new(policy), None),
        };
        let mut app = App::new(session, name, false);
        if let Some(doc) = carry {
            app.driver.carry(doc);
        }
        app.driver.keep_output_in_log(&log_for_app);
        app.log_path = Some(log_for_app);
        app.theme = theme;
        apply_ui_config(&mut app, &config)?;
        // After the key bindings are known: contributed keys must not clash with them.
        app.set_ext(host, host_rx);
        app.saved_rules = saved;
        app.plugins = plugin_registry;
        if let Some(first) = mcp_problems.first() {
            app.message = Some(format!("{first} (see /status)"));
        }
        app.mcp_problems = mcp_problems;
        app.worktree_report = Some(Box::new(crate::worktree_cmd::status_lines));
        app.agent_arg = Some(agent_arg.clone());
        app.exit_after_first_frame = exit_after_first_frame;
        app.driver.connect(Connection { handle, rx });
        app.history = Some(Box::new(crate::sessions::IndexHistory::new(cwd.clone())));
        if let Some(p) = Paths::from_env() {
            app.driver.set_index(trellis_index::Background::start(
                p.data_dir.join(trellis_index::FILE),
                &p.sessions_dir(),
                log_for_index,
            ));
        }
        trellis_tui::run(app, Some(restart))
            .await
            .map_err(anyhow::Error::from)
    })?;
    print_said(said);
    eprintln!("trellis: session log: {}", log_path.display());
    Ok(ExitCode::SUCCESS)
}

/// What closing the session had to say, once the terminal is the user's again.
fn print_said(said: Vec<String>) {
    for text in said {
        eprintln!("trellis: {}", crate::output::safe(&text));
    }
}

/// A recorded session (Trellis log or fixture) in the UI, without an agent.
pub fn replay(
    file: &Path,
    call: Option<&str>,
    config_path: Option<PathBuf>,
    exit_after_first_frame: bool,
) -> anyhow::Result<ExitCode> {
    let config = load_config(config_path)?;
    // Extensions see the recording's events (stores stay in memory: a replay changes
    // nothing on disk), a batch at a time as the log is read.
    let (mut host, host_rx) = crate::setup::ext_host(
        &config,
        &crate::setup::Live::default(),
        &crate::setup::SessionPlugins::default(),
    )?;
    // The session is shown at once and rebuilt while it is shown (a long recording
    // would otherwise keep the screen blank until its last line was folded in).
    let (session, spill_error, feed) = trellis_driver::replay::Feed::start(file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    if let Some(cold) = session.ledger.cold() {
        host.set_cold(cold.clone());
    }
    let mut app = App::new(session, "recording".into(), true);
    app.log_path = Some(file.to_path_buf());
    apply_ui_config(&mut app, &config)?;
    app.set_ext(host, host_rx);
    app.driver.replay(feed);
    app.exit_after_first_frame = exit_after_first_frame;
    if let Some(c) = call {
        app.inspect_once_read(c);
    }
    if let Some(e) = &spill_error {
        app.message = Some(format!("every call stays in memory (no spill file: {e})"));
    }
    print_said(runtime()?.block_on(trellis_tui::run(app, None))?);
    Ok(ExitCode::SUCCESS)
}

/// Applies `[ui]` from the config to the app; a bad value is an error naming file, line
/// and key.
fn apply_ui_config(app: &mut App, config: &Config) -> anyhow::Result<()> {
    use trellis_store::config::KeySetting;
    use trellis_tui::app::CursorMode;
    use trellis_view::{OutputPolicies, OutputPolicy};
    let ui = &config.ui;
    if let Some(c) = &ui.cursor {
        app.cursor_mode = CursorMode::parse(c).ok_or_else(|| {
            config.invalid(
                "ui",
                "cursor",
                format!("{c:?} is not one of exact, nearest, above, below"),
            )
        })?;
    }
    app.key_hints = ui.key_hints.unwrap_or(true);
    app.alerts = trellis_tui::app::Alerts {
        bell: ui.bell.unwrap_or(true),
        title: ui.title_marker.unwrap_or(true),
        notify: ui.notify.unwrap_or(true),
    };
    let mut by_kind = Vec::new();
    for (kind, policy) in &ui.output {
        let k = trellis_core::ToolKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| {
                config.invalid("ui.output", kind, format!("{kind:?} is not a tool kind"))
            })?;
        let words: Vec<&str> = policy.split_whitespace().collect();
        let p = match words.as_slice() {
            ["hidden"] => OutputPolicy::Hidden,
            ["full"] => OutputPolicy::Full,
            ["preview", n] => OutputPolicy::Preview(n.parse().map_err(|_| {
                config.invalid("ui.output", kind, format!("{n:?} is not a number of lines"))
            })?),
            _ => {
                return Err(config
                    .invalid(
                        "ui.output",
                        kind,
                        format!("{policy:?} is not \"hidden\", \"preview N\" or \"full\""),
                    )
                    .into());
            }
        };
        by_kind.push((k, p));
    }
    app.view.policies = OutputPolicies {
        by_kind,
        ..OutputPolicies::default()
    };
    let mut keys = std::collections::BTreeMap::new();
    for (action, setting) in &ui.keys {
        if !trellis_tui::keymap::KeyAction::ALL
            .iter()
            .any(|(_, n, _)| n == action)
        {
            let known: Vec<&str> = trellis_tui::keymap::KeyAction::ALL
                .iter()
                .map(|(_, n, _)| *n)
                .collect();
            return Err(config
                .invalid(
                    "ui.keys",
                    action,
                    format!("unknown key action (known: {})", known.join(", ")),
                )
                .into());
        }
        let v = match setting {
            KeySetting::Keys(s) => {
                trellis_tui::keymap::parse_keys(s)
                    .map_err(|e| config.invalid("ui.keys", action, e.0))?;
                Some(s.clone())
            }
            KeySetting::Enabled(false) => None,
            KeySetting::Enabled(true) => {
                return Err(config
                    .invalid(
                        "ui.keys",
                        action,
                        "use a key like \"gT\", or false to disable",
                    )
                    .into());
            }
        };
        keys.insert(action.clone(), v);
    }
    app.keys = trellis_tui::keymap::Keymap::new(&keys).map_err(|e| {
        let key = ui
            .keys
            .keys()
            .find(|k| e.0.contains(k.as_str()))
            .cloned()
            .unwrap_or_else(|| "keys".into());
        config.invalid("ui.keys", &key, e.0)
    })?;
    Ok(())
}
