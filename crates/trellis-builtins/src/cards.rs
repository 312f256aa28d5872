//! Card designs: alternative one-line cards the user can pick per tool in Settings →
//! Cards. `Terminal` for execute calls (the command as typed, its outcome), `Diff stat`
//! for edits (path and added/removed line counts), `Compact` for reads (path and line).

use trellis_core::ext::{
    Capability, CardLines, DesignDecl, ExtError, Extension, Host, Manifest, Registration,
    StyledLine, Tone, ToolMatch,
};
use trellis_core::tool_call::ToolContent;
use trellis_core::{ToolCall, ToolKind, ToolStatus};

#[derive(Debug, Default)]
pub struct Cards {
    /// The session's directory, for paths relative to it.
    cwd: Option<String>,
}

fn text_lines(call: &ToolCall) -> Vec<String> {
    call.content
        .iter()
        .filter_map(|c| match c {
            ToolContent::Text { text } => {
                Some(text.load().lines().map(str::to_string).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect()
}

impl Extension for Cards {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "cards".into(),
            version: crate::version(),
            description: "Alternative card designs for execute, edit and read calls.".into(),
            capabilities: vec![Capability::Observe, Capability::Ui],
            ui_only: true,
        }
    }

    fn register(&mut self, _host: &mut dyn Host) -> Result<Registration, ExtError> {
        Ok(Registration {
            subscriptions: Some(vec!["session_started".into()]),
            designs: vec![
                DesignDecl {
                    id: "terminal".into(),
                    label: "Terminal".into(),
                    applies_to: ToolMatch::Kind(ToolKind::Execute),
                },
                DesignDecl {
                    id: "diffstat".into(),
                    label: "Diff stat".into(),
                    applies_to: ToolMatch::Kind(ToolKind::Edit),
                },
                DesignDecl {
                    id: "compact".into(),
                    label: "Compact".into(),
                    applies_to: ToolMatch::Kind(ToolKind::Read),
                },
            ],
            ..Registration::default()
        })
    }

    fn on_event(
        &mut self,
        event: &trellis_core::Event,
        _host: &mut dyn Host,
    ) -> Result<(), ExtError> {
        if let trellis_core::EventBody::SessionStarted { cwd, .. } = &event.body {
            self.cwd.clone_from(cwd);
        }
        Ok(())
    }

    fn card(
        &mut self,
        design: &str,
        call: &ToolCall,
        _width: u16,
        _host: &mut dyn Host,
    ) -> Result<CardLines, ExtError> {
        // Trellis puts the call's status mark before the first line and its duration after.
        let mut head = StyledLine::default();
        let mut result = Vec::new();
        match design {
            "terminal" => {
                let cmd = trellis_core::enrich::command_of(call)
                    .unwrap_or_else(|| trellis_core::enrich::card_title(call));
                head.push("$ ", Tone::Accent).push(cmd, Tone::Normal);
                if call.status == ToolStatus::Failed {
                    head.push("  failed", Tone::Bad);
                }
                for l in text_lines(call)
                    .into_iter()
                    .rev()
                    .take(2)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    result.push(StyledLine::tone(format!("  {l}"), Tone::Dim));
                }
            }
            "diffstat" => {
                let mut any = false;
                for c in &call.content {
                    if let ToolContent::Diff {
                        path,
                        old_text,
                        new_text,
                    } = c
                    {
                        let (add, del) = trellis_core::enrich::lines_changed(
                            old_text.as_deref().unwrap_or(""),
                            new_text,
                        );
                        if any {
                            head.push("  ", Tone::Normal);
                        }
                        let path = crate::short_path(path, self.cwd.as_deref());
                        head.push(format!("✎ {path} "), Tone::Normal)
                            .push(format!("+{add}"), Tone::Added)
                            .push(" ", Tone::Normal)
                            .push(format!("−{del}"), Tone::Removed);
                        any = true;
                    }
                }
                if !any {
                    head.push(
                        format!("✎ {}", trellis_core::enrich::card_title(call)),
                        Tone::Normal,
                    );
                }
            }
            "compact" => {
                let place = call
                    .locations
                    .first()
                    .map(|l| {
                        let p = crate::short_path(&l.path, self.cwd.as_deref());
                        match l.line {
                            Some(n) => format!("{p}:{n}"),
                            None => p,
                        }
                    })
                    .unwrap_or_else(|| trellis_core::enrich::card_title(call));
                head.push(format!("▸ {place}"), Tone::Normal);
                let n = text_lines(call).len();
                if n > 0 {
                    head.push(format!("  {n} lines"), Tone::Dim);
                }
            }
            other => return Err(ExtError::msg(format!("unknown design {other}"))),
        }
        Ok(CardLines {
            call: vec![head],
            result,
            bare: false,
        })
    }
}
