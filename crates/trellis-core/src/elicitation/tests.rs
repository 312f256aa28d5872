use super::*;
use serde_json::json;

/// A form from the schema's JSON text (as the agent wrote it: `json!` would sort the keys).
fn form(schema: &str) -> Form {
    let params = format!(
        r#"{{"sessionId": "s", "mode": "form", "message": "m", "requestedSchema": {schema}}}"#
    );
    match parse("1", &params).unwrap().1.mode {
        ElicitMode::Form(f) => f,
        other => panic!("{other:?}"),
    }
}

#[test]
fn fields_keep_the_agents_order_and_kinds() {
    let f = form(
        r#"{"type": "object", "properties": {
        "zeta": {"type": "string", "title": "Name", "minLength": 2},
        "alpha": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        "mid": {"type": "string", "oneOf": [{"const": "a", "title": "Aye"}, {"const": "b"}]},
        "flag": {"type": "boolean", "default": true},
        "many": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 1},
        "odd": {"type": "object"}
    }, "required": ["zeta", "many"]}"#,
    );
    let names: Vec<_> = f.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid", "flag", "many", "odd"]);
    assert!(f.fields[0].required && !f.fields[1].required);
    assert_eq!(f.fields[0].label(), "Name");
    assert!(
        matches!(&f.fields[2].kind, FieldKind::Choice { options, .. } if options[0].title == "Aye" && options[1].title == "b")
    );
    assert!(
        matches!(&f.fields[5].kind, FieldKind::Unsupported { schema_type } if schema_type == "object")
    );
    assert_eq!(
        f.defaults(),
        json!({"alpha": 3, "flag": true})
            .as_object()
            .unwrap()
            .clone()
    );
}

#[test]
fn check_reports_every_problem_and_normalizes() {
    let f = form(
        r#"{"properties": {
        "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "n": {"type": "integer", "minimum": 1},
        "mail": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date-time"},
        "pick": {"type": "array", "items": {"anyOf": [{"const": "x"}, {"const": "y"}]}, "minItems": 1}
    }, "required": ["name", "pick"]}"#,
    );
    let bad =
        json!({"name": "A", "n": 1.5, "mail": "nope", "when": "2026-02-30T10:00:00Z", "extra": 1});
    let problems = f.check(bad.as_object().unwrap()).unwrap_err();
    let fields: Vec<_> = problems.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(fields, ["extra", "name", "n", "mail", "when", "pick"]);
    let good = json!({"name": "ab", "n": 2.0, "mail": "a@b.io", "when": "2026-02-28T10:00:00.5+01:00", "pick": ["y", "y"]});
    let out = f.check(good.as_object().unwrap()).unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"name": "ab", "n": 2, "mail": "a@b.io", "when": "2026-02-28T10:00:00.5+01:00", "pick": ["y"]})
    );
}

#[test]
fn modes_and_refusals() {
    let url = json!({"sessionId": "s", "toolCallId": "c1", "mode": "url", "message": "Sign in", "elicitationId": "e1", "url": "https://example.com/a"});
    let (scope, e) = parse("7", &url.to_string()).unwrap();
    assert_eq!(scope.session_id.as_deref(), Some("s"));
    assert_eq!(e.call_id.as_deref(), Some("c1"));
    assert!(matches!(e.mode, ElicitMode::Url { ref url, .. } if url == "https://example.com/a"));
    let odd = json!({"sessionId": "s", "mode": "_x", "message": "?"});
    assert_eq!(
        parse("1", &odd.to_string()),
        Err(Refusal::UnknownMode("_x".into()))
    );
    assert!(matches!(parse("1", "[1]"), Err(Refusal::Malformed(_))));
    let bad = json!({"mode": "form", "message": "?", "requestedSchema": {"properties": [1]}});
    assert!(matches!(
        parse("1", &bad.to_string()),
        Err(Refusal::Malformed(_))
    ));
}

#[test]
fn answers_on_the_wire() {
    let c = json!({"a": 1}).as_object().unwrap().clone();
    assert_eq!(
        ElicitAnswer::Accept(c).to_json(),
        json!({"action": "accept", "content": {"a": 1}})
    );
    assert_eq!(
        ElicitAnswer::Accept(Map::new()).to_json(),
        json!({"action": "accept"})
    );
    assert_eq!(
        ElicitAnswer::Decline.to_json(),
        json!({"action": "decline"})
    );
    assert_eq!(ElicitAnswer::Cancel.to_json(), json!({"action": "cancel"}));
}
