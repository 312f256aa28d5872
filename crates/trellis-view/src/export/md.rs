//! The Markdown export: the transcript as text, each tool call a collapsible
//! `<details>` block (arguments as fenced JSON, permission decisions, result, diffs).

use std::fmt::Write as _;

use super::{Doc, Item, Options};
use crate::inspector::fence_for;
use trellis_core::Session;

/// The session as Markdown.
pub fn markdown(session: &Session, opts: &Options<'_>) -> String {
    let doc = Doc::of(session, opts);
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", squeezed(&doc.title));
    for (k, v) in &doc.facts {
        let _ = writeln!(out, "- **{k}:** {}", squeezed(v));
    }
    out.push('\n');
    for item in &doc.items {
        match item {
            Item::Turn(n) => {
                let _ = writeln!(out, "## Turn {n}\n");
            }
            Item::User(t) => {
                for l in t.lines() {
                    let _ = writeln!(out, "> {l}");
                }
                out.push('\n');
            }
            Item::Agent(t) => {
                let _ = writeln!(out, "{t}\n");
            }
            Item::Thought(t) => {
                let _ = writeln!(
                    out,
                    "<details>\n<summary>Thinking</summary>\n\n{}\n</details>\n",
                    fenced("text", t)
                );
            }
            Item::Notice(t) => {
                let _ = writeln!(out, "*{}*\n", squeezed(t));
            }
            Item::Compaction { line, summary } if summary.trim().is_empty() => {
                let _ = writeln!(out, "*{}*\n", squeezed(line));
            }
            Item::Compaction { line, summary } => {
                let _ = writeln!(
                    out,
                    "<details>\n<summary>{}</summary>\n\n{}\n</details>\n",
                    escape(&squeezed(line)),
                    fenced("text", summary)
                );
            }
            Item::Call(c) => {
                let mut summary = format!("{} {} · {}", c.glyph, c.kind, c.title);
                if let Some(s) = &c.size {
                    let _ = write!(summary, " · {s}");
                }
                let _ = writeln!(
                    out,
                    "<details>\n<summary>{}</summary>\n",
                    escape(&squeezed(&summary))
                );
                let _ = writeln!(out, "Call `{}`, {}.\n", c.id.replace('`', "'"), c.status);
                if !c.args.is_empty() {
                    out.push_str("**Arguments**\n\n");
                    for b in &c.args {
                        if let Some(h) = b.heading {
                            let _ = writeln!(out, "{h}:\n");
                        }
                        let lang = if b.lang.is_empty() { "sh" } else { b.lang };
                        let _ = writeln!(out, "{}", fenced(lang, &b.body));
                    }
                }
                for p in &c.permissions {
                    let _ = writeln!(out, "**Permission:** {}\n", squeezed(p));
                }
                if !c.output.is_empty() {
                    let _ = writeln!(out, "**Result**\n\n{}", fenced("text", &c.output));
                }
                for d in &c.diffs {
                    let body: String = d.lines.iter().map(|(k, l)| format!("{k}{l}\n")).collect();
                    let _ = writeln!(
                        out,
                        "**Diff** `{}`\n\n{}",
                        d.path.replace('`', "'"),
                        fenced("diff", &body)
                    );
                }
                out.push_str("</details>\n\n");
            }
        }
    }
    out
}

fn fenced(lang: &str, body: &str) -> String {
    let fence = fence_for(body);
    let nl = if body.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{body}{nl}{fence}\n")
}

/// On one line, whitespace squeezed (see [`trellis_text::squeezed`]), never cut.
fn squeezed(s: &str) -> String {
    trellis_text::squeezed(s, usize::MAX)
}

/// Text safe inside HTML (the `<summary>` of a call).
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters as their pictures (C0) or U+FFFD: never raw.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let pic = if (c as u32) < 0x20 {
                    0x2400 + c as u32
                } else {
                    0xfffd
                };
                let _ = write!(out, "&#x{pic:x};");
            }
            c => out.push(c),
        }
    }
    out
}
