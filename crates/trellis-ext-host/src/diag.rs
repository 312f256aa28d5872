//! Per-extension diagnostics: the answer to "why did nothing appear".
//!
//! Failures are deduplicated by (what, message) with counts; rejections keep the rule
//! that was broken and the rejected text; time spent is kept per event type (the last
//! [`SAMPLES`] samples) and reported as p50/p99.

use std::collections::BTreeMap;

use serde::Serialize;

/// Samples kept per event type for percentiles.
pub const SAMPLES: usize = 2048;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum ExtState {
    Ready,
    /// Working, but something failed or was rejected (see failures / rejections).
    Degraded(String),
    Disabled(String),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// What was contributed (e.g. `section title`).
    pub what: String,
    /// The rule it broke.
    pub rule: String,
    /// The rejected text, verbatim.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub what: String,
    pub message: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default)]
struct Samples {
    ring: Vec<u32>,
    next: usize,
    total: u64,
}

impl Samples {
    fn push(&mut self, nanos: u32) {
        self.total += 1;
        if self.ring.len() < SAMPLES {
            self.ring.push(nanos);
        } else {
            self.ring[self.next] = nanos;
            self.next = (self.next + 1) % SAMPLES;
        }
    }

    fn percentiles(&self) -> (f64, f64) {
        let mut v = self.ring.clone();
        v.sort_unstable();
        let at = |p: f64| {
            if v.is_empty() {
                return 0.0;
            }
            let i = ((v.len() - 1) as f64 * p).round() as usize;
            v[i] as f64 / 1000.0
        };
        (at(0.5), at(0.99))
    }
}

/// Everything recorded about one extension.
#[derive(Debug, Clone)]
pub struct Diag {
    pub state: ExtState,
    failures: BTreeMap<(String, String), u64>,
    pub failure_total: u32,
    pub rejections: Vec<Rejection>,
    /// Host functions refused for a missing capability (deduplicated, with counts).
    refusals: BTreeMap<String, u64>,
    timings: BTreeMap<&'static str, Samples>,
    pub registrations: Vec<String>,
    pub subscriptions: Vec<String>,
    pub notes: Vec<String>,
    /// Lines the extension itself keeps current (a plugin's process and stderr).
    pub extra: Vec<String>,
}

impl Default for Diag {
    fn default() -> Diag {
        Diag {
            state: ExtState::Ready,
            failures: BTreeMap::new(),
            failure_total: 0,
            rejections: Vec::new(),
            refusals: BTreeMap::new(),
            timings: BTreeMap::new(),
            registrations: Vec::new(),
            subscriptions: Vec::new(),
            notes: Vec::new(),
            extra: Vec::new(),
        }
    }
}

impl Diag {
    /// Records a failure; returns the number of failures so far.
    pub fn fail(&mut self, what: &str, message: &str) -> u32 {
        *self
            .failures
            .entry((what.to_string(), message.to_string()))
            .or_default() += 1;
        self.failure_total += 1;
        if self.state == ExtState::Ready {
            self.state = ExtState::Degraded(format!("{what} failed: {message}"));
        }
        self.failure_total
    }

    pub fn has_failed(&self) -> bool {
        self.failure_total > 0
    }

    pub fn reject(&mut self, what: &str, rule: &str, text: &str) {
        let r = Rejection {
            what: what.to_string(),
            rule: rule.to_string(),
            text: text.to_string(),
        };
        if !self.rejections.contains(&r) {
            self.rejections.push(r);
        }
        if self.state == ExtState::Ready {
            self.state = ExtState::Degraded(format!("a {what} was rejected"));
        }
    }

    pub fn refuse(&mut self, call: &str) {
        *self.refusals.entry(call.to_string()).or_default() += 1;
    }

    /// Enabled again (a plugin being tried, restarted with its changed files): the state
    /// and the failure limit start afresh; the failures before are summed in a note.
    pub fn revive(&mut self) {
        if self.failure_total > 0 {
            self.notes.push(format!(
                "revived after its files changed ({} failure(s) before)",
                self.failure_total
            ));
        } else {
            self.notes.push("revived after its files changed".into());
        }
        self.failures.clear();
        self.failure_total = 0;
        self.state = ExtState::Ready;
    }

    pub fn disable(&mut self, reason: String) {
        if !matches!(self.state, ExtState::Disabled(_)) {
            self.state = ExtState::Disabled(reason);
        }
    }

    pub fn time(&mut self, kind: &'static str, nanos: u64) {
        self.timings
            .entry(kind)
            .or_default()
            .push(nanos.min(u32::MAX as u64) as u32);
    }

    pub fn failures(&self) -> Vec<Failure> {
        self.failures
            .iter()
            .map(|((what, message), count)| Failure {
                what: what.clone(),
                message: message.clone(),
                count: *count,
            })
            .collect()
    }

    pub fn refusals(&self) -> Vec<(String, u64)> {
        self.refusals.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// (event type, count, p50 µs, p99 µs).
    pub fn timings(&self) -> Vec<Timing> {
        self.timings
            .iter()
            .map(|(k, s)| {
                let (p50, p99) = s.percentiles();
                Timing {
                    event: (*k).to_string(),
                    count: s.total,
                    p50_us: p50,
                    p99_us: p99,
                }
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    pub event: String,
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// One extension in `/status` and in the headless `status` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtStatus {
    pub name: String,
    pub version: String,
    pub builtin: bool,
    #[serde(flatten)]
    pub state: ExtState,
    pub granted: Vec<String>,
    /// Requested but not granted by the config.
    pub refused: Vec<String>,
    pub subscriptions: Vec<String>,
    pub registrations: Vec<String>,
    pub rejections: Vec<Rejection>,
    pub failures: Vec<Failure>,
    /// Host functions called without the capability they need.
    pub refused_calls: Vec<(String, u64)>,
    pub timings: Vec<Timing>,
    /// Most events that ever waited in its queue, and the bound.
    pub queue_peak: usize,
    pub queue_bound: usize,
    pub notes: Vec<String>,
    /// What the extension reports about itself (a plugin: its process, restarts, stderr).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub extra: Vec<String>,
}

/// Extensions the config names but that do not exist, and other host-level facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatusReport {
    pub api_version: u32,
    pub extensions: Vec<ExtStatus>,
    pub notes: Vec<String>,
}

impl StatusReport {
    /// The report as text lines (the `/status` view and `trellis status`).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("Extension API v{}", self.api_version)];
        for n in &self.notes {
            out.push(format!("! {n}"));
        }
        if self.extensions.is_empty() {
            out.push("No extensions are enabled.".into());
        }
        // What is failing first: the author opened the page for it.
        let mut order: Vec<&ExtStatus> = self.extensions.iter().collect();
        order.sort_by_key(|e| match e.state {
            ExtState::Disabled(_) => 0,
            ExtState::Degraded(_) => 1,
            ExtState::Ready => 2,
        });
        for e in order {
            out.push(String::new());
            let state = match &e.state {
                ExtState::Ready => "ready".to_string(),
                ExtState::Degraded(r) => format!("degraded — {r}"),
                ExtState::Disabled(r) => format!("disabled — {r}"),
            };
            let origin = if e.builtin { "built-in" } else { "plugin" };
            out.push(format!("{} {} ({origin}): {state}", e.name, e.version));
            let list = |v: &[String]| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            out.push(format!("  granted: {}", list(&e.granted)));
            if !e.refused.is_empty() {
                out.push(format!("  not granted: {}", e.refused.join(", ")));
            }
            out.push(format!("  subscriptions: {}", list(&e.subscriptions)));
            out.push(format!("  registrations: {}", list(&e.registrations)));
            for r in &e.rejections {
                out.push(format!("  rejected {}: {:?} — {}", r.what, r.text, r.rule));
            }
            for f in &e.failures {
                out.push(format!("  failed {} ×{}: {}", f.what, f.count, f.message));
            }
            for (c, n) in &e.refused_calls {
                out.push(format!("  refused call {c} ×{n} (capability not granted)"));
            }
            for n in &e.notes {
                out.push(format!("  note: {n}"));
            }
            for x in &e.extra {
                out.push(format!("  {x}"));
            }
            if e.queue_peak > 0 {
                out.push(format!(
                    "  queue: at most {} of {} events waiting",
                    e.queue_peak, e.queue_bound
                ));
            }
            for t in &e.timings {
                out.push(format!(
                    "  {}: {} events, p50 {:.1} µs, p99 {:.1} µs",
                    t.event, t.count, t.p50_us, t.p99_us
                ));
            }
        }
        out
    }
}
