//! The Settings menu: the host's own pages (`Sections`: shown / collapsed / hidden per
//! section; `Cards`: a design per tool) and the extensions' rows, grouped by page.
//!
//! Invariant: reading the pages changes nothing; only [`Ui::apply`] (Enter) does. An
//! extension's rows are what it last pushed (`set_settings`); applying one hands the
//! choice to the extension's worker, and the row shows the new value when it pushes again.

use trellis_core::ext::labels::validate;
use trellis_core::ext::{Capability, SettingsRow, UiAction};

use crate::lock;
use crate::slot::{Job, Slot};
use crate::ui::Ui;

/// What a Settings row changes.
#[derive(Debug, Clone, PartialEq)]
pub enum RowTarget {
    Section(String),
    Card(String),
    Ext {
        slot: usize,
        id: String,
    },
    /// A rule the user saved (the UI owns these rows).
    Rule(usize),
    /// A plugin package found for this session (the UI owns these rows).
    Plugin(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    pub target: RowTarget,
    pub label: String,
    /// (id, label)
    pub choices: Vec<(String, String)>,
    pub current: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SettingsPage {
    pub title: String,
    pub rows: Vec<RowView>,
}

impl Ui {
    /// Pages: `Sections`, `Cards` (when there is anything to choose), then the
    /// extensions' pages in registration order.
    pub fn settings(&self) -> Vec<SettingsPage> {
        let mut pages = Vec::new();
        if !self.sections.is_empty() {
            let rows = self
                .sections
                .iter()
                .filter(|e| self.live(e.slot).is_some())
                .map(|e| RowView {
                    target: RowTarget::Section(e.key.clone()),
                    label: e.title.clone(),
                    choices: vec![
                        ("shown".into(), "shown".into()),
                        ("collapsed".into(), "collapsed".into()),
                        ("hidden".into(), "hidden".into()),
                    ],
                    current: if self.is_hidden(&e.key) {
                        2
                    } else {
                        usize::from(self.is_collapsed(e))
                    },
                })
                .collect();
            pages.push(SettingsPage {
                title: "Sections".into(),
                rows,
            });
        }
        if !self.card_rows.is_empty() {
            let prefs = lock(&self.shared.prefs);
            let rows = self
                .card_rows
                .iter()
                .map(|(tool, label)| {
                    let mut choices = vec![("native".to_string(), "native".to_string())];
                    for d in self
                        .designs
                        .iter()
                        .filter(|d| &d.applies_to == tool && self.live(d.slot).is_some())
                    {
                        choices.push((d.key.clone(), d.label.clone()));
                    }
                    let current = prefs
                        .cards
                        .get(&tool.key())
                        .and_then(|k| choices.iter().position(|(id, _)| id == k))
                        .unwrap_or(0);
                    RowView {
                        target: RowTarget::Card(tool.key()),
                        label: label.clone(),
                        choices,
                        current,
                    }
                })
                .collect();
            pages.push(SettingsPage {
                title: "Cards".into(),
                rows,
            });
        }
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.is_disabled() || !slot.has(Capability::Ui) {
                continue;
            }
            let Some(rows) = self.shared.board().settings.get(&i).cloned() else {
                continue;
            };
            for r in rows {
                if let Some(row) = self.ext_row(i, slot, r) {
                    let (page, row) = row;
                    match pages.iter_mut().find(|p| p.title == page) {
                        Some(p) => p.rows.push(row),
                        None => pages.push(SettingsPage {
                            title: page,
                            rows: vec![row],
                        }),
                    }
                }
            }
        }
        pages
    }

    fn ext_row(&self, i: usize, slot: &Slot, r: SettingsRow) -> Option<(String, RowView)> {
        for (what, text) in [("settings page", &r.page), ("settings row", &r.label)] {
            if let Err(e) = validate(text) {
                slot.diag().reject(what, &e.to_string(), text);
                return None;
            }
        }
        if matches!(r.page.as_str(), "Sections" | "Cards") {
            slot.diag()
                .reject("settings page", "the page belongs to Trellis", &r.page);
            return None;
        }
        if r.choices.is_empty() {
            slot.diag()
                .reject("settings row", "a row needs at least one choice", &r.label);
            return None;
        }
        let current = r
            .choices
            .iter()
            .position(|(id, _)| *id == r.current)
            .unwrap_or(0);
        Some((
            r.page,
            RowView {
                target: RowTarget::Ext { slot: i, id: r.id },
                label: r.label,
                choices: r.choices,
                current,
            },
        ))
    }

    /// Applies choice `choice` of a row (Enter). Returns true when cards must be redrawn.
    pub fn apply(&self, target: &RowTarget, choice: &str) -> bool {
        match target {
            RowTarget::Section(key) => {
                self.set_visibility(key, |p| {
                    if choice != "hidden" {
                        p.collapsed.insert(key.clone(), choice == "collapsed");
                        p.hidden.remove(key);
                    } else {
                        p.hidden.insert(key.clone());
                    }
                });
                false
            }
            RowTarget::Card(tool) => {
                {
                    let mut p = lock(&self.shared.prefs);
                    if choice == "native" {
                        p.cards.remove(tool);
                    } else {
                        p.cards.insert(tool.clone(), choice.to_string());
                    }
                }
                self.save_prefs();
                self.bump();
                true
            }
            RowTarget::Rule(_) | RowTarget::Plugin(_) => false,
            RowTarget::Ext { slot, id } => {
                if let Some(s) = self.live(*slot) {
                    // On its worker: the row repaints when the extension pushes it again.
                    s.send(
                        Job::Action(UiAction::Setting {
                            row: id.clone(),
                            choice: choice.to_string(),
                        }),
                        &self.shared,
                    );
                }
                false
            }
        }
    }
}
