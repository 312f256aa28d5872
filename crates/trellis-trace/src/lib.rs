//! Traces of a session for OpenTelemetry. Spans are a projection of the session's events
//! ([`project::Tracer`]): the driver feeds it live, and `trellis log export` feeds it the
//! events of a log read again, so both give the same spans. They are encoded as OTLP
//! JSON ([`json`]) or protobuf ([`proto`], feature `otlp`) and sent over OTLP/HTTP by an
//! exporter thread that never holds a session up ([`export`], feature `otlp`).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod json;
pub mod project;
pub mod span;

#[cfg(feature = "otlp")]
pub mod export;
#[cfg(feature = "otlp")]
pub mod proto;

pub use json::Resource;
pub use project::{TraceInfo, Tracer};
pub use span::{Span, TraceId, trace_id_of, traceparent};

/// The resource of this process from the environment: `service.name` from
/// `OTEL_SERVICE_NAME` (else `trellis`), then `OTEL_RESOURCE_ATTRIBUTES`
/// (`key=value,key=value`, percent-encoded values).
pub fn resource_from_env() -> Resource {
    let mut attributes = Vec::new();
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty());
    if let Ok(list) = std::env::var("OTEL_RESOURCE_ATTRIBUTES") {
        for pair in list.split(',') {
            if let Some((k, v)) = pair.split_once('=') {
                let (k, v) = (k.trim(), percent_decode(v.trim()));
                if !k.is_empty() && k != "service.name" {
                    attributes.push((k.to_string(), v));
                } else if k == "service.name" && service.is_none() {
                    attributes.insert(0, ("service.name".into(), v));
                }
            }
        }
    }
    if let Some(s) = service {
        attributes.insert(0, ("service.name".into(), s));
    } else if !attributes.iter().any(|(k, _)| k == "service.name") {
        attributes.insert(0, ("service.name".into(), "trellis".into()));
    }
    Resource { attributes }
}

/// `%XX` escapes decoded (what OTel's list variables allow); anything malformed is kept.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hexval(b[i + 1]), hexval(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hexval(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A session's start in whole milliseconds (as Trellis takes it) is read back from the
    /// log's JSON as the very same number, so the trace derived from it is the same.
    #[test]
    fn a_start_in_milliseconds_survives_the_logs_json() {
        for ms in (1_796_267_385_000u64..1_796_267_385_000 + 20_000).step_by(7) {
            let started = ms as f64 / 1000.0;
            let text = serde_json::json!({ "started": started }).to_string();
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            let back = back["started"].as_f64().unwrap();
            assert_eq!(back.to_bits(), started.to_bits(), "{text}");
            assert_eq!(
                trace_id_of(back, "a", "/w"),
                trace_id_of(started, "a", "/w")
            );
        }
    }

    #[test]
    fn lists_are_percent_decoded_and_malformed_escapes_kept() {
        assert_eq!(percent_decode("a%20b%2Cc"), "a b,c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn the_json_encoding_follows_otlp() {
        let trace = trace_id_of(1.5, "demo", "/w");
        assert_eq!(trace, trace_id_of(1.5, "demo", "/w"), "derived, not drawn");
        assert_ne!(trace, trace_id_of(1.5, "demo", "/x"));
        let span = Span {
            trace_id: trace,
            span_id: span::span_id(&trace, &[b"x"]),
            parent: None,
            name: "invoke_agent demo".into(),
            kind: span::Kind::Client,
            start: 1_500_000_000,
            end: 2_500_000_000,
            attributes: vec![
                ("trellis.turn", span::Value::Int(3)),
                (
                    "gen_ai.response.finish_reasons",
                    span::Value::StrList(vec!["end_turn".into()]),
                ),
            ],
            status: span::Status::Error("refusal".into()),
        };
        let v = json::request(
            &Resource {
                attributes: vec![("service.name".into(), "trellis".into())],
            },
            &[span],
        );
        let s = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"].as_str().unwrap().len(), 32, "hex");
        assert_eq!(s["spanId"].as_str().unwrap().len(), 16);
        assert!(s.get("parentSpanId").is_none());
        assert_eq!(s["kind"], 3);
        assert_eq!(
            s["startTimeUnixNano"], "1500000000",
            "64-bit integers as strings"
        );
        assert_eq!(s["attributes"][0]["value"]["intValue"], "3");
        assert_eq!(
            s["attributes"][1]["value"]["arrayValue"]["values"][0]["stringValue"],
            "end_turn"
        );
        assert_eq!(
            s["status"],
            serde_json::json!({"code": 2, "message": "refusal"})
        );
        let tp = traceparent(&trace, &project::session_span(&trace));
        assert!(
            tp.starts_with("00-") && tp.ends_with("-01") && tp.len() == 55,
            "{tp}"
        );
    }
}
