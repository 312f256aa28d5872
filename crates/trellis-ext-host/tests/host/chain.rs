//! The permission chain through the host: the first claimant in declared order decides;
//! a timeout, a fault or an invalid option hands the request on, and never approves.

use super::*;

fn ask_effects(req: &str) -> Vec<Effect> {
    let call = Arc::new(ToolCall::placeholder("c1".into(), 0.0, 1));
    vec![
        Effect::Emit(ev(0.0, EventBody::ToolCallCreated { call })),
        Effect::Emit(ev(
            0.0,
            EventBody::PermissionRequested {
                request_id: req.into(),
                call_id: "c1".into(),
                title: "Edit x".into(),
                kind: trellis_core::ToolKind::Edit,
                options: vec![
                    PermissionOption {
                        option_id: "yes".into(),
                        name: "Allow".into(),
                        kind: OptionKind::AllowOnce,
                    },
                    PermissionOption {
                        option_id: "no".into(),
                        name: "Reject".into(),
                        kind: OptionKind::RejectOnce,
                    },
                ],
                subagent: None,
            },
        )),
    ]
}

/// Drives the chain for one request until it settles; `advance` is applied to the clock
/// when nothing is pending (to run into timeouts).
fn settle(
    h: &mut ExtHost,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
    req: &str,
    advance: f64,
) -> Out {
    let mut outs = h.on_effects(&ask_effects(req), 0.0);
    let mut now = 0.0;
    for _ in 0..200 {
        if let Some(o) = outs
            .iter()
            .find(|o| matches!(o, Out::Decide { .. } | Out::Dialog { .. }))
        {
            return o.clone();
        }
        outs.clear();
        h.flush(Duration::from_secs(5));
        let mut got = false;
        while let Ok(m) = rx.try_recv() {
            got = true;
            outs.extend(h.on_msg(m, now));
        }
        if !got {
            now += advance;
            outs.extend(h.tick(now));
        }
    }
    panic!("the chain did not settle")
}

#[test]
fn the_first_claimant_in_declared_order_decides() {
    let (mut h, mut rx) = host(
        vec![
            Box::new(Claimer {
                name: "first",
                how: "pass",
            }),
            Box::new(Claimer {
                name: "second",
                how: "claim-answer:no",
            }),
            Box::new(Claimer {
                name: "third",
                how: "claim-answer:yes",
            }),
        ],
        HostOptions::default(),
    );
    assert_eq!(h.claimants(), vec!["first", "second", "third"]);
    let out = settle(&mut h, &mut rx, "1", 0.0);
    assert_eq!(
        out,
        Out::Decide {
            request_id: "1".into(),
            option_id: "no".into(),
            extension: "second".into(),
            reason: None,
        }
    );
}

#[test]
fn timeout_fault_and_invalid_option_hand_the_request_on_and_never_approve() {
    for how in ["claim-silent", "panic", "claim-invalid"] {
        let (mut h, mut rx) = host(
            vec![
                Box::new(Claimer { name: "bad", how }),
                Box::new(Claimer {
                    name: "good",
                    how: "claim-answer:yes",
                }),
            ],
            HostOptions {
                permission_timeout: 30.0,
                ..HostOptions::default()
            },
        );
        let out = settle(&mut h, &mut rx, "7", 31.0);
        assert_eq!(
            out,
            Out::Decide {
                request_id: "7".into(),
                option_id: "yes".into(),
                extension: "good".into(),
                reason: None,
            },
            "{how}"
        );
        let st = h.status();
        assert!(
            !st.extensions[0].failures.is_empty(),
            "{how}: the hand-on is recorded"
        );
    }
    // Alone, a faulty claimant leads to the dialog — not to an approval.
    for how in ["claim-silent", "panic", "claim-invalid"] {
        let (mut h, mut rx) = host(
            vec![Box::new(Claimer { name: "bad", how })],
            HostOptions::default(),
        );
        assert_eq!(
            settle(&mut h, &mut rx, "9", 31.0),
            Out::Dialog {
                request_id: "9".into()
            },
            "{how}"
        );
    }
}
