//! Events as JSON, as headless runs print them and plugins receive them: the hot kinds
//! (tool calls created and updated, message chunks — nearly every event of a busy session)
//! written field by field, every other kind through its `Serialize` impl.
//!
//! Invariant: the bytes are exactly those of `serde_json::to_vec(&event)` (the derived
//! impls stay the schema; a property test over arbitrary calls and events holds the two
//! equal). The encoders destructure every struct they write without `..`, so a field
//! added to a call or an event does not compile until it is written here too.
//!
//! Why by hand: through serde a tool-call event costs a chain of generic calls per field;
//! written directly, printing the events was a third of its former cost.

use crate::compact_json::{self, Error, write_str};
use crate::event::{Event, EventBody};
use crate::tool_call::{Location, StatusChange, ToolCall, ToolContent};

/// Appends `ev` as one compact JSON object (no newline).
pub fn write_event(out: &mut Vec<u8>, ev: &Event) -> Result<(), Error> {
    let Event {
        schema,
        t,
        session,
        hub_session,
        body,
        acp: _,
        wire: _,
        position: _,
    } = ev;
    let head = |out: &mut Vec<u8>, kind: &str| {
        out.extend_from_slice(b"{\"schema\":");
        out.extend_from_slice(itoa::Buffer::new().format(*schema).as_bytes());
        out.extend_from_slice(b",\"t\":");
        write_f64(out, *t);
        if let Some(s) = session {
            out.extend_from_slice(b",\"session\":");
            write_str(out, s);
        }
        if let Some(h) = hub_session {
            out.extend_from_slice(b",\"hub_session\":");
            write_str(out, h);
        }
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.push(b'"');
    };
    match body {
        EventBody::ToolCallCreated { call } => {
            head(out, "tool_call_created");
            out.extend_from_slice(b",\"call\":");
            write_call(out, call)?;
        }
        EventBody::ToolCallUpdated {
            previous_status,
            status,
            call,
        } => {
            head(out, "tool_call_updated");
            if let Some(p) = previous_status {
                out.extend_from_slice(b",\"previous_status\":");
                compact_json::write_name(out, p.as_str());
            }
            out.extend_from_slice(b",\"status\":");
            compact_json::write_name(out, status.as_str());
            out.extend_from_slice(b",\"call\":");
            write_call(out, call)?;
        }
        EventBody::MessageChunk {
            role,
            message_id,
            text,
            subagent,
        } => {
            head(out, "message_chunk");
            out.extend_from_slice(b",\"role\":");
            compact_json::to_vec_into(out, role)?;
            if let Some(m) = message_id {
                out.extend_from_slice(b",\"message_id\":");
                write_str(out, m);
            }
            out.extend_from_slice(b",\"text\":");
            write_str(out, text);
            if let Some(s) = subagent {
                out.extend_from_slice(b",\"subagent\":");
                write_str(out, s);
            }
        }
        _ => return compact_json::to_vec_into(out, ev),
    }
    out.push(b'}');
    Ok(())
}

/// `ev` as a JSON string.
pub fn event_string(ev: &Event) -> Result<String, Error> {
    let mut out = Vec::with_capacity(256);
    write_event(&mut out, ev)?;
    String::from_utf8(out).map_err(<Error as serde::ser::Error>::custom)
}

/// A call's locations, as their derived `Serialize` writes them.
pub(crate) fn write_locations(out: &mut Vec<u8>, locations: &[Location]) {
    out.push(b'[');
    for (i, Location { path, line }) in locations.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"path\":");
        write_str(out, path);
        if let Some(l) = line {
            out.extend_from_slice(b",\"line\":");
            out.extend_from_slice(itoa::Buffer::new().format(*l).as_bytes());
        }
        out.push(b'}');
    }
    out.push(b']');
}

thread_local! {
    /// The last float written, and its text: the lines of one read share their time, so
    /// a batch's events (and its calls' status histories) write the same time over and
    /// over.
    static LAST_F64: std::cell::Cell<(u64, [u8; 24], u8)> =
        const { std::cell::Cell::new((u64::MAX, [0; 24], 0)) };
}

/// A float as serde_json writes it (`null` when not finite).
pub(crate) fn write_f64(out: &mut Vec<u8>, v: f64) {
    if !v.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    LAST_F64.with(|last| {
        // (The initial bits are a NaN's: never a finite value's.)
        let (bits, text, len) = last.get();
        if bits == v.to_bits() {
            out.extend_from_slice(&text[..usize::from(len)]);
            return;
        }
        let mut buf = zmij::Buffer::new();
        let s = buf.format_finite(v).as_bytes();
        out.extend_from_slice(s);
        if s.len() <= 24 {
            let mut text = [0; 24];
            text[..s.len()].copy_from_slice(s);
            last.set((v.to_bits(), text, s.len() as u8));
        }
    });
}

/// Appends a call as its derived `Serialize` writes it.
pub fn write_call(out: &mut Vec<u8>, call: &ToolCall) -> Result<(), Error> {
    let ToolCall {
        id,
        title,
        kind,
        status,
        content,
        locations,
        raw_input,
        raw_output,
        name,
        announced,
        status_history,
        permissions,
        turn,
        anomalies,
        subagent,
        rev: _,
        position: _,
    } = call;
    out.extend_from_slice(b"{\"id\":");
    write_str(out, id);
    out.extend_from_slice(b",\"title\":");
    write_str(out, title);
    out.extend_from_slice(b",\"kind\":");
    compact_json::write_name(out, kind.as_str());
    out.extend_from_slice(b",\"status\":");
    compact_json::write_name(out, status.as_str());
    out.extend_from_slice(b",\"content\":[");
    for (i, item) in content.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match item {
            ToolContent::Text { text } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                text.write_json(out);
                out.push(b'}');
            }
            other => compact_json::to_vec_into(out, other)?,
        }
    }
    out.extend_from_slice(b"],\"locations\":");
    write_locations(out, locations);
    if let Some(r) = raw_input {
        out.extend_from_slice(b",\"raw_input\":");
        out.extend_from_slice(r.get().as_bytes());
    }
    if let Some(r) = raw_output {
        out.extend_from_slice(b",\"raw_output\":");
        out.extend_from_slice(r.get().as_bytes());
    }
    if let Some(n) = name {
        out.extend_from_slice(b",\"name\":");
        write_str(out, n);
    }
    out.extend_from_slice(if *announced {
        b",\"announced\":true"
    } else {
        b",\"announced\":false"
    });
    out.extend_from_slice(b",\"status_history\":[");
    for (i, StatusChange { status, t }) in status_history.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"status\":");
        compact_json::write_name(out, status.as_str());
        out.extend_from_slice(b",\"t\":");
        write_f64(out, *t);
        out.push(b'}');
    }
    out.push(b']');
    if !permissions.is_empty() {
        out.extend_from_slice(b",\"permissions\":");
        compact_json::to_vec_into(out, permissions)?;
    }
    out.extend_from_slice(b",\"turn\":");
    out.extend_from_slice(itoa::Buffer::new().format(*turn).as_bytes());
    if !anomalies.is_empty() {
        out.extend_from_slice(b",\"anomalies\":");
        compact_json::to_vec_into(out, anomalies)?;
    }
    if let Some(s) = subagent {
        out.extend_from_slice(b",\"subagent\":");
        write_str(out, s);
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests;
