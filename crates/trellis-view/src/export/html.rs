//! The HTML export: one self-contained file (inline CSS and script, nothing fetched —
//! its Content-Security-Policy forbids every request), with the transcript, tool cards
//! that expand, coloured diffs, the permission decisions and a search box. Every text
//! from the session is escaped: agent Markdown is shown as text, never as HTML.

use std::fmt::Write as _;

use super::md::escape;
use super::{Doc, Item, Options};
use trellis_core::Session;

const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1d1f21; --bg: #fdfdfd; --dim: #6a6f76; --card: #f2f4f7;
  --line: #d5d9df; --ok: #1a7f37; --bad: #cf222e; --add: #e6ffec; --del: #ffebe9; --hit: #fff3b0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #16181c; --dim: #9aa0a6;
  --card: #1f2329; --line: #343a42; --ok: #3fb950; --bad: #f85149; --add: #12361f; --del: #3d1418; --hit: #5c4d00; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 980px; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
header h1 { font-size: 1.4rem; margin: .5rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; color: var(--dim); }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
#search { position: sticky; top: 0; background: var(--bg); padding: .6rem 0; border-bottom: 1px solid var(--line); z-index: 1; }
#search input { width: 60%; font: inherit; padding: .3rem .5rem; }
#search span { color: var(--dim); margin-left: .8rem; }
h2.turn { font-size: 1.05rem; border-top: 1px solid var(--line); padding-top: .8rem; margin-top: 1.6rem; }
.msg { white-space: pre-wrap; overflow-wrap: anywhere; margin: .6rem 0; }
.user { border-left: 3px solid var(--dim); padding-left: .8rem; font-weight: 600; }
.thought { color: var(--dim); font-style: italic; }
.notice { color: var(--dim); }
details.call { background: var(--card); border: 1px solid var(--line); border-radius: 6px; margin: .4rem 0; }
details.call > summary { cursor: pointer; padding: .3rem .6rem; font-family: ui-monospace, monospace; font-size: 13px;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
details.call.failed > summary .glyph { color: var(--bad); } details.call.completed > summary .glyph { color: var(--ok); }
.body { padding: .2rem .8rem .6rem; border-top: 1px solid var(--line); }
.body h4 { margin: .6rem 0 .2rem; font-size: .85rem; color: var(--dim); text-transform: uppercase; letter-spacing: .04em; }
pre { margin: 0; padding: .4rem .6rem; background: var(--bg); border: 1px solid var(--line); border-radius: 4px;
  overflow-x: auto; font: 12.5px/1.45 ui-monospace, monospace; white-space: pre; }
pre.diff .add { background: var(--add); display: block; } pre.diff .del { background: var(--del); display: block; }
pre.diff .ctx { display: block; }
.perm { font-size: 13px; }
.hidden { display: none !important; }
mark { background: var(--hit); color: inherit; }
"#;

/// Filters items by the search box; expands the cards that match.
const SCRIPT: &str = r#"
(function () {
  var input = document.getElementById('q'), count = document.getElementById('count');
  var items = Array.prototype.slice.call(document.querySelectorAll('[data-item]'));
  function run() {
    var words = input.value.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    var shown = 0;
    items.forEach(function (el) {
      var text = el.textContent.toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      el.classList.toggle('hidden', !ok);
      if (el.tagName === 'DETAILS') { el.open = ok && words.length > 0; }
      if (ok) { shown++; }
    });
    count.textContent = words.length ? shown + ' of ' + items.length + ' entries match' : items.length + ' entries';
  }
  input.addEventListener('input', run);
  run();
})();
"#;

/// The session as one HTML file.
pub fn html(session: &Session, opts: &Options<'_>) -> String {
    let doc = Doc::of(session, opts);
    let mut out = String::with_capacity(64 << 10);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"Trellis {}\">\n\
         <title>{}</title>\n<style>{STYLE}</style></head>\n<body>\n<header><h1>{}</h1>\n<dl class=\"facts\">",
        env!("CARGO_PKG_VERSION"),
        escape(&doc.title),
        escape(&doc.title)
    );
    for (k, v) in &doc.facts {
        let _ = write!(out, "<dt>{k}</dt><dd>{}</dd>", escape(v));
    }
    out.push_str(
        "</dl></header>\n<div id=\"search\"><input id=\"q\" type=\"search\" \
         placeholder=\"Search this session\" autocomplete=\"off\"><span id=\"count\"></span></div>\n<main>\n",
    );
    for item in &doc.items {
        match item {
            Item::Turn(n) => {
                let _ = writeln!(out, "<h2 class=\"turn\">Turn {n}</h2>");
            }
            Item::User(t) => msg(&mut out, "user", t),
            Item::Agent(t) => msg(&mut out, "agent", t),
            Item::Thought(t) => msg(&mut out, "thought", t),
            Item::Notice(t) => msg(&mut out, "notice", t),
            Item::Compaction { line, summary } => {
                let _ = writeln!(
                    out,
                    "<details class=\"msg notice\" data-item><summary>{}</summary><pre>{}</pre></details>",
                    escape(line),
                    escape(summary)
                );
            }
            Item::Call(c) => {
                let _ = write!(
                    out,
                    "<details class=\"call {}\" data-item data-call=\"{}\"><summary><span class=\"glyph\">{}</span> {} · {}",
                    c.status,
                    escape(&c.id),
                    c.glyph,
                    c.kind,
                    escape(&c.title)
                );
                if let Some(s) = &c.size {
                    let _ = write!(out, " · {}", escape(s));
                }
                let _ = write!(out, "</summary><div class=\"body\">");
                if !c.args.is_empty() {
                    out.push_str("<h4>Arguments</h4>");
                    for b in &c.args {
                        if let Some(h) = b.heading {
                            let _ = write!(out, "<p>{h}</p>");
                        }
                        let _ = write!(out, "<pre class=\"args\">{}</pre>", escape(&b.body));
                    }
                }
                if !c.permissions.is_empty() {
                    out.push_str("<h4>Permission</h4>");
                    for p in &c.permissions {
                        let _ = write!(out, "<p class=\"perm\">{}</p>", escape(p));
                    }
                }
                if !c.output.is_empty() {
                    let _ = write!(
                        out,
                        "<h4>Result</h4><pre class=\"output\">{}</pre>",
                        escape(&c.output)
                    );
                }
                for d in &c.diffs {
                    let _ = write!(out, "<h4>Diff {}</h4><pre class=\"diff\">", escape(&d.path));
                    for (k, l) in &d.lines {
                        let class = match k {
                            '+' => "add",
                            '-' => "del",
                            _ => "ctx",
                        };
                        let _ = write!(out, "<span class=\"{class}\">{k}{}</span>", escape(l));
                    }
                    out.push_str("</pre>");
                }
                out.push_str("</div></details>\n");
            }
        }
    }
    let _ = write!(out, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

fn msg(out: &mut String, class: &str, text: &str) {
    let _ = writeln!(
        out,
        "<div class=\"msg {class}\" data-item>{}</div>",
        escape(text)
    );
}
