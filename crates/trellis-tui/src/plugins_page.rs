//! Settings → Plugins: every plugin package found for this session (yours and this
//! project's), whether it runs, and — choosing `on` — enabling it, granted exactly what it
//! asks for (the choice names it). Changes apply from the next session: plugins are
//! started when a session starts.

use trellis_ext_host::ui::{RowTarget, RowView, SettingsPage};
use trellis_plugin::registry::{Enabled, Registry, Scope, short};

#[derive(Debug, Clone, PartialEq)]
pub struct PluginRow {
    pub name: String,
    pub scope: Scope,
    /// What it asks for, as capability names.
    pub asks: Vec<String>,
    pub hash: String,
    /// Enabled here with this very content.
    pub on: bool,
    /// Enabled here, but its files changed since.
    pub changed: bool,
    /// Why it cannot be enabled (an invalid package), if so.
    pub problem: Option<String>,
}

/// The rows, read from disk (packages and their hashes).
pub fn rows(reg: Option<&Registry>) -> Vec<PluginRow> {
    let Some(reg) = reg else {
        return Vec::new();
    };
    let (state, _) = reg.state();
    reg.found()
        .into_iter()
        .filter_map(|f| {
            let name = f
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match f.package {
                Err(e) => Some(PluginRow {
                    name,
                    scope: f.scope,
                    asks: Vec::new(),
                    hash: String::new(),
                    on: false,
                    changed: false,
                    problem: Some(e),
                }),
                Ok(p) => {
                    let t = p.trellis.as_ref()?;
                    let hash = p.hash().unwrap_or_default();
                    let enabled = state
                        .enabled
                        .iter()
                        .find(|e| e.name == p.name && e.scope == f.scope && reg.applies(e));
                    Some(PluginRow {
                        name: p.name.clone(),
                        scope: f.scope,
                        asks: t
                            .capabilities
                            .iter()
                            .map(|c| c.as_str().to_string())
                            .collect(),
                        on: enabled.is_some_and(|e| e.hash == hash),
                        changed: enabled.is_some_and(|e| e.hash != hash),
                        hash,
                        problem: None,
                    })
                }
            }
        })
        .collect()
}

/// The page: one row per plugin; `on` names what enabling grants.
pub fn page(rows: &[PluginRow]) -> SettingsPage {
    let rows = rows
        .iter()
        .map(|r| {
            let scope = match r.scope {
                Scope::User => "",
                Scope::Project => " (project)",
            };
            let asks = if r.asks.is_empty() {
                "nothing".to_string()
            } else {
                r.asks.join(", ")
            };
            let choices = match &r.problem {
                Some(p) => vec![("off".to_string(), format!("invalid: {p}"))],
                None if r.changed => vec![
                    ("off".to_string(), "off (changed since enabled)".to_string()),
                    (
                        "on".to_string(),
                        format!("trust {} · grant {asks}", short(&r.hash)),
                    ),
                ],
                None => vec![
                    ("off".to_string(), "off".to_string()),
                    ("on".to_string(), format!("on · grant {asks}")),
                ],
            };
            RowView {
                target: RowTarget::Plugin(r.name.clone()),
                label: format!("{}{scope}", r.name),
                current: usize::from(r.on),
                choices,
            }
        })
        .collect();
    SettingsPage {
        title: "Plugins".into(),
        rows,
    }
}

/// Enables or disables plugin `name`; returns what to tell the user.
pub fn apply(reg: Option<&Registry>, name: &str, choice: &str) -> String {
    let Some(reg) = reg else {
        return "plugins cannot be changed in this session".into();
    };
    let Some(row) = rows(Some(reg)).into_iter().find(|r| r.name == name) else {
        return format!("plugin {name} is gone");
    };
    if row.problem.is_some() {
        return format!("plugin {name} is not valid: see `trellis plugin validate`");
    }
    let (mut state, _) = reg.state();
    let project = match row.scope {
        Scope::Project => reg.project.clone(),
        Scope::User => None,
    };
    state
        .enabled
        .retain(|e| !(e.name == name && e.scope == row.scope && e.project == project));
    let msg = if choice == "on" {
        state.enabled.push(Enabled {
            name: name.to_string(),
            scope: row.scope,
            project,
            grant: row.asks.clone(),
            hash: row.hash.clone(),
        });
        format!(
            "plugin {name} enabled, granted {}; it starts with your next session",
            if row.asks.is_empty() {
                "nothing".into()
            } else {
                row.asks.join(", ")
            }
        )
    } else {
        format!("plugin {name} disabled; it stops with your next session")
    };
    match reg.save_state(&state) {
        Ok(()) => msg,
        Err(e) => format!("plugin {name}: cannot save: {e}"),
    }
}
