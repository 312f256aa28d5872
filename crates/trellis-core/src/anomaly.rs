//! Anomaly detectors: a tool call that ran in a way its permission history says it
//! should not have. Each finding is kept on the call (`ToolCall::anomalies`), marked on
//! its card, announced as an `anomaly` event and counted in the closing summary. They
//! explain the permission bugs users report about agents. The first two rules are checked
//! when a call starts running (its status becomes `in_progress` or `completed`), the
//! third when it ends (`completed`, or `failed` after running): agents announce a call
//! running and ask for it in either order, so only its end shows it was never asked for.
//!
//! - `ran_while_asking`: the call ran while its permission request was still open (not
//!   yet answered on the wire).
//! - `ran_after_refusal`: the call ran after its last permission request was answered
//!   with a refusal (a reject option, or cancelled).
//! - `ran_unasked`: a call of a kind that changes things (edit, delete, move, execute)
//!   ran and ended without any request although the agent had asked for a call of that
//!   kind before it started, in this session, no "always allow" answer was given for that kind, the mode and
//!   config options have not changed since that request, and the client's policy would
//!   not have allowed it by itself. "Ran without asking" alone is not enough: agents
//!   legitimately skip asking after an "always allow" answer or in a mode that allows
//!   (`acceptEdits`, `bypassPermissions`, a "yolo" mode…), and on recorded Claude sessions
//!   that plain rule flagged calls the user had allowed; an agent that asks for a kind and
//!   then, with nothing changed, stops asking is the inconsistency users report.

/// The rules, with what a finding says (the docs and `/status` use these words).
pub const RULES: &[(&str, &str)] = &[
    (
        "ran_while_asking",
        "ran while its permission request was still open",
    ),
    (
        "ran_after_refusal",
        "ran after its permission request was refused",
    ),
    (
        "ran_unasked",
        "ran without asking, though the agent asks for calls of its kind and nothing changed since",
    ),
];

/// A rule as the card and the summaries name it (`ran while asking`…).
pub fn label(rule: &str) -> String {
    rule.replace('_', " ")
}

/// What a finding of `rule` says.
pub fn says(rule: &str) -> &'static str {
    RULES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or("", |(_, s)| s)
}
