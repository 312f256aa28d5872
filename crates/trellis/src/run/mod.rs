//! `trellis run`: prompts run headless, one turn each, with a permission policy.
//!
//! Exit codes: 0 `end_turn`; 2 usage or config error; 3 `refusal`; 4 `max_tokens`;
//! 5 `max_turn_requests`; 6 `cancelled`; 7 the agent crashed or exited mid-turn;
//! 8 protocol error (the agent answered the prompt with an error, or setup failed);
//! with `--strict`, 9 when the turn ended normally but a call failed or a permission
//! request was refused (by the policy, a rule, an extension or the user); 10 `--timeout`;
//! 11 `--idle-timeout`; 12 a budget (`--max-tool-calls`, `--max-turns`, `--max-cost`); 13
//! stopped after a permission request nobody could answer (`--on-ask fail`); 128 + N for
//! signal N (SIGHUP 129, a second Ctrl-C 130, SIGTERM 143), and 141 when the output's
//! reader went away (as SIGPIPE would end a process; the session is closed first).
//! `docs/headless.md` has the table and which are worth a retry.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use trellis_core::Session;
use trellis_core::permission::Policy;
use trellis_driver::{Connection, Driver};
use trellis_store::{Config, LogWriter, Paths};

use crate::headless::Finished;
use crate::output::{Format, Output};
use crate::setup::{FileSink, policy_from};

pub const EXIT_USAGE: u8 = 2;

mod args;
use args::ASK_TIMEOUT;
pub use args::{ApproveVia, RunArgs};

fn exit_code(stop: Option<&str>) -> u8 {
    match stop {
        Some("end_turn") => 0,
        Some("refusal") => 3,
        Some("max_tokens") => 4,
        Some("max_turn_requests") => 5,
        Some("cancelled") => 6,
        Some("agent_exited") | None => 7,
        Some(_) => 8,
    }
}

pub fn main(mut args: RunArgs, config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let common = std::mem::take(&mut args.session);
    let paths = Paths::from_env();
    let config_file = config_path.or_else(|| paths.as_ref().map(|p| p.config_file()));
    let config = match &config_file {
        Some(f) => Config::load(f)?,
        None => Config::default(),
    };
    if args.detach {
        let default = config
            .default_agent
            .clone()
            .unwrap_or_else(|| "demo".into());
        let d = args.detached(&common, &default)?;
        // An agent that cannot start here is said before any hub is started for it.
        crate::agents::check(&d.agent, &config)?;
        return crate::serve::run_detached(d, config_file.as_deref());
    }
    let ran = stays(&args, common, &config, paths.as_ref());
    if let Err(e) = &ran {
        // A run that failed, however early, still leaves its artifacts (an agent that
        // wrote nothing), saying why.
        if let Some(f) = &args.output_file {
            let _ = crate::sessions::write_new(f, b"");
        }
        let summary = serde_json::json!({
            "exit_code": EXIT_USAGE, "exit_reason": format!("{e:#}"),
        });
        write_artifacts(&args, Some(&summary), Some(""));
    }
    ran
}

/// The earlier session a run continues: `--resume` it, or `--fork` it before `--at`.
fn continued(args: &RunArgs) -> anyhow::Result<Option<crate::sessions::Resume>> {
    Ok(match (&args.resume, &args.fork) {
        (Some(id), _) => Some(crate::sessions::Resume::find(id, args.carry)?),
        (None, Some(id)) => Some(crate::sessions::Resume::fork(id, args.at)?),
        (None, None) => None,
    })
}

/// What a headless run changes in its agent's spec.
fn headless(spec: &mut trellis_acp::spec::AgentSpec) {
    // No one types into a headless run: a streaming agent is read in large pieces.
    spec.bulk_reads = true;
    // It ends with a turn that did not end well: a lost connection ends it, saying so,
    // rather than dialing again for nothing.
    if let Some(r) = &mut spec.remote {
        r.redial = false;
    }
}

/// A run that stays (not `--detach`): set up, driven to its end, concluded.
fn stays(
    args: &RunArgs,
    common: crate::session_args::UiArgs,
    config: &Config,
    paths: Option<&Paths>,
) -> anyhow::Result<ExitCode> {
    args.check_hub_flags()?;
    // The config's hooks are checked before anything is made (the demo's workspace, a
    // worktree, a log): a mistake there stops the run at once, naming its line.
    crate::hooks::hooks_of(&config.hooks, "", |table, key, why| {
        config.invalid(table, key, why).into()
    })?;
    let resume = continued(args)?;
    let agent = common
        .one_agent()?
        .or_else(|| resume.as_ref().and_then(|r| r.agent.clone()))
        .or_else(|| config.default_agent.clone())
        .unwrap_or_else(|| "demo".into());
    let cwd = common
        .cwd
        .clone()
        .or_else(|| resume.as_ref().and_then(|r| r.cwd.clone()));
    // A fork runs where its session ran, never silently here instead.
    if let (Some(r), None, Some(_)) = (&resume, &cwd, &args.fork) {
        anyhow::bail!(
            "where session {} ran ({}) is gone: a fork runs there (give --cwd to run it elsewhere)",
            r.row.id,
            r.row.cwd.as_deref().unwrap_or("not recorded")
        );
    }
    if args.carry && args.resume.is_none() && common.worktree.is_none() {
        anyhow::bail!(
            "--carry needs --resume (the earlier session) or --worktree (uncommitted work){}",
            if args.fork.is_some() {
                ": a fork always carries its transcript"
            } else {
                ""
            }
        );
    }
    let mut resolved =
        crate::agents::resolve(&agent, config, cwd.as_deref(), common.worktree.is_some())?;
    headless(&mut resolved.spec);
    // A fork from a turn, in a worktree: that turn's checkpoint, found before anything
    // is made.
    let base = match (&resume, &common.worktree) {
        (Some(r), Some(_)) => crate::checkpoints::fork_base(&r.row, r.fork.and_then(|f| f.at))?,
        _ => None,
    };
    let (worktree, said) = crate::worktree_cmd::isolate(
        common.worktree.as_ref(),
        args.carry && common.worktree.is_some(),
        &mut resolved,
        config,
    )?;
    crate::worktree_cmd::print(&said);
    let mut resume = resume;
    if let (Some(r), Some(_)) = (resume.as_mut(), &worktree) {
        r.moved_to(&resolved.spec.cwd);
    }
    // Held for the whole run: endings from elsewhere refuse while it runs.
    let _lease = crate::worktree_cmd::lease(&resolved.spec.cwd)?;
    resolved.spec.load_session = common
        .load
        .clone()
        .or_else(|| resume.as_ref().and_then(|r| r.agent_load()));
    resolved.spec.fork_session = resume.as_ref().and_then(|r| r.agent_fork(&agent));
    let (policy, explicit) = policy_from(common.policy.permission.as_deref(), config)?;
    let answers = match &args.answers {
        Some(p) => crate::answers::Answers::load(p)?,
        None => crate::answers::Answers::none(),
    };
    if let Policy::Rules {
        fallback: trellis_core::permission::Verdict::Ask,
        ..
    } = &policy
    {
        say!(
            "trellis: permission fallback \"ask\": nobody to ask in a headless run; --on-ask {} answers those requests",
            args.on_ask().word()
        );
    }
    if !explicit && args.approve_via == ApproveVia::Policy {
        say!(
            "trellis: permission policy: reject (the default of headless runs; use --permission to change)"
        );
    }
    if resolved.scratch.is_some() {
        say!("trellis: demo workspace: {}", resolved.spec.cwd.display());
    }
    let writer = match (&args.log, &paths) {
        (Some(p), _) => LogWriter::open(p),
        (None, Some(paths)) => LogWriter::create_in(&paths.sessions_dir(), &resolved.name),
        (None, None) => anyhow::bail!("no data directory: pass --log FILE"),
    }
    .context("cannot create the session log")?;
    let log_path = writer.path().to_path_buf();
    if let (Some(commit), Some(_)) = (&base, &worktree) {
        let said = crate::checkpoints::materialize(&resolved.spec.cwd, commit, &log_path)?;
        say!("trellis: {}", crate::output::safe(&said));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let cwd = resolved.spec.cwd.to_string_lossy().into_owned();
    let host = extensions(config, &common, &mut resolved)?;
    let (budgets, want) = limits(args, explicit, &resolved.spec.cwd);
    let hub = {
        let _guard = rt.enter();
        run_hub(args, &resolved, worktree.as_ref(), &log_path)?
    };
    let remind = worktree.clone();
    let stop = rt.block_on(drive(
        args.format(),
        policy,
        budgets,
        want,
        &answers,
        hub,
        host,
        resolved,
        writer,
        &args.prompt,
        &args.set,
        &args.files,
        &cwd,
        resume,
        worktree,
    ))?;
    say!("trellis: session log: {}", log_path.display());
    if let Some(r) = remind.as_ref().and_then(crate::worktree_cmd::reminder) {
        crate::worktree_cmd::print(&[r]);
    }
    if let Some(f) = &args.output_file {
        let text = stop.last_message.as_deref().unwrap_or_default();
        if let Err(e) = crate::sessions::write_new(f, text.as_bytes()) {
            say!("trellis: --output-file: {e:#}");
        }
    }
    if args.stats {
        print_stats(&stop);
    }
    // Spans still on their way go before the summary says how many went.
    let exported = crate::traces::flush();
    Ok(ExitCode::from(conclude(args, &stop, exported)))
}

/// `--stats`: the run's own resource use, one JSON line on stderr (for the benchmarks).
fn print_stats(stop: &Finished) {
    let (user, sys, rss) = crate::stats::self_usage();
    say!(
        "{}",
        serde_json::json!({"cpu_user_s": user, "cpu_sys_s": sys, "max_rss_kb": rss,
            "updates": stop.updates, "output_bytes": stop.output_bytes})
    );
}

/// The run's extension host (built-ins, hooks, its plugins), and the MCP servers its
/// plugins offer the agent (problems with them said on stderr).
fn extensions(
    config: &Config,
    common: &crate::session_args::UiArgs,
    resolved: &mut crate::agents::Resolved,
) -> anyhow::Result<crate::setup::Host> {
    let live = crate::setup::Live {
        store: true,
        headless: true,
        project: Some(resolved.spec.cwd.clone()),
        try_plugins: common.policy.plugin.clone(),
        allow_drive: common.policy.allow_drive,
        // A run is a hub of one session: a plugin of `"scope": "hub"` runs in it.
        in_hub: false,
    };
    let plugins = crate::setup::session_plugins(&live)?;
    // Why a plugin did not start as asked (its files changed since it was enabled, a
    // capability not granted, its plugin.json): said where a run's user looks.
    for n in &plugins.notes {
        say!("trellis: {}", crate::output::safe(n));
    }
    let host = crate::setup::ext_host(config, &live, &plugins)?;
    let (mcp, mut mcp_problems) = crate::setup::mcp_servers(config, &plugins)?;
    let mcp = crate::agents::mcp_for(&resolved.spec, mcp, &mut mcp_problems);
    for p in &mcp_problems {
        say!("trellis: {}", crate::output::safe(p));
    }
    resolved.spec.mcp_servers = mcp;
    resolved.spec.keep_lines = host.0.wants_acp();
    Ok(host)
}

/// `--approve-via hub`: the run's hub, served (within the run's runtime), said on stderr.
fn run_hub(
    args: &RunArgs,
    resolved: &crate::agents::Resolved,
    worktree: Option<&trellis_core::WorktreeRef>,
    log_path: &std::path::Path,
) -> anyhow::Result<Option<crate::run_hub::RunHub>> {
    if args.approve_via == ApproveVia::Policy {
        return Ok(None);
    }
    let name = args
        .hub
        .clone()
        .unwrap_or_else(|| format!("run-{}", std::process::id()));
    let hub = crate::run_hub::RunHub::serve(
        &name,
        args.ask_timeout.unwrap_or(ASK_TIMEOUT),
        resolved.name.clone(),
        crate::worktree_cmd::place_of(&resolved.spec.cwd, worktree),
        log_path.to_path_buf(),
    )?;
    say!(
        "trellis: requests nothing decides wait for an answer through hub {name} (trellis approve; trellis attach {name}:{}), then --on-ask {}",
        crate::run_hub::KEY,
        args.on_ask().word()
    );
    Ok(Some(hub))
}

/// The run's exit code, with the summary and patch written to say the same.
fn conclude(args: &RunArgs, stop: &Finished, exported: Option<crate::traces::Exported>) -> u8 {
    let (code, why) = outcome(stop, args.strict);
    let summary = stop.summary.clone().map(|mut s| {
        s["exit_code"] = serde_json::json!(code);
        s["exit_reason"] = serde_json::json!(why);
        s["trace_id"] = serde_json::json!(trellis_trace::span::hex(&stop.trace_id));
        if let Some(e) = &exported {
            s["trace_export"] = serde_json::json!({"made": e.made, "exported": e.exported,
                "dropped": e.dropped, "error": e.error});
        }
        if let Some(b) = &stop.breach {
            s["budget"] = serde_json::json!(b.reason());
        }
        // The calls an agent reported past `--max-tool-calls` (sent before the cancel
        // reached it, or after it ignored it) stay on the record as it reported them;
        // the summary says how many they are, so no count reads as work within budget.
        if let (Some(limit), Some(total)) = (args.max_tool_calls, s["tool_calls"]["total"].as_u64())
            && total > limit as u64
        {
            s["tool_calls"]["past_limit"] = serde_json::json!(total - limit as u64);
        }
        s
    });
    write_artifacts(args, summary.as_ref(), stop.patch.as_deref());
    code
}

/// The budgets the run enforces and the artifacts it makes, from its flags.
fn limits(
    args: &RunArgs,
    explicit_policy: bool,
    cwd: &std::path::Path,
) -> (crate::budgets::Budgets, Want) {
    let budgets = crate::budgets::Budgets {
        timeout: args.timeout,
        idle: args.idle_timeout,
        max_cost: args.max_cost,
        max_tool_calls: args.max_tool_calls,
        max_turns: args.max_turns,
        grace: args.grace(),
        on_ask: args.on_ask(),
        explicit_policy,
    };
    // The commit the session's directory is at now: the patch is from it.
    let want = Want {
        summary: args.summary.is_some() || args.summary_md.is_some(),
        patch: args
            .patch
            .as_ref()
            .map(|_| (cwd.to_path_buf(), trellis_worktree::measure::head_of(cwd))),
    };
    (budgets, want)
}

/// What `--summary`, `--summary-md` and `--patch` need from the loop.
struct Want {
    summary: bool,
    patch: Option<(PathBuf, Option<String>)>,
}

/// Writes the artifacts asked for (each beside its file, then moved into place); a failure
/// is said, never fatal.
fn write_artifacts(args: &RunArgs, summary: Option<&serde_json::Value>, patch: Option<&str>) {
    let write = |flag: &str, f: &std::path::Path, bytes: &[u8]| {
        if let Err(e) = crate::sessions::write_new(f, bytes) {
            say!("trellis: {flag}: {e:#}");
        }
    };
    if let (Some(f), Some(s)) = (&args.summary, summary) {
        let mut text = serde_json::to_vec_pretty(s).unwrap_or_default();
        text.push(b'\n');
        write("--summary", f, &text);
    }
    if let (Some(f), Some(s)) = (&args.summary_md, summary) {
        write("--summary-md", f, crate::artifacts::markdown(s).as_bytes());
    }
    if let (Some(f), Some(p)) = (&args.patch, patch) {
        write("--patch", f, p.as_bytes());
    }
}

/// The exit code of a finished run, and why in words.
fn outcome(stop: &Finished, strict: bool) -> (u8, String) {
    if stop.settings_failed {
        return (EXIT_USAGE, "a --set was not accepted".into());
    }
    if let Some(b) = &stop.breach {
        return (b.code(), b.reason());
    }
    if let Some(sig) = stop.signal {
        let why = match sig {
            "SIGPIPE" => "stopped: the output was closed".to_string(),
            _ => format!("stopped by {sig}"),
        };
        return (signal_code(sig), why);
    }
    let code = exit_code(stop.reason.as_deref());
    // Refused for its token, its URL or what it sent (a 4xx but a timeout or too many
    // requests): a config error, not worth a retry.
    if code == 7
        && let Some(status @ 400..=499) = stop.dial_refused
        && status != 408
        && status != 429
    {
        return (
            EXIT_USAGE,
            format!(
                "the agent's end refused the connection ({status}): check its token, URL and headers"
            ),
        );
    }
    if strict && code == 0 && (stop.failed > 0 || stop.refused > 0) {
        say!(
            "trellis: --strict: {} failed call(s), {} refused permission request(s)",
            stop.failed,
            stop.refused
        );
        return (
            EXIT_STRICT,
            format!(
                "--strict: {} failed call(s), {} refused permission request(s)",
                stop.failed, stop.refused
            ),
        );
    }
    let why = match stop.reason.as_deref() {
        Some(r) => format!("stop reason {r}"),
        None => "the agent exited".into(),
    };
    (code, why)
}

/// A run ended by a signal exits as a shell reports it: 128 + the signal's number.
fn signal_code(sig: &str) -> u8 {
    128 + match sig {
        "SIGHUP" => 1,
        "SIGINT" => 2,
        // (Not received: Rust ignores it. The output's reader went away.)
        "SIGPIPE" => 13,
        "SIGTERM" => 15,
        _ => 0,
    }
}

/// `--strict`: the turn ended, but not cleanly.
pub const EXIT_STRICT: u8 = 9;

#[allow(clippy::too_many_arguments)]
async fn drive(
    format: Format,
    policy: Policy,
    budgets: crate::budgets::Budgets,
    want: Want,
    answers: &crate::answers::Answers,
    hub: Option<crate::run_hub::RunHub>,
    (host, ext_rx): (
        trellis_ext_host::ExtHost,
        tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
    ),
    resolved: crate::agents::Resolved,
    writer: LogWriter,
    prompts: &[String],
    sets: &[(String, String)],
    files: &[PathBuf],
    cwd: &str,
    resume: Option<crate::sessions::Resume>,
    worktree: Option<trellis_core::WorktreeRef>,
) -> anyhow::Result<Finished> {
    let continues = resume.as_ref().map(|r| r.continues());
    if let Some(r) = &resume {
        say!("trellis: {}", crate::output::safe(&r.headless_notice()));
    }
    let log_path = writer.path().to_path_buf();
    let index = Paths::from_env().map(|p| {
        // Registered now, read by the next `trellis sessions` command: a run's machine
        // does not pay for a search it may never make.
        trellis_index::Background::register_only(
            p.data_dir.join(trellis_index::FILE),
            &p.sessions_dir(),
            writer.path().to_path_buf(),
        )
    });
    // An agent that never answers a setting must not hold the run forever.
    let settings_timeout = resolved.spec.setup_timeout;
    let mut resolved = resolved;
    crate::checkpoints::arm(&mut resolved.spec, &log_path);
    let begun = crate::traces::begin(&mut resolved.spec, &resolved.name);
    let remote = crate::agents::remote_at(&resolved.spec);
    if let Some(r) = &remote {
        say!(
            "trellis: the agent runs at {}{}",
            r.at,
            if r.shared {
                " and shares this machine's files"
            } else {
                "; its files are its own"
            }
        );
    }
    let dial = resolved.spec.remote.as_ref().map(|r| r.refused.clone());
    let (handle, rx) = trellis_acp::start(resolved.spec, Box::new(FileSink(writer)));
    trellis_ext_host::install_panic_guard();
    crate::setup::record_header(
        &handle,
        (&resolved.name, &resolved.command),
        (cwd, begun.started),
        continues
            .as_ref()
            .map_or((None, None, false), |(p, at, h)| {
                (Some(p.as_str()), *at, *h)
            }),
        worktree,
        None,
        remote.as_ref(),
    );
    let stdout = std::io::stdout();
    // Not locked for the run: the output is written from the driver's observer, which
    // must be `Send` (a `BufWriter` of this size takes the lock once per block anyway).
    let out = Output::new(std::io::BufWriter::with_capacity(1 << 16, stdout), format);
    // The chain: the user's rules (in the reducer), then extensions that intercept, then
    // — in place of the dialog — the headless policy.
    let (session_policy, fallback) = match policy {
        Policy::Rules { rules, fallback } => (
            Policy::Rules {
                rules,
                fallback: trellis_core::permission::Verdict::Ask,
            },
            Policy::Rules {
                rules: Vec::new(),
                fallback,
            },
        ),
        other => (Policy::Ask, other),
    };
    let (session, carry) = match resume {
        Some(r) => r.session(session_policy)?,
        None => (Session::new(session_policy), None),
    };
    let mut driver = Driver::new(session, Connection { handle, rx });
    crate::traces::observe(&mut driver, &begun);
    driver.keep_output_in_log(&log_path);
    driver.set_host(host, ext_rx);
    if let Some(doc) = carry {
        driver.carry(doc);
    }
    if let Some(ix) = index {
        driver.set_history(Box::new(crate::sessions::Indexing(ix)));
    }
    let signals = trellis_os::signals::Signals::new(false)?;
    let run = crate::headless::Headless::new(
        driver,
        out,
        crate::headless::Rules {
            fallback,
            budgets,
            summary: want.summary,
            patch: want.patch,
            answers,
            sets,
            files,
            settings_timeout,
        },
        prompts,
    )
    .with_hub(hub);
    run.run(signals).await.map(|mut f| {
        f.trace_id = begun.trace_id;
        f.dial_refused = dial
            .map(|d| d.load(std::sync::atomic::Ordering::Relaxed))
            .filter(|s| *s != 0);
        f
    })
}
