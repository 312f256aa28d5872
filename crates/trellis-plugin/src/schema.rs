//! The JSON Schema of `trellis-plugin` v1, generated from the Rust types the host uses
//! (so it cannot drift from what the host sends and accepts). `trellis plugin schema`
//! prints it; `docs/plugin-protocol.schema.json` is its checked-in copy, and a test keeps
//! that file, the method table and `docs/plugin-protocol.md` in agreement.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use trellis_core::ext::{CardLines, DriveAction, SessionInfo};
use trellis_core::{Event, ToolCall};

use crate::protocol::*;

/// One method: name, direction, whether it is a request (answered) and its schemas.
struct Method {
    name: &'static str,
    direction: &'static str,
    request: bool,
    params: Schema,
    result: Option<Schema>,
}

fn empty() -> Schema {
    schemars::json_schema!({"type": "object", "description": "No parameters: `{}` (or absent)."})
}

fn null() -> Schema {
    schemars::json_schema!({"type": "null"})
}

fn any() -> Schema {
    schemars::json_schema!({"description": "Any JSON value."})
}

fn s<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// The whole protocol as one JSON Schema document.
pub fn document() -> Value {
    let mut g = SchemaSettings::draft2020_12().into_generator();
    let mut event = s::<Event>(&mut g);
    if let Some(o) = event.as_object_mut() {
        o.insert(
            "description".into(),
            json!("An event (docs/events.md), plus `acp`: the verbatim ACP line, when the plugin registered `acp_payloads`."),
        );
    }
    let mut methods = host_to_plugin(&mut g, event);
    methods.extend(plugin_to_host(&mut g));
    let mut m = Map::new();
    for x in methods {
        let mut e = Map::new();
        e.insert("direction".into(), json!(x.direction));
        e.insert(
            "kind".into(),
            json!(if x.request { "request" } else { "notification" }),
        );
        e.insert("params".into(), x.params.to_value());
        if let Some(r) = x.result {
            e.insert("result".into(), r.to_value());
        }
        m.insert(x.name.into(), Value::Object(e));
    }
    let defs: Map<String, Value> = g.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://trellis.dev/schemas/trellis-plugin/1/protocol.schema.json",
        "title": "trellis-plugin v1",
        "description": "JSON-RPC 2.0 over stdio, one object per line. `methods` gives each message's params (and, for requests, result) schema; plugin → host methods may also be sent as notifications (no id: no answer, errors go to /status).",
        "protocol": PROTOCOL,
        "versions": VERSIONS,
        "errors": {
            "-32601": "method not found",
            "-32602": "invalid params",
            "-32001": "capability not granted (data.capability names it)",
            "-32002": "refused by the host (an undeclared id, a bad pattern, …)",
            "-32003": "the plugin's store could not be written"
        },
        "methods": m,
        "$defs": defs,
    })
}

/// What the host sends: the handshake, events, offers, actions, questions for the plugin's contributions.
fn host_to_plugin(g: &mut SchemaGenerator, event: Schema) -> Vec<Method> {
    let h2p = "host → plugin";
    vec![
        Method {
            name: "initialize",
            direction: h2p,
            request: true,
            params: s::<InitializeParams>(g),
            result: Some(s::<InitializeResult>(g)),
        },
        Method {
            name: "event",
            direction: h2p,
            request: false,
            params: event,
            result: None,
        },
        Method {
            name: "idle",
            direction: h2p,
            request: false,
            params: empty(),
            result: None,
        },
        Method {
            name: "action",
            direction: h2p,
            request: false,
            params: s::<ActionParams>(g),
            result: None,
        },
        Method {
            name: "shutdown",
            direction: h2p,
            request: false,
            params: empty(),
            result: None,
        },
        Method {
            name: "sync",
            direction: h2p,
            request: true,
            params: empty(),
            result: Some(empty()),
        },
        Method {
            name: "permission/offer",
            direction: h2p,
            request: true,
            params: s::<OfferParams<'static>>(g),
            result: Some(s::<OfferResult>(g)),
        },
        Method {
            name: "question/offer",
            direction: h2p,
            request: true,
            params: s::<QuestionOfferParams<'static>>(g),
            result: Some(s::<OfferResult>(g)),
        },
        Method {
            name: "render/card",
            direction: h2p,
            request: true,
            params: s::<CardParams<'static>>(g),
            result: Some(s::<CardLines>(g)),
        },
        Method {
            name: "render/transform",
            direction: h2p,
            request: true,
            params: s::<TransformParams<'static>>(g),
            result: Some(s::<TransformResult>(g)),
        },
    ]
}

/// What the plugin asks of the host: host functions, answers, contributions pushed.
fn plugin_to_host(g: &mut SchemaGenerator) -> Vec<Method> {
    let mut methods = host_functions(g);
    methods.extend(answers_and_contributions(g));
    methods
}

/// The host functions: the session, its calls and their state, paths, notices, options.
fn host_functions(g: &mut SchemaGenerator) -> Vec<Method> {
    let p2h = "plugin → host";
    vec![
        Method {
            name: "host/session",
            direction: p2h,
            request: true,
            params: empty(),
            result: Some(s::<SessionInfo>(g)),
        },
        Method {
            name: "host/calls",
            direction: p2h,
            request: true,
            params: empty(),
            result: Some(s::<Vec<ToolCall>>(g)),
        },
        Method {
            name: "host/call",
            direction: p2h,
            request: true,
            params: s::<CallId>(g),
            result: Some(s::<Option<ToolCall>>(g)),
        },
        Method {
            name: "host/call_state",
            direction: p2h,
            request: true,
            params: s::<CallId>(g),
            result: Some(any()),
        },
        Method {
            name: "host/put_call_state",
            direction: p2h,
            request: true,
            params: s::<PutCallState>(g),
            result: Some(null()),
        },
        Method {
            name: "host/resolve_path",
            direction: p2h,
            request: true,
            params: s::<PathParam>(g),
            result: Some(s::<String>(g)),
        },
        Method {
            name: "host/notify",
            direction: p2h,
            request: true,
            params: s::<TextParam>(g),
            result: Some(null()),
        },
        Method {
            name: "host/open_inspector",
            direction: p2h,
            request: true,
            params: s::<CallId>(g),
            result: Some(null()),
        },
        Method {
            name: "host/options",
            direction: p2h,
            request: true,
            params: empty(),
            result: Some(any()),
        },
        Method {
            name: "host/report",
            direction: p2h,
            request: true,
            params: s::<ReportParams>(g),
            result: Some(null()),
        },
        Method {
            name: "host/failed",
            direction: p2h,
            request: false,
            params: s::<ReportParams>(g),
            result: None,
        },
        Method {
            name: "host/repaint",
            direction: p2h,
            request: true,
            params: empty(),
            result: Some(null()),
        },
    ]
}

/// Answers to offers, the store, what the plugin shows, and driving the session.
fn answers_and_contributions(g: &mut SchemaGenerator) -> Vec<Method> {
    let p2h = "plugin → host";
    vec![
        Method {
            name: "permission/respond",
            direction: p2h,
            request: true,
            params: s::<RespondParams>(g),
            result: Some(null()),
        },
        Method {
            name: "question/respond",
            direction: p2h,
            request: true,
            params: s::<QuestionRespondParams>(g),
            result: Some(null()),
        },
        Method {
            name: "store/get",
            direction: p2h,
            request: true,
            params: s::<KeyParam>(g),
            result: Some(any()),
        },
        Method {
            name: "store/put",
            direction: p2h,
            request: true,
            params: s::<StorePut>(g),
            result: Some(null()),
        },
        Method {
            name: "ui/section_shown",
            direction: p2h,
            request: true,
            params: s::<IdParam>(g),
            result: Some(s::<bool>(g)),
        },
        Method {
            name: "ui/set_section",
            direction: p2h,
            request: true,
            params: s::<SetSection>(g),
            result: Some(null()),
        },
        Method {
            name: "ui/patch_section",
            direction: p2h,
            request: true,
            params: s::<PatchSection>(g),
            result: Some(null()),
        },
        Method {
            name: "ui/set_status_item",
            direction: p2h,
            request: true,
            params: s::<SetStatusItem>(g),
            result: Some(null()),
        },
        Method {
            name: "ui/set_settings",
            direction: p2h,
            request: true,
            params: s::<SetSettings>(g),
            result: Some(null()),
        },
        Method {
            name: "ui/set_transform",
            direction: p2h,
            request: true,
            params: s::<SetTransform>(g),
            result: Some(null()),
        },
        Method {
            name: "session/drive",
            direction: p2h,
            request: true,
            params: s::<DriveAction>(g),
            result: Some(null()),
        },
    ]
}

/// The document as the checked-in file holds it: keys sorted at every level (the same
/// bytes whatever order the JSON map keeps), pretty, a trailing newline.
pub fn text() -> String {
    let mut s = serde_json::to_string_pretty(&sorted(document())).unwrap_or_default();
    s.push('\n');
    s
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut pairs: Vec<(String, Value)> = o.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let mut m = Map::new();
            for (k, v) in pairs {
                m.insert(k, sorted(v));
            }
            Value::Object(m)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_method_has_a_schema_and_the_table_lists_them_all() {
        let d = super::document();
        let methods = d["methods"].as_object().unwrap();
        assert_eq!(methods.len(), crate::protocol::METHODS.len());
        for (name, _) in crate::protocol::METHODS {
            assert!(methods.contains_key(*name), "{name}");
        }
        assert!(d["$defs"].get("ToolCall").is_some());
        assert!(d["$defs"].get("Registration").is_some());
    }
}
