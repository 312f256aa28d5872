//! The render path never runs extension code: what frames draw comes from the host's
//! board. Cards and per-call transforms are asked of the extension on its worker and
//! drawn once they arrive; pushed sections are patched, sanitized and bounded; `drive`
//! is refused without the grant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trellis_core::ext::{
    Capability, CardLines, DesignDecl, DriveAction, ExtError, Extension, Host, HostError, Manifest,
    Registration, Rewrite, SectionBody, SectionDecl, SectionPatch, SectionRow, StyledLine,
    ToolMatch, TransformDecl,
};
use trellis_core::{ToolCall, ToolKind};
use trellis_ext_host::ui::RowTarget;
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, HostMsg, HostOptions, Out};

fn manifest(name: &str, caps: &[Capability]) -> Manifest {
    Manifest {
        name: name.into(),
        version: "1.0.0".into(),
        description: "test".into(),
        capabilities: caps.to_vec(),
        ui_only: false,
    }
}

fn host(
    ext: Box<dyn Extension>,
    grant: &[Capability],
) -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    trellis_ext_host::install_panic_guard();
    let name = ext.manifest().name;
    let mut opts = HostOptions::default();
    opts.config.insert(
        name,
        ExtConfig {
            enabled: Some(true),
            grant: Some(grant.to_vec()),
            ..Default::default()
        },
    );
    ExtHost::new(
        vec![Candidate {
            ext,
            builtin: false,
        }],
        opts,
    )
}

fn call(id: &str, rev: u32, text: &str) -> ToolCall {
    let mut c = ToolCall::placeholder(id.into(), 0.0, 1);
    c.kind = ToolKind::Execute;
    c.rev = rev;
    c.content = vec![trellis_core::tool_call::ToolContent::Text { text: text.into() }];
    c
}

/// A card design whose answers wait until the test releases them, and a per-call
/// transform that upper-cases text.
struct Slow {
    gate: Arc<Mutex<Receiver<()>>>,
    asked: Asked,
}

impl Extension for Slow {
    fn manifest(&self) -> Manifest {
        manifest("slow", &[Capability::Ui])
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            subscriptions: Some(Vec::new()),
            designs: vec![DesignDecl {
                id: "d".into(),
                label: "Slow".into(),
                applies_to: ToolMatch::Kind(ToolKind::Execute),
            }],
            transforms: vec![TransformDecl {
                id: "up".into(),
                label: "Upper".into(),
                rewrites: None,
            }],
            ..Registration::default()
        })
    }
    fn card(
        &mut self,
        _design: &str,
        call: &ToolCall,
        width: u16,
        _h: &mut dyn Host,
    ) -> Result<CardLines, ExtError> {
        self.asked.lock().unwrap().push((call.id.clone(), width));
        let _ = self
            .gate
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(10));
        let text: String = call
            .content
            .iter()
            .filter_map(|c| match c {
                trellis_core::tool_call::ToolContent::Text { text } => {
                    Some(text.load().to_string())
                }
                _ => None,
            })
            .collect();
        Ok(CardLines {
            call: vec![StyledLine::plain(format!(
                "designed {} r{} {text}\x07\x1b]52;c;eA==\x07",
                call.id, call.rev
            ))],
            result: vec![],
            bare: false,
        })
    }
    fn transform(
        &mut self,
        _id: &str,
        _call: &ToolCall,
        text: &str,
        _h: &mut dyn Host,
    ) -> Result<Option<String>, ExtError> {
        Ok(Some(text.to_uppercase()))
    }
}

/// The cards asked for: (call id, width).
type Asked = Arc<Mutex<Vec<(String, u16)>>>;

fn slow() -> (Slow, Sender<()>, Asked) {
    let (tx, rx) = channel();
    let asked = Arc::new(Mutex::new(Vec::new()));
    (
        Slow {
            gate: Arc::new(Mutex::new(rx)),
            asked: asked.clone(),
        },
        tx,
        asked,
    )
}

#[test]
fn a_busy_design_never_holds_a_frame_and_its_card_arrives_by_revision() {
    let (ext, release, asked) = slow();
    let (h, _rx) = host(Box::new(ext), &[Capability::Ui]);
    h.ui.apply(&RowTarget::Card("kind:execute".into()), "slow/d");
    let c = call("c1", 1, "done");
    // The transform is per call: nothing to show until its answer arrives, and the card
    // (drawn from the displayed text) waits for it.
    assert_eq!(h.ui.transform(&c, "done"), None);
    assert!(h.ui.card(&c, 60).is_none());
    h.ui.send_requests();
    assert!(h.flush(Duration::from_secs(10)));
    assert_eq!(h.ui.take_changed(), ["c1"]);
    assert!(asked.lock().unwrap().is_empty());
    // Now the card is asked for; the extension blocks in `card`: frames get the native
    // card at once, again and again, and it is asked only once.
    assert!(h.ui.card(&c, 60).is_none());
    h.ui.send_requests();
    for _ in 0..100 {
        assert!(h.ui.card(&c, 60).is_none());
        h.ui.send_requests();
    }
    release.send(()).unwrap();
    assert!(h.flush(Duration::from_secs(10)));
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "asked once per revision and width"
    );
    let changed = h.ui.take_changed();
    assert!(changed.contains(&"c1".to_string()), "{changed:?}");
    let card = h.ui.card(&c, 60).expect("the answer arrived");
    let text = card.call[0].text();
    // Designs draw the output as displayed (after the transforms), and what the
    // extension wrote is sanitized: no bell, no clipboard write.
    assert!(text.starts_with("designed c1 r1 DONE"), "{text:?}");
    assert!(
        !text.contains('\x07') && !text.contains("\x1b]52"),
        "{text:?}"
    );
    assert_eq!(h.ui.transform(&c, "done").as_deref(), Some("DONE"));
    // A new revision: the previous card stands in until the new one arrives.
    let c2 = call("c1", 2, "later");
    release.send(()).unwrap();
    for _ in 0..2 {
        let stand_in = h.ui.card(&c2, 60).unwrap();
        assert!(stand_in.call[0].text().contains("r1"));
        h.ui.send_requests();
        assert!(h.flush(Duration::from_secs(10)));
    }
    let text = h.ui.card(&c2, 60).unwrap().call[0].text();
    assert!(text.contains("r2 LATER"), "{text:?}");
    // Another width is another answer, clipped to it.
    release.send(()).unwrap();
    h.ui.card(&c2, 12);
    h.ui.send_requests();
    assert!(h.flush(Duration::from_secs(10)));
    let narrow = h.ui.card(&c2, 12).unwrap();
    assert!(trellis_text::display_width(&narrow.call[0].text()) <= 12);
    assert_eq!(asked.lock().unwrap().len(), 3);
}

/// Pushes sections with `set_section` / `patch_section`, a status item, a bad rewrite.
struct Pusher;

impl Extension for Pusher {
    fn manifest(&self) -> Manifest {
        manifest("pusher", &[Capability::Ui, Capability::Drive])
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            subscriptions: Some(Vec::new()),
            sections: vec![SectionDecl {
                id: "s".into(),
                title: "Pushed".into(),
                max_rows: 5,
                collapsed: false,
            }],
            status_items: vec![trellis_core::ext::StatusDecl {
                id: "i".into(),
                label: "Item".into(),
            }],
            transforms: vec![TransformDecl {
                id: "t".into(),
                label: "Hide ids".into(),
                rewrites: Some(vec![Rewrite::new(r"id-\d+", "id-*")]),
            }],
            ..Registration::default()
        })
    }
    fn on_idle(&mut self, h: &mut dyn Host) -> Result<(), ExtError> {
        h.set_section(
            "s",
            SectionBody {
                rows: (0..3)
                    .map(|i| SectionRow::new(format!("row {i}\x1b]0;title\x07")))
                    .collect(),
                count: Some(3),
            },
        )?;
        h.patch_section(
            "s",
            vec![
                SectionPatch::Splice {
                    start: 1,
                    delete: 1,
                    insert: vec![SectionRow::new("middle"); 10],
                },
                SectionPatch::Count { count: Some(12) },
            ],
        )?;
        h.set_status_item("i", Some(StyledLine::plain("ok")))?;
        // Not declared: refused, and said.
        assert!(matches!(
            h.set_section("other", SectionBody::default()),
            Err(HostError::Invalid(_))
        ));
        assert!(matches!(
            h.set_transform("t", vec![Rewrite::new("(", "")]),
            Err(HostError::Invalid(_))
        ));
        h.set_transform("t", vec![Rewrite::new(r"id-(\d)\d*", "id-$1…")])?;
        Ok(())
    }
    fn on_action(
        &mut self,
        _a: &trellis_core::ext::UiAction,
        h: &mut dyn Host,
    ) -> Result<(), ExtError> {
        h.drive(DriveAction::Prompt {
            text: "the tests fail, fix them".into(),
        })
        .map_err(ExtError::from)
    }
}

#[test]
fn pushed_sections_are_patched_sanitized_and_bounded_and_rewrites_replaced() {
    let (h, _rx) = host(Box::new(Pusher), &[Capability::Ui]);
    assert!(h.flush(Duration::from_secs(10)));
    let s = &h.ui.sections()[0];
    let rows: Vec<String> = s.rows.iter().map(|r| r.line.text()).collect();
    assert_eq!(rows[0], "row 0", "the title escape is gone: {rows:?}");
    assert_eq!(&rows[1..5], ["middle"; 4]);
    assert_eq!(s.more, 7, "12 rows, 5 shown");
    assert_eq!(s.count, Some(12));
    assert_eq!(h.ui.status_line_items(10)[0].text(), "ok");
    assert_eq!(
        h.ui.transform(&call("c", 1, ""), "id-42 id-7").as_deref(),
        Some("id-4… id-7…")
    );
    let st = h.status();
    let refused = &st.extensions[0].refused_calls;
    assert!(
        refused.iter().any(|(c, _)| c == "set_section"),
        "{refused:?}"
    );
}

/// The user acts on the extension's row `times` times; what the runtime is then asked to
/// do once the extension handled them.
fn act(
    h: &mut ExtHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
    times: usize,
) -> Vec<Out> {
    for _ in 0..times {
        h.ui.apply(
            &RowTarget::Ext {
                slot: 0,
                id: "any".into(),
            },
            "on",
        );
    }
    assert!(h.flush(Duration::from_secs(10)));
    let mut outs = Vec::new();
    while let Ok(m) = rx.try_recv() {
        outs.extend(h.on_msg(m, 1.0));
    }
    outs
}

#[test]
fn drive_needs_its_grant_and_is_handed_to_the_runtime_with_its_origin() {
    for granted in [false, true] {
        let grant: &[Capability] = if granted {
            &[Capability::Ui, Capability::Drive]
        } else {
            &[Capability::Ui]
        };
        let (mut h, mut rx) = host(Box::new(Pusher), grant);
        assert!(h.ui.run_command("x", "") || h.ui.commands.is_empty());
        // An action makes it drive.
        let outs = act(&mut h, &mut rx, 1);
        let drove = outs.iter().any(|o| {
            matches!(o, Out::Drive { extension, action: DriveAction::Prompt { text } }
                if extension == "pusher" && text == "the tests fail, fix them")
        });
        assert_eq!(drove, granted, "{outs:?}");
        let st = h.status();
        let ext = &st.extensions[0];
        if granted {
            assert!(ext.failures.is_empty(), "{:?}", ext.failures);
        } else {
            assert!(ext.refused.contains(&"drive".to_string()));
            assert!(
                ext.refused_calls.iter().any(|(c, _)| c == "drive"),
                "{:?}",
                ext.refused_calls
            );
            assert!(
                ext.failures
                    .iter()
                    .any(|f| f.message.contains("capability drive was not granted")),
                "{:?}",
                ext.failures
            );
        }
    }
}

#[test]
fn drive_prompts_beyond_the_budget_a_minute_are_refused_and_said() {
    let (mut h, mut rx) = host(Box::new(Pusher), &[Capability::Ui, Capability::Drive]);
    // The default budget, then one more than it.
    let budget = trellis_ext_host::DRIVE_PER_MINUTE as usize;
    let outs = act(&mut h, &mut rx, budget + 2);
    let drove = outs
        .iter()
        .filter(|o| matches!(o, Out::Drive { .. }))
        .count();
    assert_eq!(drove, budget, "{outs:?}");
    let st = h.status();
    let ext = &st.extensions[0];
    assert!(
        ext.rejections
            .iter()
            .any(|r| r.what == "drive prompt" && r.rule.contains("drive_per_minute")),
        "{:?}",
        ext.rejections
    );
}
