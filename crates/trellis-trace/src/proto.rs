//! OTLP's protobuf messages for traces (`opentelemetry/proto/collector/trace/v1`,
//! `trace/v1`, `common/v1`, `resource/v1`), only the fields Trellis sends, with the field
//! numbers of the official definitions; the tests decode what this encodes with the
//! `opentelemetry-proto` crate.

use prost::Message;

use crate::json::{Resource, kind_number, status_parts};
use crate::span::{Span, Value};

#[derive(Clone, PartialEq, Message)]
pub struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<ResourceMsg>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResourceMsg {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<SpanMsg>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct SpanMsg {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<StatusMsg>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StatusMsg {
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5")]
    pub value: Option<any_value::Value>,
}

pub mod any_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        #[prost(int64, tag = "3")]
        IntValue(i64),
        #[prost(double, tag = "4")]
        DoubleValue(f64),
        #[prost(message, tag = "5")]
        ArrayValue(super::ArrayValue),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

fn any(v: &Value) -> AnyValue {
    use any_value::Value as V;
    AnyValue {
        value: Some(match v {
            Value::Static(s) => V::StringValue((*s).to_string()),
            Value::Str(s) => V::StringValue(s.clone()),
            Value::Int(i) => V::IntValue(*i),
            Value::Float(f) => V::DoubleValue(*f),
            Value::Bool(b) => V::BoolValue(*b),
            Value::StrList(l) => V::ArrayValue(ArrayValue {
                values: l
                    .iter()
                    .map(|s| AnyValue {
                        value: Some(V::StringValue(s.clone())),
                    })
                    .collect(),
            }),
        }),
    }
}

fn span(s: &Span) -> SpanMsg {
    let (code, message) = status_parts(&s.status);
    SpanMsg {
        trace_id: s.trace_id.to_vec(),
        span_id: s.span_id.to_vec(),
        parent_span_id: s.parent.map(|p| p.to_vec()).unwrap_or_default(),
        name: s.name.clone(),
        kind: kind_number(s.kind),
        start_time_unix_nano: s.start,
        end_time_unix_nano: s.end,
        attributes: s
            .attributes
            .iter()
            .map(|(k, v)| KeyValue {
                key: (*k).to_string(),
                value: Some(any(v)),
            })
            .collect(),
        status: Some(StatusMsg {
            message: message.to_string(),
            code,
        }),
    }
}

/// One export request holding `spans` (see [`Encoder::request`]).
pub fn request(resource: &Resource, spans: &[Span]) -> Vec<u8> {
    Encoder::default().request(resource, spans).to_vec()
}

/// Encodes export requests straight from the spans (no message tree in between: the
/// exporter's thread encodes a hundred thousand spans per run of a busy session), into
/// buffers kept from one request to the next — fresh ones of a few hundred KiB per
/// request cost the process page faults and the allocator's returns to the system. The
/// layout is [`ExportTraceServiceRequest`]'s; a test checks it byte for byte against the
/// message tree's encoding.
#[derive(Debug, Default)]
pub struct Encoder {
    span: Vec<u8>,
    /// Span records of [`Encoder::request`].
    spans: Vec<u8>,
    res: Vec<u8>,
    scratch: (Vec<u8>, Vec<u8>, Vec<u8>),
    out: Vec<u8>,
}

use prost::encoding::{WireType, encode_key, encode_varint};

/// A length-delimited field made in `scratch`, then written to `out`.
fn nested(tag: u32, out: &mut Vec<u8>, scratch: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(scratch.len() as u64, out);
    out.extend_from_slice(scratch);
}

fn bytes(tag: u32, v: &[u8], out: &mut Vec<u8>) {
    if !v.is_empty() {
        nested(tag, out, v);
    }
}

/// An `AnyValue`'s field (a value of a oneof is written even when empty).
fn write_any(v: &Value, out: &mut Vec<u8>, tmp: &mut Vec<u8>) {
    match v {
        Value::Static(s) => nested(1, out, s.as_bytes()),
        Value::Str(s) => nested(1, out, s.as_bytes()),
        Value::Bool(b) => {
            encode_key(2, WireType::Varint, out);
            encode_varint(u64::from(*b), out);
        }
        Value::Int(i) => {
            encode_key(3, WireType::Varint, out);
            encode_varint(*i as u64, out);
        }
        Value::Float(f) => {
            encode_key(4, WireType::SixtyFourBit, out);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Value::StrList(l) => {
            tmp.clear();
            let mut one = Vec::new();
            for s in l {
                one.clear();
                nested(1, &mut one, s.as_bytes());
                nested(1, tmp, &one);
            }
            nested(5, out, tmp);
        }
    }
}

/// A `KeyValue` as field `tag` (9 of a span, 1 of a resource).
fn key_value(
    tag: u32,
    (k, v): (&str, &Value),
    out: &mut Vec<u8>,
    scratch: &mut (Vec<u8>, Vec<u8>, Vec<u8>),
) {
    let (kv, val, tmp) = scratch;
    kv.clear();
    val.clear();
    bytes(1, k.as_bytes(), kv);
    write_any(v, val, tmp);
    nested(2, kv, val);
    nested(tag, out, kv);
}

impl Encoder {
    /// One export request holding `spans`.
    pub fn request(&mut self, resource: &Resource, spans: &[Span]) -> &[u8] {
        let mut records = std::mem::take(&mut self.spans);
        records.clear();
        self.spans_into(spans, &mut records);
        self.envelope(resource, &records);
        self.spans = records;
        &self.out
    }

    /// Appends `spans` to `out` as the span records of a `ScopeSpans` (field 2 each):
    /// what [`Encoder::envelope`] wraps, possibly after records of other calls.
    pub fn spans_into(&mut self, spans: &[Span], out: &mut Vec<u8>) {
        let Encoder { span, scratch, .. } = self;
        for s in spans {
            span.clear();
            bytes(1, &s.trace_id, span);
            bytes(2, &s.span_id, span);
            if let Some(p) = &s.parent {
                bytes(4, p, span);
            }
            bytes(5, s.name.as_bytes(), span);
            encode_key(6, WireType::Varint, span);
            encode_varint(kind_number(s.kind) as u64, span);
            encode_key(7, WireType::SixtyFourBit, span);
            span.extend_from_slice(&s.start.to_le_bytes());
            encode_key(8, WireType::SixtyFourBit, span);
            span.extend_from_slice(&s.end.to_le_bytes());
            for (k, v) in &s.attributes {
                key_value(9, (k, v), span, scratch);
            }
            let (code, message) = status_parts(&s.status);
            let status = &mut scratch.0;
            status.clear();
            bytes(2, message.as_bytes(), status);
            if code != 0 {
                encode_key(3, WireType::Varint, status);
                encode_varint(code as u64, status);
            }
            nested(15, span, status);
            nested(2, out, span);
        }
    }

    /// One export request of span records made by [`Encoder::spans_into`]: the resource,
    /// the scope, the records (copied once, after lengths worked out beforehand).
    pub fn envelope(&mut self, resource: &Resource, records: &[u8]) -> &[u8] {
        let Encoder {
            res, scratch, out, ..
        } = self;
        res.clear();
        for (k, v) in &resource.attributes {
            key_value(1, (k, &Value::Str(v.clone())), res, scratch);
        }
        let scope = &mut scratch.0;
        scope.clear();
        bytes(1, b"trellis", scope);
        bytes(2, env!("CARGO_PKG_VERSION").as_bytes(), scope);
        let field = |len: usize| 1 + prost::encoding::encoded_len_varint(len as u64) + len;
        let scope_spans = field(scope.len()) + records.len();
        let resource_spans = field(res.len()) + field(scope_spans);
        out.clear();
        out.reserve(field(resource_spans));
        encode_key(1, WireType::LengthDelimited, out);
        encode_varint(resource_spans as u64, out);
        nested(1, out, res);
        encode_key(2, WireType::LengthDelimited, out);
        encode_varint(scope_spans as u64, out);
        nested(1, out, scope);
        out.extend_from_slice(records);
        out
    }
}

/// The message-tree encoding (kept for the test that both encodings agree).
pub fn request_tree(resource: &Resource, spans: &[Span]) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(ResourceMsg {
                attributes: resource
                    .attributes
                    .iter()
                    .map(|(k, v)| KeyValue {
                        key: k.clone(),
                        value: Some(any(&Value::Str(v.clone()))),
                    })
                    .collect(),
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "trellis".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans: spans.iter().map(span).collect(),
            }],
        }],
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::span::{Kind, Status};

    /// The direct encoding is the message tree's, byte for byte.
    #[test]
    fn the_direct_encoding_is_the_message_trees() {
        let trace = crate::trace_id_of(2.0, "demo", "/w");
        let spans: Vec<Span> = (0..3u8)
            .map(|i| Span {
                trace_id: trace,
                span_id: crate::span::span_id(&trace, &[&[i]]),
                parent: (i > 0).then(|| crate::span::span_id(&trace, &[&[0]])),
                name: format!("execute_tool t{i}"),
                kind: if i == 0 { Kind::Client } else { Kind::Internal },
                start: 1_000 + u64::from(i),
                end: 2_000 + u64::from(i),
                attributes: vec![
                    ("a", Value::Static("x")),
                    ("b", Value::Str("y é".into())),
                    ("c", Value::Int(-3)),
                    ("d", Value::Float(1.5)),
                    ("e", Value::Bool(i == 1)),
                    (
                        "f",
                        Value::StrList(vec!["p".into(), String::new(), "q".into()]),
                    ),
                ],
                status: match i {
                    0 => Status::Unset,
                    1 => Status::Ok,
                    _ => Status::Error("boom".into()),
                },
            })
            .collect();
        let resource = Resource {
            attributes: vec![
                ("service.name".into(), "trellis".into()),
                ("k".into(), "v".into()),
            ],
        };
        assert_eq!(request(&resource, &spans), request_tree(&resource, &spans));
        // Records a session encoded in pieces, wrapped by the exporter later, with an
        // encoder that made other requests before: the same request.
        let mut session = Encoder::default();
        let mut records = Vec::new();
        session.spans_into(&spans[..1], &mut records);
        session.spans_into(&spans[1..], &mut records);
        let mut exporter = Encoder::default();
        exporter.request(&resource, &spans[2..]);
        assert_eq!(
            exporter.envelope(&resource, &records),
            &request_tree(&resource, &spans)[..]
        );
    }
}
