//! One past session: `sessions show` (its facts, and the sessions that continue it) and
//! its export as a document (Markdown or HTML), rebuilt from its log.

use std::path::Path;

use anyhow::Context;
use trellis_index::SessionRow;

use super::{ExportFormat, when};

/// What `sessions show` says of session `r`; `next`: the sessions that continue it.
pub(super) fn show_text(r: &SessionRow, next: &[SessionRow]) -> String {
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
        match (r.continues_at, r.handed_over) {
            (Some(n), true) => line("hand-off from", format!("{c}, before its turn {n}")),
            (Some(n), false) => line("fork of", format!("{c}, before its turn {n}")),
            (None, _) => line("continues", c.clone()),
        }
    }
    for n in next {
        line("continued", format!("in {}", n.id));
    }
    line("log", format!("{} ({} bytes)", r.path, r.bytes));
    s
}

/// The session of `row`, rebuilt from its log, as a document.
pub fn export(row: &SessionRow, format: ExportFormat, redact: bool) -> anyhow::Result<String> {
    export_until(row, format, redact, u64::MAX)
}

/// [`export`] of the log up to byte `until` (a fork's history: the turns before one).
pub fn export_until(
    row: &SessionRow,
    format: ExportFormat,
    redact: bool,
    until: u64,
) -> anyhow::Result<String> {
    // Read a line at a time, finished calls out of memory as it goes (texts are read
    // back from the log as the document is written).
    let session = trellis_driver::replay::Replay::open(Path::new(&row.path))
        .and_then(|r| r.until(until).run(|_| {}))
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
