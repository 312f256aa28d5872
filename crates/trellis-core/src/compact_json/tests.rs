//! The writer's output is serde_json's, byte for byte.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::{to_vec, write_str};

fn same<T: Serialize + ?Sized>(v: &T) {
    let theirs = serde_json::to_vec(v);
    let ours = to_vec(v);
    match (theirs, ours) {
        (Ok(a), Ok(b)) => assert_eq!(
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(&a),
            "differs from serde_json"
        ),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("serde_json {a:?}, ours {b:?}"),
    }
}

#[derive(Serialize)]
enum Shapes {
    Unit,
    Newtype(u8),
    Tuple(i32, String),
    Struct { a: Option<f64>, b: Vec<bool> },
}

#[derive(Serialize)]
struct Unit;

#[derive(Serialize)]
struct Wrapper(String);

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tagged {
    One {
        x: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        y: Option<String>,
    },
}

#[derive(Serialize)]
struct Flattened {
    schema: u32,
    t: f64,
    #[serde(flatten)]
    body: Tagged,
    #[serde(skip)]
    _hidden: u8,
}

#[test]
fn every_shape_serde_has_is_written_as_serde_json_writes_it() {
    same(&Shapes::Unit);
    same(&Shapes::Newtype(7));
    same(&Shapes::Tuple(-3, "x\"y".into()));
    same(&Shapes::Struct {
        a: Some(0.1),
        b: vec![true, false],
    });
    same(&Shapes::Struct { a: None, b: vec![] });
    same(&Unit);
    same(&());
    same(&Wrapper("\u{1b}[31m".into()));
    same(&(1u8, 'é', "\u{7f}", i64::MIN, u64::MAX, i128::MIN, u128::MAX));
    same(&Flattened {
        schema: 1,
        t: 0.092577355,
        body: Tagged::One { x: 3, y: None },
        _hidden: 0,
    });
    same(&serde_bytes_like(&[0, 1, 255]));
    let mut keys: BTreeMap<i64, &str> = BTreeMap::new();
    keys.insert(-5, "a");
    keys.insert(12, "b");
    same(&keys);
    let mut bool_keys = BTreeMap::new();
    bool_keys.insert(true, 1);
    same(&bool_keys);
    let mut char_keys = BTreeMap::new();
    char_keys.insert('"', 1);
    same(&char_keys);
    let mut bad_keys = BTreeMap::new();
    bad_keys.insert(vec![1], 1);
    same(&bad_keys);
    let raw =
        serde_json::value::RawValue::from_string(r#"{"a": [1, 2.5e3, "\u0041"]}"#.into()).unwrap();
    same(&raw);
    same(&vec![Some(raw.clone()), None]);
    for f in [
        0.0,
        -0.0,
        1.0,
        0.1,
        1e-7,
        1e21,
        1e300,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        same(&f);
        same(&(f as f32));
    }
}

/// Bytes as serde writes a `&[u8]` through `serialize_bytes`.
fn serde_bytes_like(b: &[u8]) -> impl Serialize + '_ {
    struct B<'a>(&'a [u8]);
    impl Serialize for B<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    B(b)
}

#[test]
fn a_tool_call_event_is_written_as_serde_json_writes_it() {
    let mut call = crate::ToolCall::placeholder("call_1".into(), 0.5, 3);
    call.title = "Run `ls`\n\t\"quoted\"".into();
    call.raw_input = Some(crate::raw_json::RawJson::from_string(r#"{"cmd":"ls"}"#.into()).unwrap());
    call.content.push(crate::tool_call::ToolContent::Text {
        text: crate::bulk::Text::new("line 1\nline 2\u{0}\u{1f}é→\r\n".into()),
    });
    let ev = crate::Event {
        schema: crate::SCHEMA_VERSION,
        t: 1.25,
        session: Some("sess-1".into()),
        hub_session: Some("hub:1".into()),
        body: crate::EventBody::ToolCallCreated {
            call: std::sync::Arc::new(call),
        },
        acp: Some("{}".into()),
        wire: Default::default(),
        position: Some(4),
    };
    same(&ev);
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Strings heavy in what needs escaping, at every alignment against the 8-byte words.
fn escapable() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            Just('"'),
            Just('\\'),
            Just('\u{7f}'),
            Just('é'),
            Just('→'),
            Just('😀'),
            proptest::char::range('a', 'z'),
        ],
        0..40,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

proptest! {
    #[test]
    fn any_string_is_escaped_as_serde_json_escapes_it(s in any::<String>(), e in escapable()) {
        same(&s);
        same(&e);
        let mut m = BTreeMap::new();
        m.insert(e.clone(), s.clone());
        same(&m);
        let mut out = Vec::new();
        write_str(&mut out, &e);
        prop_assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), e);
    }

    #[test]
    fn any_json_value_is_written_as_serde_json_writes_it(v in value()) {
        same(&v);
    }
}
