//! The user's choices about extensions' contributions (hidden and collapsed sections, the
//! card design per tool), kept with the host's shared state.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Prefs {
    #[serde(default)]
    pub(crate) hidden: BTreeSet<String>,
    #[serde(default)]
    pub(crate) collapsed: BTreeMap<String, bool>,
    /// Tool key (`kind:execute`, `name:Bash`) → design key (`extension/id`).
    #[serde(default)]
    pub(crate) cards: BTreeMap<String, String>,
}
