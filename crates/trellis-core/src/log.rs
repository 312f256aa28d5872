//! The session log format: JSON Lines of `{"seq": n, "t": seconds, "dir": …, "msg": {…}}`,
//! the same shape as recorded ACP sessions, plus client records (`"dir": "client"`), agent
//! stderr (`"dir": "agent_stderr"`, `"line"`) and invalid lines kept verbatim (`"raw"`).
//! `seq` numbers the records of a log from 1, one per line, across restarts of its agent:
//! a follower resumes after record n and knows it missed nothing (schema 1, additive: logs
//! written before it have none, and their line number is the same number).
//!
//! Invariant: encoding then parsing a record gives back the same entry; frames are embedded
//! byte-for-byte as the agent or client wrote them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::session::LocalRecord;
use crate::update::Action;
use crate::wire::{Dir, Message};

/// Direction values of log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogDir {
    ClientToAgent,
    AgentToClient,
    Client,
    AgentStderr,
}

impl From<Dir> for LogDir {
    fn from(d: Dir) -> LogDir {
        match d {
            Dir::ClientToAgent => LogDir::ClientToAgent,
            Dir::AgentToClient => LogDir::AgentToClient,
        }
    }
}

#[derive(Deserialize)]
struct RecordLine<'a> {
    t: f64,
    dir: LogDir,
    #[serde(borrow, default)]
    msg: Option<&'a RawValue>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    line: Option<String>,
}

/// One parsed log record.
#[derive(Debug, Clone)]
pub enum LogEntry {
    Frame {
        t: f64,
        dir: Dir,
        msg: Message,
        text: Box<RawValue>,
    },
    Invalid {
        t: f64,
        dir: Dir,
        raw: String,
    },
    Local {
        t: f64,
        record: LocalRecord,
    },
    Stderr {
        t: f64,
        line: String,
    },
}

/// Why a log line could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogError {
    #[error("not a log record: {0}")]
    Record(String),
    #[error("record has no `msg`")]
    NoMessage,
    #[error("client record not understood: {0}")]
    Local(String),
}

/// Parses one log line.
pub fn parse_record(line: &str) -> Result<LogEntry, LogError> {
    let r: RecordLine = serde_json::from_str(line).map_err(|e| LogError::Record(e.to_string()))?;
    let frame_dir = match r.dir {
        LogDir::ClientToAgent => Some(Dir::ClientToAgent),
        LogDir::AgentToClient => Some(Dir::AgentToClient),
        _ => None,
    };
    match (r.dir, frame_dir) {
        (_, Some(dir)) => match (r.msg, r.raw) {
            (Some(msg), _) => match Message::parse(msg.get()) {
                Ok(m) => Ok(LogEntry::Frame {
                    t: r.t,
                    dir,
                    msg: m,
                    text: msg.to_owned(),
                }),
                Err(_) => Ok(LogEntry::Invalid {
                    t: r.t,
                    dir,
                    raw: msg.get().to_string(),
                }),
            },
            (None, Some(raw)) => Ok(LogEntry::Invalid { t: r.t, dir, raw }),
            (None, None) => Err(LogError::NoMessage),
        },
        (LogDir::Client, _) => {
            let msg = r.msg.ok_or(LogError::NoMessage)?;
            let record =
                serde_json::from_str(msg.get()).map_err(|e| LogError::Local(e.to_string()))?;
            Ok(LogEntry::Local { t: r.t, record })
        }
        _ => Ok(LogEntry::Stderr {
            t: r.t,
            line: r.line.unwrap_or_default(),
        }),
    }
}

impl LogEntry {
    /// The reducer action this record stands for (stderr lines have none).
    pub fn into_action(self, seq: u64) -> Option<Action> {
        match self {
            LogEntry::Frame { t, dir, msg, .. } => Some(Action::Frame { seq, t, dir, msg }),
            LogEntry::Invalid { t, dir, raw } => Some(Action::InvalidLine {
                t,
                dir,
                len: raw.len(),
                error: "not a JSON-RPC message".into(),
            }),
            LogEntry::Local { t, record } => Some(Action::Local {
                t,
                record: Box::new(record),
            }),
            LogEntry::Stderr { .. } => None,
        }
    }
}

/// A frame record, record `seq` of its log. `json` must be one valid JSON value (callers
/// check with [`Message::parse`]).
pub fn encode_frame(seq: u64, t: f64, dir: Dir, json: &str) -> String {
    let mut s = String::with_capacity(json.len() + 64);
    encode_frame_into(&mut s, 0, (seq, t), dir, json);
    s
}

/// [`encode_frame`] into a reused buffer, replacing what it holds after byte `at`.
pub fn encode_frame_into(s: &mut String, at: usize, (seq, t): (u64, f64), dir: Dir, json: &str) {
    let dir = match dir {
        Dir::ClientToAgent => "client_to_agent",
        Dir::AgentToClient => "agent_to_client",
    };
    s.truncate(at);
    let mut n = itoa::Buffer::new();
    s.push_str("{\"seq\":");
    s.push_str(n.format(seq));
    // Whole milliseconds, as every other record's `t` (see `ser_t`), without formatting
    // a float: a record is written for every line an agent sends.
    let ms = (t.max(0.0) * 1000.0).round() as u64;
    s.push_str(",\"t\":");
    s.push_str(n.format(ms / 1000));
    s.push('.');
    let frac = n.format(1000 + ms % 1000);
    s.push_str(&frac[1..]);
    s.push_str(",\"dir\":\"");
    s.push_str(dir);
    s.push_str("\",\"msg\":");
    let json = json.trim();
    let from = s.len();
    s.push_str(json);
    // One record per line, whatever the caller passed: a raw line break can only be JSON
    // whitespace (strings cannot hold one), so a space means the same.
    if memchr::memchr(b'\n', json.as_bytes()).is_some() {
        let tail = s.split_off(from).replace('\n', " ");
        s.push_str(&tail);
    }
    s.push_str("}\n");
}

#[derive(Serialize)]
struct RawRecord<'a, T: Serialize> {
    seq: u64,
    #[serde(serialize_with = "ser_t")]
    t: f64,
    dir: LogDir,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<&'a str>,
    /// The line's bytes, when they were not valid UTF-8 (`raw`/`msg` then hold the text
    /// with U+FFFD in place of the invalid bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    b64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    msg: Option<&'a T>,
}

fn ser_t<S: serde::Serializer>(t: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((t.max(0.0) * 1000.0).round() / 1000.0)
}

fn encode<T: Serialize>(rec: RawRecord<'_, T>) -> String {
    // Serializing plain structs of strings and numbers cannot fail.
    let mut s = serde_json::to_string(&rec).unwrap_or_default();
    s.push('\n');
    s
}

/// A line that was not JSON-RPC, kept verbatim (`bytes`: the line as received, when it
/// was not valid UTF-8).
pub fn encode_invalid(seq: u64, t: f64, dir: Dir, raw: &str, bytes: Option<&[u8]>) -> String {
    encode::<()>(RawRecord {
        seq,
        t,
        dir: dir.into(),
        raw: Some(raw),
        line: None,
        b64: bytes.map(b64),
        msg: None,
    })
}

/// A frame record for a line that was not valid UTF-8: `json` is its text with U+FFFD in
/// place of the invalid bytes, `bytes` the line as received.
pub fn encode_frame_bytes(seq: u64, t: f64, dir: Dir, json: &str, bytes: &[u8]) -> String {
    let mut s = encode_frame(seq, t, dir, json);
    // `{"t":…,"dir":"…","msg":` → `{"t":…,"dir":"…","b64":"…","msg":`
    if let Some(at) = s.find(",\"msg\":") {
        s.insert_str(at, &format!(",\"b64\":\"{}\"", b64(bytes)));
    }
    s
}

/// A client record.
pub fn encode_local(seq: u64, t: f64, record: &LocalRecord) -> String {
    encode(RawRecord {
        seq,
        t,
        dir: LogDir::Client,
        raw: None,
        line: None,
        b64: None,
        msg: Some(record),
    })
}

/// A line the agent wrote on stderr.
pub fn encode_stderr(seq: u64, t: f64, line: &str) -> String {
    encode::<()>(RawRecord {
        seq,
        t,
        dir: LogDir::AgentStderr,
        raw: None,
        line: Some(line),
        b64: None,
        msg: None,
    })
}

/// Folds log lines into a session, as `trellis log show` and replays do. Lines that cannot
/// be read become warnings in the returned list (with their 1-based line number); the rest
/// of the log is still applied.
pub fn rebuild<'a>(
    session: &mut crate::session::Session,
    lines: impl IntoIterator<Item = &'a str>,
    mut on_effect: impl FnMut(crate::update::Effect),
) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, line) in lines.into_iter().enumerate() {
        if let Some(p) = apply_line(session, n as u64 + 1, line, &mut on_effect) {
            problems.push(p);
        }
    }
    problems
}

/// Folds log line `number` (1-based: the frame's sequence number, by which its texts are
/// read back from the log) into a session; a line that cannot be read is the warning
/// returned.
pub fn apply_line(
    session: &mut crate::session::Session,
    number: u64,
    line: &str,
    mut on_effect: impl FnMut(crate::update::Effect),
) -> Option<String> {
    if line.trim().is_empty() {
        return None;
    }
    match parse_record(line) {
        Ok(entry) => {
            if let Some(action) = entry.into_action(number) {
                for fx in crate::update::update(session, action) {
                    on_effect(fx);
                }
            }
            None
        }
        Err(e) => Some(format!("line {number}: {e}")),
    }
}

/// Bytes as standard base64 (RFC 4648, padded): invalid UTF-8 kept losslessly in the log.
fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's `t` is whole milliseconds with three decimals, as the other records
    /// round theirs, and reads back as the number it says.
    #[test]
    fn a_frame_says_its_time_in_whole_milliseconds() {
        for (t, said) in [
            (0.0, "0.000"),
            (-1.0, "0.000"),
            (0.0004, "0.000"),
            (0.0865, "0.087"),
            (1.2345, "1.235"),
            (59.9999, "60.000"),
            (3601.5, "3601.500"),
        ] {
            let line = encode_frame(7, t, Dir::AgentToClient, "{\"a\":1}");
            assert_eq!(
                line,
                format!(
                    "{{\"seq\":7,\"t\":{said},\"dir\":\"agent_to_client\",\"msg\":{{\"a\":1}}}}\n"
                )
            );
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            assert_eq!(v["t"].as_f64(), said.parse::<f64>().ok(), "{t}");
        }
    }
}
