//! `trellis sessions`: past sessions from the index (list, search, show, rm, reindex)
//! and their exports. Every command first brings the index up to date with the logs on
//! disk (new logs from headless runs, copied from other machines, grown or deleted).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use trellis_index::{Found, Index, ListFilter, Scope, SessionRow};

use crate::output::safe;

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
        /// Only this agent (its preset name or its own name).
        #[arg(long)]
        agent: Option<String>,
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
    /// One session: its facts and its tool calls.
    Show {
        /// A session id (or a unique prefix of one), or a log file.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session: its log file and its place in the index.
    Rm { id: String },
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
        Found::SetAside { why, to } => eprintln!(
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
        trellis_index::elsewhere::remember(index.path(), &log)
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

fn run(cmd: SessionsCmd, out: &mut String) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    let (mut index, sessions) = open_index()?;
    match cmd {
        SessionsCmd::List {
            cwd,
            all,
            agent,
            since,
            limit,
            json,
        } => {
            let cwd = match (all, cwd) {
                (true, _) => None,
                (false, Some(d)) => Some(canonical(&d)?),
                (false, None) => Some(canonical(&std::env::current_dir()?)?),
            };
            let since = since.as_deref().map(parse_since).transpose()?;
            let rows = index.list(&ListFilter {
                cwd,
                agent,
                since,
                limit: Some(limit),
                ..Default::default()
            })?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            } else if rows.is_empty() {
                eprintln!("no sessions here (try --all)");
            } else {
                let names = display_titles(&rows);
                let home = std::env::var("HOME").ok();
                for (r, name) in rows.iter().zip(&names) {
                    // Across directories, each row says where it ran.
                    let dir = all.then(|| {
                        let cwd = r.cwd.as_deref().unwrap_or("?");
                        trellis_view::status::short_path(cwd, home.as_deref(), 32)
                    });
                    writeln!(out, "{}", safe(&list_line(r, name, dir.as_deref())))?;
                }
            }
        }
        SessionsCmd::Search {
            query,
            scope,
            cwd,
            limit,
            json,
        } => {
            let scope = scope.map(|s| match s {
                ScopeArg::Prompts => Scope::Prompts,
                ScopeArg::Messages => Scope::Messages,
                ScopeArg::Tools => Scope::Tools,
                ScopeArg::Output => Scope::Output,
            });
            let cwd = cwd.as_deref().map(canonical).transpose()?;
            let hits = index.search(&query.join(" "), scope, cwd.as_deref(), false, limit)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
            } else if hits.is_empty() {
                eprintln!("nothing found");
                return Ok(ExitCode::from(1));
            } else {
                let tty = std::io::stdout().is_terminal();
                for h in &hits {
                    let what = h.title.as_deref().or(h.cwd.as_deref()).unwrap_or("");
                    let place = match &h.call_id {
                        Some(c) => format!("turn {} · {} of call {c}", h.turn, h.kind),
                        None => format!("turn {} · {}", h.turn, h.kind),
                    };
                    writeln!(
                        out,
                        "{}  {}  {}",
                        h.session,
                        safe(&place),
                        safe(&trellis_text::squeezed(what, 60))
                    )?;
                    writeln!(out, "    {}", highlight(&h.snippet, tty))?;
                }
            }
        }
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
        SessionsCmd::Rm { id } => {
            let row = index.session(&id)?;
            match std::fs::remove_file(&row.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => bail!("{}: {e}", row.path),
            }
            index.forget(&row.path)?;
            writeln!(out, "removed {} ({})", row.id, safe(&row.path))?;
        }
        SessionsCmd::Reindex => {
            let t = std::time::Instant::now();
            let done = index.reindex(&sessions)?;
            let s = t.elapsed().as_secs_f64();
            writeln!(
                out,
                "indexed {} logs, {:.1} MB in {s:.2} s",
                done.logs,
                done.bytes as f64 / 1e6
            )?;
        }
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

/// The session of `row`, rebuilt from its log, as a document.
pub fn export(row: &SessionRow, format: ExportFormat, redact: bool) -> anyhow::Result<String> {
    // Read a line at a time, finished calls out of memory as it goes (texts are read
    // back from the log as the document is written).
    let session = trellis_driver::replay::rebuild_log(Path::new(&row.path), |_| {})
        .with_context(|| format!("the session's log {}", row.path))?
        .session;
    let redactor = trellis_builtins::redact::Redact::default();
    let redact_fn = |s: &str| redactor.redact(s);
    let opts = trellis_view::export::Options {
        meta: trellis_view::export::Meta {
            id: Some(row.id.clone()),
            title: row.title.clone(),
            agent: row.agent_title.clone().or(row.agent.clone()),
            cwd: row.cwd.clone(),
            started: row.started,
        },
        redact: if redact { Some(&redact_fn) } else { None },
    };
    Ok(match format {
        ExportFormat::Md => trellis_view::export::markdown(&session, &opts),
        ExportFormat::Html => trellis_view::export::html(&session, &opts),
    })
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

fn canonical(p: &Path) -> anyhow::Result<String> {
    Ok(std::fs::canonicalize(p)
        .with_context(|| p.display().to_string())?
        .to_string_lossy()
        .into_owned())
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

/// What each row is called: the agent's title, unless it does not tell the session
/// apart — several of the rows share it (an agent that titles every session alike), or it
/// is a placeholder — then the user's first prompt.
fn display_titles(rows: &[SessionRow]) -> Vec<String> {
    const PLACEHOLDERS: &[&str] = &["new session", "untitled", "new chat", "new thread"];
    let mut uses = std::collections::HashMap::<&str, usize>::new();
    for r in rows {
        if let Some(t) = r.title.as_deref() {
            *uses.entry(t).or_default() += 1;
        }
    }
    rows.iter()
        .map(|r| {
            let generic = |t: &str| {
                uses.get(t).is_some_and(|&n| n > 1)
                    || PLACEHOLDERS.contains(&t.trim().to_lowercase().as_str())
            };
            let title = r.title.as_deref().filter(|t| !t.trim().is_empty());
            match (title, r.first_prompt.as_deref()) {
                (Some(t), Some(p)) if generic(t) => p,
                (Some(t), _) => t,
                (None, Some(p)) => p,
                (None, None) => "(no prompt)",
            }
            .to_string()
        })
        .collect()
}

fn list_line(r: &SessionRow, what: &str, dir: Option<&str>) -> String {
    let agent = r
        .agent_title
        .as_deref()
        .or(r.agent.as_deref())
        .unwrap_or("?");
    let fails = if r.calls.failed > 0 {
        format!(" ✗{}", r.calls.failed)
    } else {
        String::new()
    };
    let dir = dir.map(|d| format!("{d:<32}  ")).unwrap_or_default();
    format!(
        "{}  {}  {:<14} {:>3} turns {:>5} calls{fails}  {dir}{}",
        r.id,
        when(r.started),
        trellis_text::squeezed(agent, 14),
        r.turns,
        r.calls.total,
        trellis_text::squeezed(what, 60)
    )
}

fn show_text(r: &SessionRow, next: &[SessionRow]) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| s.push_str(&format!("{k:<11}{v}\n"));
    line("session", r.id.clone());
    if let Some(t) = r.title.as_deref().or(r.first_prompt.as_deref()) {
        line("title", trellis_text::squeezed(t, 100));
    }
    line(
        "agent",
        match (&r.agent, &r.agent_title) {
            (Some(a), Some(t)) if a != t => format!("{a} ({t})"),
            (a, t) => t.clone().or(a.clone()).unwrap_or_else(|| "?".into()),
        },
    );
    if let Some(c) = &r.cwd {
        line("directory", c.clone());
    }
    line("started", when(r.started));
    line("ended", when(r.ended));
    if let Some(e) = &r.end_reason {
        line("end", e.clone());
    }
    line("turns", r.turns.to_string());
    line(
        "calls",
        format!(
            "{} ({} completed, {} failed, {} other)",
            r.calls.total, r.calls.completed, r.calls.failed, r.calls.other
        ),
    );
    if let (Some(u), Some(z)) = (r.tokens_used, r.tokens_size) {
        line("tokens", format!("{u} of {z}"));
    }
    if let Some(c) = r.cost {
        line(
            "cost",
            format!("{c:.4} {}", r.currency.as_deref().unwrap_or("")),
        );
    }
    if let Some(a) = &r.acp_id {
        line("acp id", a.clone());
    }
    if let Some(c) = &r.continues {
        line("continues", c.clone());
    }
    for n in next {
        line("continued", format!("in {}", n.id));
    }
    line("log", format!("{} ({} bytes)", r.path, r.bytes));
    s
}

/// A snippet for the terminal: its text sanitized, its matches bold (or in «» when
/// standard output is not a terminal).
fn highlight(snippet: &str, tty: bool) -> String {
    let (open, close) = if tty {
        ("\x1b[1m", "\x1b[22m")
    } else {
        ("«", "»")
    };
    let mut out = String::new();
    for (i, part) in trellis_text::squeezed(snippet, 400)
        .split(['\u{2}', '\u{3}'])
        .enumerate()
    {
        if i % 2 == 1 {
            out.push_str(open);
            out.push_str(&safe(part));
            out.push_str(close);
        } else {
            out.push_str(&safe(part));
        }
    }
    out
}

/// What resuming an earlier session brings: where its history is, and how to start its
/// agent again.
pub struct Resume {
    pub row: SessionRow,
    /// The agent to start: the earlier session's, as the user named it.
    pub agent: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The earlier session as Markdown, for the first prompt (`--carry`).
    pub carry: Option<trellis_acp::Embedded>,
}

impl Resume {
    /// Finds session `id` (an id, a prefix of one, or a log) whose log can be read.
    pub fn find(id: &str, carry: bool) -> anyhow::Result<Resume> {
        let (index, _) = open_index()?;
        let row = index.session(id)?;
        trellis_store::open_log(Path::new(&row.path))
            .with_context(|| format!("the session's log {}", row.path))?;
        let carry = if carry {
            Some(trellis_acp::Embedded {
                uri: format!("trellis://session/{}.md", row.id),
                mime: "text/markdown".into(),
                text: export(&row, ExportFormat::Md, true)?,
            })
        } else {
            None
        };
        Ok(Resume {
            agent: row.command.clone().or(row.agent.clone()),
            cwd: row.cwd.as_ref().map(PathBuf::from).filter(|p| p.is_dir()),
            row,
            carry,
        })
    }

    /// The divider under the history.
    fn notice(&self) -> String {
        format!(
            "resumed session {} ({}): the turns above are from its log{}",
            self.row.id,
            when(self.row.started),
            if self.carry.is_some() {
                "; the first prompt carries them to the agent"
            } else {
                ""
            }
        )
    }

    /// The new session (the earlier history, then a divider), and what to send with the
    /// first prompt. The history is read a line at a time, finished chunks of calls out
    /// of memory as they come (into a store the new session goes on with): a resumed
    /// session costs what running it did, not its log's size.
    pub fn session(
        self,
        policy: trellis_core::Policy,
    ) -> anyhow::Result<(trellis_core::Session, Option<trellis_acp::Embedded>)> {
        let notice = self.notice();
        let prev = trellis_driver::replay::rebuild_log(Path::new(&self.row.path), |_| {})
            .with_context(|| format!("the session's log {}", self.row.path))?
            .session;
        Ok((
            trellis_core::Session::continuing(prev, policy, notice),
            self.carry,
        ))
    }

    /// [`Resume::session`] for a front end that shows the history as it is read: the
    /// session to show at once, the feed that reads the history into it, and what it
    /// becomes then (its new log is `log`); see `Driver::resume`.
    pub fn shown(self, policy: trellis_core::Policy, log: PathBuf) -> anyhow::Result<Shown> {
        let notice = self.notice();
        let (session, spill_error, feed) =
            trellis_driver::replay::Feed::start(Path::new(&self.row.path))
                .with_context(|| format!("the session's log {}", self.row.path))?;
        Ok(Shown {
            session,
            feed,
            then: trellis_driver::Resumed {
                policy,
                notice,
                log,
            },
            carry: self.carry,
            spill_error,
        })
    }
}

/// A resumed session as a front end opens it (see [`Resume::shown`]).
pub struct Shown {
    pub session: trellis_core::Session,
    pub feed: trellis_driver::replay::Feed,
    pub then: trellis_driver::Resumed,
    pub carry: Option<trellis_acp::Embedded>,
    /// Why every call of the history stays in memory, if it does.
    pub spill_error: Option<String>,
}

/// The sessions picker's view of the index (the UI crate knows no database).
pub struct IndexHistory {
    /// The directory of the running session and the one Trellis was started in (they
    /// differ for the demo's scratch workspace or `--cwd`): sessions of either come first.
    dirs: Vec<String>,
    /// Where exports are written: the running session's directory.
    cwd: String,
    /// Opened and brought up to date when the picker opens; searched as the user types.
    index: std::sync::Mutex<Option<Index>>,
}

impl IndexHistory {
    pub fn new(cwd: String) -> IndexHistory {
        let mut dirs = vec![cwd.clone()];
        dirs.extend(
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
                .filter(|d| *d != cwd),
        );
        IndexHistory {
            dirs,
            cwd,
            index: std::sync::Mutex::new(None),
        }
    }

    /// Runs `f` on the index; `fresh`: bring it up to date with the logs first.
    fn with<T>(
        &self,
        fresh: bool,
        f: impl FnOnce(&Index) -> trellis_index::Result<T>,
    ) -> Result<T, String> {
        let mut slot = self
            .index
            .lock()
            .map_err(|_| "the index is poisoned".to_string())?;
        match slot.as_mut() {
            Some(ix) if fresh => {
                let paths = trellis_store::Paths::from_env().ok_or("no data directory")?;
                ix.refresh(&paths.sessions_dir())
                    .map_err(|e| e.to_string())?;
            }
            Some(_) => {}
            None => *slot = Some(open_index().map_err(|e| format!("{e:#}"))?.0),
        }
        match slot.as_ref() {
            Some(ix) => f(ix).map_err(|e| e.to_string()),
            None => Err("no index".into()),
        }
    }

    /// Whether a session ran in (or was started from) one of the picker's directories.
    fn here(&self, dirs: &[Option<&str>]) -> bool {
        dirs.iter()
            .flatten()
            .any(|d| self.dirs.iter().any(|h| h == d))
    }

    fn row(&self, r: &SessionRow, name: String) -> trellis_tui::history::PickRow {
        trellis_tui::history::PickRow {
            id: r.id.clone(),
            log: PathBuf::from(&r.path),
            when: when(r.started),
            title: trellis_text::squeezed(&name, 120),
            here: self.here(&[r.cwd.as_deref(), r.launched_in.as_deref()]),
            place: None,
            call_id: None,
            snippet: None,
            acp_id: r.acp_id.clone(),
            agent_only: false,
        }
    }
}

impl trellis_tui::history::History for IndexHistory {
    fn recent(&self) -> Result<Vec<trellis_tui::history::PickRow>, String> {
        let rows = self.with(true, |ix| {
            ix.list(&ListFilter {
                limit: Some(500),
                ..ListFilter::default()
            })
        })?;
        let names = display_titles(&rows);
        let mut out: Vec<_> = rows
            .iter()
            .zip(names)
            .map(|(r, name)| self.row(r, name))
            .collect();
        // This directory's sessions first (stable: newest first within each group).
        out.sort_by_key(|r| !r.here);
        Ok(out)
    }

    fn search(&self, query: &str) -> Result<Vec<trellis_tui::history::PickRow>, String> {
        let hits = self.with(false, |ix| ix.search(query, None, None, true, 100))?;
        Ok(hits
            .into_iter()
            .map(|h| trellis_tui::history::PickRow {
                id: h.session,
                log: PathBuf::from(&h.path),
                when: when(h.started),
                title: trellis_text::squeezed(h.title.as_deref().unwrap_or(""), 120),
                here: self.here(&[h.cwd.as_deref()]),
                place: Some(match &h.call_id {
                    Some(c) => format!("turn {} · {} of {c}", h.turn, h.kind),
                    None => format!("turn {} · {}", h.turn, h.kind),
                }),
                call_id: h.call_id,
                snippet: Some(h.snippet),
                acp_id: None,
                agent_only: false,
            })
            .collect())
    }

    fn export(&self, log: &Path, format: &str) -> Result<PathBuf, String> {
        let row = self.with(true, |ix| ix.session(&log.to_string_lossy()))?;
        let (fmt, ext) = match format {
            "html" => (ExportFormat::Html, "html"),
            _ => (ExportFormat::Md, "md"),
        };
        let text = export(&row, fmt, true).map_err(|e| format!("{e:#}"))?;
        let path = Path::new(&self.cwd).join(format!("trellis-session-{}.{ext}", row.id));
        write_new(&path, text.as_bytes()).map_err(|e| format!("{e:#}"))?;
        Ok(path)
    }
}
