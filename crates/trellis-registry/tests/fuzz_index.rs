#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The registry's index read as hostile input, fuzzed: whatever an entry holds — any JSON,
//! any string where a name, version, package or address goes (multi-byte characters
//! included) — reading never panics, and a bad entry never costs the good ones.
//! `scripts/fuzz` runs many more cases (TRELLIS_FUZZ_CASES).

use proptest::prelude::*;
use serde_json::{Value, json};
use trellis_registry::Index;

/// Strings as a hostile index would write them: any characters, with the separators and
/// multi-byte characters the reader cuts at over-represented.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just('@'),
                Just('='),
                Just('/'),
                Just('.'),
                Just('é'),
                Just('漢'),
                Just('\u{202E}'),
                Just('\u{0}'),
                any::<char>(),
                proptest::char::range('a', 'z'),
                proptest::char::range('0', '9'),
            ],
            0..24,
        )
        .prop_map(|cs| cs.into_iter().collect()),
    ]
}

/// Any JSON value, a few levels deep.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(text(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An entry shaped like the registry's, every field hostile.
fn entry() -> impl Strategy<Value = Value> {
    (text(), text(), text(), text(), text(), text(), value()).prop_map(
        |(id, version, npx, uvx, archive, cmd, extra)| {
            json!({"id": id, "name": id, "version": version, "description": cmd,
                "distribution": {
                    "npx": {"package": npx, "args": [archive.clone()]},
                    "uvx": {"package": uvx, "cmd": cmd},
                    "binary": {"linux-x86_64": {"archive": archive, "cmd": cmd},
                               "darwin-aarch64": extra}}})
        },
    )
}

fn good(id: &str) -> Value {
    json!({"id": id, "name": "Good", "version": "1.0.0", "description": "fine",
        "distribution": {"npx": {"package": format!("@acme/{id}@1.0.0")}}})
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("TRELLIS_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    /// Hostile entries among good ones: no panic, and every good one is kept.
    #[test]
    fn hostile_entries_never_panic_nor_cost_the_good_ones(
        bad in proptest::collection::vec(prop_oneof![entry(), value()], 0..8),
        at in 0usize..8,
    ) {
        let mut entries = bad;
        let at = at.min(entries.len());
        entries.insert(at, good("good-one"));
        entries.push(good("good-two"));
        let index = Index::from_entries("v".into(), &entries);
        for id in ["good-one", "good-two"] {
            prop_assert!(index.get(id).is_some(), "{id} lost: {:?}", index.refused);
        }
        for a in &index.agents {
            // What was kept is what the rules allow.
            prop_assert!(trellis_registry::index::valid_id(&a.id));
            prop_assert!(trellis_registry::index::valid_version(&a.version));
        }
    }

    /// Any text as a whole index: an answer, never a panic.
    #[test]
    fn any_text_as_an_index_is_an_answer(text in any::<String>(), v in value()) {
        let _ = Index::parse(&text);
        let _ = Index::parse(&json!({"version": "1", "agents": [v]}).to_string());
    }
}

/// The case that panicked: an npx package starting with a multi-byte character.
#[test]
fn a_package_starting_with_a_multi_byte_character_is_refused_not_a_panic() {
    let index = Index::from_entries(
        "v".into(),
        &[
            json!({"id": "bad", "name": "B", "version": "1.0.0", "description": "d",
                "distribution": {"npx": {"package": "éa"}}}),
            json!({"id": "bad2", "name": "B", "version": "1.0.0", "description": "d",
                "distribution": {"npx": {"package": "éa@1.0.0"}}}),
            good("fine"),
        ],
    );
    assert!(index.get("fine").is_some());
    assert_eq!(index.refused.len(), 2, "{:?}", index.refused);
}
