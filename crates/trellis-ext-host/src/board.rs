//! The board: the host's copy of everything extensions show. Sections, status items,
//! settings rows and declarative transforms are pushed by the extensions (from their own
//! workers, or from plugin processes); card designs and per-call transforms are asked of
//! the extension on its worker and their answers kept here, by call revision and width.
//!
//! Invariant: frames read only this board; no extension code runs while a frame is drawn,
//! and nothing here waits for an extension. Every pushed line is sanitized (only SGR and
//! OSC 8 survive) and clipped when it arrives, so a hostile extension cannot reach the
//! terminal or grow the board without bound.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use trellis_core::ToolCall;
use trellis_core::ext::{
    CardLines, Rewrite, SectionBody, SectionPatch, SettingsRow, StyledLine, StyledSpan,
};

/// Rows a section keeps (more are counted, not stored).
pub const MAX_STORED_ROWS: usize = 1000;
/// Widest line kept for sidebars and status items, in terminal columns.
pub const MAX_LINE_COLUMNS: usize = 512;
/// Most rewrites a declarative transform may have.
pub const MAX_REWRITES: usize = 64;
/// Cached per-call answers kept before the oldest generation is dropped.
const MAX_CACHED: usize = 20_000;

/// A declarative transform's compiled rewrites: (pattern, replacement).
pub type Rules = Arc<Vec<(Regex, String)>>;

/// A pushed section body, as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredSection {
    pub body: SectionBody,
    /// Rows pushed beyond [`MAX_STORED_ROWS`].
    pub dropped: usize,
}

/// A card or transform answer: what was asked (`want`), what is held (`have`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer<T> {
    pub want: u64,
    pub have: u64,
    pub value: Option<T>,
}

/// A card the host needs from an extension.
#[derive(Debug, Clone)]
pub(crate) struct CardReq {
    pub key: u64,
    pub cache: u64,
    pub call_id: String,
    pub design: String,
    pub call: Arc<ToolCall>,
    pub width: u16,
}

/// A per-call transform the host needs from an extension.
#[derive(Debug, Clone)]
pub(crate) struct TransformReq {
    pub key: u64,
    pub cache: u64,
    pub call_id: String,
    pub id: String,
    pub call: Arc<ToolCall>,
    pub text: Arc<str>,
}

#[derive(Debug, Default)]
pub(crate) struct Requests {
    pub cards: Vec<CardReq>,
    pub transforms: Vec<TransformReq>,
}

impl Requests {
    pub fn is_empty(&self) -> bool {
        self.cards.is_empty() && self.transforms.is_empty()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Board {
    /// (slot, section id) → body.
    pub sections: HashMap<(usize, String), StoredSection>,
    /// (slot, item id) → line.
    pub status: HashMap<(usize, String), StyledLine>,
    /// Per slot: its settings rows as pushed (validated when the menu is built).
    pub settings: HashMap<usize, Vec<SettingsRow>>,
    /// (slot, transform id) → compiled rewrites.
    pub rewrites: HashMap<(usize, String), Rules>,
    /// Hash of (slot, design, call id) → answer.
    pub cards: HashMap<u64, Answer<CardLines>>,
    /// Hash of (slot, transform, call id, text) → answer.
    pub transforms: HashMap<u64, Answer<String>>,
    /// Per slot: requests not yet handed to its worker.
    pub requests: HashMap<usize, Requests>,
    /// Calls whose designed card or transformed text arrived since the view last looked.
    pub changed: Vec<String>,
}

/// A line made safe to keep and draw: control characters other than SGR and OSC 8 are
/// made visible or dropped, and the line is clipped to `width` columns.
pub fn clean_line(line: StyledLine, width: usize) -> StyledLine {
    let mut line = line;
    for s in &mut line.0 {
        if s.text.chars().any(|c| c.is_control()) {
            s.text = keep_styles_only(&s.text);
        }
    }
    fit(&line, width)
}

/// `text` with every escape sequence but SGR (`ESC [ … m`) and OSC 8 hyperlinks removed,
/// and other control characters made visible (as `trellis_text::sanitize` shows them).
fn keep_styles_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for p in trellis_text::width::pieces(text) {
        match p {
            trellis_text::width::Piece::Escape(e) => {
                let sgr = e.starts_with("\x1b[") && e.ends_with('m');
                let osc8 = e.starts_with("\x1b]8;");
                if sgr || osc8 {
                    out.push_str(e);
                }
            }
            trellis_text::width::Piece::Tab => out.push_str("    "),
            trellis_text::width::Piece::Grapheme(g, _) => {
                out.push_str(&trellis_text::sanitize(&g.replace(['\n', '\r'], " ")));
            }
        }
    }
    out
}

/// Compiles a declarative transform's rewrites (bounded in number and program size).
pub fn compile(rewrites: &[Rewrite]) -> Result<Vec<(Regex, String)>, String> {
    if rewrites.len() > MAX_REWRITES {
        return Err(format!(
            "{} rewrites; at most {MAX_REWRITES}",
            rewrites.len()
        ));
    }
    rewrites
        .iter()
        .map(|r| {
            regex::RegexBuilder::new(&r.pattern)
                .size_limit(1 << 20)
                .dfa_size_limit(1 << 20)
                .build()
                .map(|re| (re, r.replace.clone()))
                .map_err(|e| format!("pattern {:?}: {e}", r.pattern))
        })
        .collect()
}

/// `text` after `rules`; `None` when nothing matched.
pub fn rewrite(rules: &[(Regex, String)], text: &str) -> Option<String> {
    let mut cur: Option<String> = None;
    for (re, rep) in rules {
        let src = cur.as_deref().unwrap_or(text);
        if !re.is_match(src) {
            continue;
        }
        cur = Some(re.replace_all(src, rep.as_str()).into_owned());
    }
    cur
}

impl Board {
    /// Applies patches to a stored section; returns a problem to report, if any.
    pub fn patch(&mut self, key: (usize, String), ops: Vec<SectionPatch>) -> Option<String> {
        let s = self.sections.entry(key).or_default();
        let mut problem = None;
        for op in ops {
            match op {
                SectionPatch::Count { count } => s.body.count = count,
                SectionPatch::Splice {
                    start,
                    delete,
                    insert,
                } => {
                    let start = start.min(s.body.rows.len());
                    let end = start.saturating_add(delete).min(s.body.rows.len());
                    let insert = insert
                        .into_iter()
                        .map(|mut r| {
                            r.line = clean_line(r.line, MAX_LINE_COLUMNS);
                            r
                        })
                        .collect::<Vec<_>>();
                    s.body.rows.splice(start..end, insert);
                    if s.body.rows.len() > MAX_STORED_ROWS {
                        let over = s.body.rows.len() - MAX_STORED_ROWS;
                        s.body.rows.truncate(MAX_STORED_ROWS);
                        s.dropped += over;
                        problem = Some(format!(
                            "a section keeps at most {MAX_STORED_ROWS} rows; {over} dropped"
                        ));
                    }
                }
            }
        }
        problem
    }

    /// Keeps the answer caches bounded (answers are asked again when needed).
    pub fn trim(&mut self) {
        if self.cards.len() > MAX_CACHED {
            self.cards.retain(|_, a| a.want != a.have);
        }
        if self.transforms.len() > MAX_CACHED {
            self.transforms.retain(|_, a| a.want != a.have);
        }
    }
}

/// Stores a whole section body, cleaned and bounded.
pub fn stored(body: SectionBody) -> (StoredSection, Option<String>) {
    let mut body = body;
    let mut dropped = 0;
    if body.rows.len() > MAX_STORED_ROWS {
        dropped = body.rows.len() - MAX_STORED_ROWS;
        body.rows.truncate(MAX_STORED_ROWS);
    }
    for r in &mut body.rows {
        let line = std::mem::take(&mut r.line);
        r.line = clean_line(line, MAX_LINE_COLUMNS);
    }
    let problem = (dropped > 0)
        .then(|| format!("a section keeps at most {MAX_STORED_ROWS} rows; {dropped} dropped"));
    (StoredSection { body, dropped }, problem)
}

/// A hash of `parts` (stable within a process; keys of the answer caches).
pub(crate) fn mix(parts: &[&[u8]]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    for p in parts {
        // Length first: ("ab", "c") and ("a", "bc") differ.
        h.write_usize(p.len());
        h.write(p);
    }
    h.finish()
}

/// Clips a styled line to `width` terminal columns. Text that fits comes back
/// byte-identical; a cut closes any SGR or OSC 8 hyperlink it leaves open.
pub fn fit(line: &StyledLine, width: usize) -> StyledLine {
    StyledLine(trellis_text::clip_pieces(
        line.0.iter().cloned(),
        width,
        |s| &s.text,
        |s, text| StyledSpan { text, ..s },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_core::ext::{SectionRow, StyledSpan, Tone};

    #[test]
    fn lines_keep_styles_and_links_but_no_other_control() {
        let l = StyledLine(vec![StyledSpan::new(
            "\x1b[1mok\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]52;c;aGk=\x07\x07\r\nbell",
            Tone::Normal,
        )]);
        let t = clean_line(l, 200).text();
        assert!(t.contains("\x1b[1mok\x1b[0m"), "{t:?}");
        assert!(t.contains("\x1b]8;;http://x"), "{t:?}");
        assert!(!t.contains("\x1b]52"), "{t:?}");
        assert!(
            !t.contains('\x07') && !t.contains('\r') && !t.contains('\n'),
            "{t:?}"
        );
    }

    #[test]
    fn splices_like_arrays_and_stay_bounded() {
        let mut b = Board::default();
        let key = (0, "s".to_string());
        let rows = |n: usize| (0..n).map(|i| SectionRow::new(format!("r{i}"))).collect();
        b.patch(
            key.clone(),
            vec![SectionPatch::Splice {
                start: 0,
                delete: 0,
                insert: rows(3),
            }],
        );
        b.patch(
            key.clone(),
            vec![
                SectionPatch::Splice {
                    start: 1,
                    delete: 1,
                    insert: vec![SectionRow::new("x")],
                },
                SectionPatch::Count { count: Some(9) },
                SectionPatch::Splice {
                    start: 99,
                    delete: 5,
                    insert: vec![SectionRow::new("end")],
                },
            ],
        );
        let s = &b.sections[&key];
        let texts: Vec<String> = s.body.rows.iter().map(|r| r.line.text()).collect();
        assert_eq!(texts, ["r0", "x", "r2", "end"]);
        assert_eq!(s.body.count, Some(9));
        let p = b.patch(
            key.clone(),
            vec![SectionPatch::Splice {
                start: 0,
                delete: 0,
                insert: rows(MAX_STORED_ROWS),
            }],
        );
        assert!(p.is_some());
        assert_eq!(b.sections[&key].body.rows.len(), MAX_STORED_ROWS);
    }

    #[test]
    fn rewrites_keep_groups_and_bound_patterns() {
        let rules = compile(&[Rewrite::new(r"(?i)(bearer\s+)\S{8,}", "${1}‹x›")]).unwrap();
        assert_eq!(
            rewrite(&rules, "Authorization: Bearer abcdefghij").as_deref(),
            Some("Authorization: Bearer ‹x›")
        );
        assert_eq!(rewrite(&rules, "nothing"), None);
        assert!(compile(&[Rewrite::new("(", "")]).is_err());
        assert!(compile(&[Rewrite::new("a{100000}{100000}", "")]).is_err());
    }
}
