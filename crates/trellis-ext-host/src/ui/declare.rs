//! What the extensions declared for the UI, taken once at start: each contribution kept
//! when its label is valid and its extension may show UI, labels that collide numbered,
//! the Cards page's rows, the user's saved choices.

use std::sync::Arc;

use super::*;

/// Section titles and design labels as registered, numbered when they collide.
#[derive(Default)]
pub(super) struct Labels {
    titles: Vec<String>,
    designs: Vec<String>,
}

impl Ui {
    /// The contributions extension `i` registered, each kept when its label is valid and
    /// it may show UI; why any is not goes to its diagnostics.
    pub(super) fn declare(
        &mut self,
        i: usize,
        slot: &Arc<Slot>,
        shared: &Arc<Shared>,
        labels: &mut Labels,
    ) {
        let titles = &mut labels.titles;
        let design_labels = &mut labels.designs;
        let Some(reg) = slot.registration() else {
            return;
        };
        let ui_ok = slot.has(Capability::Ui);
        let mut d = slot.diag();
        let any = !reg.sections.is_empty()
            || !reg.designs.is_empty()
            || !reg.transforms.is_empty()
            || !reg.status_items.is_empty()
            || !reg.commands.is_empty()
            || !reg.keys.is_empty();
        if any && !ui_ok {
            d.notes
                .push("its UI contributions are not shown: capability ui is not granted".into());
            return;
        }
        let mut check = |what: &str, label: &str| match validate(label) {
            Ok(()) => true,
            Err(e) => {
                d.reject(what, &e.to_string(), label);
                false
            }
        };
        let mut regs = Vec::new();
        for s in &reg.sections {
            if check("section title", &s.title) {
                titles.push(s.title.clone());
                regs.push(format!("section {}", s.title));
                self.sections.push(SectionEntry {
                    slot: i,
                    id: s.id.clone(),
                    key: format!("{}/{}", slot.name, s.id),
                    title: s.title.clone(),
                    max_rows: s.max_rows.clamp(1, MAX_SECTION_ROWS),
                    default_collapsed: s.collapsed,
                });
            }
        }
        for x in &reg.designs {
            if check("card design", &x.label) {
                regs.push(format!(
                    "card design {} for {}",
                    x.label,
                    x.applies_to.words()
                ));
                design_labels.push(x.label.clone());
                self.designs.push(DesignEntry {
                    slot: i,
                    id: x.id.clone(),
                    key: format!("{}/{}", slot.name, x.id),
                    label: x.label.clone(),
                    applies_to: x.applies_to.clone(),
                });
            }
        }
        let mut bad_rules = Vec::new();
        for x in &reg.transforms {
            if !check("transform", &x.label) {
                continue;
            }
            if let Some(rules) = &x.rewrites {
                match crate::board::compile(rules) {
                    Ok(c) => {
                        shared
                            .board()
                            .rewrites
                            .entry((i, x.id.clone()))
                            .or_insert_with(|| Arc::new(c));
                    }
                    Err(e) => {
                        bad_rules.push((e, x.label.clone()));
                        continue;
                    }
                }
            }
            regs.push(format!("transform {}", x.label));
            self.transforms.push(TransformEntry {
                slot: i,
                id: x.id.clone(),
                label: x.label.clone(),
                declarative: x.rewrites.is_some(),
            });
        }
        for x in &reg.status_items {
            if check("status item", &x.label) {
                regs.push(format!("status item {}", x.label));
                self.status_items.push(Named {
                    slot: i,
                    id: x.id.clone(),
                    label: x.label.clone(),
                });
            }
        }
        for x in &reg.keys {
            if check("key", &x.label) {
                regs.push(format!("key {} ({})", x.keys, x.label));
                self.keys.push(KeyEntry {
                    slot: i,
                    id: x.id.clone(),
                    keys: x.keys.clone(),
                    label: x.label.clone(),
                });
            }
        }
        self.declare_commands(i, reg, &mut d, &mut regs);
        for (e, label) in bad_rules {
            d.reject("transform", &e, &label);
        }
        d.registrations = regs;
    }

    /// Slash commands: a valid name no one else has (Trellis's own come first).
    fn declare_commands(
        &mut self,
        i: usize,
        reg: &trellis_core::ext::Registration,
        d: &mut crate::diag::Diag,
        regs: &mut Vec<String>,
    ) {
        for x in &reg.commands {
            if !command_name_ok(&x.name) {
                d.reject(
                    "command",
                    "a command name is 1-32 lowercase letters, digits or '-'",
                    &x.name,
                );
            } else if HOST_COMMANDS.contains(&x.name.as_str()) {
                d.reject("command", "the name is taken by Trellis", &x.name);
            } else if let Some(o) = self.commands.iter().find(|c| c.name == x.name) {
                let owner = self.slots[o.slot].name.clone();
                d.reject("command", &format!("the name is taken by {owner}"), &x.name);
            } else {
                regs.push(format!("command /{}", x.name));
                self.commands.push(CommandEntry {
                    slot: i,
                    name: x.name.clone(),
                    description: x.description.lines().next().unwrap_or("").to_string(),
                });
            }
        }
    }

    /// Labels that collide are told apart: by their extension's name when two use one
    /// (`stats from git-stats`), by ordinals within one extension (`stats`, `stats 2`).
    pub(super) fn number_labels(&mut self, labels: &Labels) {
        let owner = |slot: usize| self.slots[slot].name.as_str();
        let titles = with_owners(
            self.sections
                .iter()
                .zip(&labels.titles)
                .map(|(s, t)| (t.as_str(), owner(s.slot))),
        );
        let designs = with_owners(
            self.designs
                .iter()
                .zip(&labels.designs)
                .map(|(d, l)| (l.as_str(), owner(d.slot))),
        );
        for (s, t) in self.sections.iter_mut().zip(titles) {
            s.title = t;
        }
        for (d, l) in self.designs.iter_mut().zip(designs) {
            d.label = l;
        }
    }

    /// The Cards page: one line per tool that has designs, `Card <words>`.
    pub(super) fn number_card_rows(&mut self) {
        let mut tools: Vec<ToolMatch> = Vec::new();
        for d in &self.designs {
            if !tools.contains(&d.applies_to) {
                tools.push(d.applies_to.clone());
            }
        }
        let names: Vec<String> = tools
            .iter()
            .map(|t| format!("Card {}", t.words()))
            .collect();
        self.card_rows = tools
            .into_iter()
            .zip(with_ordinals(names.iter().map(String::as_str)))
            .collect();
    }

    /// The user's choices (collapsed sections, designs, transforms off), from the host's
    /// own store.
    pub(super) fn load_prefs(&self, shared: &Arc<Shared>) {
        let (prefs, problem) = shared.with_store(HOST_NS, |s| match s {
            StoreBox::Disk(d) => d.get("ui").cloned(),
            StoreBox::Memory(m) => m.get("ui").cloned(),
        });
        if let Some(p) = problem {
            self.shared_note(p);
        }
        if let Some(v) = prefs
            && let Ok(p) = serde_json::from_value::<Prefs>(v)
        {
            *lock(&shared.prefs) = p;
        }
    }
}
