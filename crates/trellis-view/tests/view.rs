//! Snapshots of what users see (rendered lines, styles left out), and the transcript
//! layout's invariants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui_core::text::Line;
use serde_json::{Value, json};
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Policy, Session, ToolKind, update};
use trellis_view::card::{CardCtx, card};
use trellis_view::status::status_line;
use trellis_view::{OutputPolicies, OutputPolicy, Theme, TranscriptView};

fn text(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn fixture(name: &str) -> Session {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/acp")
        .join(name);
    let log = std::fs::read_to_string(path).unwrap();
    let mut s = Session::new(Policy::Ask);
    trellis_core::log::rebuild(&mut s, log.lines(), |_| {});
    s
}

struct Builder {
    s: Session,
    seq: u64,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder {
            s: Session::new(Policy::Ask),
            seq: 0,
        };
        b.frame(Dir::ClientToAgent, json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}), 0.0);
        b
    }
    fn frame(&mut self, dir: Dir, v: Value, t: f64) {
        self.seq += 1;
        update(
            &mut self.s,
            Action::Frame {
                seq: self.seq,
                t,
                dir,
                msg: Message::parse(&v.to_string()).unwrap(),
            },
        );
    }
    fn up(&mut self, u: Value, t: f64) {
        self.frame(Dir::AgentToClient, json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}}), t);
    }
    fn call(&mut self, id: &str, fields: Value, t: f64) {
        let mut u = json!({"sessionUpdate":"tool_call","toolCallId":id});
        u.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        self.up(u, t);
    }
    /// Search call `c{i}` ("Search {i}"), run and ended with `status` and `output`.
    fn search(&mut self, i: usize, status: &str, output: &str) {
        let id = format!("c{i}");
        let title = format!("Search {i}");
        self.call(
            &id,
            json!({"title":title,"kind":"search","status":"in_progress"}),
            i as f64,
        );
        self.patch(
            &id,
            json!({"status":status,"content":text_content(output)}),
            i as f64,
        );
    }
    fn patch(&mut self, id: &str, fields: Value, t: f64) {
        let mut u = json!({"sessionUpdate":"tool_call_update","toolCallId":id});
        u.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        self.up(u, t);
    }
}

fn text_content(s: &str) -> Value {
    json!([{"type":"content","content":{"type":"text","text":s}}])
}

fn every_status() -> Session {
    let mut b = Builder::new();
    b.call(
        "p",
        json!({"title":"Read src/main.rs","kind":"read","status":"pending"}),
        1.0,
    );
    b.call("r", json!({"title":"terminal","kind":"execute","status":"in_progress","rawInput":{"command":"cargo test --workspace"}}), 1.0);
    b.call("c", json!({"title":"Search for TODO","kind":"search","status":"completed","content":text_content("a:1\nb:2\nc:3\n")}), 2.0);
    b.call(
        "f",
        json!({"title":"Run the tests","kind":"execute","status":"in_progress"}),
        2.0,
    );
    b.patch("f", json!({"status":"failed","content":text_content("error[E0425]: cannot find value `x`\n --> src/lib.rs:3:5\n  |\n3 |     x\n  |     ^ not found\n")}), 4.5);
    b.call("e", json!({"title":"Edit src/lib.rs","kind":"edit","status":"pending","content":[{"type":"diff","path":"/w/src/lib.rs","oldText":"a\nb\n","newText":"a\nc\nd\n"}]}), 5.0);
    b.frame(Dir::AgentToClient, json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"e"},
        "options":[{"optionId":"y","name":"Yes","kind":"allow_once"},{"optionId":"n","name":"No","kind":"reject_once"}]}}), 5.0);
    b.frame(
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"y"}}}),
        6.0,
    );
    b.patch("e", json!({"status":"completed"}), 6.5);
    b.call("x", json!({"title":"Fetch https://example.com/a/very/long/path/that/goes/on","kind":"fetch","status":"in_progress"}), 7.0);
    b.frame(
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}),
        8.0,
    );
    b.call(
        "u",
        json!({"title":"Think","kind":"think","status":"in_progress"}),
        8.5,
    );
    b.frame(
        Dir::AgentToClient,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        9.0,
    );
    b.s
}

fn cards(s: &Session, width: usize) -> String {
    let theme = Theme::plain();
    let policies = OutputPolicies::default();
    let mut out = Vec::new();
    for c in s.ledger.calls() {
        let cx = CardCtx {
            theme: &theme,
            width,
            now: 3.0,
            frame: 2,
            selected: false,
            highlighted: false,
        };
        out.extend(card(&c, s, &cx, &policies));
    }
    text(&out)
}

#[test]
fn cards_in_every_status() {
    let mut s = every_status();
    insta::assert_snapshot!("cards_80", cards(&s, 80));
    insta::assert_snapshot!("cards_40", cards(&s, 40));
    insta::assert_snapshot!("cards_200", cards(&s, 200));
    // Still running: spinner and live elapsed time.
    let mut b = Builder::new();
    b.call("r", json!({"title":"terminal","kind":"execute","status":"in_progress","rawInput":{"command":"sleep 5"}}), 1.0);
    s = b.s;
    insta::assert_snapshot!("card_running", cards(&s, 60));
}

#[test]
fn output_preview_keeps_wide_chars_tabs_and_colours_within_width() {
    let mut b = Builder::new();
    b.call("o", json!({"title":"Show table","kind":"execute","status":"completed",
        "content":text_content("名前\t値\n\x1b[32m成功\x1b[0m\tok\n👨‍👩‍👧 family\tx\na very long line that will certainly not fit in forty columns\n5\n6\n")}), 1.0);
    let theme = Theme::plain();
    let policies = OutputPolicies {
        by_kind: vec![(ToolKind::Execute, OutputPolicy::Preview(5))],
        failed_preview: 3,
    };
    let cx = CardCtx {
        theme: &theme,
        width: 40,
        now: 2.0,
        frame: 0,
        selected: false,
        highlighted: false,
    };
    let lines = card(&b.s.ledger.at(0), &b.s, &cx, &policies);
    assert!(lines.iter().all(|l| l.width() <= 40), "{lines:?}");
    insta::assert_snapshot!(text(&lines));
}

#[test]
fn status_bar_at_three_widths() {
    let s = fixture("claude-agent-acp-0.23.1.jsonl");
    let theme = Theme::plain();
    for w in [40, 80, 200] {
        let line = status_line(&s, "claude", "gT inspect · ? help", w, &theme);
        assert_eq!(line.width(), w);
        insta::assert_snapshot!(format!("status_{w}"), text(&[line]));
    }
    // The real agent's config options (issue 12, item 1): its mode and model selectors.
    let ids: Vec<(&str, Option<&str>, usize)> = s
        .config
        .iter()
        .map(|o| (o.id.as_str(), o.category.as_deref(), o.choices.len()))
        .collect();
    assert_eq!(
        ids,
        [("mode", Some("mode"), 5), ("model", Some("model"), 5)]
    );
}

fn transcript(s: &Session, width: usize, height: usize) -> String {
    let theme = Theme::plain();
    let mut v = TranscriptView::new();
    v.sync(s, width, &theme);
    text(&v.render(s, 0, height, &theme, 100.0, 0, None, None))
}

#[test]
fn fixture_transcripts() {
    for name in [
        "claude-agent-acp-0.23.1.jsonl",
        "claude-agent-acp-0.23.1-rejected.jsonl",
        "claude-code-acp-0.16.2-fs-terminal.jsonl",
    ] {
        let s = fixture(name);
        insta::assert_snapshot!(format!("transcript_{name}"), transcript(&s, 80, 60));
    }
}

#[test]
fn windows_agree_with_the_whole_and_incremental_equals_fresh() {
    let theme = Theme::plain();
    // Build incrementally, syncing after every action, then compare with a fresh layout.
    let mut b = Builder::new();
    let mut v = TranscriptView::new();
    v.policies = OutputPolicies {
        by_kind: vec![(ToolKind::Search, OutputPolicy::Full)],
        failed_preview: 3,
    };
    for i in 0..40 {
        b.up(json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":format!("word{i} ")}}), i as f64);
        v.sync(&b.s, 50, &theme);
        if i % 5 == 0 {
            let id = format!("c{i}");
            b.call(
                &id,
                json!({"title":format!("Search {i}"),"kind":"search","status":"in_progress"}),
                i as f64,
            );
            v.sync(&b.s, 50, &theme);
        }
    }
    // A late update to an early call changes its height.
    b.patch(
        "c0",
        json!({"status":"completed","content":text_content("one\ntwo\nthree\n")}),
        50.0,
    );
    v.invalidate_call(0);
    v.sync(&b.s, 50, &theme);
    let mut fresh = TranscriptView::new();
    fresh.policies = v.policies.clone();
    fresh.sync(&b.s, 50, &theme);
    let total = fresh.total_height();
    assert_eq!(v.total_height(), total);
    let whole = text(&fresh.render(&b.s, 0, total, &theme, 60.0, 0, None, None));
    assert_eq!(
        text(&v.render(&b.s, 0, total, &theme, 60.0, 0, None, None)),
        whole
    );
    let whole: Vec<&str> = whole.split('\n').collect();
    for top in 0..total {
        for h in [1, 3, 7] {
            let win = text(&v.render(&b.s, top, h, &theme, 60.0, 0, None, None));
            let want = whole[top..(top + h).min(total)].join("\n");
            assert_eq!(win, want, "top {top} height {h}");
        }
    }
}

/// More entries with lines than the view keeps lines for, of every height: what is drawn
/// after their lines were let go (laid out again) is what was drawn before, and offsets
/// and hit-tests agree across the prefix blocks.
#[test]
fn entries_whose_lines_were_let_go_draw_the_same() {
    let theme = Theme::plain();
    let mut b = Builder::new();
    let n = trellis_view::transcript::LINES_KEPT + 300;
    for i in 0..n {
        if i % 3 == 0 {
            b.search(i, "failed", &"x\n".repeat(i % 4));
        } else {
            b.up(json!({"sessionUpdate":"agent_message_chunk","messageId":format!("m{i}"),"content":{"type":"text","text":"line\n".repeat(1 + i % 3)}}), i as f64);
        }
    }
    let mut v = TranscriptView::new();
    v.sync(&b.s, 40, &theme);
    while v.settling() {
        v.sync(&b.s, 40, &theme);
    }
    let total = v.total_height();
    // The first screen, drawn first from kept lines of the newest, then the oldest.
    let last = text(&v.render(&b.s, total - 30, 30, &theme, 0.0, 0, None, None));
    let first = text(&v.render(&b.s, 0, 40, &theme, 0.0, 0, None, None));
    let mut fresh = TranscriptView::new();
    fresh.sync(&b.s, 40, &theme);
    while fresh.settling() {
        fresh.sync(&b.s, 40, &theme);
    }
    assert_eq!(
        text(&fresh.render(&b.s, 0, 40, &theme, 0.0, 0, None, None)),
        first
    );
    assert_eq!(
        text(&fresh.render(&b.s, total - 30, 30, &theme, 0.0, 0, None, None)),
        last
    );
    assert!(first.contains("Search 0") && last.contains(&format!("Search {}", (n - 1) / 3 * 3)));
    let mut at = 0;
    for i in 0..v.len() {
        assert_eq!(v.offset_of(i), at, "entry {i}");
        let next = if i + 1 < v.len() {
            v.offset_of(i + 1)
        } else {
            total
        };
        if next > at {
            assert_eq!(v.entry_at(at), Some(i));
            assert_eq!(v.entry_at(next - 1), Some(i));
        }
        at = next;
    }
    assert_eq!(v.entry_at(total), None);
}

/// Designs every fifth call, with as many lines as the width allows tens of columns (so
/// its height depends on the width), and counts the calls it is asked to draw.
struct Every5th(std::sync::atomic::AtomicUsize);

impl trellis_view::transcript::Decor for Every5th {
    fn card(
        &self,
        call: &trellis_core::ToolCall,
        width: usize,
        _theme: &Theme,
    ) -> Option<trellis_view::transcript::DesignedCard> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n: usize = call.id.trim_start_matches('c').parse().ok()?;
        n.is_multiple_of(5)
            .then(|| trellis_view::transcript::DesignedCard {
                call: vec![Line::from(format!("designed {}", call.id))],
                result: (0..width / 10)
                    .map(|k| Line::from(format!("row {k}")))
                    .collect(),
                bare: true,
            })
    }
    fn transform(&self, _call: &trellis_core::ToolCall, _text: &str) -> Option<String> {
        None
    }
    fn epoch(&self) -> u64 {
        0
    }
}

impl Every5th {
    fn asked(&self) -> usize {
        self.0.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

fn view_with(decor: &std::sync::Arc<Every5th>) -> TranscriptView {
    let mut v = TranscriptView::new();
    v.policies = OutputPolicies {
        by_kind: vec![(ToolKind::Search, OutputPolicy::Preview(3))],
        failed_preview: 3,
    };
    v.decor = Some(decor.clone());
    v
}

/// Every window of `v` against a fresh layout of `s` at `width`.
fn same_as_fresh(v: &mut TranscriptView, s: &Session, width: usize, fresh: &mut TranscriptView) {
    let theme = Theme::plain();
    fresh.sync(s, width, &theme);
    while fresh.settling() {
        fresh.sync(s, width, &theme);
    }
    let total = fresh.total_height();
    assert_eq!(v.total_height(), total);
    for top in (0..total).step_by(97) {
        assert_eq!(
            text(&v.render(s, top, 40, &theme, 0.0, 0, None, None)),
            text(&fresh.render(s, top, 40, &theme, 0.0, 0, None, None)),
            "top {top}"
        );
    }
}

/// A resize lays out again only what wraps or a design draws (a native card is clipped,
/// so its height holds: a frozen call is not read back), the bottom and what is drawn
/// first; the rest follows a budget per sync, and the result is a fresh layout's. A
/// thoughts toggle lays out only thoughts.
#[test]
fn a_resize_lays_out_what_it_changes_nearest_first() {
    let theme = Theme::plain();
    let mut b = Builder::new();
    let calls = 6 * 4096;
    for i in 0..calls {
        b.search(i, "completed", &"hit\n".repeat(i % 6));
        if i % 40 == 0 {
            b.up(json!({"sessionUpdate":"agent_thought_chunk","messageId":format!("t{i}"),"content":{"type":"text","text":"thinking ".repeat(1 + i % 30)}}), i as f64);
            b.up(json!({"sessionUpdate":"agent_message_chunk","messageId":format!("m{i}"),"content":{"type":"text","text":"words that wrap ".repeat(1 + i % 17)}}), i as f64);
        }
    }
    let decor = std::sync::Arc::new(Every5th(Default::default()));
    let mut v = view_with(&decor);
    // Opening a long session lays out its newest entries, the rest a budget per sync.
    v.sync(&b.s, 100, &theme);
    assert!(v.settling());
    let first = decor.asked();
    assert!(first <= 4096, "{first}");
    let mut fresh = view_with(&std::sync::Arc::new(Every5th(Default::default())));
    fresh.sync(&b.s, 100, &theme);
    let (total, fresh_total) = (v.total_height(), fresh.total_height());
    assert_eq!(
        text(&v.render(&b.s, total - 30, 30, &theme, 0.0, 0, None, None)),
        text(&fresh.render(&b.s, fresh_total - 30, 30, &theme, 0.0, 0, None, None))
    );
    while v.settling() {
        v.sync(&b.s, 100, &theme);
    }
    assert!(first + decor.asked() >= calls);
    let mut fresh = view_with(&std::sync::Arc::new(Every5th(Default::default())));
    while fresh.settling() || fresh.is_empty() {
        fresh.sync(&b.s, 100, &theme);
    }
    same_as_fresh(&mut v, &b.s, 100, &mut fresh);

    decor.asked();
    v.sync(&b.s, 60, &theme);
    assert!(v.settling(), "more stale entries than one sync lays out");
    let asked = decor.asked();
    assert!(
        asked <= 4096 + 1,
        "only designed calls were laid out: {asked}"
    );
    // The bottom and the top are exact at once.
    let total = v.total_height();
    let mut fresh = view_with(&std::sync::Arc::new(Every5th(Default::default())));
    fresh.sync(&b.s, 60, &theme);
    let fresh_total = fresh.total_height();
    assert_ne!(total, fresh_total, "the old heights stand in above");
    assert_eq!(
        text(&v.render(&b.s, total - 30, 30, &theme, 0.0, 0, None, None)),
        text(&fresh.render(&b.s, fresh_total - 30, 30, &theme, 0.0, 0, None, None))
    );
    assert_eq!(
        text(&v.render(&b.s, 0, 40, &theme, 0.0, 0, None, None)),
        text(&fresh.render(&b.s, 0, 40, &theme, 0.0, 0, None, None))
    );
    let mut syncs = 1;
    while v.settling() {
        v.sync(&b.s, 60, &theme);
        syncs += 1;
        assert!(syncs < 10, "stale entries are laid out a budget at a time");
    }
    let asked = decor.asked();
    assert!(
        asked < calls / 5 + 200,
        "native cards were not laid out again: {asked} asked"
    );
    same_as_fresh(&mut v, &b.s, 60, &mut fresh);

    // Thoughts unfold: no call is laid out again but the last, and those drawn.
    decor.asked();
    v.thoughts_folded = false;
    v.invalidate_thoughts();
    v.sync(&b.s, 60, &theme);
    assert!(decor.asked() <= 1);
    while v.settling() {
        v.sync(&b.s, 60, &theme);
    }
    assert!(decor.asked() <= 1);
    let mut fresh = view_with(&std::sync::Arc::new(Every5th(Default::default())));
    fresh.thoughts_folded = false;
    same_as_fresh(&mut v, &b.s, 60, &mut fresh);

    // Everything, and a resize on top of it before it is done: one fresh layout.
    v.invalidate_all();
    v.sync(&b.s, 60, &theme);
    v.sync(&b.s, 45, &theme);
    while v.settling() {
        v.sync(&b.s, 45, &theme);
    }
    let mut fresh = view_with(&std::sync::Arc::new(Every5th(Default::default())));
    fresh.thoughts_folded = false;
    same_as_fresh(&mut v, &b.s, 45, &mut fresh);
}

use trellis_view::inspector::{InspectorView, fence_for, inspector_title, view_lines};

#[test]
fn inspector_views_of_every_fixture_call() {
    let theme = Theme::plain();
    let s = fixture("claude-code-acp-0.16.2-fs-terminal.jsonl");
    let n = s.ledger.len();
    let mut out = String::new();
    for (i, c) in s.ledger.calls().enumerate() {
        for view in [InspectorView::Result, InspectorView::Call] {
            out.push_str(&format!("=== {}\n", inspector_title(&c, view, i + 1, n)));
            out.push_str(&text(&view_lines(&c, &s, view, 80, &theme, None)));
            out.push('\n');
        }
    }
    insta::assert_snapshot!(out);
}

#[test]
fn call_view_fences_outgrow_backticks_and_split_execute_arguments() {
    assert_eq!(fence_for("plain"), "```");
    assert_eq!(fence_for("has ``` inside"), "````");
    assert_eq!(fence_for("a ````` run"), "``````");
    let mut b = Builder::new();
    b.call(
        "x",
        json!({"title":"Run","kind":"execute","status":"completed",
        "rawInput":{"command":"echo '```'","cwd":"/w","timeout":5}}),
        1.0,
    );
    b.call(
        "y",
        json!({"title":"Write","kind":"edit","status":"completed",
        "rawInput":{"path":"/w/a.md","content":"````md\n```\n````"}}),
        1.0,
    );
    b.call(
        "z",
        json!({"title":"Run","kind":"execute","status":"in_progress","rawInput":{"command":"ls"}}),
        1.0,
    );
    let theme = Theme::plain();
    let mut out = String::new();
    for c in b.s.ledger.calls() {
        out.push_str(&text(&view_lines(
            &c,
            &b.s,
            InspectorView::Call,
            60,
            &theme,
            None,
        )));
        out.push_str("\n---\n");
        out.push_str(&text(&view_lines(
            &c,
            &b.s,
            InspectorView::Result,
            60,
            &theme,
            None,
        )));
        out.push_str("\n===\n");
    }
    insta::assert_snapshot!(out);
}
