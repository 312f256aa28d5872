//! The SDKs shipped with Trellis (written where plugins find them, so a plugin never
//! needs to vendor a copy; a vendored copy next to the plugin wins).

/// `trellis_plugin.py`: the Python SDK (standard library only, Python ≥ 3.9).
pub const PYTHON: &str = include_str!("../../../sdk/python/trellis_plugin.py");
