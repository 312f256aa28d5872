//! What the index keeps of a tool call, merged from its announcement and updates (its row,
//! its output, the terminals it shows), and the text of ACP content: a content block's
//! text (for messages and prompts too), capped, without terminal escape sequences.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::doc::{CallRow, OUTPUT_CAP, TEXT_CAP};

/// A record of the log, parsed in place: its strings borrow from the line.
pub(crate) type Json<'a> = serde_json_borrow::Value<'a>;

#[derive(Default)]
pub(crate) struct OpenCall {
    pub row: CallRow,
    pub output: String,
    pub terminals: Vec<String>,
    /// The first line its text comes from.
    pub from: u64,
}

/// Terminal output no call has claimed yet, and the line it starts at.
#[derive(Default)]
pub(crate) struct Unclaimed {
    pub text: String,
    pub from: u64,
}

pub(crate) fn finished(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// Merges a `tool_call` or `tool_call_update` into the open call.
pub(crate) fn merge(call: &mut OpenCall, u: &Json<'_>, terminals: &mut HashMap<String, Unclaimed>) {
    let row = &mut call.row;
    if let Some(t) = str_of(u, "title") {
        row.title = t.to_string();
    }
    if let Some(k) = str_of(u, "kind") {
        row.kind = k.to_string();
    }
    if let Some(s) = str_of(u, "status") {
        row.status = s.to_string();
    }
    if let Some(locs) = field(u, "locations").and_then(Json::as_array) {
        for l in locs {
            if let Some(p) = str_of(l, "path") {
                add_path(&mut row.paths, p);
            }
        }
    }
    if let Some(input) = field(u, "rawInput") {
        if let Some(c) = field(input, "command").or_else(|| field(input, "cmd")) {
            row.command = match c {
                Json::Str(s) => Some(s.to_string()),
                Json::Array(words) => Some(
                    words
                        .iter()
                        .filter_map(Json::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => row.command.take(),
            };
        }
        for key in ["path", "file_path", "abs_path", "filePath", "notebook_path"] {
            if let Some(p) = str_of(input, key) {
                add_path(&mut row.paths, p);
            }
        }
    }
    if let Some(content) = field(u, "content").and_then(Json::as_array) {
        // Content replaces the call's content: output gathered from an earlier update
        // is dropped, terminal output (kept apart) stays.
        call.output.clear();
        for c in content {
            match str_of(c, "type") {
                Some("content") => {
                    if let Some(b) = field(c, "content") {
                        let mut text = String::new();
                        block_text(b, &mut text);
                        push_capped(&mut call.output, &text, OUTPUT_CAP);
                    }
                }
                Some("diff") => {
                    if let Some(p) = str_of(c, "path") {
                        add_path(&mut row.paths, p);
                    }
                    if let Some(t) = str_of(c, "newText") {
                        push_capped(&mut call.output, t, OUTPUT_CAP);
                    }
                    // What the edit took out is found too (where did that line go?):
                    // the old text's lines the new one lacks, not the whole file again.
                    if let Some(old) = str_of(c, "oldText") {
                        removed_lines(old, str_of(c, "newText").unwrap_or(""), &mut call.output);
                    }
                }
                Some("terminal") => {
                    if let Some(t) = str_of(c, "terminalId")
                        && !call.terminals.iter().any(|x| x == t)
                    {
                        call.terminals.push(t.to_string());
                        if let Some(out) = terminals.remove(t) {
                            push_capped(&mut call.output, &out.text, OUTPUT_CAP);
                            call.from = call.from.min(out.from);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(out) = field(u, "rawOutput") {
        let text = match out {
            Json::Str(s) => Some(s.as_ref()),
            o => [
                "output",
                "stdout",
                "stderr",
                "formatted_output",
                "aggregated_output",
            ]
            .iter()
            .find_map(|k| str_of(o, k)),
        };
        if let Some(t) = text
            && !call.output.contains(t)
        {
            push_capped(&mut call.output, t, OUTPUT_CAP);
        }
    }
}

/// Appends to `out` the lines of `old` that `new` does not have (a line moved is not
/// removed), each once.
fn removed_lines(old: &str, new: &str, out: &mut String) {
    let kept: std::collections::HashSet<&str> = new.lines().map(str::trim_end).collect();
    let mut said = std::collections::HashSet::new();
    for line in old.lines().map(str::trim_end) {
        if line.trim().is_empty() || kept.contains(line) || !said.insert(line) {
            continue;
        }
        if out.len() >= OUTPUT_CAP {
            return;
        }
        if !out.is_empty() {
            push_capped(out, "\n", OUTPUT_CAP);
        }
        push_capped(out, line, OUTPUT_CAP);
    }
}

fn add_path(paths: &mut Vec<String>, p: &str) {
    if !paths.iter().any(|x| x == p) && paths.len() < 64 {
        paths.push(p.to_string());
    }
}

/// The text of a content block: text, a resource's text, a link's name and address.
pub(crate) fn block_text(b: &Json<'_>, out: &mut String) {
    let piece = match str_of(b, "type") {
        Some("text") => str_of(b, "text").map(str::to_string),
        Some("resource") => at(b, &["resource", "text"])
            .and_then(Json::as_str)
            .map(str::to_string),
        Some("resource_link") => Some(format!(
            "{} {}",
            str_of(b, "name").unwrap_or(""),
            str_of(b, "uri").unwrap_or("")
        )),
        _ => None,
    };
    if let Some(p) = piece {
        // Blocks apart (a prompt and the document it carries do not run together).
        if !out.is_empty() {
            push_capped(out, "\n\n", TEXT_CAP);
        }
        push_capped(out, &p, TEXT_CAP);
    }
}

/// The member `key` of `v`, when `v` is an object that has one.
pub(crate) fn field<'v, 'a>(v: &'v Json<'a>, key: &str) -> Option<&'v Json<'a>> {
    v.as_object()?.get(key)
}

/// The member reached through the objects named by `path`.
pub(crate) fn at<'v, 'a>(v: &'v Json<'a>, path: &[&str]) -> Option<&'v Json<'a>> {
    path.iter().try_fold(v, |v, key| field(v, key))
}

pub(crate) fn str_of<'v>(v: &'v Json<'_>, key: &str) -> Option<&'v str> {
    field(v, key).and_then(Json::as_str)
}

pub(crate) fn push_capped(s: &mut String, add: &str, cap: usize) {
    if s.len() >= cap {
        return;
    }
    let room = cap - s.len();
    s.push_str(&add[..floor(add, room)]);
}

/// The largest char boundary of `s` at or below `i`.
pub(crate) fn floor(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&j| s.is_char_boundary(j)).unwrap_or(0)
}

/// `text` without terminal escape sequences (colours, cursor moves, titles), which the
/// tokenizer would glue to the next word (`\x1b[32mok` was found as `32mok`, not `ok`) and
/// snippets would show. (The index does not link the terminal text crate that draws them.)
pub(crate) fn without_escapes(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let Some(first) = memchr::memchr(0x1b, b) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let (mut from, mut at) = (0, first);
    loop {
        out.push_str(&text[from..at]);
        // Each sequence ends on an ASCII byte: the rest starts on a char boundary.
        from = at + escape_len(&b[at..]);
        match memchr::memchr(0x1b, &b[from..]) {
            Some(k) => at = from + k,
            None => break,
        }
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

/// Bytes of the escape sequence at the start of `b` (which starts with ESC): CSI up to its
/// final byte, OSC and the other strings up to BEL or ST, else ESC and one more byte.
fn escape_len(b: &[u8]) -> usize {
    match b.get(1) {
        Some(b'[') => b[2..]
            .iter()
            .position(|c| (0x40..=0x7e).contains(c))
            .map_or(b.len(), |i| i + 3),
        Some(b']' | b'P' | b'_' | b'^' | b'X') => {
            let mut i = 2;
            while i < b.len() {
                match b[i] {
                    0x07 => return i + 1,
                    0x1b if b.get(i + 1) == Some(&b'\\') => return i + 2,
                    _ => i += 1,
                }
            }
            b.len()
        }
        Some(c) if c.is_ascii() => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::without_escapes;

    #[test]
    fn escapes_go_and_words_stay() {
        assert_eq!(without_escapes("plain"), "plain");
        assert_eq!(without_escapes("\x1b[32mok\x1b[0m done"), "ok done");
        assert_eq!(without_escapes("a\x1b]0;title\x07b"), "ab");
        assert_eq!(
            without_escapes("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "alink"
        );
        assert_eq!(
            without_escapes("caf\u{e9}\x1b[1m\u{e9}t\u{e9}"),
            "caf\u{e9}\u{e9}t\u{e9}"
        );
        // Cut short, or ESC before a non-ASCII char: nothing is lost but the ESC.
        assert_eq!(without_escapes("x\x1b[31"), "x");
        assert_eq!(without_escapes("x\x1b\u{e9}y"), "x\u{e9}y");
        assert_eq!(without_escapes("x\x1b"), "x");
    }
}
