//! The extension host against small test extensions: delivery order, isolation, labels,
//! width and lazily built sections; the permission chain's hand-on cases are in
//! `chain.rs`, what the config grants and the extension's store in `grants.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use trellis_core::event::{Event, EventBody};
use trellis_core::ext::{
    Capability, Claim, ExtError, Extension, Host, Manifest, PermissionAsk, Registration,
    SectionBody, SectionDecl, SectionRow, StyledLine, StyledSpan, Tone, UiAction,
};
use trellis_core::permission::{OptionKind, PermissionOption};
use trellis_core::{Effect, ToolCall};
use trellis_ext_host::{Candidate, ExtHost, ExtState, HostMsg, HostOptions, Out};

mod chain;
mod grants;

fn manifest(name: &str, caps: &[Capability]) -> Manifest {
    Manifest {
        name: name.into(),
        version: "1.0.0".into(),
        description: "test".into(),
        capabilities: caps.to_vec(),
        ui_only: false,
    }
}

fn ev(t: f64, body: EventBody) -> Event {
    Event {
        schema: 1,
        t,
        session: Some("S".into()),
        hub_session: None,
        body,
        acp: Some(Arc::from("{\"jsonrpc\":\"2.0\"}")),
        wire: Default::default(),
        position: None,
    }
}

fn chunk(i: usize) -> Event {
    ev(
        i as f64,
        EventBody::MessageChunk {
            role: trellis_core::event::Role::Agent,
            message_id: None,
            text: format!("{i}"),
            subagent: None,
        },
    )
}

fn host(
    exts: Vec<Box<dyn Extension>>,
    opts: HostOptions,
) -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    trellis_ext_host::install_panic_guard();
    ExtHost::new(
        exts.into_iter()
            .map(|ext| Candidate { ext, builtin: true })
            .collect(),
        opts,
    )
}

/// Records what it sees; offers one section whose builds it counts.
#[derive(Default, Clone)]
struct Recorder {
    name: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
    builds: Arc<AtomicUsize>,
    titles: Vec<&'static str>,
    /// Sections pushed and still shown.
    pushed: std::collections::HashSet<String>,
}

impl Extension for Recorder {
    fn manifest(&self) -> Manifest {
        manifest(self.name, &[Capability::Observe, Capability::Ui])
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            acp_payloads: true,
            sections: self
                .titles
                .iter()
                .enumerate()
                .map(|(i, t)| SectionDecl {
                    id: format!("s{i}"),
                    title: t.to_string(),
                    max_rows: 3,
                    collapsed: false,
                })
                .collect(),
            ..Registration::default()
        })
    }
    fn on_event(&mut self, e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        assert!(
            e.acp.is_some(),
            "the verbatim payload travels with the event"
        );
        if let EventBody::MessageChunk { text, .. } = &e.body {
            self.seen.lock().unwrap().push(text.clone());
        }
        Ok(())
    }
    fn on_action(&mut self, a: &UiAction, _h: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::Visibility {
            section,
            shown: false,
        } = a
        {
            self.pushed.remove(section);
        }
        Ok(())
    }
    fn on_idle(&mut self, h: &mut dyn Host) -> Result<(), ExtError> {
        for i in 0..self.titles.len() {
            let id = format!("s{i}");
            if !h.section_shown(&id) || self.pushed.contains(&id) {
                continue;
            }
            self.builds.fetch_add(1, Ordering::SeqCst);
            h.set_section(
                &id,
                SectionBody {
                    rows: (0..5)
                        .map(|i| SectionRow::new(format!("row {i}")))
                        .collect(),
                    count: Some(5),
                },
            )?;
            self.pushed.insert(id);
        }
        Ok(())
    }
}

/// Panics on every event and whenever it should push its section.
struct Panicky;

impl Extension for Panicky {
    fn manifest(&self) -> Manifest {
        manifest("panicky", &[Capability::Observe, Capability::Ui])
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            sections: vec![SectionDecl {
                id: "p".into(),
                title: "Broken".into(),
                max_rows: 3,
                collapsed: false,
            }],
            ..Registration::default()
        })
    }
    fn on_event(&mut self, _e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        panic!("boom in on_event")
    }
    fn on_idle(&mut self, _h: &mut dyn Host) -> Result<(), ExtError> {
        panic!("boom in idle")
    }
}

#[test]
fn events_arrive_in_order_and_a_panicking_extension_costs_only_itself() {
    let healthy = Recorder {
        name: "healthy",
        titles: vec!["Healthy"],
        ..Recorder::default()
    };
    let seen = healthy.seen.clone();
    let opts = HostOptions {
        failure_limit: 3,
        ..HostOptions::default()
    };
    let (h, mut rx) = host(vec![Box::new(Panicky), Box::new(healthy)], opts);
    for i in 0..2000 {
        h.dispatch(&chunk(i));
    }
    assert!(h.flush(Duration::from_secs(10)));
    let got = seen.lock().unwrap().clone();
    let want: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    assert_eq!(got, want, "every event, in order");
    // The healthy section is intact; the broken one is gone once its extension is disabled.
    let sections = h.ui.sections();
    assert_eq!(sections.len(), 1);
    assert_eq!(sections[0].title, "Healthy");
    assert_eq!(sections[0].rows.len(), 3);
    assert_eq!(sections[0].more, 2, "at most N rows, then … +M more");
    // The failure is in /status: deduplicated with a count, and the extension disabled.
    let st = h.status();
    let p = &st.extensions[0];
    assert!(
        matches!(&p.state, ExtState::Disabled(r) if r.contains("failed 3 times")),
        "{:?}",
        p.state
    );
    let count: u64 = p.failures.iter().map(|f| f.count).sum();
    assert_eq!(count, 3);
    assert!(
        p.failures
            .iter()
            .any(|f| f.message.contains("boom in on_event")),
        "{:?}",
        p.failures
    );
    assert_eq!(st.extensions[1].state, ExtState::Ready);
    let text = st.lines().join("\n");
    assert!(
        text.contains("panicky 1.0.0 (built-in): disabled"),
        "{text}"
    );
    let mut disabled = false;
    while let Ok(m) = rx.try_recv() {
        disabled |= matches!(m, HostMsg::Disabled { .. });
    }
    assert!(disabled, "the runtime is told, so the user sees it");
}

#[test]
fn a_section_that_fails_to_push_is_marked_and_reported_and_costs_only_itself() {
    let (h, _rx) = host(
        vec![
            Box::new(Panicky),
            Box::new(Recorder {
                name: "ok",
                titles: vec!["Fine"],
                ..Recorder::default()
            }),
        ],
        HostOptions::default(),
    );
    assert!(h.flush(Duration::from_secs(10)));
    let s = h.ui.sections();
    assert_eq!(s.len(), 2);
    assert!(s[0].error.is_some() && s[0].rows.is_empty());
    assert_eq!(s[1].rows.len(), 3);
    let st = h.status();
    assert!(
        st.extensions[0].failures[0]
            .message
            .contains("boom in idle")
    );
}

#[test]
fn a_slow_extension_overflowing_its_queue_is_disabled_not_silently_skipped() {
    struct Slow;
    impl Extension for Slow {
        fn manifest(&self) -> Manifest {
            manifest("slow", &[Capability::Observe])
        }
        fn on_event(&mut self, _e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
            std::thread::sleep(Duration::from_millis(50));
            Ok(())
        }
    }
    let fast = Recorder {
        name: "fast",
        ..Recorder::default()
    };
    let seen = fast.seen.clone();
    let (h, _rx) = host(
        vec![Box::new(Slow), Box::new(fast)],
        HostOptions {
            queue: 64,
            ..HostOptions::default()
        },
    );
    for i in 0..200 {
        h.dispatch(&chunk(i));
        // One event per input batch, at an agent's pace
        h.deliver();
        // An agent's pace: the fast extension keeps up, the slow one cannot.
        std::thread::sleep(Duration::from_micros(200));
    }
    let st = h.status();
    assert!(
        matches!(&st.extensions[0].state, ExtState::Disabled(r) if r.contains("queue of 64 events overflowed")),
        "{:?}",
        st.extensions[0].state
    );
    assert!(h.flush(Duration::from_secs(10)));
    assert_eq!(
        seen.lock().unwrap().len(),
        200,
        "the others still get everything"
    );
}

/// A flush that runs out of time says which extension still had work and how much, so
/// the end of a run can say what never ran instead of looking complete.
#[test]
fn a_flush_out_of_time_names_what_was_left() {
    struct Slow;
    impl Extension for Slow {
        fn manifest(&self) -> Manifest {
            manifest("slow", &[Capability::Observe])
        }
        fn on_event(&mut self, _e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
            std::thread::sleep(Duration::from_millis(100));
            Ok(())
        }
    }
    let (h, _rx) = host(
        vec![
            Box::new(Slow),
            Box::new(Recorder {
                name: "fast",
                ..Recorder::default()
            }),
        ],
        HostOptions::default(),
    );
    for i in 0..5 {
        h.dispatch(&chunk(i));
    }
    assert!(!h.flush(Duration::from_millis(20)));
    let busy = h.busy();
    assert_eq!(busy.len(), 1, "{busy:?}");
    assert_eq!(busy[0].0, "slow");
    assert!((1..=5).contains(&busy[0].1), "{busy:?}");
    assert!(h.flush(Duration::from_secs(10)));
    assert!(h.busy().is_empty());
}

/// Intercepts permission requests in a scripted way.
struct Claimer {
    name: &'static str,
    /// pass | claim-answer:OPTION | claim-silent | panic | claim-invalid
    how: &'static str,
}

impl Extension for Claimer {
    fn manifest(&self) -> Manifest {
        manifest(self.name, &[Capability::InterceptPermissions])
    }
    fn on_permission(&mut self, ask: &PermissionAsk, h: &mut dyn Host) -> Result<Claim, ExtError> {
        match self.how {
            "pass" => Ok(Claim::Pass),
            "panic" => panic!("cannot decide"),
            "claim-silent" => Ok(Claim::Claim),
            "claim-invalid" => {
                h.respond_permission(&ask.request_id, "not-offered")?;
                Ok(Claim::Claim)
            }
            other => {
                let opt = other.strip_prefix("claim-answer:").unwrap();
                h.respond_permission(&ask.request_id, opt)?;
                Ok(Claim::Claim)
            }
        }
    }
}

/// Offers one card design, "One line", for execute calls.
struct OneLine(&'static str);

impl Extension for OneLine {
    fn manifest(&self) -> Manifest {
        manifest(self.0, &[Capability::Ui])
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            designs: vec![trellis_core::ext::DesignDecl {
                id: "one".into(),
                label: "One line".into(),
                applies_to: trellis_core::ext::ToolMatch::Kind(
                    trellis_core::tool_call::ToolKind::Execute,
                ),
            }],
            ..Registration::default()
        })
    }
}

#[test]
fn two_plugins_card_designs_of_one_label_say_whose_they_are() {
    let (h, _rx) = host(
        vec![Box::new(OneLine("cards-a")), Box::new(OneLine("cards-b"))],
        HostOptions::default(),
    );
    let pages = h.ui.settings();
    let cards = pages
        .iter()
        .find(|p| p.title == "Cards")
        .expect("a Cards page");
    let choices: Vec<&str> = cards.rows[0]
        .choices
        .iter()
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(
        choices,
        vec!["native", "One line from cards-a", "One line from cards-b"]
    );
}

#[test]
fn labels_that_break_the_rule_are_rejected_and_equal_ones_are_told_apart() {
    let (h, _rx) = host(
        vec![
            Box::new(Recorder {
                name: "a",
                titles: vec!["stats", "bad: label", "one two three four"],
                ..Recorder::default()
            }),
            Box::new(Recorder {
                name: "b",
                titles: vec!["Stats", "stats"],
                ..Recorder::default()
            }),
        ],
        HostOptions::default(),
    );
    let titles: Vec<String> = h.ui.sections().into_iter().map(|s| s.title).collect();
    // Two extensions' equal titles name their owner; one's own get ordinals.
    assert_eq!(
        titles,
        vec!["stats from a", "Stats from b", "stats 2 from b"]
    );
    let st = h.status();
    let rej = &st.extensions[0].rejections;
    assert_eq!(rej.len(), 2);
    assert_eq!(rej[0].text, "bad: label");
    assert!(rej[0].rule.contains("':'"), "{}", rej[0].rule);
    assert_eq!(rej[1].text, "one two three four");
    assert!(rej[1].rule.contains("one to three words"));
    assert!(matches!(st.extensions[0].state, ExtState::Degraded(_)));
}

#[test]
fn a_collapsed_or_hidden_section_body_is_never_built() {
    let r = Recorder {
        name: "lazy",
        titles: vec!["Lazy"],
        ..Recorder::default()
    };
    let builds = r.builds.clone();
    let (h, _rx) = host(vec![Box::new(r)], HostOptions::default());
    let settle = || assert!(h.flush(Duration::from_secs(10)));
    settle();
    assert_eq!(h.ui.sections()[0].rows.len(), 3);
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    h.ui.toggle_collapsed("lazy/s0");
    settle();
    for _ in 0..10 {
        let s = h.ui.sections();
        assert!(s[0].collapsed && s[0].rows.is_empty());
        // Frames never build anything.
        assert_eq!(builds.load(Ordering::SeqCst), 1, "collapsed: not built");
    }
    h.ui.toggle_collapsed("lazy/s0");
    settle();
    assert_eq!(builds.load(Ordering::SeqCst), 2, "told it is shown again");
    h.ui.set_hidden("lazy/s0", true);
    settle();
    assert!(h.ui.sections().is_empty());
    for i in 0..100 {
        h.dispatch(&chunk(i));
    }
    settle();
    assert_eq!(builds.load(Ordering::SeqCst), 2, "hidden: not built");
}

#[test]
fn contributed_lines_are_measured_like_the_terminal_and_clipped() {
    use trellis_ext_host::ui::fit;
    let w = trellis_text::display_width;
    let line = |s: &str| StyledLine(vec![StyledSpan::new(s, Tone::Normal)]);
    // A row that fits comes back byte-identical, escapes and all.
    for s in [
        "日本語のテキスト",
        "👩‍👩‍👧‍👦 family",
        "a\tb",
        "\x1b[31mred\x1b[0m",
        "\x1b]8;;https://example.com\x07link\x1b]8;;\x07",
    ] {
        assert_eq!(fit(&line(s), 40), line(s), "{s:?}");
    }
    // CJK is two columns a glyph; never split in half.
    let cut = fit(&line("日本語のテキスト"), 5).text();
    assert!(w(&cut) <= 5, "{cut}");
    // A ZWJ sequence is one grapheme of width 2: kept whole or dropped whole.
    let cut = fit(&line("👩‍👩‍👧‍👦👩‍👩‍👧‍👦"), 3).text();
    assert_eq!(cut, "👩‍👩‍👧‍👦…");
    assert_eq!(w(&cut), 3);
    // Tabs count to the next stop.
    assert!(w(&fit(&line("\tx\ty"), 6).text()) <= 6);
    // A cut inside colour or a hyperlink closes them.
    let red = fit(&line("\x1b[31mred and more red\x1b[0m"), 5).text();
    assert!(red.ends_with("\x1b[0m"), "{red:?}");
    assert_eq!(w(&red), 5);
    let link = fit(
        &line("\x1b]8;;https://x.y\x07a long link text\x1b]8;;\x07"),
        4,
    )
    .text();
    assert!(
        link.ends_with("\x1b]8;;\x1b\\") || link.ends_with("\x1b]8;;\x07"),
        "{link:?}"
    );
    assert_eq!(w(&link), 4);
    // Spans share the room.
    let two = StyledLine(vec![
        StyledSpan::new("abc", Tone::Normal),
        StyledSpan::new("defgh", Tone::Accent),
    ]);
    let t = fit(&two, 5);
    assert_eq!(t.0.len(), 2, "both spans keep their styles");
    assert!(
        t.text().starts_with("abc") && w(&t.text()) == 5,
        "{:?}",
        t.text()
    );
}
