//! UI contributions as the host holds them: declared once at registration (labels,
//! ordinals, command names checked), drawn from the board (see `board.rs`) — what the
//! extensions pushed, and the card and transform answers they gave on their workers —
//! measured in terminal columns and clipped. The user's choices (hidden and collapsed
//! sections, a design per tool) persist in the host's own store namespace.
//!
//! Invariants: nothing here runs extension code or waits for an extension; a hidden or
//! collapsed section is never asked for (the extension is told when it becomes shown); a
//! card design whose choice is unknown, disposed, failing or not answered yet draws the
//! native card; ids are never shown, only labels.

mod declare;
pub mod prefs;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use trellis_core::ToolCall;
use trellis_core::ext::labels::{validate, with_ordinals, with_owners};
use trellis_core::ext::tool_name;
use trellis_core::ext::{Capability, CardLines, SectionRow, StyledLine, ToolMatch, UiAction};

use crate::board::{CardReq, TransformReq, mix, rewrite};
use crate::lock;
use crate::outbox::Outbox;
pub use crate::settings::{RowTarget, RowView, SettingsPage};
use crate::shared::{Shared, StoreBox};
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

/// A display transform: rewrites the host applies, or answers asked of the extension.
#[derive(Debug, Clone)]
pub struct TransformEntry {
    pub slot: usize,
    pub id: String,
    pub label: String,
    pub declarative: bool,
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

pub use prefs::Prefs;

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
    /// For the events held for an extension, handed over before a user action.
    outbox: Arc<Outbox>,
    pub sections: Vec<SectionEntry>,
    pub designs: Vec<DesignEntry>,
    pub transforms: Vec<TransformEntry>,
    pub status_items: Vec<Named>,
    pub commands: Vec<CommandEntry>,
    pub keys: Vec<KeyEntry>,
    /// Lines of the Cards page: a tool with designs, and its `Card <words>` label.
    pub(crate) card_rows: Vec<(ToolMatch, String)>,
}

impl std::fmt::Debug for Ui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ui")
            .field("sections", &self.sections.len())
            .field("designs", &self.designs.len())
            .finish()
    }
}

pub use crate::board::fit;

fn command_name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 32
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Commands Trellis itself owns.
pub const HOST_COMMANDS: &[&str] = &[
    "settings", "status", "sessions", "config", "model", "mode", "export", "worktree", "fork",
    "agent", "rewind", "stop",
];

impl Ui {
    pub(crate) fn build(slots: &[Arc<Slot>], shared: &Arc<Shared>, outbox: Arc<Outbox>) -> Ui {
        let mut ui = Ui {
            slots: slots.to_vec(),
            shared: shared.clone(),
            outbox,
            sections: Vec::new(),
            designs: Vec::new(),
            transforms: Vec::new(),
            status_items: Vec::new(),
            commands: Vec::new(),
            keys: Vec::new(),
            card_rows: Vec::new(),
        };
        let mut labels = declare::Labels::default();
        for (i, slot) in slots.iter().enumerate() {
            ui.declare(i, slot, shared, &mut labels);
        }
        ui.number_labels(&labels);
        ui.number_card_rows();
        ui.load_prefs(shared);
        ui
    }

    fn shared_note(&self, note: String) {
        if let Some(s) = self.slots.first() {
            s.diag().notes.push(format!("host store: {note}"));
        }
    }

    pub(crate) fn save_prefs(&self) {
        let v = serde_json::to_value(&*lock(&self.shared.prefs)).unwrap_or_default();
        let _ = self.shared.with_store(HOST_NS, |s| match s {
            StoreBox::Disk(d) => {
                let _ = d.put("ui", Some(v));
            }
            StoreBox::Memory(m) => {
                m.insert("ui".into(), v);
            }
        });
    }

    /// Bumped whenever every card must be drawn again (a design switched, an extension
    /// disabled, a transform's rewrites replaced).
    pub fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::Relaxed)
    }

    pub fn bump(&self) {
        self.shared.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Bumped whenever a card or transform answer arrives (views that cache what they
    /// drew through transforms compare it).
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::Relaxed)
    }

    /// Calls whose designed card or transformed text arrived since the last call.
    pub fn take_changed(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.board().changed)
    }

    /// Hands the cards and transforms asked for since the last call to the extensions'
    /// workers (one job per extension).
    pub fn send_requests(&self) {
        let reqs = std::mem::take(&mut self.shared.board().requests);
        for (slot, r) in reqs {
            if r.is_empty() {
                continue;
            }
            if let Some(s) = self.live(slot) {
                s.send(Job::Render(r), &self.shared);
            }
        }
    }

    /// The name of the extension in `slot` ("" when there is none).
    pub fn slot_name(&self, slot: usize) -> &str {
        self.slots.get(slot).map_or("", |s| s.name.as_str())
    }

    /// Sends a user action, after the events held for the extension (it acts on what
    /// it has seen).
    fn act(&self, slot: &Slot, action: UiAction) {
        self.outbox.deliver_to(&self.slots, &self.shared, slot);
        slot.send(Job::Action(action), &self.shared);
    }

    pub(crate) fn live(&self, slot: usize) -> Option<&Arc<Slot>> {
        self.slots.get(slot).filter(|s| !s.is_disabled())
    }

    // ---- sidebar sections ----

    pub fn is_hidden(&self, key: &str) -> bool {
        lock(&self.shared.prefs).hidden.contains(key)
    }

    pub fn is_collapsed(&self, e: &SectionEntry) -> bool {
        lock(&self.shared.prefs)
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
        self.set_visibility(key, |p| {
            p.collapsed.insert(key.to_string(), now);
        });
    }

    pub fn set_hidden(&self, key: &str, hidden: bool) {
        self.set_visibility(key, |p| {
            if hidden {
                p.hidden.insert(key.to_string());
            } else {
                p.hidden.remove(key);
            }
        });
    }

    /// Changes the user's choices about section `key`, saves them, and tells the
    /// extension when the section became shown or stopped being so.
    pub(crate) fn set_visibility(&self, key: &str, change: impl FnOnce(&mut Prefs)) {
        let Some(e) = self.sections.iter().find(|s| s.key == key) else {
            return;
        };
        let before = self.shared.shown(key, e.default_collapsed);
        change(&mut lock(&self.shared.prefs));
        self.save_prefs();
        let after = self.shared.shown(key, e.default_collapsed);
        if before != after
            && let Some(slot) = self.live(e.slot)
        {
            self.act(
                slot,
                UiAction::Visibility {
                    section: e.id.clone(),
                    shown: after,
                },
            );
        }
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
                let b = self.shared.board();
                match b.sections.get(&(e.slot, e.id.clone())) {
                    Some(s) => {
                        v.count = s.body.count;
                        let n = s.body.rows.len();
                        v.rows = s.body.rows[..n.min(e.max_rows)].to_vec();
                        v.more = n.saturating_sub(e.max_rows) + s.dropped;
                    }
                    // Nothing pushed yet, and the extension has failed: say so rather
                    // than show an empty section.
                    None if slot.diag().has_failed() => {
                        v.error = Some("unavailable (see /status)".into());
                    }
                    None => {}
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
            self.act(
                slot,
                UiAction::RowClick {
                    section: e.id.clone(),
                    row: row.to_string(),
                },
            );
        }
    }

    // ---- card designs and transforms ----

    /// The design the user picked for this call's tool, if it still exists.
    pub fn design_for(&self, call: &ToolCall) -> Option<&DesignEntry> {
        if self.designs.is_empty() {
            return None;
        }
        let prefs = lock(&self.shared.prefs);
        let mut keys = Vec::with_capacity(2);
        if let Some(n) = tool_name(call) {
            keys.push(ToolMatch::Name(n.to_string()).key());
        }
        keys.push(ToolMatch::Kind(call.kind).key());
        keys.iter().find_map(|k| {
            let chosen = prefs.cards.get(k)?;
            self.designs.iter().find(|d| {
                &d.key == chosen
                    && trellis_core::ext::applies(&d.applies_to, call)
                    && self.live(d.slot).is_some()
            })
        })
    }

    /// The call drawn by its chosen design, fitted to `width`; `None`: the native card
    /// (no design chosen, or its answer has not arrived yet — it is asked for, and the
    /// call is reported by [`Ui::take_changed`] when it arrives).
    pub fn card(&self, call: &ToolCall, width: usize) -> Option<CardLines> {
        let d = self.design_for(call)?;
        self.live(d.slot)?;
        let w = u16::try_from(width).unwrap_or(u16::MAX);
        let cache = mix(&[d.key.as_bytes(), call.id.as_bytes()]);
        // Designs draw the output as displayed: after the display transforms (whose own
        // answers may arrive later: the text is part of what the card answers).
        let (shown, waiting) = self.displayed(call);
        let text = shown.as_ref().map_or(0, |c| {
            let texts: Vec<std::sync::Arc<String>> = c
                .content
                .iter()
                .filter_map(|x| match x {
                    trellis_core::tool_call::ToolContent::Text { text } => Some(text.load()),
                    _ => None,
                })
                .collect();
            let bytes: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
            mix(&bytes)
        });
        let key = mix(&[
            &call.rev.to_le_bytes(),
            &w.to_le_bytes(),
            &self.epoch().to_le_bytes(),
            &text.to_le_bytes(),
        ]);
        let mut b = self.shared.board();
        let a = b.cards.entry(cache).or_default();
        let held = a.value.clone();
        // While a per-call transform of its text is on its way, the card waits for it.
        if a.have != key && a.want != key && !waiting {
            a.want = key;
            b.trim();
            b.requests.entry(d.slot).or_default().cards.push(CardReq {
                key,
                cache,
                call_id: call.id.clone(),
                design: d.id.clone(),
                call: Arc::new(shown.unwrap_or_else(|| call.clone())),
                width: w,
            });
        }
        drop(b);
        // Until the answer for this revision arrives, the previous one stands in (no
        // flicker between a designed and the native card while a call runs).
        let lines = held?;
        Some(CardLines {
            call: lines.call.iter().map(|l| fit(l, width)).collect(),
            result: lines.result.iter().map(|l| fit(l, width)).collect(),
            bare: lines.bare,
        })
    }

    /// A copy of `call` whose text output went through the display transforms (`None`
    /// when nothing changed), and whether a per-call transform's answer is still awaited.
    fn displayed(&self, call: &ToolCall) -> (Option<ToolCall>, bool) {
        use trellis_core::tool_call::ToolContent;
        if self.transforms.is_empty() {
            return (None, false);
        }
        let mut out: Option<ToolCall> = None;
        let mut waiting = false;
        for (i, c) in call.content.iter().enumerate() {
            if let ToolContent::Text { text } = c {
                let (t, w) = self.transformed(call, &text.load());
                waiting |= w;
                if let Some(t) = t {
                    let copy = out.get_or_insert_with(|| call.clone());
                    copy.content[i] = ToolContent::Text { text: t.into() };
                }
            }
        }
        (out, waiting)
    }

    /// The output text after every display transform, in declared order; `None` when
    /// no transform changed it. Declarative rewrites apply at once; a per-call transform
    /// whose answer has not arrived yet leaves the text as it is (and is asked for).
    pub fn transform(&self, call: &ToolCall, text: &str) -> Option<String> {
        self.transformed(call, text).0
    }

    /// [`Ui::transform`], and whether a per-call answer is still awaited.
    fn transformed(&self, call: &ToolCall, text: &str) -> (Option<String>, bool) {
        let mut cur: Option<String> = None;
        let mut waiting = false;
        for t in &self.transforms {
            if self.live(t.slot).is_none() {
                continue;
            }
            let input = cur.as_deref().unwrap_or(text);
            let next = if t.declarative {
                let rules = self
                    .shared
                    .board()
                    .rewrites
                    .get(&(t.slot, t.id.clone()))
                    .cloned();
                rules.and_then(|r| rewrite(&r, input))
            } else {
                match self.per_call(t, call, input) {
                    Some(answer) => answer,
                    None => {
                        waiting = true;
                        None
                    }
                }
            };
            if let Some(next) = next {
                cur = Some(next);
            }
        }
        (cur, waiting)
    }

    /// A per-call transform's answer: `None` while awaited (it is asked for).
    fn per_call(&self, t: &TransformEntry, call: &ToolCall, input: &str) -> Option<Option<String>> {
        let cache = mix(&[
            &t.slot.to_le_bytes(),
            t.id.as_bytes(),
            call.id.as_bytes(),
            input.as_bytes(),
        ]);
        let key = mix(&[&call.rev.to_le_bytes(), &self.epoch().to_le_bytes()]);
        let mut b = self.shared.board();
        let a = b.transforms.entry(cache).or_default();
        if a.have == key {
            return Some(a.value.clone());
        }
        if a.want != key {
            a.want = key;
            b.trim();
            b.requests
                .entry(t.slot)
                .or_default()
                .transforms
                .push(TransformReq {
                    key,
                    cache,
                    call_id: call.id.clone(),
                    id: t.id.clone(),
                    call: Arc::new(call.clone()),
                    text: Arc::from(input),
                });
        }
        None
    }

    /// Status-bar items, each fitted to `width` columns.
    pub fn status_line_items(&self, width: usize) -> Vec<StyledLine> {
        let b = self.shared.board();
        self.status_items
            .iter()
            .filter(|s| self.live(s.slot).is_some())
            .filter_map(|s| b.status.get(&(s.slot, s.id.clone())))
            .map(|l| fit(l, width))
            .collect()
    }

    // ---- commands and keys ----

    /// Runs `/name args` if an extension owns `name`.
    pub fn run_command(&self, name: &str, args: &str) -> bool {
        let Some(c) = self.commands.iter().find(|c| c.name == name) else {
            return false;
        };
        if let Some(slot) = self.live(c.slot) {
            self.act(
                slot,
                UiAction::Command {
                    name: name.to_string(),
                    args: args.to_string(),
                },
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
            self.act(slot, UiAction::Key { id: k.id.clone() });
        }
    }
}
