//! Spans as this crate makes them, before any wire encoding: ids, times in Unix
//! nanoseconds, typed attributes, a status.

use sha2::Digest;

pub type TraceId = [u8; 16];
pub type SpanId = [u8; 8];

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A word of Trellis's own (no allocation per span).
    Static(&'static str),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    StrList(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Client,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Unset,
    Ok,
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub name: String,
    pub kind: Kind,
    /// Unix nanoseconds.
    pub start: u64,
    pub end: u64,
    pub attributes: Vec<(&'static str, Value)>,
    pub status: Status,
}

/// The trace of a session: the same for its live export and for an export of its log
/// made later (it is derived from what the log's first record says).
pub fn trace_id_of(started: f64, agent: &str, cwd: &str) -> TraceId {
    let mut h = sha2::Sha256::new();
    h.update(b"trellis-trace\0");
    h.update(started.to_bits().to_be_bytes());
    h.update(agent.as_bytes());
    h.update([0]);
    h.update(cwd.as_bytes());
    let d = h.finalize();
    let mut id = [0u8; 16];
    id.copy_from_slice(&d[..16]);
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// A span's id, derived from its trace and what it is (so the same record always makes
/// the same span): SipHash-2-4 keyed by the trace id over the parts, each with its length.
/// A keyed hash is enough here (ids must be well spread and stable, not secret), and it
/// is made for every tool call of a session: SHA-256 was most of the projection's cost.
pub fn span_id(trace: &TraceId, parts: &[&[u8]]) -> SpanId {
    use std::hash::Hasher;
    let (k0, k1) = trace.split_at(8);
    let key = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let mut h = siphasher::sip::SipHasher24::new_with_keys(key(k0), key(k1));
    for p in parts {
        h.write(&(p.len() as u64).to_be_bytes());
        h.write(p);
    }
    let mut id = h.finish().to_be_bytes();
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A W3C `traceparent` for a span of this trace.
pub fn traceparent(trace: &TraceId, span: &SpanId) -> String {
    format!("00-{}-{}-01", hex(trace), hex(span))
}
