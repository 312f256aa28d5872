//! `trellis sessions`: past sessions from the index (list, search, show, rm, reindex)
//! and their exports. Every command first brings the index up to date with the logs on
//! disk (new logs from headless runs, copied from other machines, grown or deleted).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use trellis_index::{Found, Index, ListFilter, SessionRow};

use crate::output::safe;

mod list;
mod picker;
mod resume;
mod search;
mod show;

pub use picker::IndexHistory;
pub use resume::{ForkArgs, Resume};
use show::show_text;
pub use show::{export, export_until};

#[derive(Subcommand)]
pub enum SessionsCmd {
    /// Past sessions, newest first: this directory's, or all of them.
    List {
        /// Sessions that ran in DIR (default: the current directory).
        #[arg(long, conflicts_with = "all")]
        cwd: Option<PathBuf>,
        /// Sessions of every directory.
        #[arg(long)]
        all: bool,
        /// Only this agent: its preset or program name, or the name or title it gives
        /// itself (any case).
        #[arg(long)]
        agent: Option<String>,
        /// Also sessions where no prompt was sent.
        #[arg(long)]
        empty: bool,
        /// Started on or after: `2026-11-30`, or a time ago: `3d`, `12h`, `2w`.
        #[arg(long)]
        since: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Full-text search of every session: prompts, messages, tool calls, tool output.
    Search {
        #[arg(required = true)]
        query: Vec<String>,
        /// Only in one part of the sessions.
        #[arg(long = "in", value_enum)]
        scope: Option<ScopeArg>,
        /// Only sessions that ran in DIR.
        #[arg(long)]
        cwd: Option<PathBuf>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One session's facts: where and when it ran, its agent, turns, calls by status,
    /// tokens, cost, and its log (`trellis sessions export` gives its calls).
    Show {
        /// A session id (or a unique prefix of one), or a log file.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session: its log file, its place in the index and its checkpoints. Give
    /// its whole id (or its log's path). A log written outside the sessions directory
    /// (`--log FILE`) is forgotten, not deleted. A session still running, or one whose
    /// rewinds left undo points (what they replaced), is refused unless `--force`.
    Rm {
        id: String,
        /// Also when it has undo points: what its rewinds replaced goes with it.
        #[arg(long)]
        force: bool,
    },
    /// The checkpoints of a session's working tree: one before each turn, in a git
    /// repository (the files the agent changed since each, and its prompt).
    Checkpoints {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Go back to before a turn. `--code`: put back the files of the session's working
    /// tree that the agent changed since (its edits, diffs and writes on the record); a
    /// file changed by anyone else is listed and kept unless --force; the tree as it was
    /// is kept first, and `--undo` puts it back. `--conversation`: a new session of its
    /// agent in its directory, in a hub, with the turns before as history and transcript
    /// (ACP cannot cut a conversation short); prints its name. `--both`: the two.
    Rewind {
        id: String,
        /// The turn to go back to the start of.
        #[arg(long, required_unless_present = "undo", conflicts_with = "undo")]
        to: Option<u32>,
        /// The code: the files of the working tree.
        #[arg(long, group = "what")]
        code: bool,
        /// The conversation: a new session from before the turn (see above).
        #[arg(long, group = "what")]
        conversation: bool,
        /// The code, then the conversation.
        #[arg(long, group = "what")]
        both: bool,
        /// Also put back files changed by someone other than the agent.
        #[arg(long, conflicts_with = "undo")]
        force: bool,
        /// Put back the tree as it was before the last rewind.
        #[arg(long, conflicts_with_all = ["conversation", "both"])]
        undo: bool,
    },
    /// A new session from an earlier one, before its turn --at (else after its last),
    /// side by side with the others in a hub (started in the background when none
    /// serves); prints its name (`HUB:KEY`, for `trellis attach`). Its history is the
    /// earlier turns, told to the agent as a transcript with the first prompt; forked
    /// after the last turn, an agent that offers `session/fork` forks its own copy.
    Fork(ForkArgs),
    /// Rebuild the index from the logs.
    Reindex,
    /// Add session logs to the history: a log written elsewhere (`--log`) that the index
    /// lost, or one copied from another machine. Logs outside the sessions directory are
    /// remembered, so a rebuilt index finds them again.
    Add {
        #[arg(required = true)]
        logs: Vec<PathBuf>,
    },
    /// Continue a session in the UI: its agent (`--agent` to change) in its directory,
    /// its history above a divider. An agent that advertises `session/load` reloads it;
    /// any other starts without its memory of it — `--carry` sends the earlier session
    /// (as Markdown) with the first prompt. Headless: `trellis run --resume ID`.
    Resume {
        id: String,
        #[arg(long)]
        carry: bool,
        #[command(flatten)]
        session: crate::session_args::UiArgs,
    },
    /// A session as Markdown or as one self-contained HTML file.
    Export {
        id: String,
        #[arg(long, value_enum, default_value = "md")]
        format: ExportFormat,
        /// Write to FILE instead of standard output (`-`: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Keep secrets (API keys, tokens, passwords) instead of redacting them.
        #[arg(long)]
        no_redact: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScopeArg {
    Prompts,
    Messages,
    Tools,
    Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Md,
    Html,
}

/// The index, brought up to date; what was wrong with it is said on stderr.
pub fn open_index() -> anyhow::Result<(Index, PathBuf)> {
    let paths = trellis_store::Paths::from_env().context("no home directory for Trellis data")?;
    let sessions = paths.sessions_dir();
    let (mut index, found) = Index::open(&paths.data_dir.join(trellis_index::FILE))?;
    match &found {
        Found::SetAside { why, to } => say!(
            "trellis: the session index was {why}; it was moved to {} and is rebuilt from the logs",
            to.display()
        ),
        Found::Created | Found::Ready => {}
    }
    index.refresh(&sessions)?;
    Ok((index, sessions))
}

/// `sessions add`: one log into the index (recorded first when it is elsewhere).
fn add(index: &mut Index, sessions: &Path, log: &Path) -> anyhow::Result<String> {
    let log = std::path::absolute(log)?;
    let mut first = String::new();
    let file =
        trellis_store::open_log(&log).with_context(|| format!("cannot read {}", log.display()))?;
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(std::io::Read::take(file, 1 << 16)),
        &mut first,
    )?;
    let is_log = serde_json::from_str::<serde_json::Value>(&first)
        .is_ok_and(|v| v["msg"]["type"] == "session_log");
    if !is_log {
        bail!("{} is not a Trellis session log", log.display());
    }
    if !log.starts_with(sessions) {
        trellis_index::outside_logs::remember(index.path(), &log)
            .with_context(|| format!("cannot record {}", log.display()))?;
    }
    index.update(&log)?;
    Ok(trellis_index::session_id(&log))
}

pub fn main(cmd: SessionsCmd) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let code = run(cmd, &mut out).inspect_err(|e| {
        // SQLite found the index damaged: the next command checks it whole (and sets
        // it aside, rebuilding from the logs, if it is).
        if let Some(e) = e.downcast_ref::<trellis_index::Error>()
            && e.is_damage()
            && let Some(paths) = trellis_store::Paths::from_env()
        {
            trellis_index::suspect(&paths.data_dir.join(trellis_index::FILE));
        }
    })?;
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(code),
    }
}

/// `trellis sessions rm ID`: the log, its place in the index, its checkpoints. Deleting
/// asks for the whole id (or the log's path): a prefix is enough to show a session, not
/// to delete one. A log outside the sessions directory (`--log FILE`) is the user's file:
/// `trellis sessions reindex`: the index built again from the logs, and what it took.
fn reindex(index: &mut Index, sessions: &Path, out: &mut String) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let t = std::time::Instant::now();
    let done = index.reindex(sessions)?;
    let s = t.elapsed().as_secs_f64();
    writeln!(
        out,
        "indexed {} logs, {:.1} MB in {s:.2} s",
        done.logs,
        done.bytes as f64 / 1e6
    )?;
    Ok(())
}

/// it is forgotten, not deleted.
fn rm(
    index: &mut Index,
    sessions: &Path,
    id: &str,
    force: bool,
    out: &mut String,
) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let row = index.session(id)?;
    if id != row.id && id != row.path {
        bail!(
            "say the whole id to delete a session: `trellis sessions rm {}` ({}); a prefix is enough to show one, not to delete it",
            row.id,
            safe(&row.path)
        );
    }
    if trellis_store::session_log::is_being_written(Path::new(&row.path)) {
        bail!(
            "session {} is still running (its log is being written): stop it first",
            row.id
        );
    }
    let undo = crate::checkpoints::undo_points(&row);
    if undo > 0 && !force {
        bail!(
            "session {} has {undo} undo point(s): what its rewinds replaced, perhaps the only copy of someone's work (`trellis sessions rewind {} --undo` puts the last back); `trellis sessions rm {} --force` deletes them with it",
            row.id,
            row.id,
            row.id
        );
    }
    let ours = Path::new(&row.path).starts_with(sessions);
    if ours {
        match std::fs::remove_file(&row.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("{}: {e}", row.path),
        }
    }
    index.forget(&row.path)?;
    let n = crate::checkpoints::forget(&row);
    if ours {
        writeln!(out, "removed {} ({})", row.id, safe(&row.path))?;
    } else {
        writeln!(
            out,
            "forgot {}: its log {} is outside the sessions directory and was kept (delete it yourself if you mean to)",
            row.id,
            safe(&row.path)
        )?;
    }
    if n > 0 {
        writeln!(out, "and its {n} checkpoint(s) of the working tree")?;
    }
    Ok(())
}

fn run(cmd: SessionsCmd, out: &mut String) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    let (mut index, sessions) = open_index()?;
    match cmd {
        SessionsCmd::List {
            cwd,
            all,
            agent,
            empty,
            since,
            limit,
            json,
        } => {
            let here = match (all, cwd) {
                (true, _) => None,
                (false, Some(d)) => Some(canonical(&d)?),
                (false, None) => Some(canonical(&std::env::current_dir()?)?),
            };
            let filter = ListFilter {
                cwd: here.clone(),
                agent: agent.clone(),
                since: since.as_deref().map(parse_since).transpose()?,
                limit: Some(limit),
                prompted: !empty,
                ..Default::default()
            };
            let rows = index.list(&filter)?;
            // Sessions where nothing was asked: counted, listed with --empty.
            let unprompted = if empty {
                0
            } else {
                index
                    .count(&ListFilter {
                        prompted: false,
                        limit: None,
                        ..filter.clone()
                    })?
                    .saturating_sub(index.count(&filter)?)
            };
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            } else if rows.is_empty() {
                let what = match &agent {
                    Some(a) => format!("no sessions of agent {}", safe(a)),
                    None => "no sessions".to_string(),
                };
                let hint = match (here.is_some(), unprompted) {
                    (_, n) if n > 0 => {
                        format!(" with a prompt ({n} without one: --empty lists them)")
                    }
                    (true, _) => " here (--all lists every directory's)".to_string(),
                    (false, _) => String::new(),
                };
                say!("{what}{hint}");
            } else {
                let home = std::env::var("HOME").ok();
                writeln!(out, "{}", list::header(all))?;
                let threads = list::threads(&rows);
                // Across directories, each row says where it ran.
                let dir = |r: &SessionRow| {
                    all.then(|| {
                        let cwd = r.cwd.as_deref().unwrap_or("?");
                        trellis_view::status::short_path(cwd, home.as_deref(), 32)
                    })
                };
                for line in list::lines(&threads, dir) {
                    writeln!(out, "{}", safe(&line))?;
                }
                if unprompted > 0 {
                    say!(
                        "({unprompted} session(s) where no prompt was sent are not shown: --empty lists them)"
                    );
                }
            }
        }
        SessionsCmd::Search {
            query,
            scope,
            cwd,
            limit,
            json,
        } => return search::search(&mut index, &query.join(" "), scope, cwd, (limit, json), out),
        SessionsCmd::Show { id, json } => {
            let row = index.session(&id)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&row)?)?;
            } else {
                write!(
                    out,
                    "{}",
                    safe(&show_text(&row, &index.continuations(&row.path)?))
                )?;
            }
        }
        SessionsCmd::Rm { id, force } => rm(&mut index, &sessions, &id, force, out)?,
        SessionsCmd::Checkpoints { id, json } => {
            let row = index.session(&id)?;
            crate::checkpoints::list(&row, json, out)?;
        }
        SessionsCmd::Rewind {
            conversation: true, ..
        }
        | SessionsCmd::Rewind { both: true, .. }
        | SessionsCmd::Fork(_) => {
            bail!("`sessions fork` and a conversation's rewind start a session (see main)")
        }
        SessionsCmd::Rewind {
            id,
            to,
            force,
            undo,
            code,
            ..
        } => {
            if !code && !undo {
                bail!("say what to rewind: --code, --conversation or --both (or --undo)");
            }
            let row = index.session(&id)?;
            crate::checkpoints::warn_if_running(&row);
            crate::checkpoints::rewind(&row, to, force, undo, out)?;
        }
        SessionsCmd::Reindex => reindex(&mut index, &sessions, out)?,
        SessionsCmd::Add { logs } => {
            for log in logs {
                let id = add(&mut index, &sessions, &log)?;
                writeln!(out, "added {id} {}", log.display())?;
            }
        }
        SessionsCmd::Resume { .. } => bail!("`sessions resume` runs the UI (see main)"),
        SessionsCmd::Export {
            id,
            format,
            output,
            no_redact,
        } => {
            let row = index.session(&id)?;
            let text = export(&row, format, !no_redact)?;
            match output.filter(|p| p.as_os_str() != "-") {
                Some(path) => write_new(&path, text.as_bytes())?,
                None => out.push_str(&text),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `path` through a file created exclusively beside it, renamed over
/// it: never through whatever (a link) already sits at `path`.
pub fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.error))?;
    Ok(())
}

/// `p` with its links resolved; a directory that is gone (a demo's scratch workspace, a
/// worktree discarded) as written, made absolute: its sessions are still in the index.
fn canonical(p: &Path) -> anyhow::Result<String> {
    let path = match std::fs::canonicalize(p) {
        Ok(path) => path,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::path::absolute(p).with_context(|| p.display().to_string())?
        }
        Err(e) => return Err(anyhow::Error::new(e).context(p.display().to_string())),
    };
    Ok(path.to_string_lossy().into_owned())
}

/// `2026-11-30`, or an age: `3d`, `12h`, `2w`, `30m` → Unix seconds.
fn parse_since(s: &str) -> anyhow::Result<f64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    let unit = |c: char| match c {
        'm' => Some(60.0),
        'h' => Some(3600.0),
        'd' => Some(86_400.0),
        'w' => Some(7.0 * 86_400.0),
        _ => None,
    };
    if let Some(last) = s.chars().last()
        && let Some(u) = unit(last)
        && let Ok(n) = s[..s.len() - 1].parse::<f64>()
    {
        return Ok(now - n * u);
    }
    match trellis_core::civil::midnight_utc(s) {
        Ok(t) => Ok(t as f64),
        Err(why) => {
            bail!("--since {s}: not a date (2026-11-30, UTC) nor an age (3d, 12h, 2w, 30m): {why}")
        }
    }
}

fn when(t: Option<f64>) -> String {
    t.map(trellis_core::civil::utc_minutes)
        .unwrap_or_else(|| "—".into())
}

/// The search index kept up to date as a session runs: the driver's [`History`], over
/// the index's background reader.
///
/// [`History`]: trellis_driver::History
pub struct Indexing(pub trellis_index::Background);

impl trellis_driver::History for Indexing {
    fn turn_synced(&self) {
        self.0.touch();
    }

    fn finish(&mut self, wait: std::time::Duration) -> Option<String> {
        let why = self.0.finish(wait)?;
        Some(format!(
            "this session may be missing from the session history: {why}; \
             `trellis sessions add {}` adds it",
            self.0.log().display()
        ))
    }
}
