//! Plans with an id (`plan_update`, `plan_removed`): an agent may keep several — a
//! checklist, a Markdown document, or a file it points to — beside the legacy whole plan
//! (`plan`, [`crate::Session::plan`]). Each update replaces that plan; a removal drops it.

use serde::Serialize;

use crate::wire::PlanEntry;

/// One plan the agent keeps by id.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamedPlan {
    pub id: String,
    #[serde(flatten)]
    pub body: PlanBody,
}

/// What a plan holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanBody {
    /// A checklist: the complete list of entries with their status.
    Items { entries: Vec<PlanEntry> },
    /// Markdown text.
    Markdown { content: String },
    /// A file the agent keeps its plan in.
    File { uri: String },
}

impl NamedPlan {
    /// (done, total) of a checklist; (0, 0) for the other kinds.
    pub fn progress(&self) -> (usize, usize) {
        match &self.body {
            PlanBody::Items { entries } => (
                entries.iter().filter(|e| e.status == "completed").count(),
                entries.len(),
            ),
            _ => (0, 0),
        }
    }
}
