//! The one-pass unescaping reads a JSON string as serde_json reads it, or gives up where
//! serde_json would fail.

use proptest::prelude::*;

use super::unescape;
use crate::wire::Message;

/// A piece of a JSON string literal's inside: plain text, a short escape, or any `\u`
/// escape of a UTF-16 code unit (surrogates included, paired or not).
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zé→😀 ]{0,12}",
        prop::sample::select(vec![
            "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"
        ])
        .prop_map(String::from),
        any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
        (0xD800u16..0xDC00, 0xDC00u16..0xE000).prop_map(|(h, l)| format!("\\u{h:04X}\\u{l:04x}")),
    ]
}

proptest! {
    #[test]
    fn any_string_reads_back_as_it_was_written(s in any::<String>()) {
        prop_assert_eq!(unescape(&serde_json::to_string(&s).unwrap()), Some(s));
    }

    #[test]
    fn escapes_read_as_serde_json_reads_them(pieces in prop::collection::vec(piece(), 0..8)) {
        let raw = format!("\"{}\"", pieces.concat());
        prop_assert_eq!(unescape(&raw), serde_json::from_str::<String>(&raw).ok(), "{}", raw);
    }
}

proptest! {
    /// However the agent escaped its output (as Trellis writes it or otherwise), the text
    /// a frame gives measures, counts, reads and is written out as the text itself.
    #[test]
    fn a_tool_output_is_the_text_however_it_was_escaped(
        pieces in prop::collection::vec(piece(), 0..8),
        plain in "[a-z <`\n\t]{0,40}",
    ) {
        let raw = format!("\"{}\"", pieces.concat());
        let Ok(odd) = serde_json::from_str::<String>(&raw) else {
            return Ok(());
        };
        for (text, literal) in [(odd, raw), (plain.clone(), serde_json::to_string(&plain).unwrap())] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S","update":{{"sessionUpdate":"tool_call_update","toolCallId":"a","content":[{{"type":"content","content":{{"type":"text","text":{literal}}}}}]}}}}}}"#
            );
            let m = Message::parse(&line).unwrap();
            let Some(super::HotUpdate::ToolCall { patch, .. }) = m.decoded.map(|d| d.update) else {
                return Err(TestCaseError::fail("a hot tool call"));
            };
            let content = patch.content.unwrap();
            let crate::tool_call::ToolContent::Text { text: got } = &content[0] else {
                return Err(TestCaseError::fail("a text"));
            };
            prop_assert_eq!(got.len(), text.len());
            prop_assert_eq!(got.output_lines(), crate::bulk::output_lines(&text));
            let (mut written, mut want) = (Vec::new(), Vec::new());
            got.write_json(&mut written);
            crate::compact_json::write_str(&mut want, &text);
            prop_assert_eq!(written, want);
            prop_assert_eq!(&**got.load(), &text);
        }
    }
}

#[test]
fn what_is_not_a_string_is_left_to_the_lenient_decoders() {
    for raw in [
        "5",
        "null",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"a\\",
    ] {
        assert_eq!(unescape(raw), None, "{raw}");
    }
}

/// A tool's output with escapes is decoded on the hot path exactly as serde_json reads
/// it; a lone surrogate makes the hot path give the frame up.
#[test]
fn a_tool_calls_escaped_output_is_read_on_the_hot_path() {
    let line = |text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S","update":{{"sessionUpdate":"tool_call_update","toolCallId":"a","content":[{{"type":"content","content":{{"type":"text","text":"{text}"}}}}]}}}}}}"#
        )
    };
    let text = r#"caf\u00e9 \ud83d\ude00 a\/b \"q\"\n\ttab"#;
    let m = Message::parse(&line(text)).unwrap();
    let d = m.decoded.expect("hot");
    let super::HotUpdate::ToolCall { patch, .. } = d.update else {
        panic!("a tool call")
    };
    let content = patch.content.expect("content");
    let crate::tool_call::ToolContent::Text { text: got } = &content[0] else {
        panic!("text")
    };
    let want: String = serde_json::from_str(&format!("\"{text}\"")).unwrap();
    assert_eq!(*got.load(), want);
    let lone = Message::parse(&line(r"x\ud800y")).unwrap();
    assert!(lone.decoded.is_none(), "left to the lenient decoders");
}

/// A content block as an agent might send one: a type (or none), a text that is a string
/// with any escapes or something else, and a name or a uri (or neither).
fn block() -> impl Strategy<Value = String> {
    let ty = prop::sample::select(vec![
        "",
        "\"type\":\"text\",",
        "\"type\":\"image\",",
        "\"type\":\"t\\u0065xt\",",
    ]);
    let text = prop_oneof![
        Just(String::new()),
        prop::collection::vec(piece(), 0..6).prop_map(|p| format!("\"text\":\"{}\",", p.concat())),
        prop::sample::select(vec!["\"text\":null,", "\"text\":5,", "\"text\":[\"a\"],"])
            .prop_map(String::from),
    ];
    let extra = prop::sample::select(vec![
        "",
        "\"name\":\"n\",",
        "\"uri\":\"file:///u\",",
        "\"name\":7,",
    ]);
    (ty, text, extra).prop_map(|(t, x, e)| format!("{{{t}{x}{e}\"z\":0}}"))
}

proptest! {
    /// A message chunk's block reads on the hot path as the lenient decoder reads it, or
    /// the hot path gives it up where that decoder fails.
    #[test]
    fn a_chunks_block_reads_as_the_lenient_decoder_reads_it(b in block()) {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S","update":{{"sessionUpdate":"agent_message_chunk","content":{b}}}}}}}"#
        );
        let hot = Message::parse(&line).ok().and_then(|m| m.decoded).map(|d| match d.update {
            super::HotUpdate::Chunk { text, .. } => text,
            super::HotUpdate::ToolCall { .. } => panic!("a chunk"),
        });
        let lenient = super::block_text(&b).ok();
        prop_assert_eq!(hot, lenient, "{}", b);
    }
}
