//! Several sessions in one terminal (issue 30): the rail at three sizes and as a strip,
//! the inbox, the new-session form, and the help screen's session keys.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use trellis_core::attention::{Attention, Blocked};
use trellis_core::wire::Dir;
use trellis_tui::App;
use trellis_tui::deck::{Deck, DeckKeys, Opened};

mod common;
use common::{frame_text, new_session, session_of, update};

fn prompt(text: &str) -> (Dir, serde_json::Value) {
    (
        Dir::ClientToAgent,
        json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":text}]}}),
    )
}

fn app(frames: Vec<(Dir, serde_json::Value)>, agent: &str) -> App {
    let mut a = App::new(session_of(new_session(frames)), agent.into(), false);
    a.theme = trellis_view::Theme::plain();
    a
}

fn opened(app: App, source: &str, branch: Option<&str>) -> Opened {
    Opened {
        app,
        restart: None,
        source: source.into(),
        branch: branch.map(str::to_string),
        from: None,
    }
}

/// Three sessions in two repositories: one waiting for a permission (an edit), one done,
/// one working; the first one in front.
fn deck(now: Instant) -> Deck {
    let blocked = app(
        vec![
            prompt("rename the parser module"),
            update(
                json!({"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit src/parse.rs","kind":"edit","status":"pending",
                "content":[{"type":"diff","path":"src/parse.rs","oldText":"a\nb\n","newText":"a\nc\nd\n"}]}),
            ),
            (
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"S",
                    "toolCall":{"toolCallId":"e1"},
                    "options":[{"optionId":"y","name":"Allow","kind":"allow_once"},
                               {"optionId":"a","name":"Always allow","kind":"allow_always"},
                               {"optionId":"n","name":"Reject","kind":"reject_once"}]}}),
            ),
        ],
        "claude",
    );
    let done = app(
        vec![
            prompt("fix the flaky test in ci"),
            (
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}),
            ),
        ],
        "codex",
    );
    let working = app(vec![prompt("write the changelog")], "demo");
    let mut d = Deck::new(
        opened(working, "/home/dev/app", Some("main")),
        "demo".into(),
    );
    d.add(
        opened(blocked, "/home/dev/app", Some("trellis-rename")),
        "claude".into(),
    );
    d.add(opened(done, "/home/dev/tools", None), "codex".into());
    d.show(0);
    let states = [
        Attention::Working,
        Attention::Blocked(Blocked::Permission),
        Attention::Done,
    ];
    for (i, (s, a)) in d.sessions.slots.iter_mut().zip(states).enumerate() {
        s.attention = a;
        s.started = now - Duration::from_secs(60 * (i as u64 + 2));
        s.since = now - Duration::from_secs(30 * (3 - i as u64));
    }
    d
}

fn deck_text(d: &mut Deck, w: u16, h: u16, now: Instant) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    for _ in 0..2 {
        term.draw(|f| {
            trellis_tui::rail::draw_deck_at(
                f,
                d,
                trellis_tui::Clock {
                    now: 10.0,
                    frame: 0,
                },
                now,
            )
        })
        .unwrap();
    }
    common::buffer_text(term.backend().buffer(), w, h)
}

#[test]
fn the_rail_at_three_sizes_and_as_a_strip() {
    let now = Instant::now();
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 50)] {
        let mut d = deck(now);
        let f = deck_text(&mut d, w, h, now);
        insta::assert_snapshot!(format!("rail_{w}x{h}"), f);
        if w >= trellis_tui::rail::MIN_WIDE {
            // Grouped by repository, counts in words, each state a mark and a word.
            assert!(f.contains("app · 1 blocked"), "{f}");
            assert!(f.contains("tools · 1 done"), "{f}");
            assert!(f.contains("◆ permission claude"), "{f}");
            assert!(f.contains("✓ done codex"), "{f}");
            assert!(f.contains("▶1 ◐ working demo"), "{f}");
            // Its edit waits for permission: it changed nothing yet, so no `+2 −1`.
            assert!(f.contains("3m · trellis-rename"), "{f}");
        } else {
            assert!(f.contains("[1◐working] 2◆permission 3✓done"), "{f}");
        }
    }
    // ASCII marks, and a strip too narrow for every session: the counts that matter.
    let mut d = deck(now);
    d.ascii = true;
    let f = deck_text(&mut d, 60, 20, now);
    assert!(f.contains("[1~working] 2!permission 3+done"), "{f}");
    for _ in 0..4 {
        let a = app(vec![], "demo");
        d.add(opened(a, "/home/dev/app", None), "demo".into());
    }
    d.show(0);
    let f = deck_text(&mut d, 60, 20, now);
    insta::assert_snapshot!("rail_strip_60x20", f);
    assert!(f.contains("[1~working] of 7 · 1 blocked · 1 done"), "{f}");
}

/// Forks and hand-offs are one thread with the session they came from (issue 48, item 3):
/// on the rail, right under it, saying from which session and turn — whatever order the
/// deck opened them in; one whose session is not in the deck names its log.
#[test]
fn a_fork_sits_under_the_session_it_came_from() {
    let now = Instant::now();
    let mut d = deck(now);
    d.sessions.slots[0].app.log_path = Some("/logs/first.jsonl".into());
    let lineage = |log: &str, at, handoff| trellis_tui::deck::Lineage {
        log: log.into(),
        at,
        handoff,
    };
    let mut fork = opened(
        app(vec![prompt("the other way")], "demo"),
        "/home/dev/app",
        None,
    );
    fork.from = Some(lineage("/logs/first.jsonl", Some(2), false));
    fork.app.log_path = Some("/logs/fork.jsonl".into());
    d.add(fork, "demo".into());
    let mut handoff = opened(app(vec![], "claude"), "/home/dev/app", None);
    handoff.from = Some(lineage("/logs/fork.jsonl", None, true));
    d.add(handoff, "claude".into());
    let mut orphan = opened(app(vec![], "demo"), "/home/dev/tools", None);
    orphan.from = Some(lineage("/logs/gone-away.jsonl", Some(1), false));
    d.add(orphan, "demo".into());
    d.show(0);
    for s in d.sessions.slots.iter_mut().skip(3) {
        s.started = now - Duration::from_secs(5);
    }
    let f = deck_text(&mut d, 120, 40, now);
    insta::assert_snapshot!("rail_forks_120x40", f);
    let at = |what: &str| f.find(what).unwrap_or_else(|| panic!("{what}: {f}"));
    // 1, then its fork 4, then 4's hand-off 5, then 2 (opened before them).
    assert!(at("▶1 ◐ working demo") < at(" 4 "), "{f}");
    assert!(at("↳ 1 before turn 2 · 5s") < at("↳ from 4 · 5s"), "{f}");
    assert!(at("↳ from 4") < at(" 2 ◆ permission claude"), "{f}");
    assert!(f.contains("↳ gone-away before turn 1"), "{f}");
}

#[test]
fn the_inbox_lists_every_pending_request_with_one_time_answers() {
    let now = Instant::now();
    let mut d = deck(now);
    d.inbox = Some(trellis_tui::deck::Inbox::default());
    let f = deck_text(&mut d, 120, 40, now);
    insta::assert_snapshot!("inbox_120x40", f);
    assert!(f.contains("Inbox · 1 pending"), "{f}");
    assert!(
        f.contains("2 claude · app [trellis-rename] · permission"),
        "{f}"
    );
    assert!(f.contains("Edit src/parse.rs (+2 −1)"), "{f}");
    assert!(f.contains("1 Allow  2 Reject"), "{f}");
    assert!(
        !f.contains("Always allow"),
        "always is made only in the session's dialog"
    );
    let pending = d.sessions.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].key, d.sessions.slots[1].key);
}

#[test]
fn the_new_session_form_starts_from_the_session_in_front() {
    let now = Instant::now();
    let mut d = deck(now);
    d.open_form(true);
    let form = d.form.as_ref().unwrap();
    assert_eq!(form.agent, "demo");
    assert_eq!(form.dir, "/home/dev/app");
    let f = deck_text(&mut d, 120, 40, now);
    insta::assert_snapshot!("new_session_120x40", f);
    assert!(f.contains("New session in a worktree"), "{f}");
}

#[test]
fn the_help_screen_lists_the_session_keys() {
    let mut a = app(vec![], "demo");
    a.session_keys = DeckKeys::default().listed();
    a.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::F(1),
        crossterm::event::KeyModifiers::NONE,
    ));
    // Every page of it, scrolled to the end.
    let mut f = String::new();
    for _ in 0..8 {
        f.push_str(&frame_text(&mut a, 120, 60));
        a.on_key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::PageDown,
            crossterm::event::KeyModifiers::NONE,
        ));
    }
    a.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Home,
        crossterm::event::KeyModifiers::NONE,
    ));
    assert!(f.contains("Sessions (anywhere)"), "{f}");
    // On the first page, before the prompt's own keys.
    let first = frame_text(&mut a, 120, 30);
    assert!(first.contains("Alt-i"), "{first}");
    for needle in [
        "Alt-1… Alt-9",
        "Alt-a",
        "the session that needs you",
        "Alt-i",
        "Alt-N",
        "Ctrl-] then a key",
    ] {
        assert!(f.contains(needle), "{needle}: {f}");
    }
}

/// Worktree figures as git would give them, for the comparison (the UI crate runs no git).
struct FakeTrees;

impl trellis_tui::deck::Worktrees for FakeTrees {
    fn reminder(&self, _: &str) -> Option<String> {
        None
    }
}

impl trellis_tui::deck::WorktreeOps for FakeTrees {
    fn diff(&self, _: &str, _: &str) -> Result<String, String> {
        Err("no".into())
    }
    fn measure(&self, label: &str) -> trellis_tui::compare::Tree {
        use trellis_tui::compare::{Tree, TreeStat};
        match label {
            "fan-1" => Tree::Measured {
                stat: TreeStat {
                    added: 7,
                    removed: 0,
                    files: 2,
                },
                into: Some("main".into()),
            },
            _ => Tree::Measured {
                stat: TreeStat {
                    added: 12,
                    removed: 3,
                    files: 4,
                },
                into: Some("main".into()),
            },
        }
    }
    fn check(&self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn landing(&self, label: &str, _: &[String]) -> Result<trellis_tui::compare::Landing, String> {
        use trellis_tui::compare::Landing;
        match label {
            "fan-1" => Ok(Landing::FastForward {
                target: "main".into(),
                commit: true,
            }),
            _ => Ok(Landing::Apply {
                target: "main".into(),
            }),
        }
    }
    fn land_one(
        &self,
        _: &str,
        _: &[String],
        _: Option<trellis_tui::deck::Work<'_>>,
    ) -> Result<Vec<String>, String> {
        Err("no".into())
    }
    fn end(
        &self,
        _: &str,
        _: &str,
        _: Option<trellis_tui::deck::Work<'_>>,
    ) -> Result<Vec<String>, String> {
        Err("no".into())
    }
}

/// The comparison: the figures of each worktree are git's (measured off the UI's thread,
/// "measuring…" until then); the agent's own edits are labelled as what it reported and
/// count only when they completed (an edit waiting for permission, or rejected, changed
/// nothing); the last test shows what the agent called it and how it ended, as text.
#[test]
fn the_comparison_shows_one_row_per_session_from_its_ledger() {
    let now = Instant::now();
    // The exit code as agents report it in `rawOutput`.
    let run = |status: &str, cmd: &str, id: &str| {
        let code = if status == "completed" { 0 } else { 101 };
        update(
            json!({"sessionUpdate":"tool_call","toolCallId":id,"title":"Run","kind":"execute","status":status,
            "rawInput":{"command":cmd},"rawOutput":{"exit_code":code}}),
        )
    };
    let edit = |id: &str, path: &str, status: &str| {
        update(
            json!({"sessionUpdate":"tool_call","toolCallId":id,"title":"Edit","kind":"edit","status":status,
            "content":[{"type":"diff","path":path,"oldText":"x\n","newText":"y\nz\n"}]}),
        )
    };
    let usage = update(
        json!({"sessionUpdate":"usage_update","used":5321,"size":200000,"cost":{"amount":0.0123,"currency":"USD"}}),
    );
    let first = app(
        vec![
            prompt("fix it"),
            edit("e1", "src/a.rs", "completed"),
            edit("e2", "src/c.rs", "pending"),
            run("completed", "cargo test", "r1"),
            usage.clone(),
        ],
        "claude",
    );
    let second = app(
        vec![
            prompt("fix it"),
            edit("e1", "src/a.rs", "completed"),
            edit("e2", "src/b.rs", "completed"),
            edit("e3", "src/d.rs", "failed"),
            run("failed", "ls /nope", "r0"),
            run("failed", "cargo test -q 2>&1 | sed 's/^/\\033[31m/'", "r1"),
        ],
        "codex",
    );
    let mut d = Deck::new(
        opened(first, "/home/dev/app", Some("fan-1")),
        "claude".into(),
    );
    d.add(
        opened(second, "/home/dev/app", Some("fan-2")),
        "codex".into(),
    );
    d.show(0);
    for (i, s) in d.sessions.slots.iter_mut().enumerate() {
        s.attention = Attention::Done;
        s.started = now - Duration::from_secs(90 + 30 * i as u64);
        s.since = now;
        s.app.driver.session.worktree = Some(trellis_core::WorktreeRef {
            label: format!("fan-{}", i + 1),
            branch: format!("trellis/fan-{}", i + 1),
            source: "/home/dev/app".into(),
            base: "0".repeat(40),
        });
    }
    d.set_worktrees(std::sync::Arc::new(FakeTrees));
    d.sessions.fan = d.sessions.slots.iter().map(|s| s.key).collect();
    d.open_compare();
    {
        let c = d.compare.as_ref().unwrap();
        assert_eq!(c.rows.len(), 2);
        assert!(
            c.rows
                .iter()
                .all(|r| r.tree == trellis_tui::compare::Tree::Measuring)
        );
    }
    let f = deck_text(&mut d, 140, 30, now);
    assert!(f.contains("measuring…"), "{f}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    loop {
        let m = rt.block_on(trellis_tui::compare::next_measure(&mut d.compare));
        let done = m.is_none();
        d.measured(m);
        if done {
            break;
        }
    }
    let c = d.compare.as_ref().unwrap();
    let r = &c.rows[0];
    assert_eq!(
        (r.reported.added, r.reported.removed, r.reported.files),
        (2, 1, 1),
        "the pending edit is not counted"
    );
    assert_eq!((r.commands, r.failed), (1, 0));
    let t = r.last_test.as_ref().unwrap();
    assert_eq!((t.what.as_str(), t.end.as_str()), ("Run", "passed, exit 0"));
    assert_eq!(r.tokens, Some(5321));
    let r = &c.rows[1];
    assert_eq!(
        (r.reported.added, r.reported.removed, r.reported.files),
        (4, 2, 2),
        "the failed edit is not counted"
    );
    assert_eq!((r.commands, r.failed), (2, 3));
    assert_eq!(r.last_test.as_ref().unwrap().end, "failed, exit 101");
    let f = deck_text(&mut d, 140, 30, now);
    insta::assert_snapshot!("compare_140x30", f);
    assert!(f.contains("Compare · 2 sessions"), "{f}");
    assert!(f.contains("+7 −0 · 2 files"), "{f}");
    assert!(f.contains("+12 −3 · 4 files"), "{f}");
    assert!(f.contains("agent reported +2 −1 in 1 file"), "{f}");
    assert!(f.contains("last test: Run — failed, exit 101"), "{f}");
    assert!(!f.contains("033"), "{f}");
    assert!(f.contains("Esc close"), "the hints fit: {f}");
    // Narrow: the hints go on as many lines as they need, never cut.
    let f = deck_text(&mut d, 90, 30, now);
    assert!(f.contains("Esc close"), "{f}");
    assert!(!f.contains("Enter open…"), "{f}");
    // The question says what the land will do, as found before it is asked.
    use trellis_tui::compare::{Confirm, Landing};
    d.compare.as_mut().unwrap().confirm = Some(Confirm {
        chosen: 0,
        landing: Landing::FastForward {
            target: "main".into(),
            commit: true,
        },
    });
    let f = deck_text(&mut d, 140, 30, now);
    assert!(
        f.contains("Land worktree fan-1 (+7 −0 in 2 files) onto main"),
        "{f}"
    );
    assert!(f.contains("committed as \"fix it\"?"), "{f}");
    assert!(f.contains("Discard fan-2"), "{f}");
    // A member of the fan-out whose session closed: its worktree is discarded too, and
    // the question says so.
    d.compare.as_mut().unwrap().closed = vec!["fan-3".into()];
    let f = deck_text(&mut d, 140, 30, now);
    assert!(f.contains("Compare · 2 sessions (+1 closed)"), "{f}");
    assert!(
        f.contains("Discard fan-2, fan-3 (its session closed)"),
        "{f}"
    );
    d.compare.as_mut().unwrap().closed.clear();
    d.compare.as_mut().unwrap().confirm = Some(Confirm {
        chosen: 1,
        landing: Landing::Apply {
            target: "main".into(),
        },
    });
    let f = deck_text(&mut d, 140, 30, now);
    assert!(
        f.contains("main has moved on since worktree fan-2 began"),
        "{f}"
    );
    assert!(f.contains("(nothing committed)?"), "{f}");
    assert!(!f.contains("committed as"), "{f}");
}

/// A question of a background session is answered in the inbox, in that session's own
/// form: the answer is the user's, recorded once in that session; the inbox goes back to
/// its list.
#[test]
fn the_inbox_answers_a_question_in_place() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let now = Instant::now();
    let mut d = deck(now);
    let asking = app(
        vec![
            prompt("cut the release"),
            (
                Dir::AgentToClient,
                json!({"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{"sessionId":"S","mode":"form",
                    "message":"Which release should I cut?","requestedSchema":trellis_agents::demo_elicit::release_form()}}),
            ),
        ],
        "gemini",
    );
    d.add(opened(asking, "/home/dev/site", None), "gemini".into());
    d.show(0);
    let key = d.sessions.slots[3].key;
    d.sessions.slots[3].since = now - Duration::from_secs(600);
    d.inbox = Some(trellis_tui::deck::Inbox::default());
    let press = |d: &mut Deck, code: KeyCode| d.inbox_key(&KeyEvent::new(code, KeyModifiers::NONE));
    let f = deck_text(&mut d, 120, 40, now);
    assert!(f.contains("Inbox · 2 pending"), "{f}");
    assert!(f.contains("gemini · site · question"), "{f}");
    assert!(f.contains("Enter answers here"), "{f}");
    // The oldest first: the question. Enter opens its form over the deck.
    press(&mut d, KeyCode::Enter);
    for c in "1.4.0".chars() {
        press(&mut d, KeyCode::Char(c));
    }
    let f = deck_text(&mut d, 120, 40, now);
    insta::assert_snapshot!("inbox_question_120x40", f);
    assert!(f.contains("Which release should I cut?"), "{f}");
    assert!(f.contains("1.4.0"), "{f}");
    assert_eq!(d.sessions.front, 0, "the session in front stays in front");
    press(&mut d, KeyCode::Enter);
    let i = d.sessions.index_of(key).unwrap();
    let s = &d.sessions.slots[i].app.driver.session;
    assert_eq!(s.pending_elicitations().count(), 0);
    assert_eq!(
        s.answered_by("9").map(|by| by.to_string()).as_deref(),
        Some("user")
    );
    // Back to the list: what is left is the permission request.
    let f = deck_text(&mut d, 120, 40, now);
    assert!(f.contains("Inbox · 1 pending"), "{f}");
    assert!(f.contains("Edit src/parse.rs"), "{f}");
}
