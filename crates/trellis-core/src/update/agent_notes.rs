//! What the agent tells the user beside the conversation: notices (`notice`) and the
//! compaction of its context (`compaction_update`, `compaction_summary_chunk`). Both go
//! to the transcript; a compaction is one entry, updated in place.

use serde_json::Value;

use super::ctx::Ctx;
use crate::event::EventBody;
use crate::session::{Compaction, Entry};

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A `notice`: a title (required), a severity and an optional description.
pub(crate) fn notice(cx: &mut Ctx<'_>, raw: &str) -> Result<(), serde_json::Error> {
    let v: Value = serde_json::from_str(raw)?;
    let Some(title) = text(&v, "title").filter(|t| !t.trim().is_empty()) else {
        cx.malformed("notice", "skipped a notice without a title".into());
        return Ok(());
    };
    let severity = text(&v, "severity").unwrap_or_else(|| "info".into());
    let description = text(&v, "description").filter(|d| !d.trim().is_empty());
    cx.s.transcript
        .push(Entry::AgentNotice(Box::new(crate::session::AgentNotice {
            severity: severity.clone(),
            title: title.clone(),
            description: description.clone(),
        })));
    cx.emit(EventBody::Notice {
        severity,
        title,
        description,
    });
    Ok(())
}

/// The transcript entry of compaction `id`, made (in progress) when it is new.
fn entry<'a>(cx: &'a mut Ctx<'_>, id: &str) -> &'a mut Compaction {
    let at =
        cx.s.transcript
            .iter()
            .rposition(|e| matches!(e, Entry::Compaction(c) if c.id == id));
    let at = match at {
        Some(i) => i,
        None => {
            cx.s.transcript.push(Entry::Compaction(Box::new(Compaction {
                id: id.to_string(),
                status: "in_progress".into(),
                summary: String::new(),
                error: None,
            })));
            cx.s.transcript.len() - 1
        }
    };
    match &mut cx.s.transcript[at] {
        Entry::Compaction(c) => c,
        _ => unreachable!("found as a compaction"),
    }
}

/// The entry of the compaction `v` names (made when new); `None` — said as a malformed
/// `kind` — when it names none.
fn named<'a>(cx: &'a mut Ctx<'_>, v: &Value, kind: &str, what: &str) -> Option<&'a mut Compaction> {
    let Some(id) = text(v, "compactionId").filter(|i| !i.is_empty()) else {
        cx.malformed(kind, format!("skipped a {what} without an id"));
        return None;
    };
    Some(entry(cx, &id))
}

/// The text of content blocks (text as is, anything else as a short tag).
fn blocks_text(v: &Value) -> String {
    let one = |b: &Value| crate::hot::block_text(&b.to_string()).unwrap_or_default();
    match v {
        Value::Array(a) => a.iter().map(one).collect::<Vec<_>>().join("\n"),
        Value::Object(_) => one(v),
        _ => String::new(),
    }
}

/// `compaction_update`: the status, and — when present — the whole summary or error
/// (`null` clears them; absent leaves them as they are).
pub(crate) fn compaction_update(cx: &mut Ctx<'_>, raw: &str) -> Result<(), serde_json::Error> {
    let v: Value = serde_json::from_str(raw)?;
    let Some(c) = named(cx, &v, "compaction_update", "compaction update") else {
        return Ok(());
    };
    if let Some(s) = text(&v, "status") {
        c.status = s;
    }
    match v.get("summary") {
        Some(Value::Null) => c.summary.clear(),
        Some(s) => c.summary = blocks_text(s),
        None => {}
    }
    match v.get("error") {
        Some(Value::Null) => c.error = None,
        Some(e) => c.error = e.as_str().map(str::to_string),
        None => {}
    }
    let compaction = c.clone();
    cx.emit(EventBody::Compaction { compaction });
    Ok(())
}

/// `compaction_summary_chunk`: one more block of a compaction's summary.
pub(crate) fn compaction_chunk(cx: &mut Ctx<'_>, raw: &str) -> Result<(), serde_json::Error> {
    let v: Value = serde_json::from_str(raw)?;
    let piece = v.get("content").map(blocks_text).unwrap_or_default();
    if let Some(c) = named(
        cx,
        &v,
        "compaction_summary_chunk",
        "compaction summary chunk",
    ) {
        c.summary.push_str(&piece);
    }
    Ok(())
}
