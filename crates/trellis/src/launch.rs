//! Starting a live session for the UI: the first one, and each one the user opens from
//! the UI (new session, new session in a worktree). Everything a session owns is made
//! here: its agent, log, extension host and plugins, permission policy, index writer.

use std::path::PathBuf;

use anyhow::Context;
use trellis_core::Session;
use trellis_core::permission::Policy;
use trellis_deck::Headless;
use trellis_store::{Config, LogWriter, Paths};
use trellis_tui::deck::Opened;
use trellis_tui::{App, Connection};

use crate::setup::{FileSink, policy_from};

/// What every session of this UI shares.
pub struct Launch {
    pub config: Config,
    /// `--permission`.
    pub permission: Option<String>,
    /// `--plugin` packages.
    pub plugins: Vec<PathBuf>,
    /// `--allow-drive`.
    pub allow_drive: bool,
    pub exit_after_first_frame: bool,
}

/// One session to start.
pub struct Request {
    pub agent: String,
    pub cwd: Option<PathBuf>,
    pub worktree: Option<crate::session_args::Ask>,
    pub carry: bool,
    pub resume: Option<crate::sessions::Resume>,
    pub load: Option<String>,
    /// Where the session was asked for, when not in this process's directory (a client
    /// of a hub).
    pub launched_in: Option<PathBuf>,
}

impl Launch {
    /// Starts a session for the UI (within the runtime: the agent's tasks are spawned on
    /// it). Returns it, its log, and what to tell the user about its worktree.
    pub fn open(&self, req: Request) -> anyhow::Result<(Opened, PathBuf, Vec<String>)> {
        let s = self.start(req)?;
        let mut app = App::new(Session::new(Policy::Ask), s.name.clone(), false);
        app.driver = s.driver;
        app.log_path = Some(s.log_path.clone());
        app.theme = theme();
        crate::ui_config::apply_ui_config(&mut app, &self.config)?;
        // After the key bindings are known: contributed keys must not clash with them.
        app.set_ext(s.host, s.host_rx);
        if let Some(e) = finish(&mut app.driver, s.history, s.saved, s.connection) {
            app.message = Some(format!("the earlier session stays in memory: {e}"));
        }
        app.plugins = s.paths.as_ref().map(|p| {
            trellis_plugin::registry::Registry::new(p.data_dir.clone(), Some(PathBuf::from(&s.cwd)))
        });
        problems(&mut app, s.mcp_problems, &s.said);
        app.agent_arg = Some(s.agent_arg);
        app.rewinder = Some(ui_rewinder());
        app.name_from_agent = s.command_line;
        app.exit_after_first_frame = self.exit_after_first_frame;
        app.history = Some(Box::new(crate::sessions::IndexHistory::new(s.cwd.clone())));
        indexed(&mut app.driver, s.paths.as_ref(), &s.log_path);
        // The demo's scratch workspace lives as long as the session's front end.
        for kept in s.kept {
            app.keep_alive(kept);
        }
        Ok(opened(
            app, s.restart, s.source, s.branch, s.log_path, s.said,
        ))
    }

    /// Starts a session for a hub without a screen (`trellis serve`): the same session as
    /// [`Launch::open`]'s, with no UI.
    pub fn open_headless(
        &self,
        req: Request,
    ) -> anyhow::Result<(trellis_deck::Opened<Headless>, PathBuf, Vec<String>)> {
        let s = self.start(req)?;
        let mut front = Headless::new(s.driver, s.name.clone());
        front.log_path = Some(s.log_path.clone());
        front.driver.set_host(s.host, s.host_rx);
        if let Some(e) = finish(&mut front.driver, s.history, s.saved, s.connection) {
            front.told = Some(format!("the earlier session stays in memory: {e}"));
        }
        if let Some(first) = s.mcp_problems.first() {
            front.told = Some(format!("{first} (see the session's log)"));
        }
        if let Some(w) = s.said.iter().find(|l| l.starts_with("NOT ISOLATED")) {
            front.told = Some(trellis_text::one_line(w).into_owned());
        }
        front.name_from_agent = s.command_line;
        indexed(&mut front.driver, s.paths.as_ref(), &s.log_path);
        for kept in s.kept {
            front.keep_alive(kept);
        }
        Ok(opened(
            front, s.restart, s.source, s.branch, s.log_path, s.said,
        ))
    }

    /// Starts a session: its agent, log, extension host and plugins, permission policy,
    /// all but its front end.
    fn start(&self, req: Request) -> anyhow::Result<Started> {
        let config = &self.config;
        let paths = Paths::from_env();
        let mut resolved = crate::agents::resolve(
            &req.agent,
            config,
            req.cwd.as_deref(),
            req.worktree.is_some(),
        )?;
        // A fork from a turn, in a worktree: that turn's checkpoint, found before anything
        // is made.
        let base = match (&req.resume, &req.worktree) {
            (Some(r), Some(_)) => crate::checkpoints::fork_base(&r.row, r.fork.and_then(|f| f.at))?,
            _ => None,
        };
        let (worktree, mut said) =
            crate::worktree_cmd::isolate(req.worktree.as_ref(), req.carry, &mut resolved, config)?;
        let mut req = req;
        if let (Some(r), Some(_)) = (req.resume.as_mut(), &worktree) {
            r.moved_to(&resolved.spec.cwd);
        }
        // Held while the session's front end lives: endings from elsewhere see it.
        let lease = crate::worktree_cmd::lease(&resolved.spec.cwd)?;
        if let Some(r) = &req.resume {
            resolved.spec.load_session = r.agent_load();
            resolved.spec.fork_session = r.agent_fork(&req.agent);
        }
        if let Some(id) = &req.load {
            resolved.spec.load_session = Some(id.clone());
        }
        let continues = req.resume.as_ref().map(|r| r.continues());
        let command = resolved.command.clone();
        let live = crate::setup::Live {
            store: true,
            headless: false,
            project: Some(resolved.spec.cwd.clone()),
            try_plugins: self.plugins.clone(),
            allow_drive: self.allow_drive,
            in_hub: true,
        };
        let plugins = crate::setup::session_plugins(&live)?;
        let (host, host_rx) = crate::setup::ext_host(config, &live, &plugins)?;
        let (mcp, mut mcp_problems) = crate::setup::mcp_servers(config, &plugins)?;
        resolved.spec.mcp_servers = crate::agents::mcp_for(&resolved.spec, mcp, &mut mcp_problems);
        resolved.spec.keep_lines = host.wants_acp();
        // The UI lends the terminal for an agent's login (`authMethods` of type terminal).
        // Never for an agent elsewhere: its login command is for its own machine, and
        // running it here would run what the agent names on this one.
        resolved.spec.caps.terminal_login = resolved.spec.remote.is_none();
        resolved.spec.caps.elicitation_url = true;
        let cwd_now = resolved.spec.cwd.to_string_lossy().into_owned();
        let saved = trellis_driver::rules::load(&host, &cwd_now);
        let stored: Vec<_> = saved.iter().map(|r| r.rule.clone()).collect();
        let policy = self.policy(stored)?;
        let writer = match &paths {
            Some(p) => LogWriter::create_in(&p.sessions_dir(), &resolved.name),
            None => anyhow::bail!("no data directory for the session log"),
        }
        .context("cannot create the session log")?;
        let log_path = writer.path().to_path_buf();
        if let (Some(commit), Some(_)) = (&base, &worktree) {
            said.push(crate::checkpoints::materialize(
                &resolved.spec.cwd,
                commit,
                &log_path,
            )?);
        }
        let cwd = resolved.spec.cwd.to_string_lossy().into_owned();
        let name = resolved.name.clone();
        let (source, branch) = crate::worktree_cmd::place_of(&resolved.spec.cwd, worktree.as_ref());
        // Before the restart's copy of the spec: a restarted agent is in the same trace.
        crate::checkpoints::arm(&mut resolved.spec, &log_path);
        let begun = crate::traces::begin(&mut resolved.spec, &name);
        let restart = restarter(resolved.spec.clone(), log_path.clone());
        let remote = crate::agents::remote_at(&resolved.spec);
        let (handle, rx) = trellis_acp::start(resolved.spec, Box::new(FileSink(writer)));
        crate::setup::record_header(
            &handle,
            (&name, &command),
            (&cwd, begun.started),
            continues
                .as_ref()
                .map_or((None, None, false), |(p, at, h)| {
                    (Some(p.as_str()), *at, *h)
                }),
            worktree,
            req.launched_in.as_deref(),
            remote.as_ref(),
        );
        // A resumed session is shown at once, its history read in while it is shown.
        let (session, carry, history) = match req.resume {
            Some(r) => {
                let s = r.shown(policy, log_path.clone())?;
                (s.session, s.carry, Some((s.feed, s.then, s.spill_error)))
            }
            None => (Session::new(policy), None, None),
        };
        let mut driver = trellis_driver::Driver::offline(session);
        crate::traces::observe(&mut driver, &begun);
        if let Some(doc) = carry {
            driver.carry(doc);
        }
        if history.is_none() {
            driver.keep_output_in_log(&log_path);
        }
        let mut kept: Vec<Box<dyn std::any::Any>> = Vec::new();
        if let Some(dir) = resolved.scratch {
            kept.push(Box::new(dir));
        }
        if let Some(lease) = lease {
            kept.push(Box::new(lease));
        }
        Ok(Started {
            driver,
            name,
            log_path,
            restart,
            source,
            branch,
            said,
            mcp_problems,
            host,
            host_rx,
            history,
            saved,
            connection: Connection { handle, rx },
            paths,
            cwd,
            agent_arg: req.agent.clone(),
            command_line: resolved.command_line,
            kept,
        })
    }

    /// The host of the hub's plugins of `"scope": "hub"` (user-wide ones, those tried with
    /// `--plugin`, and the trusted ones of the directory Trellis started in), if any.
    pub fn hub_host(&self) -> anyhow::Result<Option<crate::setup::Host>> {
        let live = crate::setup::Live {
            store: true,
            headless: false,
            project: std::env::current_dir().ok(),
            try_plugins: self.plugins.clone(),
            allow_drive: self.allow_drive,
            in_hub: true,
        };
        crate::setup::hub_host(&self.config, &live)
    }

    /// The session's policy: the flag, else the config's `[permissions]` policy, else ask
    /// in the dialog; `stored` (rules saved from "always" answers, global and this
    /// project's) come first.
    pub fn policy(&self, stored: Vec<trellis_core::permission::Rule>) -> anyhow::Result<Policy> {
        Ok(
            match policy_from(self.permission.as_deref(), &self.config)? {
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
                    rules.extend(self.config.permissions.rules.iter().cloned());
                    if rules.is_empty() {
                        Policy::Ask
                    } else {
                        Policy::Rules {
                            rules,
                            fallback: trellis_core::permission::Verdict::Ask,
                        }
                    }
                }
            },
        )
    }
}

/// An earlier session's history to read in while it is shown: its feed, what follows,
/// and why its calls stay in memory, if they do.
type History = (
    trellis_driver::replay::Feed,
    trellis_driver::Resumed,
    Option<String>,
);

/// A started session, before its front end is made.
struct Started {
    /// Its driver, not connected yet.
    driver: trellis_driver::Driver,
    name: String,
    log_path: PathBuf,
    restart: trellis_tui::Restart,
    source: String,
    branch: Option<String>,
    /// What to tell the user about its worktree.
    said: Vec<String>,
    mcp_problems: Vec<String>,
    host: trellis_ext_host::ExtHost,
    host_rx: tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
    /// An earlier session's history to read in while it is shown.
    history: Option<History>,
    saved: Vec<trellis_driver::rules::SavedRule>,
    connection: Connection,
    paths: Option<Paths>,
    cwd: String,
    /// The agent as the user named it.
    agent_arg: String,
    /// The agent was given as a command line (named as it names itself).
    command_line: bool,
    /// What lives as long as the session (the demo's scratch workspace, the worktree's
    /// lease).
    kept: Vec<Box<dyn std::any::Any>>,
}

/// A started session with its front end `app`, its log, and what to say of its worktree.
fn opened<F>(
    app: F,
    restart: trellis_tui::Restart,
    source: String,
    branch: Option<String>,
    log_path: PathBuf,
    said: Vec<String>,
) -> (trellis_deck::Opened<F>, PathBuf, Vec<String>) {
    let opened = trellis_deck::Opened {
        app,
        restart: Some(restart),
        source,
        branch,
        from: None,
    };
    (opened, log_path, said)
}

/// What every front end does last: the history read in, the saved rules in force, the
/// agent connected. Why the history stays in memory, if it does.
fn finish(
    driver: &mut trellis_driver::Driver,
    history: Option<History>,
    saved: Vec<trellis_driver::rules::SavedRule>,
    connection: Connection,
) -> Option<String> {
    let mut spilled = None;
    if let Some((feed, then, spill_error)) = history {
        driver.resume(feed, then);
        spilled = spill_error;
    }
    driver.saved_rules = saved;
    driver.connect(connection);
    spilled
}

/// The session's index kept up to date as the log grows.
fn indexed(driver: &mut trellis_driver::Driver, paths: Option<&Paths>, log: &std::path::Path) {
    if let Some(p) = paths {
        driver.set_history(Box::new(crate::sessions::Indexing(
            trellis_index::Background::start(
                p.data_dir.join(trellis_index::FILE),
                &p.sessions_dir(),
                log.to_path_buf(),
            ),
        )));
    }
}

/// Colours, unless `NO_COLOR` says none.
fn theme() -> trellis_view::Theme {
    if std::env::var_os("NO_COLOR").is_some() {
        trellis_view::Theme::plain()
    } else {
        trellis_view::Theme::default()
    }
}

/// What the session's start could not do, said where the user looks (not only in the
/// terminal behind the full screen), and the pages of `/status` that say more.
fn problems(app: &mut App, mcp_problems: Vec<String>, said: &[String]) {
    if let Some(first) = mcp_problems.first() {
        app.message = Some(format!("{first} (see /status)"));
    }
    if let Some(w) = said.iter().find(|l| l.starts_with("NOT ISOLATED")) {
        app.message = Some(trellis_text::one_line(w).into_owned());
    }
    app.mcp_problems = mcp_problems;
    app.status_reports = vec![
        Box::new(crate::worktree_cmd::status_lines),
        Box::new(crate::traces::status_lines),
    ];
}

/// Ctrl-R after the agent ended: the same agent, appending to the same log. An agent
/// elsewhere that can take its session up again is asked to (`take_up`).
fn restarter(spec: trellis_acp::spec::AgentSpec, log: PathBuf) -> trellis_tui::Restart {
    Box::new(move |origin, take_up| {
        let writer = LogWriter::open(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut spec = spec.clone();
        if let Some(id) = &take_up {
            spec.load_session = Some(id.clone());
            spec.fork_session = None;
        }
        let (handle, rx) = trellis_acp::start_at(spec, Box::new(FileSink(writer)), origin);
        handle.recorder().local(trellis_core::LocalRecord::Mark {
            text: match &take_up {
                Some(id) => format!("dialing the agent again by hand, to take up its session {id}"),
                None => "the agent started again by hand".into(),
            },
        });
        Ok(Connection { handle, rx })
    })
}

/// The UI's rewind of the code (`c` in its rewind list): as `sessions rewind --to TURN
/// --code`, on the session logged at the path, said in lines.
fn ui_rewinder() -> trellis_tui::rewind::Rewinder {
    Box::new(|log: &std::path::Path, turn: u32, force: bool| {
        let (index, _) = crate::sessions::open_index().map_err(|e| format!("{e:#}"))?;
        let row = index
            .session(&log.to_string_lossy())
            .map_err(|e| e.to_string())?;
        let mut out = String::new();
        crate::checkpoints::rewind(&row, Some(turn), force, false, &mut out)
            .map_err(|e| format!("{e:#}"))?;
        Ok(out.lines().map(str::to_string).collect())
    })
}
