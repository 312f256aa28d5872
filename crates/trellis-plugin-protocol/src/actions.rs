//! What the user does to an extension's contributions, and what an extension holding
//! `drive` asks of the session.

use serde::{Deserialize, Serialize};

/// Something the user did to one of the extension's contributions. The one type for
/// built-in extensions, the plugin protocol's `action` message (its `kind` tag) and the
/// Rust plugin SDK.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UiAction {
    /// A settings row was applied (Enter) with choice `choice`.
    Setting { row: String, choice: String },
    /// `/name args` was entered at the prompt.
    Command { name: String, args: String },
    /// A contributed key was pressed.
    Key { id: String },
    /// A clickable sidebar row was clicked.
    RowClick { section: String, row: String },
    /// A section of the extension became shown and expanded (or stopped being so): push
    /// its body now if it was held back.
    Visibility { section: String, shown: bool },
}

/// Something an extension holding `drive` asks of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum DriveAction {
    /// Sends `text` as a prompt now if no turn runs, else queues it for the end of the
    /// turn.
    Prompt { text: String },
    /// Cancels the running turn (nothing happens when none runs).
    Cancel,
    /// Asks the agent to switch to session mode `mode`.
    SetMode { mode: String },
    /// Asks the agent to set its config option `id` (a choice's value, or a boolean).
    SetConfigOption { id: String, value: ConfigValue },
}

/// A value of an option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ConfigValue {
    Id(String),
    Bool(bool),
}

impl std::fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigValue::Id(s) => f.write_str(s),
            ConfigValue::Bool(true) => f.write_str("on"),
            ConfigValue::Bool(false) => f.write_str("off"),
        }
    }
}
