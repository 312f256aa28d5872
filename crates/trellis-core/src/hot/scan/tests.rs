//! The hand reader reads what serde_json reads, or gives up: lines of every shape the hot
//! kinds take, keys in any order, any whitespace, escapes, unknown members of any value,
//! nulls — and, mixed in, what serde_json refuses or reads otherwise (a repeated field, a
//! value of another type, an escaped key, bad numbers and escapes, trailing bytes).

use proptest::prelude::*;

use super::super::{Content, HotEnvelope, Locations};
use super::envelope;

/// Everything serde_json's reading gave, as text.
fn describe(e: &HotEnvelope) -> String {
    let h = &e.params.update;
    let content = match &h.content {
        Content::Absent => "absent".to_string(),
        Content::Items(items) => items
            .iter()
            .map(|i| {
                format!(
                    "[{:?} {:?} {:?} {:?} {:?} {:?}]",
                    i.ty,
                    i.content.as_ref().map(|b| (&b.ty, b.text)),
                    i.path,
                    i.old_text,
                    i.new_text,
                    i.terminal_id
                )
            })
            .collect(),
        Content::Block(b) => format!("block {:?} {:?} {:?} {:?}", b.ty, b.text, b.uri, b.name),
    };
    // As the call will have them: the text read by the lenient list reader.
    let locations = match &h.locations {
        None | Some(Locations::Raw("null")) => "none".to_string(),
        Some(Locations::Raw(raw)) => format!("{:?}", crate::tool_call::parse_locations(raw).ok()),
        Some(Locations::Read(read)) => format!("{:?}", Some(read)),
    };
    format!(
        "{:?} {:?} {:?} | {:?} {:?} {:?} {:?} {:?} {content} {locations} {:?} {:?} {:?} {:?} {:?}",
        e.method,
        e.id,
        e.params.session_id,
        h.session_update,
        h.tool_call_id,
        h.title,
        h.kind,
        h.status,
        h.raw_input.as_ref().map(crate::raw_json::RawJson::get),
        h.raw_output.as_ref().map(crate::raw_json::RawJson::get),
        h.name,
        h.message_id,
        h.meta
    )
}

/// A piece of a string's inside: text, a short escape, any `\u` escape (surrogates
/// paired or not).
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z é→😀/]{0,8}",
        2 => prop::sample::select(vec!["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"])
            .prop_map(String::from),
        1 => any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
        1 => Just("\\ud83d\\ude00".to_string()),
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
}

/// Whitespace JSON allows (mostly none).
fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n\t ", "\r\n"])
}

/// Any JSON value, a few levels deep.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec![
            "null",
            "true",
            "false",
            "0",
            "-1",
            "3.25",
            "1e5",
            "-0.5E-3",
            "2E+2",
            "12345678901234567890",
        ])
        .prop_map(String::from),
        string(),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((string(), inner), 0..3).prop_map(|v| {
                let members: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// What serde_json refuses, or a reader could take for something else.
fn broken() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "01",
        "1.",
        "-",
        ".5",
        "1e",
        "nul",
        "tru",
        "\"\\x\"",
        "\"\\u12g4\"",
        "\"a\u{1}b\"",
        "\"unterminated",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "[1 2]",
        "{1:2}",
    ])
    .prop_map(String::from)
}

/// An object from its members in the order given.
fn object(members: Vec<(String, String)>, ws: &str) -> String {
    let m: Vec<String> = members
        .into_iter()
        .map(|(k, v)| format!("{ws}{k}{ws}:{ws}{v}{ws}"))
        .collect();
    format!("{{{}}}", m.join(","))
}

/// A field's value: mostly what the hot kinds expect (`good`), sometimes null, absent,
/// another value, or something broken.
fn field(good: BoxedStrategy<String>) -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        60 => good.prop_map(Some),
        3 => Just(Some("null".to_string())),
        6 => Just(None),
        1 => value().prop_map(Some),
        1 => broken().prop_map(Some),
    ]
}

fn members(fields: Vec<(&'static str, Option<String>)>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .filter_map(|(k, v)| Some((format!("\"{k}\""), v?)))
        .collect()
}

fn item() -> impl Strategy<Value = String> {
    let block = (
        field(
            prop::sample::select(vec!["\"text\"", "\"image\""])
                .prop_map(String::from)
                .boxed(),
        ),
        field(string().boxed()),
    )
        .prop_map(|(ty, text)| object(members(vec![("type", ty), ("text", text)]), ""));
    (
        field(
            prop::sample::select(vec!["\"content\"", "\"diff\"", "\"terminal\"", "\"x\""])
                .prop_map(String::from)
                .boxed(),
        ),
        field(block.boxed()),
        field(string().boxed()),
        field(string().boxed()),
        field(string().boxed()),
        ws(),
    )
        .prop_map(|(ty, content, path, new_text, terminal, ws)| {
            object(
                members(vec![
                    ("type", ty),
                    ("content", content),
                    ("path", path),
                    ("newText", new_text),
                    ("terminalId", terminal),
                ]),
                ws,
            )
        })
}

/// `locations`: items that are locations, or not quite (a line past a u32, signed, a
/// fraction, a path that is no string, a repeated member), or no object at all.
fn locations() -> impl Strategy<Value = String> {
    let line = prop::sample::select(vec![
        "1",
        "0",
        "4294967295",
        "4294967296",
        "-0",
        "-3",
        "1.0",
        "1e2",
        "null",
        "\"7\"",
        "[]",
    ]);
    let item = prop_oneof![
        8 => (
            field(string().boxed()),
            prop::option::of(line),
            prop::option::weighted(0.1, value()),
            any::<bool>(),
        )
            .prop_map(|(path, line, other, twice)| {
                let mut m = members(vec![("path", path), ("line", line.map(String::from))]);
                if let Some(o) = other {
                    m.push(("\"x\"".into(), o));
                }
                if twice && let Some(first) = m.first().cloned() {
                    m.push(first);
                }
                object(m, "")
            }),
        1 => value(),
    ];
    prop::collection::vec(item, 0..4).prop_map(|v| format!("[{}]", v.join(",")))
}

fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(item(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
        2 => (field(Just("\"text\"".to_string()).boxed()), field(string().boxed()), field(string().boxed()))
            .prop_map(|(ty, text, name)| object(members(vec![("type", ty), ("text", text), ("name", name)]), " ")),
    ]
}

/// A `session/update` line of a hot kind (or not quite), members shuffled, sometimes with
/// an unknown member, a repeated one, an id, or bytes after it.
fn line() -> impl Strategy<Value = String> {
    let kind = prop::sample::select(vec![
        "\"tool_call\"",
        "\"tool_call_update\"",
        "\"agent_message_chunk\"",
        "\"agent_thought_chunk\"",
        "\"user_message_chunk\"",
        "\"plan\"",
        "\"tool\\u005fcall\"",
    ])
    .prop_map(String::from);
    let update = (
        (
            field(kind.boxed()),
            field(string().boxed()),
            field(string().boxed()),
            field(
                prop::sample::select(vec!["\"execute\"", "\"read\"", "\"e\\u0078ecute\""])
                    .prop_map(String::from)
                    .boxed(),
            ),
            field(
                prop::sample::select(vec!["\"pending\"", "\"completed\"", "\"failed\""])
                    .prop_map(String::from)
                    .boxed(),
            ),
            field(content().boxed()),
        ),
        (
            field(locations().boxed()),
            field(value().boxed()),
            field(value().boxed()),
            field(string().boxed()),
            prop::option::of(value()),
            prop::option::weighted(0.1, 0usize..12),
        ),
        ws(),
    )
        .prop_flat_map(
            |(
                (su, id, title, kind, status, content),
                (loc, input, meta, name, unknown, dup),
                ws,
            )| {
                let mut m = members(vec![
                    ("sessionUpdate", su),
                    ("toolCallId", id),
                    ("title", title),
                    ("kind", kind),
                    ("status", status),
                    ("content", content),
                    ("locations", loc),
                    ("rawInput", input),
                    ("_meta", meta),
                    ("name", name),
                ]);
                if let Some(u) = unknown {
                    m.push(("\"zz\"".into(), u));
                }
                if let Some(d) = dup
                    && let Some(again) = m.get(d % m.len().max(1)).cloned()
                {
                    m.push(again);
                }
                Just(m).prop_shuffle().prop_map(move |m| object(m, ws))
            },
        );
    (
        update,
        field(string().boxed()),
        prop::sample::select(vec![
            "\"session/update\"",
            "\"session/update\"",
            "\"session/update\"",
            "\"session/update\"",
            "\"session\\/update\"",
            "\"session/prompt\"",
        ]),
        prop::sample::select(vec![
            "",
            "",
            ",\"id\":null",
            ",\"id\":7",
            ",\"jsonrpc\":\"2.0\"",
            ",\"jsonrpc\":\"2.0\"",
        ]),
        prop::sample::select(vec!["", "", "", "", "", "", " ", "\n", " x", "}"]),
    )
        .prop_map(|(update, sid, method, extra, tail)| {
            let params = object(
                members(vec![("sessionId", sid), ("update", Some(update))]),
                "",
            );
            format!("{{\"method\":{method},\"params\":{params}{extra}}}{tail}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_hand_reader_reads_what_serde_json_reads_or_gives_up(line in line()) {
        if let Some(fast) = envelope(&line) {
            let slow = serde_json::from_str::<HotEnvelope>(&line);
            prop_assert!(slow.is_ok(), "serde_json refuses what the hand reader read: {}", line);
            prop_assert_eq!(describe(&fast), describe(&slow.unwrap()), "{}", line);
        }
    }
}

/// The lines agents send read by hand (else the fast path would be dead code).
#[test]
fn what_agents_send_is_read_by_hand() {
    for line in [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Step 1 of 10: running the next tool.\n\n"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"call_00001","title":"Run `bench-tool --step 1`","kind":"execute","status":"pending","rawInput":{"command":"bench-tool","args":["--step","1"],"cwd":"."},"locations":[{"path":"src/module_1.py","line":1}]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_00001","status":"in_progress"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_00001","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\nb \"q\" caf\u00e9"}}]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"0199a","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_01","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"e1","status":"completed","content":[{"type":"diff","path":"/w/a.rs","oldText":null,"newText":"fn main() {}\n"}],"rawOutput":{"ok":true,"n":-1.5e3}}}}"#,
        "{ \"method\" : \"session/update\" ,\n \"params\" : { \"update\" : { \"sessionUpdate\" : \"agent_thought_chunk\" , \"content\" : { \"type\" : \"text\" , \"text\" : \"hm\" } } , \"sessionId\" : \"S\" } , \"jsonrpc\" : \"2.0\" }\r\n",
    ] {
        let fast = envelope(line).unwrap_or_else(|| panic!("given up: {line}"));
        let slow: HotEnvelope = serde_json::from_str(line).unwrap();
        assert_eq!(describe(&fast), describe(&slow), "{line}");
    }
}

/// Given up on: what serde_json refuses, and what it reads another way.
#[test]
fn what_the_hand_reader_is_not_sure_of_is_left_to_serde_json() {
    let hot = |update: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S","update":{update}}}}}"#
        )
    };
    for line in [
        hot(r#"{"sessionUpdate":"tool_call","toolCallId":"a","toolCallId":"b"}"#),
        hot(r#"{"sessionUpdate":"tool_call","toolC\u0061llId":"a"}"#),
        hot(r#"{"sessionUpdate":"tool_call","title":5}"#),
        hot(r#"{"sessionUpdate":"tool_call","rawInput":01}"#),
        hot(r#"{"sessionUpdate":"tool_call","rawInput":"a	b"}"#),
        hot(r#"{"sessionUpdate":"tool_call","title":"\ud800"}"#),
        hot(r#"["tool_call"]"#),
        hot(r#"{"sessionUpdate":"tool_call"}"#) + " x",
        hot(&format!(r#"{{"sessionUpdate":"tool_call","rawInput":{}1{}}}"#, "[".repeat(80), "]".repeat(80))),
        r#"{"jsonrpc":"2.0","id":3,"method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}"#.to_string(),
    ] {
        assert!(envelope(&line).is_none(), "{line}");
    }
}

/// Pieces of a literal's body as agents write them: plain characters, the escapes
/// `write_str` writes, and valid escapes it does not (which the measure refuses).
fn literal_bodies() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "a", "line 12", " ", "\\n", "\\r", "\\t", "\\b", "\\f", "\\\"", "\\\\", "\\u000b",
        "\\u0001", "\\u001f", "\\u001F", "\\/", "\\u00e9", "\\u0020", "é", "→", "`", "<", "\u{a0}",
        "\u{3000}", "\u{2003}",
    ]);
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

proptest! {
    /// A tool's output measured while the reader finds its end is measured exactly as
    /// `Text::escaped` measures the literal on its own (both the figures and what is
    /// refused).
    #[test]
    fn an_output_measured_as_it_is_read_is_measured_as_on_its_own(body in literal_bodies()) {
        let lit = format!("\"{body}\"");
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{{"type":"content","content":{{"type":"text","text":{lit}}}}}]}}}}}}"#
        );
        let e = envelope(&line).expect("the hand reader reads it");
        let Content::Items(items) = &e.params.update.content else {
            panic!("no items");
        };
        let block = items[0].content.as_ref().expect("a block");
        prop_assert_eq!(block.text.map(|t| t.0), Some(lit.as_str()));
        prop_assert_eq!(block.measured, crate::bulk::escaped::measure(&lit));
    }
}
