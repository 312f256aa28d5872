//! Plain-text renderings of a session: one line per tool call, the transcript, and the
//! ledger summary printed by `trellis log show` and `trellis run --format text`.

use std::fmt::Write as _;

use crate::enrich::{card_title, diff_stat};
use crate::session::{Entry, Session};
use crate::tool_call::{ToolCall, ToolStatus};
use crate::transcript::Role;

pub fn status_glyph(s: ToolStatus) -> &'static str {
    match s {
        ToolStatus::Pending => "…",
        ToolStatus::InProgress => "▸",
        ToolStatus::Completed => "✓",
        ToolStatus::Failed => "✗",
        ToolStatus::Cancelled => "⊘",
        ToolStatus::Unfinished => "◌",
    }
}

/// Size or exit summary of a call: `exit 1`, `+3 −1`, `42 lines`.
pub fn size_summary(call: &ToolCall, session: &Session) -> Option<String> {
    for c in &call.content {
        if let crate::tool_call::ToolContent::Terminal { terminal_id } = c
            && let Some(exit) = session
                .terminals
                .get(terminal_id)
                .and_then(|t| t.exit.as_ref())
        {
            return Some(match (&exit.exit_code, &exit.signal) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(sig)) => format!("killed by {sig}"),
                _ => "exited".into(),
            });
        }
    }
    if let Some((add, del)) = diff_stat(call) {
        return Some(format!("+{add} −{del}"));
    }
    let (_, lines) = call.output_size();
    let term_lines: usize = call
        .content
        .iter()
        .filter_map(|c| match c {
            crate::tool_call::ToolContent::Terminal { terminal_id } => {
                session.terminals.get(terminal_id)
            }
            _ => None,
        })
        .map(|t| crate::tool_call::count_lines(&t.output))
        .sum();
    match lines + term_lines {
        0 => None,
        1 => Some("1 line".into()),
        n => Some(format!("{n} lines")),
    }
}

/// The permission part of a card: `allowed once by user`, and why when the decider said
/// (`rejected once by extension hooks: no edits under secrets/`).
pub fn permission_summary(call: &ToolCall) -> Option<String> {
    let rec = call.permissions.last()?;
    let said = match (&rec.outcome, &rec.decider) {
        (Some(o), Some(crate::permission::Decider::Unrecorded)) => o.label(),
        (Some(o), Some(d)) => format!("{} by {d}", o.label()),
        (Some(o), None) => o.label(),
        (None, _) => "awaiting permission".into(),
    };
    Some(match rec.reason.as_deref().filter(|r| !r.is_empty()) {
        Some(r) if rec.outcome.is_some() => format!("{said}: {r}"),
        _ => said,
    })
}

/// One line for a call, as headless text mode prints it.
pub fn tool_line(call: &ToolCall, session: &Session) -> String {
    let mut line = format!(
        "{} {:<7} {}",
        status_glyph(call.status),
        call.kind.as_str(),
        card_title(call)
    );
    if let Some(d) = call.duration() {
        let _ = write!(line, " · {d:.1}s");
    }
    if let Some(s) = size_summary(call, session) {
        let _ = write!(line, " · {s}");
    }
    if let Some(p) = permission_summary(call) {
        let _ = write!(line, " · {p}");
    }
    if matches!(call.status, ToolStatus::Cancelled | ToolStatus::Unfinished) {
        let _ = write!(line, " · {}", call.status.as_str());
    }
    for a in &call.anomalies {
        let _ = write!(line, " · ⚑ {}", crate::anomaly::label(a));
    }
    line
}

/// One line for a subagent: `⤷ subagent Explore the code · idle (end_turn) · 3 calls`.
pub fn subagent_line(s: &crate::subagents::Subagent) -> String {
    let mut line = format!("⤷ subagent {}", s.label());
    if let Some(state) = &s.state {
        let _ = write!(line, " · {}", state.replace('_', " "));
        if let Some(r) = &s.stop_reason {
            let _ = write!(line, " ({r})");
        }
    }
    if let Some(e) = &s.error {
        let _ = write!(line, " · {e}");
    }
    let _ = write!(
        line,
        " · {} call{}",
        s.calls,
        if s.calls == 1 { "" } else { "s" }
    );
    line
}

/// Subagent `child` (its position in `Session::subagents`) and everything it did, as
/// plain text (what exports show under the call that started it).
pub fn subagent_story(session: &Session, child: usize) -> String {
    let mut out = String::new();
    subagent_text(session, child, 0, &mut out);
    out
}

/// A subagent and everything it did, indented under its parent (`depth` levels).
fn subagent_text(session: &Session, child: usize, depth: usize, out: &mut String) {
    let s = &session.subagents.list[child];
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}{}", subagent_line(s));
    entries_text(session, &s.entries, depth + 1, out);
}

/// Entries of a transcript (the session's or a subagent's) as plain text.
fn entries_text(session: &Session, entries: &[Entry], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for entry in entries {
        match entry {
            Entry::Message(m) => {
                let prefix = match m.role {
                    Role::User => "> ",
                    Role::Agent => "",
                    Role::Thought => "(thinking) ",
                };
                let _ = writeln!(out, "{pad}{prefix}{}", m.text.trim_end());
            }
            Entry::ToolCall { index } => {
                let call = session.ledger.at(*index);
                let _ = writeln!(out, "{pad}{}", tool_line(&call, session));
                if let Some(child) = session
                    .subagents
                    .for_call(&call)
                    .and_then(|c| session.subagents.position(&c.session_id))
                {
                    subagent_text(session, child, depth + 1, out);
                }
            }
            Entry::Subagent { index } => {
                // Under its parent's call once one names it.
                if session.subagents.list[*index].call_id.is_none() {
                    subagent_text(session, *index, depth, out);
                }
            }
            Entry::Notice { text } => {
                let _ = writeln!(out, "{pad}! {text}");
            }
            Entry::AgentNotice(n) => {
                let (severity, title, description) = (&n.severity, &n.title, &n.description);
                let _ = write!(out, "{pad}[{severity}] {title}");
                if let Some(d) = description {
                    let _ = write!(out, " — {d}");
                }
                let _ = writeln!(out);
            }
            Entry::Compaction(c) => {
                let _ = writeln!(out, "{pad}{}", c.line());
            }
        }
    }
}

/// The whole transcript as plain text, subagents indented under the calls that show them.
pub fn transcript_text(session: &Session) -> String {
    let mut out = String::new();
    entries_text(session, &session.transcript, 0, &mut out);
    out
}

/// Counts per status and the list of calls, for `trellis log show`.
pub fn ledger_summary(session: &Session) -> String {
    let mut out = String::new();
    let calls = session.ledger.calls();
    let tally = session.ledger.tally();
    let count = |s: ToolStatus| tally.count(s);
    let _ = writeln!(
        out,
        "{} tool calls: {} completed, {} failed, {} cancelled, {} unfinished, {} open",
        calls.len(),
        count(ToolStatus::Completed),
        count(ToolStatus::Failed),
        count(ToolStatus::Cancelled),
        count(ToolStatus::Unfinished),
        count(ToolStatus::Pending) + count(ToolStatus::InProgress),
    );
    for c in calls {
        // A subagent's call ids are its own: named with the child's.
        let id = match &c.subagent {
            Some(child) => format!("{child}/{}", c.id),
            None => c.id.clone(),
        };
        let _ = writeln!(out, "  {id:<40} {}", tool_line(&c, session));
    }
    if !session.subagents.is_empty() {
        let _ = writeln!(out, "{} subagents:", session.subagents.list.len());
        for (i, s) in session.subagents.list.iter().enumerate() {
            if s.parent.is_none() {
                subagent_text(session, i, 1, &mut out);
            }
        }
    }
    if let Some(stop) = &session.last_stop {
        let _ = writeln!(out, "last turn: {stop} (turns: {})", session.turn);
    }
    let k = &session.counters;
    // What the input held that was not used as it came, each said as what happened.
    let mut notes = Vec::new();
    if k.invalid_lines > 0 {
        notes.push(format!(
            "{} lines were not valid JSON-RPC and were skipped",
            k.invalid_lines
        ));
    }
    for c in session.ledger.calls() {
        for a in &c.anomalies {
            notes.push(format!(
                "call {} {}",
                c.id,
                crate::anomaly::RULES
                    .iter()
                    .find(|(r, _)| r == a)
                    .map_or(a.as_str(), |(_, s)| s)
            ));
        }
    }
    if k.unannounced_calls > 0 {
        notes.push(format!(
            "{} calls were updated before the agent announced them (kept, as placeholders until announced)",
            k.unannounced_calls
        ));
    }
    for (kind, n) in &k.unknown_updates {
        notes.push(format!("{n} updates of unknown kind {kind:?} were ignored"));
    }
    for (what, n) in &k.malformed {
        notes.push(format!("{n} malformed {what} were skipped"));
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
