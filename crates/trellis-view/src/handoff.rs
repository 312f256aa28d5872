//! A hand-off brief (`/agent NAME`): what another agent needs to take over a session,
//! built from the ledger — what the user asked, the latest plan, the files changed with
//! their diff stats, the commands that failed, where the last turn stopped. The user
//! edits it before it is sent; every part is bounded, so a long session gives a brief
//! that still fits a prompt.

use std::fmt::Write;

use trellis_core::transcript::{Entry, Role};
use trellis_core::{Session, ToolStatus};

/// Prompts quoted (the latest).
const PROMPTS: usize = 12;
/// Files listed (the most recently changed).
const FILES: usize = 30;
/// Failed commands listed (the latest).
const FAILED: usize = 8;
/// Calls looked at, from the newest (a session of a million calls is not read back).
const LOOKED_AT: usize = 20_000;
/// Characters kept of one prompt, of the agent's last words.
const PROMPT_CHARS: usize = 400;
const LAST_CHARS: usize = 800;

/// The brief for an agent taking over `session` from `from` (as the rail names it).
/// How the mark of a code rewind from the UI begins (written by the UI).
pub const REWOUND: &str = "the code was put back to before turn";

pub fn brief(session: &Session, from: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "You are taking over a task from another coding agent ({from}) in this directory. What happened so far:"
    );
    let prompts: Vec<&str> = session
        .transcript
        .iter()
        .filter_map(|e| match e {
            Entry::Message(m) if m.role == Role::User => Some(m.text.as_str()),
            _ => None,
        })
        .collect();
    if !prompts.is_empty() {
        let _ = writeln!(out, "\nThe user asked:");
        let skipped = prompts.len().saturating_sub(PROMPTS);
        if skipped > 0 {
            let _ = writeln!(out, "- ({skipped} earlier prompt(s) left out)");
        }
        for p in &prompts[skipped..] {
            let _ = writeln!(out, "- {}", clip(p, PROMPT_CHARS));
        }
    }
    let plan = &session.plan;
    if !plan.is_empty() {
        let _ = writeln!(out, "\nThe latest plan:");
        for e in plan {
            let _ = writeln!(out, "- [{}] {}", e.status, clip(&e.content, PROMPT_CHARS));
        }
    }
    // Files the agent changed (completed edits), the newest change of each, and the
    // commands that failed.
    let mut files: Vec<(String, u64, u64)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let n = session.ledger.len();
    for i in (n.saturating_sub(LOOKED_AT)..n).rev() {
        let c = session.ledger.at(i);
        if c.status == ToolStatus::Completed
            && let Some((a, d)) = trellis_core::enrich::diff_stat(&c)
        {
            for p in trellis_core::enrich::paths_of(&c) {
                if files.len() < FILES && !files.iter().any(|(f, _, _)| *f == p) {
                    files.push((p, a as u64, d as u64));
                }
            }
        }
        if c.status == ToolStatus::Failed
            && failed.len() < FAILED
            && let Some(cmd) = trellis_core::enrich::command_of(&c)
        {
            failed.push(clip(&cmd, PROMPT_CHARS));
        }
        if files.len() >= FILES && failed.len() >= FAILED {
            break;
        }
    }
    if !files.is_empty() {
        let _ = writeln!(out, "\nFiles changed (+added −removed lines):");
        for (p, a, d) in &files {
            let _ = writeln!(out, "- {p} (+{a} −{d})");
        }
    }
    // A rewind of the code since (from the UI, on the record): those changes may be gone.
    let rewound = session.transcript.iter().rev().find_map(|e| match e {
        Entry::Notice { text } if text.starts_with(REWOUND) => Some(text.as_str()),
        _ => None,
    });
    if let Some(r) = rewound {
        let _ = writeln!(
            out,
            "\nSince then {}: the files above may no longer hold those changes.",
            clip(r.split(" · ").next().unwrap_or(r), PROMPT_CHARS)
        );
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "\nCommands that failed (latest first):");
        for c in &failed {
            let _ = writeln!(out, "- `{c}`");
        }
    }
    let last = session.transcript.iter().rev().find_map(|e| match e {
        Entry::Message(m) if m.role == Role::Agent && !m.text.trim().is_empty() => {
            Some(m.text.as_str())
        }
        _ => None,
    });
    if let Some(last) = last {
        let _ = writeln!(
            out,
            "\nWhere it stopped (its last words):\n> {}",
            clip(last, LAST_CHARS).replace('\n', "\n> ")
        );
    }
    let _ = write!(
        out,
        "\nLook at the files as they are now before changing them, then carry on."
    );
    out
}

/// `text` trimmed, cut to `max` characters with an ellipsis.
fn clip(text: &str, max: usize) -> String {
    let t = text.trim();
    match t.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use trellis_core::wire::{Dir, Message};
    use trellis_core::{Action, LocalRecord, Policy, Session, update};

    fn frame(s: &mut Session, seq: u64, dir: Dir, v: serde_json::Value) {
        let msg = Message::parse(&v.to_string()).unwrap();
        update(
            s,
            Action::Frame {
                seq,
                t: seq as f64,
                dir,
                msg,
            },
        );
    }

    /// The brief lists the prompts and the files changed, and says when the code was put
    /// back since (a trial's brief listed edits a rewind had undone as if they stood).
    #[test]
    fn the_brief_says_the_code_was_put_back_since() {
        let mut s = Session::new(Policy::Ask);
        frame(
            &mut s,
            1,
            Dir::ClientToAgent,
            serde_json::json!({"jsonrpc":"2.0","id":1,
            "method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"tidy up"}]}}),
        );
        frame(
            &mut s,
            2,
            Dir::AgentToClient,
            serde_json::json!({"jsonrpc":"2.0",
            "method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call",
            "toolCallId":"e1","title":"Edit a.txt","kind":"edit","status":"completed",
            "content":[{"type":"diff","path":"/w/a.txt","oldText":"a\n","newText":"b\n"}]}}}),
        );
        let b = super::brief(&s, "demo");
        assert!(
            b.contains("- tidy up") && b.contains("/w/a.txt (+1 −1)"),
            "{b}"
        );
        assert!(!b.contains("Since then"), "{b}");
        update(
            &mut s,
            Action::Local {
                t: 3.0,
                record: Box::new(LocalRecord::Mark {
                    text: format!(
                        "{} 1 from the UI: the code went back: 1 restored, 0 removed, 0 kept as it is",
                        super::REWOUND
                    ),
                }),
            },
        );
        let b = super::brief(&s, "demo");
        assert!(
            b.contains("Since then the code was put back to before turn 1 from the UI"),
            "{b}"
        );
    }
}
