//! `trellis` (the full-screen UI), `trellis demo` and `trellis replay FILE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use trellis_core::Session;
use trellis_store::{Config, Paths};
use trellis_tui::App;

pub use crate::session_args::{PolicyArgs, UiArgs};

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
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
    let config = load_config(config_path)?;
    let agent = if force_demo {
        "demo".to_string()
    } else {
        args.one_agent()?
            .or_else(|| resume.as_ref().and_then(|r| r.agent.clone()))
            .or_else(|| config.default_agent.clone())
            .unwrap_or_else(|| "demo".into())
    };
    let cwd = args
        .cwd
        .clone()
        .or_else(|| resume.as_ref().and_then(|r| r.cwd.clone()));
    // A registry agent that is not installed: offered for install first.
    #[cfg(feature = "registry")]
    crate::agents_cmd::offer_install(&agent, &config)?;
    let first = crate::launch::Request {
        agent,
        cwd,
        worktree: args.worktree.clone(),
        carry,
        resume,
        load: args.load.clone(),
        launched_in: None,
    };
    start(&args, config, vec![first], None)
}

/// The UI on the sessions `requests` asks for (the first in front); with `prompt`, each
/// is sent it once its agent is ready and they form a fan-out (compared with Alt-c).
pub fn start(
    args: &UiArgs,
    config: Config,
    requests: Vec<crate::launch::Request>,
    prompt: Option<String>,
) -> anyhow::Result<ExitCode> {
    // An agent that cannot start, and a missing terminal, are said before any agent,
    // worktree or session is made (a run without a terminal is `trellis run`).
    for r in &requests {
        crate::agents::check(&r.agent, &config)?;
    }
    crate::hooks::hooks_of(&config.hooks, "", |table, key, why| {
        config.invalid(table, key, why).into()
    })?;
    if !args.exit_after_first_frame {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            anyhow::bail!(
                "the UI needs a terminal (its input and output are not one): for a run without one, use trellis run --prompt …"
            );
        }
    }
    // Check the UI settings before starting any agent: a config error stops here.
    crate::ui_config::apply_ui_config(
        &mut App::new(Session::default(), String::new(), false),
        &config,
    )?;
    let deck_keys = deck_keys(&config)?;
    let ascii = config.ui.ascii.unwrap_or_else(|| !utf8_locale());
    let notify = notify_of(&config);
    let launch = crate::launch::Launch {
        config,
        permission: args.policy.permission.clone(),
        plugins: args.policy.plugin.clone(),
        allow_drive: args.policy.allow_drive,
        exit_after_first_frame: args.exit_after_first_frame,
    };
    let rt = runtime()?;
    let said = rt.block_on(async move {
        let mut deck: Option<trellis_tui::deck::Deck> = None;
        for req in requests {
            let agent = req.agent.clone();
            let (mut opened, _, notes) = match launch.open(req) {
                Ok(o) => o,
                Err(e) => {
                    // The sessions started so far close with the deck; their worktrees
                    // stay, and are said with how to end them.
                    if let Some(d) = &deck {
                        let left: Vec<String> = d
                            .sessions
                            .slots
                            .iter()
                            .filter_map(|s| s.app.driver.session.worktree.as_ref())
                            .filter_map(crate::worktree_cmd::reminder)
                            .collect();
                        crate::worktree_cmd::print(&left);
                    }
                    return Err(e);
                }
            };
            // Before the full screen takes the terminal.
            crate::worktree_cmd::print(&notes);
            if let Some(p) = &prompt {
                // Queued until the agent has set its session up.
                opened.app.driver.prompt(p.clone(), Vec::new());
            }
            match deck.as_mut() {
                None => deck = Some(trellis_tui::deck::Deck::new(opened, agent)),
                Some(d) => {
                    d.add(opened, agent);
                }
            }
        }
        let Some(mut deck) = deck else {
            anyhow::bail!("no session to start");
        };
        deck.show(0);
        if prompt.is_some() {
            deck.sessions.fan = deck.sessions.slots.iter().map(|s| s.key).collect();
        }
        deck.keys = deck_keys;
        deck.hint_keys();
        deck.ascii = ascii;
        deck.sessions.notify = notify;
        deck.set_worktrees(std::sync::Arc::new(crate::worktree_cmd::Ops));
        // Reachable from elsewhere: `trellis ls`, `send`, `cancel`, `stop`, `approve`.
        match trellis_hub::place::runtime_dir()
            .and_then(|d| trellis_hub::serve::serve(&d, &format!("hub-{}", std::process::id())))
        {
            Ok(served) => deck.sessions.set_hub(served),
            Err(e) => {
                deck.front().message = Some(format!("no socket for trellis ls and approve: {e}"))
            }
        }
        if let Some((host, rx)) = launch.hub_host()? {
            deck.sessions.set_hub_wide(host, rx);
        }
        deck.sessions.opener = Some(opener(launch, crate::launch::Launch::open));
        let said = trellis_tui::run_deck(deck)
            .await
            .map_err(anyhow::Error::from)?;
        anyhow::Ok(said)
    })?;
    // Each session's log, and what closing each had to say.
    print_said(said);
    // Spans still on their way to a collector.
    crate::traces::flush();
    Ok(ExitCode::SUCCESS)
}

/// `[notify]` as the deck takes it.
pub(crate) fn notify_of(config: &Config) -> trellis_deck::Notify {
    let n = &config.notify;
    trellis_deck::Notify {
        enabled: n.enabled.unwrap_or(true),
        blocked: n.blocked.unwrap_or(true),
        error: n.error.unwrap_or(true),
        done: n.done.unwrap_or(true),
        command: n.command.clone().filter(|c| !c.trim().is_empty()),
    }
}

/// How a front end of kind `F` starts a session (see [`crate::launch::Launch::open`]).
pub(crate) type OpenWith<F> =
    fn(
        &crate::launch::Launch,
        crate::launch::Request,
    ) -> anyhow::Result<(trellis_deck::Opened<F>, std::path::PathBuf, Vec<String>)>;

/// Starts the sessions a deck's human asks for (the new-session form, a hub's
/// `trellis run --detach`), all alike, each with a front end made by `open`.
pub(crate) fn opener<F: trellis_deck::Front + 'static>(
    launch: crate::launch::Launch,
    open: OpenWith<F>,
) -> trellis_deck::Opener<F> {
    Box::new(move |req: trellis_deck::NewSession| {
        let mut from = None;
        let resume = match &req.fork {
            Some(f) => {
                let mut r = crate::sessions::Resume::fork(&f.session, f.at)
                    .map_err(|e| format!("{e:#}"))?;
                if !f.transcript {
                    r.carry = None;
                    r.handed_over = true;
                }
                // The turn asked for (none: after the last), not the log's count.
                from = Some(trellis_deck::Lineage {
                    log: r.continues().0.into(),
                    at: f.at,
                    handoff: !f.transcript,
                });
                Some(r)
            }
            None => None,
        };
        let request = crate::launch::Request {
            agent: req.agent.clone(),
            cwd: req.cwd.clone(),
            // Asked for from the UI: no worktree is an error shown in the form.
            worktree: req.worktree.then_some(crate::session_args::Ask {
                label: req.worktree_label.clone(),
                required: true,
            }),
            carry: false,
            resume,
            load: None,
            launched_in: req.launched_in.clone(),
        };
        match open(&launch, request) {
            Ok((mut opened, _, notes)) => {
                if !notes.is_empty() {
                    let said: Vec<String> = notes
                        .iter()
                        .map(|n| trellis_text::one_line(n).into_owned())
                        .collect();
                    opened.app.tell(said.join(" · "));
                }
                opened.from = from;
                Ok(opened)
            }
            Err(e) => Err(format!("{e:#}")),
        }
    })
}

/// Whether the terminal's locale speaks UTF-8 (else the rail's marks are ASCII).
fn utf8_locale() -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .is_none_or(|s| {
            let s = s.to_ascii_lowercase();
            s.contains("utf-8") || s.contains("utf8")
        })
}

/// The session keys from `[ui.keys]` (the names the deck owns).
fn deck_keys(config: &Config) -> anyhow::Result<trellis_tui::deck::DeckKeys> {
    use trellis_store::config::KeySetting;
    let mut keys = std::collections::BTreeMap::new();
    for (name, setting) in &config.ui.keys {
        if !trellis_tui::deck::DeckAction::is_name(name) {
            continue;
        }
        let v = match setting {
            KeySetting::Keys(s) => Some(s.clone()),
            KeySetting::Enabled(false) => None,
            KeySetting::Enabled(true) => {
                return Err(config
                    .invalid(
                        "ui.keys",
                        name,
                        "use a key like \"<A-j>\", or false to disable",
                    )
                    .into());
            }
        };
        keys.insert(name.clone(), v);
    }
    trellis_tui::deck::DeckKeys::new(&keys).map_err(|e| {
        let key = keys
            .keys()
            .find(|k| e.0.contains(k.as_str()))
            .cloned()
            .unwrap_or_else(|| "keys".into());
        config.invalid("ui.keys", &key, e.0).into()
    })
}

/// What closing the session had to say, once the terminal is the user's again.
fn print_said(said: Vec<String>) {
    use std::io::Write;
    // Not `eprintln!`: after a hangup the terminal is gone, and a failed print would panic
    // on the way out (skipping what is still to be dropped: sockets, the demo's workspace).
    let mut err = std::io::stderr().lock();
    for text in said {
        let _ = writeln!(err, "trellis: {}", crate::output::safe(&text));
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
    crate::ui_config::apply_ui_config(&mut app, &config)?;
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
