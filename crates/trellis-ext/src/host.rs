//! The host functions extensions call ([`HostCtx`] implements [`Host`]) and the state they
//! read: a mirror of the session kept current from the events the host dispatches, so
//! extensions on their own threads read consistent snapshots without touching the UI's
//! session.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use trellis_core::ext::{Capability, Host, HostError, SessionInfo};
use trellis_core::{Event, EventBody, ToolCall};
use trellis_store::ext_store::ExtStore;

use crate::slot::Slot;
use crate::{HostMsg, lock};

/// Session state as extensions see it.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    pub info: SessionInfo,
    pub calls: Vec<Arc<ToolCall>>,
    pub index: HashMap<String, usize>,
    pub call_state: HashMap<(String, String), Value>,
}

impl Mirror {
    pub fn observe(&mut self, ev: &Event) {
        if ev.session.is_some() && self.info.id != ev.session {
            self.info.id.clone_from(&ev.session);
        }
        match &ev.body {
            EventBody::SessionStarted {
                agent, cwd, mode, ..
            } => {
                self.info.agent = agent.name.clone();
                self.info.cwd.clone_from(cwd);
                self.info.mode.clone_from(mode);
            }
            EventBody::TurnStarted { turn, .. } => {
                self.info.turn = *turn;
                self.info.turn_open = true;
            }
            EventBody::TurnEnded { .. } => self.info.turn_open = false,
            EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
                match self.index.get(&call.id) {
                    Some(&i) => self.calls[i] = call.clone(),
                    None => {
                        self.index.insert(call.id.clone(), self.calls.len());
                        self.calls.push(call.clone());
                    }
                }
                self.info.calls = self.calls.len();
            }
            EventBody::Usage { usage } => self.info.usage = Some(usage.clone()),
            EventBody::ModeChanged { mode } => self.info.mode = Some(mode.clone()),
            EventBody::TitleChanged { title } => self.info.title.clone_from(title),
            EventBody::CallState {
                call_id,
                extension,
                value,
            } => {
                self.call_state
                    .insert((extension.clone(), call_id.clone()), value.clone());
            }
            _ => {}
        }
    }
}

/// An extension's persistent store: on disk when the host has a store directory.
#[derive(Debug)]
pub(crate) enum StoreBox {
    Disk(ExtStore),
    Memory(BTreeMap<String, Value>),
}

/// What the host and every worker share.
pub struct Shared {
    pub(crate) mirror: RwLock<Mirror>,
    outbox: UnboundedSender<HostMsg>,
    pub(crate) path_map: Vec<(String, String)>,
    pub(crate) store_dir: Option<PathBuf>,
    pub(crate) stores: Mutex<HashMap<String, StoreBox>>,
    /// A UI call found an extension busy: cached contributions should be rebuilt.
    busy: AtomicBool,
    /// A UI draws contributions: workers ask for a repaint when they catch up.
    pub(crate) repaint_after_events: bool,
    /// A repaint asked by a worker and not yet taken by the runtime (at most one such
    /// message is in flight, however many extensions catch up meanwhile).
    repaint_asked: AtomicBool,
}

impl Shared {
    pub(crate) fn new(
        outbox: UnboundedSender<HostMsg>,
        path_map: Vec<(String, String)>,
        store_dir: Option<PathBuf>,
    ) -> Shared {
        Shared {
            repaint_after_events: false,
            repaint_asked: AtomicBool::new(false),
            mirror: RwLock::new(Mirror::default()),
            outbox,
            path_map,
            store_dir,
            stores: Mutex::new(HashMap::new()),
            busy: AtomicBool::new(false),
        }
    }

    pub(crate) fn send(&self, msg: HostMsg) {
        let _ = self.outbox.send(msg);
    }

    /// Asks the front end to draw again, unless such a request is already on its way.
    pub(crate) fn ask_repaint(&self) {
        if !self.repaint_asked.swap(true, Ordering::AcqRel) {
            self.send(HostMsg::Repaint);
        }
    }

    /// The runtime took a repaint request: the next one is sent again.
    pub(crate) fn repaint_taken(&self) {
        self.repaint_asked.store(false, Ordering::Release);
    }

    pub(crate) fn mark_busy(&self) {
        self.busy.store(true, Ordering::Relaxed);
    }

    pub(crate) fn take_busy(&self) -> bool {
        self.busy.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn mirror(&self) -> std::sync::RwLockReadGuard<'_, Mirror> {
        match self.mirror.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    pub(crate) fn mirror_mut(&self) -> std::sync::RwLockWriteGuard<'_, Mirror> {
        match self.mirror.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Runs `f` on namespace `ns`'s store, opening it first if needed (a problem found
    /// on opening is returned once, for diagnostics).
    pub(crate) fn with_store<R>(
        &self,
        ns: &str,
        f: impl FnOnce(&mut StoreBox) -> R,
    ) -> (R, Option<String>) {
        let mut stores = lock(&self.stores);
        let mut problem = None;
        let store = stores
            .entry(ns.to_string())
            .or_insert_with(|| match &self.store_dir {
                Some(dir) => {
                    let (s, p) = ExtStore::open(dir, ns);
                    problem = p.map(|p| p.message);
                    StoreBox::Disk(s)
                }
                None => StoreBox::Memory(BTreeMap::new()),
            });
        (f(store), problem)
    }

    /// Maps a path through the configured mappings (longest matching prefix wins).
    pub(crate) fn resolve(&self, path: &str) -> String {
        self.path_map
            .iter()
            .filter(|(from, _)| {
                path == from
                    || path
                        .strip_prefix(from.as_str())
                        .is_some_and(|rest| rest.starts_with('/') || from.ends_with('/'))
            })
            .max_by_key(|(from, _)| from.len())
            .map(|(from, to)| format!("{to}{}", &path[from.len()..]))
            .unwrap_or_else(|| path.to_string())
    }
}

/// RFC 7386 merge of `patch` into `target`.
pub fn merge_patch(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(&k);
                    } else {
                        merge_patch(t.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other,
    }
}

/// The host as one extension sees it during one call.
pub struct HostCtx<'a> {
    slot: &'a Slot,
    shared: &'a Shared,
}

impl<'a> HostCtx<'a> {
    pub(crate) fn new(slot: &'a Slot, shared: &'a Shared) -> HostCtx<'a> {
        HostCtx { slot, shared }
    }

    fn need(&self, c: Capability, call: &str) -> Result<(), HostError> {
        if self.slot.has(c) {
            Ok(())
        } else {
            self.slot.diag().refuse(call);
            Err(HostError::NotGranted(c))
        }
    }

    fn store_problem(&self, p: Option<String>) {
        if let Some(p) = p {
            self.slot.diag().notes.push(format!("store: {p}"));
        }
    }
}

impl Host for HostCtx<'_> {
    fn me(&self) -> &str {
        &self.slot.name
    }

    fn options(&self) -> Value {
        self.slot.options.get().cloned().unwrap_or(Value::Null)
    }

    fn report(&mut self, what: &str, message: &str) {
        let mut d = self.slot.diag();
        let note = format!("{what}: {message}");
        if !d.notes.contains(&note) {
            d.notes.push(note);
        }
        if d.state == crate::diag::ExtState::Ready {
            d.state = crate::diag::ExtState::Degraded(format!("{what}: {message}"));
        }
    }

    fn session(&self) -> SessionInfo {
        self.shared.mirror().info.clone()
    }

    fn calls(&self) -> Vec<Arc<ToolCall>> {
        if self.need(Capability::Observe, "calls").is_err() {
            return Vec::new();
        }
        self.shared.mirror().calls.clone()
    }

    fn call(&self, call_id: &str) -> Option<Arc<ToolCall>> {
        if self.need(Capability::Observe, "call").is_err() {
            return None;
        }
        let m = self.shared.mirror();
        m.index.get(call_id).map(|&i| m.calls[i].clone())
    }

    fn call_state(&self, call_id: &str) -> Option<Value> {
        self.need(Capability::CallState, "call_state").ok()?;
        self.shared
            .mirror()
            .call_state
            .get(&(self.slot.name.clone(), call_id.to_string()))
            .cloned()
    }

    fn put_call_state(
        &mut self,
        call_id: &str,
        value: Value,
        merge: bool,
    ) -> Result<(), HostError> {
        self.need(Capability::CallState, "put_call_state")?;
        if call_id.is_empty() {
            return Err(HostError::Invalid("put_call_state needs a call id".into()));
        }
        let key = (self.slot.name.clone(), call_id.to_string());
        let whole = {
            let mut m = self.shared.mirror_mut();
            let slot = m.call_state.entry(key).or_insert(Value::Null);
            if merge {
                merge_patch(slot, value);
            } else {
                *slot = value;
            }
            slot.clone()
        };
        self.shared.send(HostMsg::CallState {
            extension: self.slot.name.clone(),
            call_id: call_id.to_string(),
            value: whole,
        });
        Ok(())
    }

    fn resolve_path(&self, path: &str) -> String {
        self.shared.resolve(path)
    }

    fn notify(&mut self, text: &str) -> Result<(), HostError> {
        self.need(Capability::Ui, "notify")?;
        let one_line: String = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        self.shared.send(HostMsg::Notify {
            extension: self.slot.name.clone(),
            text: one_line,
        });
        Ok(())
    }

    fn open_inspector(&mut self, call_id: &str) -> Result<(), HostError> {
        self.need(Capability::Ui, "open_inspector")?;
        self.shared.send(HostMsg::OpenInspector {
            call_id: call_id.to_string(),
        });
        Ok(())
    }

    fn respond_permission(&mut self, request_id: &str, option_id: &str) -> Result<(), HostError> {
        self.need(Capability::InterceptPermissions, "respond_permission")?;
        self.shared.send(HostMsg::Respond {
            extension: self.slot.name.clone(),
            request_id: request_id.to_string(),
            option_id: option_id.to_string(),
        });
        Ok(())
    }

    fn store_get(&self, key: &str) -> Result<Option<Value>, HostError> {
        self.need(Capability::Store, "store_get")?;
        let (v, p) = self.shared.with_store(&self.slot.name, |s| match s {
            StoreBox::Disk(d) => d.get(key).cloned(),
            StoreBox::Memory(m) => m.get(key).cloned(),
        });
        self.store_problem(p);
        Ok(v)
    }

    fn store_put(&mut self, key: &str, value: Option<Value>) -> Result<(), HostError> {
        self.need(Capability::Store, "store_put")?;
        let (r, p) = self.shared.with_store(&self.slot.name, |s| match s {
            StoreBox::Disk(d) => d
                .put(key, value)
                .map_err(|e| HostError::Store(e.to_string())),
            StoreBox::Memory(m) => {
                match value {
                    Some(v) => m.insert(key.to_string(), v),
                    None => m.remove(key),
                };
                Ok(())
            }
        });
        self.store_problem(p);
        r
    }

    fn repaint(&mut self) {
        self.shared.send(HostMsg::Repaint);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(
            &mut t,
            serde_json::json!({"b": {"c": null, "e": 4}, "f": 5}),
        );
        assert_eq!(
            t,
            serde_json::json!({"a": 1, "b": {"d": 3, "e": 4}, "f": 5})
        );
    }

    #[test]
    fn path_mappings_take_the_longest_prefix_on_component_boundaries() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let s = Shared::new(
            tx,
            vec![
                ("/workspace".into(), "/home/me/proj".into()),
                ("/workspace/vendor".into(), "/opt/vendor".into()),
            ],
            None,
        );
        assert_eq!(s.resolve("/workspace/src/a.rs"), "/home/me/proj/src/a.rs");
        assert_eq!(s.resolve("/workspace/vendor/x"), "/opt/vendor/x");
        assert_eq!(s.resolve("/workspaces/x"), "/workspaces/x");
        assert_eq!(s.resolve("rel/x"), "rel/x");
    }
}
