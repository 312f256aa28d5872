//! What the host and every worker share: the session's mirror, the stores, the board, the
//! user's choices, the way back to the host's loop. Below the workers, the host functions
//! and the UI contributions, which all hold it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use trellis_store::ext_store::ExtStore;

use crate::board::Board;
use crate::mirror::Mirror;
use crate::ui::prefs::Prefs;
use crate::{HostMsg, lock};

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
    /// Without `store_dir`: stores start as a copy of those under this directory (a
    /// replay sees the user's choices and stores; nothing is written back).
    pub(crate) store_seed: Option<PathBuf>,
    pub(crate) stores: Mutex<HashMap<String, StoreBox>>,
    /// What extensions show, as the host keeps it (frames draw from this only).
    pub(crate) board: Mutex<Board>,
    /// The user's choices about contributions (hidden and collapsed sections, designs).
    pub(crate) prefs: Mutex<Prefs>,
    /// Bumped whenever a card or transform answer arrives.
    pub(crate) generation: AtomicU64,
    /// Bumped whenever every card must be drawn again (a design switched, a transform's
    /// rewrites replaced, an extension disabled).
    pub(crate) epoch: AtomicU64,
    /// A headless run: no section is ever shown.
    pub(crate) headless: bool,
    /// Prompts an extension may send per minute (`drive`).
    pub(crate) drive_per_minute: u32,
    /// A weak handle to this value (for wakers).
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Shared>>,
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
            repaint_asked: AtomicBool::new(false),
            me: std::sync::OnceLock::new(),
            mirror: RwLock::new(Mirror::default()),
            outbox,
            path_map,
            store_dir,
            store_seed: None,
            stores: Mutex::new(HashMap::new()),
            board: Mutex::new(Board::default()),
            prefs: Mutex::new(Prefs::default()),
            generation: AtomicU64::new(0),
            epoch: AtomicU64::new(1),
            headless: false,
            drive_per_minute: crate::DRIVE_PER_MINUTE,
        }
    }

    pub(crate) fn send(&self, msg: HostMsg) {
        let _ = self.outbox.send(msg);
    }

    /// Asks the front end to draw again, unless such a request is already on its way.
    pub(crate) fn ask_repaint(&self) {
        if !self.headless && !self.repaint_asked.swap(true, Ordering::AcqRel) {
            self.send(HostMsg::Repaint);
        }
    }

    /// The runtime took a repaint request: the next one is sent again.
    pub(crate) fn repaint_taken(&self) {
        self.repaint_asked.store(false, Ordering::Release);
    }

    pub(crate) fn board(&self) -> std::sync::MutexGuard<'_, Board> {
        lock(&self.board)
    }

    /// Whether section `key` (`extension/id`) is shown and expanded.
    pub(crate) fn shown(&self, key: &str, default_collapsed: bool) -> bool {
        if self.headless {
            return false;
        }
        let p = lock(&self.prefs);
        !p.hidden.contains(key) && !p.collapsed.get(key).copied().unwrap_or(default_collapsed)
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
                None => StoreBox::Memory(
                    self.store_seed
                        .as_deref()
                        .map(|d| ExtStore::read_only(d, ns))
                        .unwrap_or_default(),
                ),
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
