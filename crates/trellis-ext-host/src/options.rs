//! What the user's config says to the host: per extension (`[extensions.NAME]`) and for
//! the host as a whole (`[extensions]`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use trellis_core::ext::Capability;

/// The user's config for one extension (`[extensions.NAME]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtConfig {
    /// Built-ins default to enabled; anything else must be enabled explicitly.
    pub enabled: Option<bool>,
    /// Capabilities granted; `None`: everything a built-in requests (plugins: nothing).
    pub grant: Option<Vec<Capability>>,
    /// `[extensions.NAME.options]`, as JSON (`Null` when absent).
    pub options: Value,
}

/// Host settings (`[extensions]`).
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Failures before an extension is disabled.
    pub failure_limit: u32,
    /// Events queued per extension before it is disabled as too slow.
    pub queue: usize,
    /// Seconds a claimant has to answer a permission request.
    pub permission_timeout: f64,
    /// Agent path prefix → local path prefix.
    pub path_map: Vec<(String, String)>,
    /// Where stores live (`None`: in memory, e.g. tests and replays).
    pub store_dir: Option<PathBuf>,
    /// With `store_dir` `None`: the in-memory stores start as a copy of the ones under
    /// this directory (replays: the user's chosen designs and extension stores, read
    /// only).
    pub store_seed: Option<PathBuf>,
    /// A headless run: extensions whose manifest says `ui_only` are not started.
    pub headless: bool,
    pub config: BTreeMap<String, ExtConfig>,
    /// Facts found while choosing what to load (plugins not started and why), shown in
    /// `/status`.
    pub notes: Vec<String>,
    /// Prompts an extension holding `drive` may send per minute; more are refused.
    pub drive_per_minute: u32,
    /// A hub's host of its hub-wide plugins: events of every session come through it, so
    /// it keeps no session's state (reads answer nothing; events carry everything).
    pub hub_wide: bool,
}

impl Default for HostOptions {
    fn default() -> HostOptions {
        HostOptions {
            failure_limit: 5,
            queue: 16384,
            permission_timeout: 30.0,
            path_map: Vec::new(),
            store_dir: None,
            store_seed: None,
            headless: false,
            config: BTreeMap::new(),
            notes: Vec::new(),
            drive_per_minute: DRIVE_PER_MINUTE,
            hub_wide: false,
        }
    }
}

/// Prompts an extension may send per minute unless `[extensions] drive_per_minute` says
/// otherwise: a "please continue" plugin is stopped long before it runs dozens of turns.
pub const DRIVE_PER_MINUTE: u32 = 6;
