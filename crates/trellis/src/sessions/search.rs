//! `trellis sessions search`: hits as lines (each with its session, turn, part and a
//! snippet whose matches stand out) or as JSON.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use trellis_index::{Index, ListFilter, Scope};

use super::{ScopeArg, canonical, list};
use crate::output::safe;

/// `trellis sessions search`: the hits of `query`, as lines or JSON (`limit`, `json`).
pub(super) fn search(
    index: &mut Index,
    query: &str,
    scope: Option<ScopeArg>,
    cwd: Option<PathBuf>,
    (limit, json): (usize, bool),
    out: &mut String,
) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    let scope = scope.map(|s| match s {
        ScopeArg::Prompts => Scope::Prompts,
        ScopeArg::Messages => Scope::Messages,
        ScopeArg::Tools => Scope::Tools,
        ScopeArg::Output => Scope::Output,
    });
    let cwd = cwd.as_deref().map(canonical).transpose()?;
    let hits = index.search(query, scope, cwd.as_deref(), false, limit)?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
    } else if hits.is_empty() {
        say!("nothing found");
        return Ok(ExitCode::from(1));
    } else {
        let tty = std::io::stdout().is_terminal();
        // Each session as `sessions list --all` names it (a title several sessions
        // share gives way to the first prompt): decided among every session, so the
        // same whatever else the query found.
        let all = index.list(&ListFilter {
            prompted: true,
            ..ListFilter::default()
        })?;
        let names = list::names(&all, |id| hits.iter().any(|h| h.session == id));
        for h in &hits {
            let what = names
                .get(h.session.as_str())
                .map(String::as_str)
                .or(h.title.as_deref())
                .or(h.cwd.as_deref())
                .unwrap_or("");
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
        if hits.len() == limit {
            writeln!(out, "(the newest {limit} hits; --limit N for more)")?;
        }
    }
    Ok(ExitCode::SUCCESS)
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
