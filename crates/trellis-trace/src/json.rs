//! OTLP's JSON encoding of spans (`ExportTraceServiceRequest`, the protobuf JSON mapping
//! OTLP/HTTP accepts with `Content-Type: application/json`): ids in hex, 64-bit integers
//! as strings, enums as numbers.

use serde_json::{Value as Json, json};

use crate::span::{Kind, Span, Status, Value, hex};

/// The resource every span of this process belongs to: `service.name` and the rest of
/// `OTEL_RESOURCE_ATTRIBUTES`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resource {
    pub attributes: Vec<(String, String)>,
}

fn value(v: &Value) -> Json {
    match v {
        Value::Static(s) => json!({"stringValue": s}),
        Value::Str(s) => json!({"stringValue": s}),
        Value::Int(i) => json!({"intValue": i.to_string()}),
        Value::Float(f) => json!({"doubleValue": f}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::StrList(l) => {
            json!({"arrayValue": {"values": l.iter().map(|s| json!({"stringValue": s})).collect::<Vec<_>>()}})
        }
    }
}

pub(crate) fn kind_number(k: Kind) -> i32 {
    match k {
        Kind::Internal => 1,
        Kind::Client => 3,
    }
}

pub(crate) fn status_parts(s: &Status) -> (i32, &str) {
    match s {
        Status::Unset => (0, ""),
        Status::Ok => (1, ""),
        Status::Error(m) => (2, m.as_str()),
    }
}

fn span(s: &Span) -> Json {
    let (code, message) = status_parts(&s.status);
    let mut v = json!({
        "traceId": hex(&s.trace_id),
        "spanId": hex(&s.span_id),
        "name": s.name,
        "kind": kind_number(s.kind),
        "startTimeUnixNano": s.start.to_string(),
        "endTimeUnixNano": s.end.to_string(),
        "attributes": s.attributes.iter().map(|(k, v)| json!({"key": k, "value": value(v)})).collect::<Vec<_>>(),
        "status": {"code": code},
    });
    if let Some(p) = &s.parent {
        v["parentSpanId"] = json!(hex(p));
    }
    if !message.is_empty() {
        v["status"]["message"] = json!(message);
    }
    v
}

/// One export request holding `spans`.
pub fn request(resource: &Resource, spans: &[Span]) -> Json {
    json!({"resourceSpans": [{
        "resource": {"attributes": resource.attributes.iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}})).collect::<Vec<_>>()},
        "scopeSpans": [{
            "scope": {"name": "trellis", "version": env!("CARGO_PKG_VERSION")},
            "spans": spans.iter().map(span).collect::<Vec<_>>(),
        }],
    }]})
}
