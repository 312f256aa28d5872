//! `trellis sessions list`: rows under headers, each with what the user asked and a title
//! that tells it apart; a session and the ones that resumed it are one thread, one row.

use trellis_index::SessionRow;

use super::when;

/// Titles that name no session in particular.
const PLACEHOLDERS: &[&str] = &["new session", "untitled", "new chat", "new thread"];

/// The agent's titles among `rows` that tell a session apart: not a placeholder, not
/// shared by several rows (an agent that titles every session alike).
fn telling<'a>(rows: impl Iterator<Item = &'a SessionRow> + Clone) -> impl Fn(&str) -> bool {
    let mut uses = std::collections::HashMap::<String, usize>::new();
    for r in rows {
        if let Some(t) = r.title.as_deref() {
            *uses.entry(t.trim().to_lowercase()).or_default() += 1;
        }
    }
    move |t: &str| {
        let t = t.trim().to_lowercase();
        !t.is_empty() && !PLACEHOLDERS.contains(&t.as_str()) && uses.get(&t).is_none_or(|&n| n < 2)
    }
}

/// What a session is called wherever it shows (a search's hit), as `sessions list --all`
/// decides it: its title when that tells it apart among every session's, else its first
/// prompt. `all`: every session `sessions list --all` lists; `of`: the sessions whose
/// names are wanted, by id.
pub(super) fn names(
    all: &[SessionRow],
    of: impl Fn(&str) -> bool,
) -> std::collections::HashMap<String, String> {
    let threads = threads(all);
    let tells = telling(threads.iter().map(|t| t.newest()));
    all.iter()
        .filter(|r| of(&r.id))
        .map(|r| (r.id.clone(), name(r, &tells)))
        .collect()
}

fn name(r: &SessionRow, tells: &impl Fn(&str) -> bool) -> String {
    let title = r.title.as_deref().filter(|t| tells(t));
    match (title, r.first_prompt.as_deref()) {
        (Some(t), _) => t,
        (None, Some(p)) => p,
        (None, None) => "(no prompt)",
    }
    .to_string()
}

/// What each row is called (the sessions picker's one column): the agent's title when it
/// tells the session apart, else the user's first prompt.
pub(super) fn display_titles(rows: &[SessionRow]) -> Vec<String> {
    let tells = telling(rows.iter());
    rows.iter().map(|r| name(r, &tells)).collect()
}

/// One conversation: a session, and the sessions that resumed it (newest last). A fork
/// is a conversation of its own, that says where it parted.
#[derive(Debug)]
pub(super) struct Thread<'a> {
    /// Oldest first.
    pub sessions: Vec<&'a SessionRow>,
    /// A fork or a hand-off: where it parted from the session it came from (that
    /// session's id, or its log's name when not listed, and the turn), in words.
    pub fork_of: Option<String>,
}

impl Thread<'_> {
    fn newest(&self) -> &SessionRow {
        self.sessions[self.sessions.len() - 1]
    }

    /// What the user asked first in it.
    fn prompt(&self) -> Option<&str> {
        self.sessions.iter().find_map(|r| r.first_prompt.as_deref())
    }
}

/// `rows` (newest first) as threads (newest first): a row that continues another row of
/// the list joins its thread.
pub(super) fn threads(rows: &[SessionRow]) -> Vec<Thread<'_>> {
    let by_path: std::collections::HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.as_str(), i))
        .collect();
    // The row each row's thread ends in (its newest resumption listed).
    let mut continued_by: Vec<Option<usize>> = vec![None; rows.len()];
    // A resumption continues its thread; a fork starts one of its own.
    fn resumes(r: &SessionRow) -> Option<&str> {
        r.continues.as_deref().filter(|_| r.continues_at.is_none())
    }
    for (i, r) in rows.iter().enumerate() {
        if let Some(&prev) = resumes(r).and_then(|p| by_path.get(p))
            && prev != i
            && continued_by[prev].is_none()
        {
            continued_by[prev] = Some(i);
        }
    }
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if continued_by[i].is_some() {
            continue;
        }
        // The newest of a thread: walk back to its first session.
        let mut sessions = vec![r];
        let mut at = r;
        let mut seen = std::collections::HashSet::from([i]);
        while let Some(&prev) = resumes(at).and_then(|p| by_path.get(p)) {
            if !seen.insert(prev) {
                break;
            }
            at = &rows[prev];
            sessions.push(at);
        }
        sessions.reverse();
        let first = sessions[0];
        let fork_of = first
            .continues_at
            .zip(first.continues.as_deref())
            .map(|(n, p)| {
                let of = by_path.get(p).map_or_else(
                    || {
                        std::path::Path::new(p)
                            .file_name()
                            .map_or(p.to_string(), |f| f.to_string_lossy().into_owned())
                    },
                    |&j| rows[j].id.clone(),
                );
                // After its last turn when it had fewer than n (as far as the list knows).
                let last = by_path.get(p).is_some_and(|&j| n > rows[j].turns);
                match (first.handed_over, last) {
                    (true, true) => format!("hand-off from {of}"),
                    (true, false) => format!("hand-off from {of} before turn {n}"),
                    (false, true) => format!("fork of {of} after its last turn"),
                    (false, false) => format!("fork of {of} before turn {n}"),
                }
            });
        out.push(Thread { sessions, fork_of });
    }
    out
}

/// The agent as a row names it: what the user called it (a preset, a registry id);
/// for an agent given as a command line, the name it gives itself once it has (the last
/// part of `@scope/name`), else its program.
pub(super) fn agent_of(r: &SessionRow) -> String {
    let command_line = r
        .command
        .as_deref()
        .is_some_and(|c| c.contains(char::is_whitespace) || c.contains('/'));
    let own = r
        .agent_name
        .as_deref()
        .map(|n| n.rsplit('/').next().unwrap_or(n))
        .filter(|n| !n.trim().is_empty());
    // Dialed by URL: its own name, and where it ran (the header's name says it).
    let dialed = r
        .command
        .as_deref()
        .is_some_and(|c| c.starts_with("ws://") || c.starts_with("wss://"));
    if dialed
        && let (Some(n), Some((_, at))) = (own, r.agent.as_deref().and_then(|a| a.rsplit_once('@')))
    {
        return format!("{n}@{at}");
    }
    match (command_line, own) {
        (true, Some(n)) => n.to_string(),
        _ => r
            .agent
            .clone()
            .or(r.agent_title.clone())
            .unwrap_or_else(|| "?".into()),
    }
}

/// The header line, for rows with a directory column or not.
pub(super) fn header(dirs: bool) -> String {
    let dir = if dirs {
        format!("{:<32}  ", "DIRECTORY")
    } else {
        String::new()
    };
    format!(
        "{:<8}  {:<16}  {:<12} {:>5} {:>6}     {dir}{:<44}  TITLE",
        "ID", "STARTED (UTC)", "AGENT", "TURNS", "CALLS", "PROMPT"
    )
}

/// One row per thread: its newest session's id and agent, its first start, its turns and
/// calls together, what the user asked, and the agent's title where it tells it apart.
pub(super) fn lines(
    threads: &[Thread<'_>],
    dir: impl Fn(&SessionRow) -> Option<String>,
) -> Vec<String> {
    let tells = telling(threads.iter().map(|t| t.newest()));
    threads
        .iter()
        .map(|t| {
            let r = t.newest();
            let agent = agent_of(r);
            let turns: u32 = t.sessions.iter().map(|s| s.turns).sum();
            let calls: u64 = t.sessions.iter().map(|s| s.calls.total).sum();
            let failed: u64 = t.sessions.iter().map(|s| s.calls.failed).sum();
            let fails = if failed > 0 {
                format!("✗{failed:<3}")
            } else {
                "    ".into()
            };
            let prompt = t.prompt().unwrap_or("(no prompt)");
            // The agent's title where it tells the session apart, else its worktree.
            let mut title = r
                .title
                .as_deref()
                .filter(|x| tells(x) && !x.trim().eq_ignore_ascii_case(prompt.trim()))
                .map(|x| trellis_text::squeezed(x, 50))
                .or_else(|| r.worktree.as_deref().map(|w| format!("worktree {w}")))
                .unwrap_or_default();
            let mut said = Vec::new();
            if let Some(parted) = &t.fork_of {
                said.push(parted.clone());
            }
            if t.sessions.len() > 1 {
                said.push(format!("resumed {}×", t.sessions.len() - 1));
            }
            if !said.is_empty() {
                title = format!(
                    "{title}{}({})",
                    if title.is_empty() { "" } else { " " },
                    said.join(", ")
                );
            }
            let dir = dir(r).map(|d| format!("{d:<32}  ")).unwrap_or_default();
            format!(
                "{}  {:<16}  {:<12} {:>5} {:>6} {fails} {dir}{:<44}  {title}",
                r.id,
                when(t.sessions[0].started).trim_end_matches(" UTC"),
                trellis_text::squeezed(&agent, 12),
                turns,
                calls,
                trellis_text::squeezed(prompt, 44),
            )
            .trim_end()
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, started: f64, prompt: Option<&str>, title: Option<&str>) -> SessionRow {
        SessionRow {
            id: id.into(),
            path: format!("/logs/{id}.jsonl"),
            agent: Some("demo".into()),
            started: Some(started),
            first_prompt: prompt.map(Into::into),
            title: title.map(Into::into),
            turns: u32::from(prompt.is_some()),
            ..SessionRow::default()
        }
    }

    #[test]
    fn a_fork_says_where_it_parted_from_its_thread() {
        let first = row("cccc0001", 100.0, Some("fix it"), Some("Fix"));
        let mut resumed = row("cccc0002", 200.0, Some("go on"), Some("Fix"));
        resumed.continues = Some(first.path.clone());
        resumed.turns = 3;
        let mut fork = row("cccc0003", 300.0, Some("another way"), Some("Fix"));
        fork.continues = Some(resumed.path.clone());
        fork.continues_at = Some(2);
        let rows = vec![fork, resumed, first.clone()];
        let lines = lines(&threads(&rows), |_| None);
        // The fork is a row of its own, saying where it parted; the session it came from
        // keeps its row (and its id, which a rewind needs).
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("cccc0003"), "{lines:?}");
        assert!(
            lines[0].contains("another way")
                && lines[0].ends_with("(fork of cccc0002 before turn 2)"),
            "{lines:?}"
        );
        assert!(lines[0].contains("    1 "), "its own turns only: {lines:?}");
        assert!(lines[1].starts_with("cccc0002"), "{lines:?}");
        assert!(lines[1].ends_with("(resumed 1×)"), "{lines:?}");
        // After its last turn, and a hand-off, say so (a trial saw "before turn 7" of a
        // session of six turns, and a hand-off called a fork).
        let mut after = row("cccc0004", 400.0, Some("and then"), Some("Fix"));
        after.continues = Some(first.path.clone());
        after.continues_at = Some(2);
        let mut handed = row("cccc0005", 500.0, Some("brief"), Some("Fix"));
        handed.continues = Some(first.path.clone());
        handed.continues_at = Some(2);
        handed.handed_over = true;
        let rows = vec![handed, after, first.clone()];
        let said = super::lines(&threads(&rows), |_| None);
        assert!(said[0].ends_with("(hand-off from cccc0001)"), "{said:?}");
        assert!(
            said[1].ends_with("(fork of cccc0001 after its last turn)"),
            "{said:?}"
        );
    }

    #[test]
    fn a_resumed_session_is_one_row_with_its_first_prompt() {
        let first = row(
            "aaaa0001",
            100.0,
            Some("fix the parser"),
            Some("Parser fix"),
        );
        let mut second = row("aaaa0002", 200.0, Some("go on"), Some("Parser fix"));
        second.continues = Some(first.path.clone());
        let mut third = row("aaaa0003", 300.0, Some("and the tests"), Some("Parser fix"));
        third.continues = Some(second.path.clone());
        let other = row("bbbb0001", 250.0, Some("write docs"), Some("Docs"));
        let rows = vec![third, other, second, first];
        let t = threads(&rows);
        assert_eq!(t.len(), 2);
        let lines = lines(&t, |_| None);
        assert!(lines[0].starts_with("aaaa0003"), "{lines:?}");
        assert!(lines[0].contains("fix the parser"), "{lines:?}");
        assert!(lines[0].contains("Parser fix (resumed 2×)"), "{lines:?}");
        assert!(lines[0].contains("    3 "), "turns together: {lines:?}");
        assert!(
            lines[1].contains("write docs") && lines[1].ends_with("Docs"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_title_every_session_shares_gives_way() {
        let rows = vec![
            row(
                "a",
                2.0,
                Some("fix the TODO"),
                Some("Fix the TODO in the demo workspace"),
            ),
            row(
                "b",
                1.0,
                Some("add a test"),
                Some("Fix the TODO in the demo workspace"),
            ),
        ];
        let lines = lines(&threads(&rows), |_| None);
        assert!(
            lines[0].ends_with("fix the TODO"),
            "no shared title: {lines:?}"
        );
        assert!(lines[1].ends_with("add a test"), "{lines:?}");
        assert!(header(false).starts_with("ID"));
        assert!(header(true).contains("DIRECTORY"));
    }
}
