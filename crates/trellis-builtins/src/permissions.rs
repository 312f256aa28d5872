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
const SECTION: &str = "queue";

#[derive(Debug, Clone)]
struct Waiting {
    request_id: String,
    call_id: String,
    title: String,
}

#[derive(Debug)]
pub struct Permissions {
    waiting: Vec<Waiting>,
    recent: VecDeque<(String, String, String)>,
    /// Changed since the section was last pushed.
    dirty: bool,
}

impl Default for Permissions {
    fn default() -> Permissions {
        Permissions {
            waiting: Vec::new(),
            recent: VecDeque::new(),
            dirty: true,
        }
    }
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
                id: SECTION.into(),
                title: "Permissions".into(),
                max_rows: 8,
                collapsed: false,
            }],
            ..Registration::default()
        })
    }

    fn on_event(&mut self, event: &Event, _host: &mut dyn Host) -> Result<(), ExtError> {
        self.dirty = true;
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
                ..
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
        match action {
            UiAction::RowClick { row, .. } => host.open_inspector(row)?,
            UiAction::Visibility { shown: false, .. } => self.dirty = true,
            _ => {}
        }
        Ok(())
    }

    fn on_idle(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        if self.dirty && host.section_shown(SECTION) {
            host.set_section(SECTION, self.section())?;
            self.dirty = false;
        }
        Ok(())
    }
}

impl Permissions {
    fn section(&self) -> SectionBody {
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
        SectionBody {
            rows,
            count: Some(self.waiting.len()),
        }
    }
}
