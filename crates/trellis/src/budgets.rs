//! The limits `trellis run` enforces itself (`--timeout`, `--idle-timeout`, `--max-cost`,
//! `--max-tool-calls`, `--max-turns`), what it does with a request nobody decided
//! (`--on-ask`), and the exit codes of a run Trellis stopped (10–13).

use std::time::Duration;

/// What to do with a permission request nothing decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnAsk {
    /// Deny it, on the record.
    Deny,
    /// Deny it and stop the run (exit 13).
    Fail,
}

impl OnAsk {
    pub(crate) fn word(self) -> &'static str {
        match self {
            OnAsk::Deny => "deny",
            OnAsk::Fail => "fail",
        }
    }
}

/// The limits the run enforces itself, whatever the agent does.
#[derive(Debug, Clone)]
pub(crate) struct Budgets {
    pub timeout: Option<Duration>,
    pub idle: Option<Duration>,
    pub max_cost: Option<f64>,
    pub max_tool_calls: Option<usize>,
    pub max_turns: Option<u32>,
    /// How long a cancelled turn has to end before the agent is stopped.
    pub grace: Duration,
    pub on_ask: OnAsk,
    /// The user chose a permission policy (else the default reject stands for "nobody to
    /// ask").
    pub explicit_policy: bool,
}

/// Why the run was stopped by Trellis itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Breach {
    Timeout(Duration),
    /// Nothing from the agent for this long; where it runs, when it was dialed.
    Idle(Duration, Option<String>),
    /// A budget (tool calls, turns, cost), in words.
    Budget(String),
    /// A permission request nobody could answer, with `--on-ask fail`.
    Denied(String),
}

impl Breach {
    /// The exit code (new codes take the next free numbers; 0–9 are never renumbered).
    pub(crate) fn code(&self) -> u8 {
        match self {
            Breach::Timeout(_) => 10,
            Breach::Idle(..) => 11,
            Breach::Budget(_) => 12,
            Breach::Denied(_) => 13,
        }
    }

    pub(crate) fn reason(&self) -> String {
        match self {
            Breach::Timeout(d) => format!("timeout: {} s passed", d.as_secs_f64()),
            Breach::Idle(d, None) => format!(
                "idle timeout: nothing from the agent for {} s",
                d.as_secs_f64()
            ),
            Breach::Idle(d, Some(at)) => format!(
                "idle timeout: nothing from the agent at {at} for {} s (it runs elsewhere: its connection may be what is slow)",
                d.as_secs_f64()
            ),
            Breach::Budget(what) => format!("budget exceeded: {what}"),
            Breach::Denied(what) => format!("stopped after a permission denial: {what}"),
        }
    }
}
