//! G2 — the permission queue: a sidebar section listing requests still waiting (oldest
//! first) and the latest decisions with who decided them. Clicking a row opens the
//! inspector on its call. (The rules themselves are the first step of the host's chain;
//! see `docs/extensions.md`.)

use std::collections::VecDeque;

use trellis_core::ext::{
    Capability, ExtError, Extension, Host, Manifest, Registration, SectionBody, SectionDecl,
    SectionRow, StyledLine, Tone, UiAction,
};
use trellis_core::{Event, EventBody};

/// Decisions kept for the section.
const RECENT: usize = 5;

#[derive(Debug, Clone)]
struct Waiting {
    request_id: String,
    call_id: String,
    title: String,
}

#[derive(Debug, Default)]
pub struct Permissions {
    waiting: Vec<Waiting>,
    recent: VecDeque<(String, String, String)>,
}

impl Extension for Permissions {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "permissions".into(),
            version: crate::version(),
            description: "The queue of permission requests and recent decisions.".into(),
            capabilities: vec![Capability::Observe, Capability::Ui],
            ui_only: true,
        }
    }

    fn register(&mut self, _host: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            subscriptions: Some(
                ["permission_requested", "permission_resolved"]
                    .map(String::from)
                    .to_vec(),
            ),
            sections: vec![SectionDecl {
                id: "queue".into(),
                title: "Permissions".into(),
                max_rows: 8,
                collapsed: false,
            }],
            ..Registration::default()
        })
    }

    fn on_event(&mut self, event: &Event, _host: &mut dyn Host) -> Result<(), ExtError> {
        match &event.body {
            EventBody::PermissionRequested {
                request_id,
                call_id,
                title,
                ..
            } => self.waiting.push(Waiting {
                request_id: request_id.clone(),
                call_id: call_id.clone(),
                title: title.clone(),
            }),
            EventBody::PermissionResolved {
                request_id,
                call_id,
                outcome,
                decider,
            } => {
                let title = self
                    .waiting
                    .iter()
                    .find(|w| &w.request_id == request_id)
                    .map(|w| w.title.clone())
                    .unwrap_or_default();
                self.waiting.retain(|w| &w.request_id != request_id);
                self.recent.push_front((
                    call_id.clone(),
                    format!("{} by {decider}", outcome.label()),
                    title,
                ));
                self.recent.truncate(RECENT);
            }
            _ => {}
        }
        Ok(())
    }

    fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::RowClick { row, .. } = action {
            host.open_inspector(row)?;
        }
        Ok(())
    }

    fn section(&mut self, _id: &str, _host: &dyn Host) -> Result<SectionBody, ExtError> {
        let mut rows = Vec::new();
        if self.waiting.is_empty() {
            rows.push(SectionRow::new(StyledLine::tone(
                "nothing waiting",
                Tone::Dim,
            )));
        }
        for (i, w) in self.waiting.iter().enumerate() {
            let mut l = StyledLine::default();
            l.push(format!("{} ", i + 1), Tone::Warn)
                .push(w.title.clone(), Tone::Normal);
            rows.push(SectionRow::clickable(l, w.call_id.clone()));
        }
        for (call_id, what, title) in &self.recent {
            let tone = if what.starts_with("allowed") {
                Tone::Good
            } else {
                Tone::Bad
            };
            let mut l = StyledLine::default();
            l.push(format!("{what} "), tone)
                .push(title.clone(), Tone::Dim);
            rows.push(SectionRow::clickable(l, call_id.clone()));
        }
        Ok(SectionBody {
            rows,
            count: Some(self.waiting.len()),
        })
    }
}
