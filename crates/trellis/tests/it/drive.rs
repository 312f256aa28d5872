//! The `drive` capability end to end: an extension that answers the end of a turn with a
//! prompt (an auto-continue) makes a second turn run against the real demo agent; the
//! prompt is recorded with the extension as its origin and shown on the transcript. The
//! same extension without the grant is refused and nothing is sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use trellis_core::ext::{
    Capability, DriveAction, ExtError, Extension, Host, Manifest, Registration,
};
use trellis_core::{Event, EventBody};
use trellis_ext_host::{Candidate, ExtConfig, HostOptions};

use crate::faults::{driver_for, run_saying, runtime};

/// Sends "continue" when the first turn ends.
struct AutoContinue {
    ended: Arc<AtomicUsize>,
}

impl Extension for AutoContinue {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "auto".into(),
            version: "1".into(),
            description: "continues once".into(),
            capabilities: vec![Capability::Observe, Capability::Drive],
            ui_only: false,
        }
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            subscriptions: Some(vec!["turn_ended".into()]),
            ..Registration::default()
        })
    }
    fn on_event(&mut self, e: &Event, h: &mut dyn Host) -> Result<(), ExtError> {
        if let EventBody::TurnEnded { .. } = e.body
            && self.ended.fetch_add(1, Ordering::SeqCst) == 0
        {
            h.drive(DriveAction::Prompt {
                text: "continue".into(),
            })?;
        }
        Ok(())
    }
}

fn turns(granted: bool) -> (trellis_driver::Driver, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = HostOptions::default();
    opts.config.insert(
        "auto".into(),
        ExtConfig {
            enabled: Some(true),
            grant: Some(if granted {
                vec![Capability::Observe, Capability::Drive]
            } else {
                vec![Capability::Observe]
            }),
            ..Default::default()
        },
    );
    let ext = Candidate {
        ext: Box::new(AutoContinue {
            ended: Arc::default(),
        }),
        builtin: false,
    };
    let mut said = Vec::new();
    let d = runtime().block_on(async {
        let mut d = driver_for(
            vec!["agent".into(), "demo".into()],
            dir.path(),
            Box::new(trellis_acp::recorder::NullSink),
            vec![ext],
            opts,
        );
        let want = if granted { 2 } else { 1 };
        run_saying(
            &mut d,
            Duration::from_secs(60),
            |d| d.session.turn >= want && !d.session.turn_open,
            &mut said,
        )
        .await;
        // Whatever the extension still had to say about the last turn's end is heard.
        let mut notes = Vec::new();
        d.settle(Duration::from_secs(10), &mut notes);
        d
    });
    (d, said)
}

#[test]
fn an_extension_holding_drive_continues_the_session_and_is_named_as_the_origin() {
    let (d, _) = turns(true);
    assert_eq!(d.session.turn, 2, "the driven prompt ran a second turn");
    let text = trellis_core::summary::transcript_text(&d.session);
    let notice = text.find("prompt from extension auto").expect(&text);
    let prompt = text[notice..].find("continue").expect(&text);
    assert!(
        prompt > 0,
        "the notice comes before the prompt it explains: {text}"
    );
    // The demo agent's second turn adds its own calls; the first turn's stay as they were.
    let ids: Vec<String> = d.session.ledger.calls().map(|c| c.id.clone()).collect();
    let second = ids.iter().filter(|i| i.ends_with(".2")).count();
    assert!(second > 0 && second * 2 == ids.len(), "{ids:?}");
    assert!(
        ids.iter().any(|i| i == "edit-1") && ids.iter().any(|i| i == "edit-1.2"),
        "{ids:?}"
    );
}

#[test]
fn without_the_grant_a_drive_is_refused_and_nothing_is_sent() {
    let (d, _) = turns(false);
    assert_eq!(d.session.turn, 1, "no second turn");
    assert!(!d.driven_pending());
    let text = trellis_core::summary::transcript_text(&d.session);
    assert!(!text.contains("prompt from extension"), "{text}");
    let st = d.host.as_ref().unwrap().status();
    let ext = &st.extensions[0];
    assert!(ext.refused.contains(&"drive".to_string()));
    assert!(
        ext.refused_calls
            .iter()
            .any(|(c, n)| c == "drive" && *n == 1),
        "{:?}",
        ext.refused_calls
    );
}
