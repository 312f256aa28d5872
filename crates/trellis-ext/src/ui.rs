//! UI contributions as the host holds them: validated once at registration (labels,
//! ordinals, command names), rendered on demand with isolation, measured in terminal
//! columns and clipped. The user's choices (hidden and collapsed sections, a design per
//! tool) persist in the host's own store namespace.
//!
//! Invariants: a hidden or collapsed section's body is never built; a card design whose
//! choice is unknown, disposed or failing falls back to the native card; ids are never
//! shown, only labels.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use trellis_core::ToolCall;
use trellis_core::ext::contrib::tool_name;
use trellis_core::ext::labels::{validate, with_ordinals};
use trellis_core::ext::{
    Capability, CardLines, SectionRow, StyledLine, StyledSpan, ToolMatch, UiAction,
};

use crate::host::{Shared, StoreBox};
use crate::lock;
pub use crate::settings::{RowTarget, RowView, SettingsPage};
use crate::slot::{Job, Slot};

/// The host's own store namespace (reserved: no extension may take this name).
pub const HOST_NS: &str = "trellis";
/// Most rows a section shows, whatever it asks for.
pub const MAX_SECTION_ROWS: usize = 40;

#[derive(Debug, Clone)]
pub struct SectionEntry {
    pub slot: usize,
    pub id: String,
    /// `extension/id`: the key choices are stored under (never shown).
    pub key: String,
    /// Display title (with an ordinal when titles collide).
    pub title: String,
    pub max_rows: usize,
    pub default_collapsed: bool,
}

#[derive(Debug, Clone)]
pub struct DesignEntry {
    pub slot: usize,
    pub id: String,
    pub key: String,
    pub label: String,
    pub applies_to: ToolMatch,
}

#[derive(Debug, Clone)]
pub struct Named {
    pub slot: usize,
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone)]
pub struct CommandEntry {
    pub slot: usize,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone)]
pub struct KeyEntry {
    pub slot: usize,
    pub id: String,
    pub keys: String,
    pub label: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Prefs {
    #[serde(default)]
    pub(crate) hidden: BTreeSet<String>,
    #[serde(default)]
    pub(crate) collapsed: BTreeMap<String, bool>,
    /// Tool key (`kind:execute`, `name:Bash`) → design key (`extension/id`).
    #[serde(default)]
    pub(crate) cards: BTreeMap<String, String>,
}

/// A section ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionView {
    pub key: String,
    pub title: String,
    pub collapsed: bool,
    pub count: Option<usize>,
    pub rows: Vec<SectionRow>,
    /// Rows beyond the limit (`… +N more`).
    pub more: usize,
    /// Set when the body could not be built this frame.
    pub error: Option<String>,
}

pub struct Ui {
    pub(crate) slots: Vec<Arc<Slot>>,
    pub(crate) shared: Arc<Shared>,
    pub sections: Vec<SectionEntry>,
    pub designs: Vec<DesignEntry>,
    pub transforms: Vec<Named>,
    pub status_items: Vec<Named>,
    pub commands: Vec<CommandEntry>,
    pub keys: Vec<KeyEntry>,
    /// Lines of the Cards page: a tool with designs, and its `Card <words>` label.
    pub(crate) card_rows: Vec<(ToolMatch, String)>,
    pub(crate) prefs: Mutex<Prefs>,
    epoch: AtomicU64,
}

impl std::fmt::Debug for Ui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ui")
            .field("sections", &self.sections.len())
            .field("designs", &self.designs.len())
            .finish()
    }
}

/// Clips a styled line to `width` terminal columns. Text that fits comes back
/// byte-identical; a cut closes any SGR or OSC 8 hyperlink it leaves open.
pub fn fit(line: &StyledLine, width: usize) -> StyledLine {
    StyledLine(trellis_text::clip_pieces(
        line.0.iter().cloned(),
        width,
        |s| &s.text,
        |s, text| StyledSpan { text, ..s },
    ))
}

fn command_name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 32
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Commands Trellis itself owns.
pub const HOST_COMMANDS: &[&str] = &["settings", "status"];

impl Ui {
    pub(crate) fn build(slots: &[Arc<Slot>], shared: &Arc<Shared>) -> Ui {
        let mut ui = Ui {
            slots: slots.to_vec(),
            shared: shared.clone(),
            sections: Vec::new(),
            designs: Vec::new(),
            transforms: Vec::new(),
            status_items: Vec::new(),
            commands: Vec::new(),
            keys: Vec::new(),
            card_rows: Vec::new(),
            prefs: Mutex::new(Prefs::default()),
            epoch: AtomicU64::new(1),
        };
        let mut titles = Vec::new();
        let mut design_labels: Vec<String> = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            let Some(reg) = slot.registration() else {
                continue;
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
                d.notes.push(
                    "its UI contributions are not shown: capability ui is not granted".into(),
                );
                continue;
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
                    ui.sections.push(SectionEntry {
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
                    ui.designs.push(DesignEntry {
                        slot: i,
                        id: x.id.clone(),
                        key: format!("{}/{}", slot.name, x.id),
                        label: x.label.clone(),
                        applies_to: x.applies_to.clone(),
                    });
                }
            }
            // Transforms and status items are named the same way.
            let named = [
                (
                    "transform",
                    reg.transforms
                        .iter()
                        .map(|x| (&x.id, &x.label))
                        .collect::<Vec<_>>(),
                    &mut ui.transforms,
                ),
                (
                    "status item",
                    reg.status_items.iter().map(|x| (&x.id, &x.label)).collect(),
                    &mut ui.status_items,
                ),
            ];
            for (what, items, into) in named {
                for (id, label) in items {
                    if check(what, label) {
                        regs.push(format!("{what} {label}"));
                        into.push(Named {
                            slot: i,
                            id: id.clone(),
                            label: label.clone(),
                        });
                    }
                }
            }
            for x in &reg.keys {
                if check("key", &x.label) {
                    regs.push(format!("key {} ({})", x.keys, x.label));
                    ui.keys.push(KeyEntry {
                        slot: i,
                        id: x.id.clone(),
                        keys: x.keys.clone(),
                        label: x.label.clone(),
                    });
                }
            }
            for x in &reg.commands {
                if !command_name_ok(&x.name) {
                    d.reject(
                        "command",
                        "a command name is 1-32 lowercase letters, digits or '-'",
                        &x.name,
                    );
                } else if HOST_COMMANDS.contains(&x.name.as_str()) {
                    d.reject("command", "the name is taken by Trellis", &x.name);
                } else if let Some(o) = ui.commands.iter().find(|c| c.name == x.name) {
                    let owner = slots[o.slot].name.clone();
                    d.reject("command", &format!("the name is taken by {owner}"), &x.name);
                } else {
                    regs.push(format!("command /{}", x.name));
                    ui.commands.push(CommandEntry {
                        slot: i,
                        name: x.name.clone(),
                        description: x.description.lines().next().unwrap_or("").to_string(),
                    });
                }
            }
            d.registrations = regs;
        }
        for (s, t) in ui
            .sections
            .iter_mut()
            .zip(with_ordinals(titles.iter().map(String::as_str)))
        {
            s.title = t;
        }
        for (s, t) in ui
            .designs
            .iter_mut()
            .zip(with_ordinals(design_labels.iter().map(String::as_str)))
        {
            s.label = t;
        }
        // The Cards page: one line per tool that has designs, `Card <words>`.
        let mut tools: Vec<ToolMatch> = Vec::new();
        for d in &ui.designs {
            if !tools.contains(&d.applies_to) {
                tools.push(d.applies_to.clone());
            }
        }
        let names: Vec<String> = tools
            .iter()
            .map(|t| format!("Card {}", t.words()))
            .collect();
        ui.card_rows = tools
            .into_iter()
            .zip(with_ordinals(names.iter().map(String::as_str)))
            .collect();
        let (prefs, problem) = shared.with_store(HOST_NS, |s| match s {
            StoreBox::Disk(d) => d.get("ui").cloned(),
            StoreBox::Memory(m) => m.get("ui").cloned(),
        });
        if let Some(p) = problem {
            ui.shared_note(p);
        }
        if let Some(v) = prefs
            && let Ok(p) = serde_json::from_value::<Prefs>(v)
        {
            *lock(&ui.prefs) = p;
        }
        ui
    }

    fn shared_note(&self, note: String) {
        if let Some(s) = self.slots.first() {
            s.diag().notes.push(format!("host store: {note}"));
        }
    }

    pub(crate) fn save_prefs(&self) {
        let v = serde_json::to_value(&*lock(&self.prefs)).unwrap_or_default();
        let _ = self.shared.with_store(HOST_NS, |s| match s {
            StoreBox::Disk(d) => {
                let _ = d.put("ui", Some(v));
            }
            StoreBox::Memory(m) => {
                m.insert("ui".into(), v);
            }
        });
    }

    /// Bumped whenever cards must be redrawn (a design switched, an extension disabled
    /// or found busy).
    pub fn epoch(&self) -> u64 {
        if self.shared.take_busy() {
            self.epoch.fetch_add(1, Ordering::Relaxed);
        }
        self.epoch.load(Ordering::Relaxed)
    }

    pub fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn live(&self, slot: usize) -> Option<&Arc<Slot>> {
        self.slots.get(slot).filter(|s| !s.is_disabled())
    }

    // ---- sidebar sections ----

    pub fn is_hidden(&self, key: &str) -> bool {
        lock(&self.prefs).hidden.contains(key)
    }

    pub fn is_collapsed(&self, e: &SectionEntry) -> bool {
        lock(&self.prefs)
            .collapsed
            .get(&e.key)
            .copied()
            .unwrap_or(e.default_collapsed)
    }

    pub fn toggle_collapsed(&self, key: &str) {
        let Some(e) = self.sections.iter().find(|s| s.key == key) else {
            return;
        };
        let now = !self.is_collapsed(e);
        lock(&self.prefs).collapsed.insert(key.to_string(), now);
        self.save_prefs();
    }

    pub fn set_hidden(&self, key: &str, hidden: bool) {
        {
            let mut p = lock(&self.prefs);
            if hidden {
                p.hidden.insert(key.to_string());
            } else {
                p.hidden.remove(key);
            }
        }
        self.save_prefs();
    }

    /// Sections to draw: hidden ones and those of disabled extensions are skipped, and a
    /// collapsed section's body is not built.
    pub fn sections(&self) -> Vec<SectionView> {
        let mut out = Vec::new();
        for e in &self.sections {
            if self.is_hidden(&e.key) {
                continue;
            }
            let Some(slot) = self.live(e.slot) else {
                continue;
            };
            let collapsed = self.is_collapsed(e);
            let mut v = SectionView {
                key: e.key.clone(),
                title: e.title.clone(),
                collapsed,
                count: None,
                rows: Vec::new(),
                more: 0,
                error: None,
            };
            if !collapsed {
                match slot.call_ui(&self.shared, "section", |x, cx| x.section(&e.id, cx)) {
                    Some(body) => {
                        v.count = body.count;
                        let n = body.rows.len();
                        v.rows = body.rows;
                        if n > e.max_rows {
                            v.rows.truncate(e.max_rows);
                            v.more = n - e.max_rows;
                        }
                    }
                    None => v.error = Some("unavailable (see /status)".into()),
                }
            }
            out.push(v);
        }
        out
    }

    /// A click on row `row` of section `key`.
    pub fn click(&self, key: &str, row: &str) {
        if let Some(e) = self.sections.iter().find(|s| s.key == key)
            && let Some(slot) = self.live(e.slot)
        {
            slot.send(
                Job::Action(UiAction::RowClick {
                    section: e.id.clone(),
                    row: row.to_string(),
                }),
                &self.shared,
            );
        }
    }

    // ---- card designs and transforms ----

    /// The design the user picked for this call's tool, if it still exists.
    pub fn design_for(&self, call: &ToolCall) -> Option<&DesignEntry> {
        if self.designs.is_empty() {
            return None;
        }
        let prefs = lock(&self.prefs);
        let mut keys = Vec::with_capacity(2);
        if let Some(n) = tool_name(call) {
            keys.push(ToolMatch::Name(n.to_string()).key());
        }
        keys.push(ToolMatch::Kind(call.kind).key());
        keys.iter().find_map(|k| {
            let chosen = prefs.cards.get(k)?;
            self.designs.iter().find(|d| {
                &d.key == chosen && d.applies_to.matches(call) && self.live(d.slot).is_some()
            })
        })
    }

    /// The call drawn by its chosen design, fitted to `width`; `None`: the native card.
    pub fn card(&self, call: &ToolCall, width: usize) -> Option<CardLines> {
        let d = self.design_for(call)?;
        let slot = self.live(d.slot)?;
        let w = u16::try_from(width).unwrap_or(u16::MAX);
        // Designs draw the output as displayed: after the display transforms.
        let shown = self.displayed(call);
        let call = shown.as_ref().unwrap_or(call);
        let lines = slot.call_ui(&self.shared, "card design", |x, _| x.card(&d.id, call, w))?;
        if lines.call.is_empty() {
            return None;
        }
        Some(CardLines {
            call: lines.call.iter().map(|l| fit(l, width)).collect(),
            result: lines.result.iter().map(|l| fit(l, width)).collect(),
        })
    }

    /// A copy of `call` whose text output went through the display transforms (`None`
    /// when nothing changed).
    fn displayed(&self, call: &ToolCall) -> Option<ToolCall> {
        use trellis_core::tool_call::ToolContent;
        if self.transforms.is_empty() {
            return None;
        }
        let mut out: Option<ToolCall> = None;
        for (i, c) in call.content.iter().enumerate() {
            if let ToolContent::Text { text } = c
                && let Some(t) = self.transform(call, text)
            {
                let copy = out.get_or_insert_with(|| call.clone());
                copy.content[i] = ToolContent::Text { text: Arc::new(t) };
            }
        }
        out
    }

    /// The output text after every display transform, in declared order; `None` when
    /// no transform changed it.
    pub fn transform(&self, call: &ToolCall, text: &str) -> Option<String> {
        let mut cur: Option<String> = None;
        for t in &self.transforms {
            let Some(slot) = self.live(t.slot) else {
                continue;
            };
            let input = cur.as_deref().unwrap_or(text);
            if let Some(Some(next)) = slot.call_ui(&self.shared, "transform", |x, _| {
                x.transform(&t.id, call, input)
            }) {
                cur = Some(next);
            }
        }
        cur
    }

    /// Status-bar items, each fitted to `width` columns.
    pub fn status_line_items(&self, width: usize) -> Vec<StyledLine> {
        self.status_items
            .iter()
            .filter_map(|s| {
                let slot = self.live(s.slot)?;
                let line = slot.call_ui(&self.shared, "status item", |x, cx| {
                    x.status_item(&s.id, cx)
                })??;
                Some(fit(&line, width))
            })
            .collect()
    }

    // ---- commands and keys ----

    /// Runs `/name args` if an extension owns `name`.
    pub fn run_command(&self, name: &str, args: &str) -> bool {
        let Some(c) = self.commands.iter().find(|c| c.name == name) else {
            return false;
        };
        if let Some(slot) = self.live(c.slot) {
            slot.send(
                Job::Action(UiAction::Command {
                    name: name.to_string(),
                    args: args.to_string(),
                }),
                &self.shared,
            );
        }
        true
    }

    /// A contributed key the UI cannot honour (taken, or not a single key): it is
    /// dropped and the extension's `/status` says why.
    pub fn reject_key(&mut self, index: usize, rule: &str) {
        if index < self.keys.len() {
            let k = self.keys.remove(index);
            if let Some(slot) = self.slots.get(k.slot) {
                let mut d = slot.diag();
                d.reject("key", rule, &k.keys);
                d.registrations
                    .retain(|r| !r.starts_with(&format!("key {} ", k.keys)));
            }
        }
    }

    pub fn press(&self, index: usize) {
        if let Some(k) = self.keys.get(index)
            && let Some(slot) = self.live(k.slot)
        {
            slot.send(
                Job::Action(UiAction::Key { id: k.id.clone() }),
                &self.shared,
            );
        }
    }
}
