//! G1 — follow edits: while an edit or read runs, a side pane shows its file around the
//! call's line; after a write, the changed lines are highlighted (and remembered per call
//! in call state, so a replayed session shows them too). `F` toggles following.

use trellis_core::ext::{
    Capability, ExtError, Extension, Host, KeyDecl, Manifest, Registration, SectionBody,
    SectionDecl, SectionRow, StyledLine, Tone, UiAction,
};
use trellis_core::{Event, EventBody, ToolCall, ToolKind};

/// Largest file the pane loads.
const MAX_FILE: u64 = 4 << 20;
/// Lines shown around the followed line (option `window`, 5 to 40).
pub const WINDOW: usize = 15;

#[derive(Debug, Clone, Default, PartialEq)]
struct Target {
    call_id: String,
    path: String,
    line: Option<u32>,
    running: bool,
    /// Changed lines after the last write (1-based, inclusive range).
    changed: Option<(u32, u32)>,
}

#[derive(Debug)]
pub struct Follow {
    on: bool,
    target: Option<Target>,
    content: Option<String>,
    note: Option<String>,
    cwd: Option<String>,
    window: usize,
    /// Changed since the pane was last pushed.
    dirty: bool,
}

impl Default for Follow {
    fn default() -> Follow {
        Follow {
            dirty: true,
            on: true,
            target: None,
            content: None,
            note: None,
            cwd: None,
            window: WINDOW,
        }
    }
}

/// The 1-based range of lines of `new` that differ from `old`, cut at the common prefix
/// and suffix of lines (cheap, and right for the usual single-hunk edit).
pub fn changed_range(old: &str, new: &str) -> Option<(u32, u32)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let (pre, suf) = trellis_core::diff::common_ends(&a, &b);
    let added = b.len() - pre - suf;
    (added > 0).then(|| (pre as u32 + 1, (pre + added) as u32))
}

fn place(call: &ToolCall) -> Option<(String, Option<u32>)> {
    if let Some(l) = call.locations.first() {
        return Some((l.path.clone(), l.line));
    }
    trellis_core::enrich::paths_of(call)
        .into_iter()
        .next()
        .map(|p| (p, None))
}

/// The lines a call's diff changed (first diff), 1-based and inclusive.
fn diff_range(call: &ToolCall) -> Option<(u32, u32)> {
    call.content.iter().find_map(|c| match c {
        trellis_core::tool_call::ToolContent::Diff {
            old_text, new_text, ..
        } => changed_range(old_text.as_deref().unwrap_or(""), new_text),
        _ => None,
    })
}

impl Follow {
    fn load(&mut self, host: &dyn Host, path: &str) {
        let mut local = std::path::PathBuf::from(host.resolve_path(path));
        // A path an agent gives relative (opencode's, a shell's) is the session's, not
        // the directory Trellis was started in.
        if local.is_relative()
            && let Some(cwd) = &self.cwd
        {
            local = std::path::Path::new(cwd).join(local);
        }
        self.content = None;
        self.note = None;
        match std::fs::metadata(&local) {
            Ok(m) if m.len() > MAX_FILE => {
                self.note = Some(format!("{} bytes: too large to follow", m.len()));
            }
            Ok(_) => match std::fs::read_to_string(&local) {
                Ok(t) => self.content = Some(t),
                Err(e) => self.note = Some(format!("cannot read: {e}")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.note = Some("not on disk yet".into());
            }
            Err(e) => self.note = Some(format!("cannot read: {e}")),
        }
    }
}

impl Extension for Follow {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "follow".into(),
            version: crate::version(),
            description: "A pane that follows the file of the running edit or read.".into(),
            capabilities: vec![Capability::Observe, Capability::Ui, Capability::CallState],
            // Its call state (changed lines) is worth recording in headless runs too.
            ui_only: false,
        }
    }

    fn register(&mut self, host: &mut dyn Host) -> Result<Registration, ExtError> {
        match host.options().get("window") {
            None => {}
            Some(v) => match v.as_u64().filter(|n| (5..=40).contains(n)) {
                Some(n) => self.window = n as usize,
                None => host.report(
                    "option window",
                    &format!("{v} is not a number of lines from 5 to 40; using {WINDOW}"),
                ),
            },
        }
        Ok(Registration {
            subscriptions: Some(
                [
                    "session_started",
                    "tool_call_created",
                    "tool_call_updated",
                    "file_written",
                ]
                .map(String::from)
                .to_vec(),
            ),
            call_kinds: Some(vec![ToolKind::Edit, ToolKind::Read]),
            sections: vec![SectionDecl {
                id: "pane".into(),
                title: "Follow".into(),
                max_rows: self.window + 1,
                collapsed: false,
            }],
            keys: vec![KeyDecl {
                id: "toggle".into(),
                keys: "F".into(),
                label: "Toggle follow".into(),
            }],
            ..Registration::default()
        })
    }

    fn on_event(&mut self, event: &Event, host: &mut dyn Host) -> Result<(), ExtError> {
        if !self.on {
            return Ok(());
        }
        self.dirty = true;
        match &event.body {
            EventBody::SessionStarted { cwd, .. } => self.cwd.clone_from(cwd),
            EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
                if !matches!(call.kind, ToolKind::Edit | ToolKind::Read) {
                    return Ok(());
                }
                let running = !call.status.is_terminal();
                let same = self.target.as_ref().is_some_and(|t| t.call_id == call.id);
                if same {
                    let mut ended = None;
                    if let Some(t) = &mut self.target {
                        if t.running && !running {
                            ended = Some(t.path.clone());
                        }
                        t.running = running;
                        if let Some((_, line)) = place(call) {
                            t.line = line.or(t.line);
                        }
                    }
                    // Agents that write files with their own tools send no write to
                    // Trellis: the file is read again when the call ends, and its diff
                    // (if it sent one) says which lines changed.
                    if let Some(path) = ended {
                        self.load(host, &path);
                        if let Some((a, b)) = diff_range(call)
                            && let Some(t) = &mut self.target
                            && t.changed.is_none()
                        {
                            t.changed = Some((a, b));
                            t.line = t.line.or(Some(a));
                        }
                    }
                } else if running && let Some((path, line)) = place(call) {
                    let changed = host.call_state(&call.id).and_then(|v| {
                        let a = v.get("changed")?.get(0)?.as_u64()?;
                        let b = v.get("changed")?.get(1)?.as_u64()?;
                        Some((a as u32, b as u32))
                    });
                    self.load(host, &path);
                    self.target = Some(Target {
                        call_id: call.id.clone(),
                        path,
                        line,
                        running,
                        changed,
                    });
                }
            }
            EventBody::FileWritten {
                path,
                call_id,
                old,
                new,
                ..
            } => {
                let changed = changed_range(old.as_deref().unwrap_or(""), new);
                if let (Some(id), Some((a, b))) = (call_id, changed) {
                    host.put_call_state(
                        id,
                        serde_json::json!({"changed": [a, b], "path": path}),
                        true,
                    )?;
                }
                self.content = Some(new.to_string());
                self.note = None;
                self.target = Some(Target {
                    call_id: call_id.clone().unwrap_or_default(),
                    path: path.clone(),
                    line: changed.map(|(a, _)| a),
                    running: true,
                    changed,
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::Visibility { shown: false, .. } = action {
            self.dirty = true;
        }
        if let UiAction::Key { id } = action
            && id == "toggle"
        {
            self.dirty = true;
            self.on = !self.on;
            host.notify(if self.on {
                "following edits"
            } else {
                "follow paused"
            })?;
        }
        Ok(())
    }

    fn on_idle(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        if self.dirty && host.section_shown("pane") {
            host.set_section("pane", self.pane())?;
            self.dirty = false;
        }
        Ok(())
    }
}

impl Follow {
    fn pane(&self) -> SectionBody {
        let Some(t) = &self.target else {
            let msg = if self.on {
                "waiting for an edit or read"
            } else {
                "paused (F to follow)"
            };
            return SectionBody {
                rows: vec![SectionRow::new(StyledLine::tone(msg, Tone::Dim))],
                count: None,
            };
        };
        let mut head = StyledLine::default();
        let shown = crate::short_path(&t.path, self.cwd.as_deref());
        let at = match t.line {
            Some(l) => format!("{shown}:{l}"),
            None => shown,
        };
        head.push(at, Tone::Accent);
        if !self.on {
            head.push("  paused", Tone::Warn);
        } else if t.running {
            head.push("  ●", Tone::Good);
        }
        let mut rows = vec![SectionRow::clickable(head, t.call_id.clone())];
        match &self.content {
            Some(text) => {
                let lines: Vec<&str> = text.lines().collect();
                let focus = t.line.unwrap_or(1).max(1) as usize;
                let start = focus.saturating_sub(self.window / 3).max(1);
                let end = (start + self.window - 1).min(lines.len());
                for n in start..=end {
                    let hit = t
                        .changed
                        .is_some_and(|(a, b)| (a as usize..=b as usize).contains(&n));
                    let tone = if hit { Tone::Added } else { Tone::Normal };
                    let mut l = StyledLine::default();
                    l.push(
                        format!("{n:>4} "),
                        if n == focus { Tone::Accent } else { Tone::Dim },
                    );
                    l.push(if hit { "+ " } else { "  " }, tone);
                    l.push(lines[n - 1].replace('\t', "    "), tone);
                    rows.push(SectionRow::new(l));
                }
            }
            None => rows.push(SectionRow::new(StyledLine::tone(
                self.note.clone().unwrap_or_else(|| "no content".into()),
                Tone::Dim,
            ))),
        }
        SectionBody { rows, count: None }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn changed_range_is_one_based_and_inclusive() {
        assert_eq!(
            super::changed_range("a\nb\nc\n", "a\nX\nY\nc\n"),
            Some((2, 3))
        );
        assert_eq!(super::changed_range("a\n", "a\n"), None);
        assert_eq!(super::changed_range("", "new\n"), Some((1, 1)));
    }
}
