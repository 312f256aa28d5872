//! The worked example of `docs/extensions.md`, compiled and run: if the API changes,
//! this test (and so the document) must change with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod example {
    use std::collections::BTreeMap;

    use trellis_core::ext::{
        Capability, Claim, CommandDecl, ExtError, Extension, Host, Manifest, PermissionAsk,
        Registration, SectionBody, SectionDecl, SectionRow, StyledLine, Tone, UiAction,
    };
    use trellis_core::{Event, EventBody, ToolKind, ToolStatus};

    #[derive(Default)]
    pub struct Failures {
        by_command: BTreeMap<String, (usize, String)>, // command -> (count, last call id)
        dirty: bool,                                   // changed since last pushed
    }

    impl Extension for Failures {
        fn manifest(&self) -> Manifest {
            Manifest {
                name: "failures".into(),
                version: "1.0.0".into(),
                description: "Failed commands, and no rm -rf.".into(),
                capabilities: vec![
                    Capability::Observe,
                    Capability::Ui,
                    Capability::CallState,
                    Capability::InterceptPermissions,
                ],
                ui_only: false,
            }
        }

        fn register(&mut self, _host: &mut dyn Host) -> Result<Registration, ExtError> {
            Ok(Registration {
                subscriptions: Some(vec!["tool_call_updated".into()]),
                sections: vec![SectionDecl {
                    id: "failed".into(),
                    title: "Failed commands".into(),
                    max_rows: 8,
                    collapsed: false,
                }],
                commands: vec![CommandDecl {
                    name: "forget-failures".into(),
                    description: "Clear the failed-commands section".into(),
                }],
                ..Registration::default()
            })
        }

        fn on_event(&mut self, event: &Event, host: &mut dyn Host) -> Result<(), ExtError> {
            let EventBody::ToolCallUpdated {
                previous_status,
                status,
                call,
                ..
            } = &event.body
            else {
                return Ok(());
            };
            if call.kind != ToolKind::Execute
                || *status != ToolStatus::Failed
                || *previous_status == Some(ToolStatus::Failed)
            {
                return Ok(());
            }
            let cmd = trellis_core::enrich::command_of(call).unwrap_or_else(|| call.title.clone());
            let entry = self.by_command.entry(cmd).or_default();
            entry.0 += 1;
            entry.1 = call.id.clone();
            // Saved in the session log; `trellis replay` brings it back.
            host.put_call_state(&call.id, serde_json::json!({ "failures": entry.0 }), true)?;
            self.dirty = true;
            Ok(())
        }

        fn on_permission(
            &mut self,
            ask: &PermissionAsk,
            host: &mut dyn Host,
        ) -> Result<Claim, ExtError> {
            let cmd = trellis_core::enrich::command_of(&ask.call).unwrap_or_default();
            if !cmd.contains("rm -rf") {
                return Ok(Claim::Pass); // the dialog (or the next extension) decides
            }
            let reject = ask
                .options
                .iter()
                .find(|o| !o.kind.is_allow())
                .ok_or_else(|| ExtError::msg("no reject option offered"))?;
            host.respond_permission(&ask.request_id, &reject.option_id)?;
            Ok(Claim::Claim)
        }

        fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
            match action {
                UiAction::Command { name, .. } if name == "forget-failures" => {
                    self.by_command.clear();
                    self.dirty = true;
                    host.notify("failed commands cleared")?;
                }
                UiAction::RowClick { row, .. } => host.open_inspector(row)?,
                _ => {}
            }
            Ok(())
        }

        // After a batch of events (and after an action): push the section if it changed
        // and is on screen. Frames draw the host's copy; they never call the extension.
        fn on_idle(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
            if !self.dirty || !host.section_shown("failed") {
                return Ok(());
            }
            self.dirty = false;
            let rows = self
                .by_command
                .iter()
                .map(|(cmd, (n, call_id))| {
                    let mut line = StyledLine::default();
                    line.push(format!("{n}× "), Tone::Bad)
                        .push(cmd.clone(), Tone::Normal);
                    SectionRow::clickable(line, call_id.clone())
                })
                .collect();
            host.set_section(
                "failed",
                SectionBody {
                    rows,
                    count: Some(self.by_command.len()),
                },
            )?;
            Ok(())
        }
    }
}

use std::time::Duration;

use serde_json::json;
use trellis_core::ext::Extension;
use trellis_core::wire::{Dir, Message};
use trellis_core::{Action, Effect, Policy, Session, update};
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, HostOptions, Out};

fn frame(s: &mut Session, seq: u64, v: serde_json::Value) -> Vec<Effect> {
    update(
        s,
        Action::Frame {
            seq,
            t: seq as f64,
            dir: Dir::AgentToClient,
            msg: Message::parse(&v.to_string()).unwrap(),
        },
    )
}

#[test]
fn the_documented_example_counts_failures_keeps_call_state_and_vetoes_rm_rf() {
    let mut opts = HostOptions::default();
    opts.config.insert(
        "failures".into(),
        ExtConfig {
            enabled: Some(true),
            grant: Some(trellis_core::ext::Capability::ALL.to_vec()),
            ..Default::default()
        },
    );
    let ext: Box<dyn Extension> = Box::new(example::Failures::default());
    let (mut host, mut rx) = ExtHost::new(
        vec![Candidate {
            ext,
            builtin: false,
        }],
        opts,
    );
    let mut s = Session::new(Policy::Ask);
    let up = |u: serde_json::Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":u}});
    let mut fx = frame(
        &mut s,
        1,
        up(
            json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}),
        ),
    );
    fx.extend(frame(
        &mut s,
        2,
        up(json!({"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"})),
    ));
    fx.extend(frame(&mut s, 3, up(json!({"sessionUpdate":"tool_call","toolCallId":"c2","title":"clean","kind":"execute","status":"pending","rawInput":{"command":"rm -rf /"}}))));
    fx.extend(frame(&mut s, 4, json!({"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"S",
        "toolCall":{"toolCallId":"c2"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}})));
    let mut outs = host.on_effects(&fx, 4.0);
    for _ in 0..50 {
        host.flush(Duration::from_secs(5));
        while let Ok(m) = rx.try_recv() {
            outs.extend(host.on_msg(m, 4.0));
        }
        if outs.iter().any(|o| matches!(o, Out::Decide { .. })) {
            break;
        }
    }
    assert!(
        outs.contains(&Out::Decide {
            request_id: "5".into(),
            option_id: "no".into(),
            extension: "failures".into(),
            reason: None,
        }),
        "{outs:?}"
    );
    assert!(
        outs.contains(&Out::CallState {
            extension: "failures".into(),
            call_id: "c1".into(),
            value: json!({"failures": 1})
        }),
        "{outs:?}"
    );
    let sections = host.ui.sections();
    assert_eq!(sections[0].title, "Failed commands");
    assert_eq!(sections[0].rows[0].line.text(), "1× make");
    assert!(host.ui.run_command("forget-failures", ""));
    host.flush(Duration::from_secs(5));
    assert!(host.ui.sections()[0].rows.is_empty());
}
