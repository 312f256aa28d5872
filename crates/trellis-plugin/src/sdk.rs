//! The SDKs shipped with Trellis (written where plugins find them, so a plugin never
//! needs to vendor a copy; a vendored copy next to the plugin wins).

/// `trellis_plugin.py`: the Python SDK (standard library only, Python ≥ 3.9).
pub const PYTHON: &str = include_str!("../../../sdk/python/trellis_plugin.py");

/// `trellis-plugin.mjs`: the TypeScript/JavaScript SDK (ESM, no dependencies, Node ≥ 20);
/// packages carry it (`trellis plugin new --lang typescript` writes it into `lib/`).
pub const TYPESCRIPT: &str = include_str!("../../../sdk/typescript/trellis-plugin.mjs");

/// `trellis-plugin.d.mts`: its types.
pub const TYPESCRIPT_TYPES: &str = include_str!("../../../sdk/typescript/trellis-plugin.d.mts");
