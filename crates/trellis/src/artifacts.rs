//! What `trellis run` leaves behind for a scheduler or a CI job, on every end: the summary
//! (`--summary` JSON, `--summary-md` Markdown) and the patch (`--patch`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use trellis_core::{Session, ToolKind, ToolStatus};

/// What the run saw while it ran, beside the session.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    /// Permission requests answered with anything but an allow: (call title, decider).
    pub denials: Vec<(String, String, Option<String>)>,
    /// Files the agent wrote through Trellis (`fs/write_text_file`).
    pub written: Vec<String>,
    pub turns: u32,
}

/// The summary's body from the session (the exit code and reason are added by the run).
pub(crate) fn summary(session: &Session, seen: &Seen, wall_s: f64) -> Value {
    let mut by_kind: BTreeMap<&'static str, BTreeMap<&'static str, u64>> = BTreeMap::new();
    let mut edited: Vec<String> = Vec::new();
    let n = session.ledger.len();
    for p in 0..n {
        let c = session.ledger.at(p);
        *by_kind
            .entry(c.kind.as_str())
            .or_default()
            .entry(c.status.as_str())
            .or_default() += 1;
        if matches!(c.kind, ToolKind::Edit | ToolKind::Delete | ToolKind::Move)
            && c.status == ToolStatus::Completed
        {
            edited.extend(trellis_core::enrich::paths_of(&c));
        }
    }
    let mut files: Vec<String> = seen.written.iter().cloned().chain(edited).collect();
    files.sort();
    files.dedup();
    let usage = session.usage.as_ref();
    let worktree = session.worktree.as_ref().map(|w| {
        let stat = Paths::worktree_stat(&w.label, &w.source);
        json!({"label": w.label, "branch": w.branch, "source": w.source, "base": w.base,
               "diffstat": stat.map(|(a, d, f)| json!({"added": a, "removed": d, "files": f}))})
    });
    json!({
        "stop_reason": session.last_stop,
        "agent": session.agent.name,
        // Where it ran, when it was dialed.
        "remote": session.remote,
        "session_id": session.id.as_deref(),
        "duration_s": (wall_s * 1000.0).round() / 1000.0,
        "turns": seen.turns,
        "tool_calls": {"total": n, "by_kind": by_kind},
        "permission_denials": seen.denials.iter()
            .map(|(t, d, r)| match r {
                Some(r) => json!({"call": t, "decider": d, "reason": r}),
                None => json!({"call": t, "decider": d}),
            })
            .collect::<Vec<_>>(),
        "files_written": files,
        "tokens": usage.map(|u| json!({"used": u.used, "size": u.size})),
        "cost": usage.and_then(|u| u.cost.as_ref()).map(|c| json!({"amount": c.amount, "currency": c.currency})),
        "worktree": worktree,
        // Filled in once traces are exported (issue "Fleet-ready headless runs", items 8–10).
        "trace_id": Value::Null,
    })
}

/// Worktree lookups for the summary.
struct Paths;

impl Paths {
    fn worktree_stat(label: &str, source: &str) -> Option<(u64, u64, usize)> {
        let paths = trellis_store::Paths::from_env()?;
        let wt = trellis_worktree::Worktrees::new(&paths.data_dir);
        let found = wt.find(label, Some(Path::new(source))).ok()?;
        let s = trellis_worktree::measure::diffstat(&found.record).ok()?;
        Some((s.added, s.removed, s.files))
    }
}

/// The summary in Markdown, for a CI job's summary page. Every text from the agent is made
/// harmless (Markdown is rendered by the CI: no HTML gets through).
pub(crate) fn markdown(s: &Value) -> String {
    let esc = |v: &Value| {
        let t = match v {
            Value::String(s) => s.clone(),
            Value::Null => "—".into(),
            other => other.to_string(),
        };
        trellis_text::one_line(&t)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('|', "\\|")
    };
    let mut out = String::from("### trellis run\n\n| | |\n|---|---|\n");
    for (k, label) in [
        ("exit_code", "exit code"),
        ("exit_reason", "ended"),
        ("stop_reason", "stop reason"),
        ("agent", "agent"),
        ("duration_s", "seconds"),
        ("turns", "turns"),
    ] {
        out.push_str(&format!("| {label} | {} |\n", esc(&s[k])));
    }
    out.push_str(&format!(
        "| tool calls | {} |\n",
        esc(&s["tool_calls"]["total"])
    ));
    if let Some(n) = s["tool_calls"]["past_limit"].as_u64() {
        out.push_str(&format!("| tool calls past --max-tool-calls | {n} |\n"));
    }
    if let Some(at) = s["remote"].as_str() {
        out.push_str(&format!("| agent runs at | {} |\n", esc(&Value::from(at))));
    }
    if let Some(c) = s["cost"].as_object() {
        out.push_str(&format!(
            "| cost | {} {} |\n",
            esc(&c["amount"]),
            esc(&c["currency"])
        ));
    }
    if let Some(t) = s["tokens"].as_object() {
        out.push_str(&format!("| context tokens | {} |\n", esc(&t["used"])));
    }
    if let Some(w) = s["worktree"].as_object() {
        out.push_str(&format!("| worktree | {} |\n", esc(&w["branch"])));
    }
    if let Some(kinds) = s["tool_calls"]["by_kind"].as_object()
        && !kinds.is_empty()
    {
        out.push_str("\n| kind | calls |\n|---|---|\n");
        for (kind, statuses) in kinds {
            let parts: Vec<String> = statuses
                .as_object()
                .into_iter()
                .flatten()
                .map(|(st, n)| format!("{} {}", esc(n), esc(&Value::String(st.clone()))))
                .collect();
            out.push_str(&format!(
                "| {} | {} |\n",
                esc(&Value::String(kind.clone())),
                parts.join(", ")
            ));
        }
    }
    if let Some(d) = s["permission_denials"].as_array()
        && !d.is_empty()
    {
        out.push_str("\n**Permission denials**\n\n");
        for x in d {
            out.push_str(&format!("- {} — {}", esc(&x["call"]), esc(&x["decider"])));
            if x["reason"].is_string() {
                out.push_str(&format!(": {}", esc(&x["reason"])));
            }
            out.push('\n');
        }
    }
    if let Some(f) = s["files_written"].as_array()
        && !f.is_empty()
    {
        out.push_str("\n**Files written**\n\n");
        for x in f {
            out.push_str(&format!("- `{}`\n", esc(x).replace('`', "'")));
        }
    }
    out
}

/// What the session changed: from git when its directory is in a repository (since the
/// commit it was at when the run started, committed or not), else from the ledger's edits
/// (each edit's diff, numbered from its own first line).
pub(crate) fn patch(session: &Session, cwd: &Path, git_base: Option<&str>) -> String {
    if let Some(base) = git_base
        && let Ok(p) = trellis_worktree::measure::patch_since(cwd, base)
    {
        return p;
    }
    let mut out = String::new();
    for p in 0..session.ledger.len() {
        let c = session.ledger.at(p);
        if c.status != ToolStatus::Completed {
            continue;
        }
        for content in &c.content {
            if let trellis_core::tool_call::ToolContent::Diff {
                path,
                old_text,
                new_text,
                ..
            } = content
            {
                out.push_str(&trellis_core::diff::unified(
                    path.trim_start_matches('/'),
                    old_text.as_deref().unwrap_or(""),
                    new_text,
                ));
            }
        }
    }
    out
}
