//! G3 — session stats: calls by kind and status, durations, tokens and cost, as a sidebar
//! section and a status-bar item, updated live from events.
//!
//! Counts are kept incrementally (each event adjusts them), so building the section costs
//! the number of kinds and running calls, not the number of calls.

use std::collections::{BTreeMap, HashMap};

use trellis_core::ext::{
    Capability, ExtError, Extension, Host, Manifest, Registration, SectionBody, SectionDecl,
    SectionRow, StatusDecl, StyledLine, Tone, UiAction,
};
use trellis_core::wire::Usage;
use trellis_core::{Event, EventBody, ToolCall, ToolStatus};

#[derive(Debug, Clone, Copy, Default)]
struct KindStat {
    calls: usize,
    failed: usize,
    /// Seconds spent by finished calls.
    time: f64,
}

/// Calls are keyed by a 64-bit hash of their id (no allocation per call).
fn key(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// Only running calls are remembered (their kind and start): memory follows what is
/// running, not the length of the session. Status moves come from each update's
/// `previous_status`.
#[derive(Debug, Default)]
pub struct Stats {
    total: usize,
    by_kind: BTreeMap<&'static str, KindStat>,
    /// Calls per status.
    by_status: BTreeMap<&'static str, usize>,
    /// Running calls: id hash → (kind, start).
    open: HashMap<u64, (&'static str, f64)>,
    total_time: f64,
    longest: Option<(String, f64)>,
    usage: Option<Usage>,
    turns: u32,
    now: f64,
    /// Changed since the section was last pushed.
    dirty: bool,
    /// The status item as last pushed.
    shown_item: Option<StyledLine>,
}

fn status_key(s: ToolStatus) -> &'static str {
    match s {
        ToolStatus::Completed => "done",
        ToolStatus::Failed => "failed",
        ToolStatus::Pending | ToolStatus::InProgress => "running",
        _ => "other",
    }
}

fn tokens(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

impl Stats {
    /// A call seen with `status`; `prev`: its status before (`None`: new call).
    fn seen(&mut self, call: &ToolCall, prev: Option<ToolStatus>, t: f64) {
        // The user's own commands (`!cmd`) are not the agent's calls.
        if trellis_core::tool_call::is_users(&call.id) {
            return;
        }
        let kind = call.kind.as_str();
        let id = key(&call.id);
        let started = call.status_history.first().map(|s| s.t).unwrap_or(t);
        let old_kind = match prev {
            None => {
                self.total += 1;
                None
            }
            Some(p) => {
                if let Some(n) = self.by_status.get_mut(status_key(p)) {
                    *n = n.saturating_sub(1);
                }
                let k = self.open.get(&id).map(|(k, _)| *k).unwrap_or(kind);
                if let Some(s) = self.by_kind.get_mut(k) {
                    s.calls = s.calls.saturating_sub(1);
                    s.failed = s
                        .failed
                        .saturating_sub(usize::from(p == ToolStatus::Failed));
                }
                Some(p)
            }
        };
        *self.by_status.entry(status_key(call.status)).or_default() += 1;
        let k = self.by_kind.entry(kind).or_default();
        k.calls += 1;
        k.failed += usize::from(call.status == ToolStatus::Failed);
        let ended = call.status.is_terminal();
        let was_ended = old_kind.is_some_and(|p| p.is_terminal());
        if ended && !was_ended {
            let end = call
                .status_history
                .iter()
                .rev()
                .find(|s| s.status.is_terminal())
                .map(|s| s.t)
                .unwrap_or(t);
            let d = (end - started).max(0.0);
            k.time += d;
            self.total_time += d;
            self.open.remove(&id);
            if self.longest.as_ref().is_none_or(|(_, l)| d > *l) {
                self.longest = Some((trellis_core::enrich::card_title(call), d));
            }
        } else if !ended {
            self.open.insert(id, (kind, started));
        }
    }

    fn count(&self, key: &str) -> usize {
        self.by_status.get(key).copied().unwrap_or(0)
    }
}

impl Extension for Stats {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "stats".into(),
            version: crate::version(),
            description: "Calls by kind and status, durations, tokens and cost.".into(),
            capabilities: vec![Capability::Observe, Capability::Ui],
            ui_only: true,
        }
    }

    fn register(&mut self, _host: &mut dyn Host) -> Result<Registration, ExtError> {
        self.dirty = true;
        Ok(Registration {
            subscriptions: Some(
                [
                    "tool_call_created",
                    "tool_call_updated",
                    "usage",
                    "turn_started",
                ]
                .map(String::from)
                .to_vec(),
            ),
            sections: vec![SectionDecl {
                id: "stats".into(),
                title: "Session stats".into(),
                max_rows: 14,
                collapsed: false,
            }],
            status_items: vec![StatusDecl {
                id: "calls".into(),
                label: "Calls".into(),
            }],
            ..Registration::default()
        })
    }

    fn on_event(&mut self, event: &Event, _host: &mut dyn Host) -> Result<(), ExtError> {
        self.now = self.now.max(event.t);
        self.dirty = true;
        match &event.body {
            EventBody::ToolCallCreated { call } => self.seen(call, None, event.t),
            // An update that did not change the status (a title, content or location
            // update) changes no count: only a status move does.
            EventBody::ToolCallUpdated {
                call,
                previous_status: Some(prev),
                ..
            } => self.seen(call, Some(*prev), event.t),
            EventBody::ToolCallUpdated { .. } => {}
            EventBody::Usage { usage } => self.usage = Some(usage.clone()),
            EventBody::TurnStarted { turn, .. } => self.turns = *turn,
            _ => {}
        }
        Ok(())
    }

    fn on_idle(&mut self, host: &mut dyn Host) -> Result<(), ExtError> {
        let item = self.status_item();
        if item != self.shown_item {
            host.set_status_item("calls", item.clone())?;
            self.shown_item = item;
        }
        if self.dirty && host.section_shown("stats") {
            host.set_section("stats", self.section())?;
            self.dirty = false;
        }
        Ok(())
    }

    fn on_action(&mut self, action: &UiAction, _host: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::Visibility { shown: false, .. } = action {
            // Built again in full when it is shown again.
            self.dirty = true;
        }
        Ok(())
    }
}

impl Stats {
    fn section(&self) -> SectionBody {
        let mut rows = Vec::new();
        let mut head = StyledLine::default();
        head.push(format!("{} calls", self.total), Tone::Normal);
        head.push(format!("  ✓ {}", self.count("done")), Tone::Good);
        for (key, mark, tone) in [
            ("failed", "✗", Tone::Bad),
            ("running", "…", Tone::Accent),
            ("other", "○", Tone::Dim),
        ] {
            let n = self.count(key);
            if n > 0 {
                head.push(format!("  {mark} {n}"), tone);
            }
        }
        rows.push(SectionRow::new(head));
        let running: f64 = self
            .open
            .values()
            .map(|(_, s)| (self.now - s).max(0.0))
            .sum();
        for (kind, k) in self.by_kind.iter().filter(|(_, k)| k.calls > 0) {
            let mut l = StyledLine::default();
            l.push(format!("{kind:<8} {:>4}", k.calls), Tone::Normal);
            l.push(format!("  {}", crate::secs(k.time)), Tone::Dim);
            if k.failed > 0 {
                l.push(format!("  {} failed", k.failed), Tone::Bad);
            }
            rows.push(SectionRow::new(l));
        }
        if self.total > 0 {
            rows.push(SectionRow::new(StyledLine::tone(
                format!("tool time {}", crate::secs(self.total_time + running)),
                Tone::Dim,
            )));
        }
        if let Some((title, d)) = &self.longest {
            rows.push(SectionRow::new(StyledLine::tone(
                format!("longest {} {title}", crate::secs(*d)),
                Tone::Dim,
            )));
        }
        if let Some(u) = &self.usage {
            let mut l = StyledLine::default();
            l.push(
                format!("tokens {} / {}", tokens(u.used), tokens(u.size)),
                Tone::Normal,
            );
            if let Some(c) = &u.cost {
                l.push(format!("  {}", c.display()), Tone::Accent);
            }
            rows.push(SectionRow::new(l));
        }
        if self.turns > 0 {
            rows.push(SectionRow::new(StyledLine::tone(
                format!("turns {}", self.turns),
                Tone::Dim,
            )));
        }
        SectionBody {
            rows,
            count: Some(self.total),
        }
    }

    fn status_item(&self) -> Option<StyledLine> {
        if self.total == 0 {
            return None;
        }
        let mut l = StyledLine::plain(format!("{} calls", self.total));
        let failed = self.count("failed");
        if failed > 0 {
            l.push(format!(" {failed}✗"), Tone::Bad);
        }
        Some(l)
    }
}
