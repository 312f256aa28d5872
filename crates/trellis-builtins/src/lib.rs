//! Trellis's built-in extensions. Each is written only against the public extension API
//! (`trellis_core::ext`): nothing here reaches into the host, the UI or the session.
//!
//! Declared order (which is also the permission claim order): follow, permissions,
//! stats, cards, redact.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cards;
pub mod follow;
pub mod permissions;
pub mod redact;
pub mod stats;

use trellis_core::ext::Extension;

/// Every built-in extension, in declared order.
pub fn all() -> Vec<Box<dyn Extension>> {
    vec![
        Box::new(follow::Follow::default()),
        Box::new(permissions::Permissions::default()),
        Box::new(stats::Stats::default()),
        Box::new(cards::Cards::default()),
        Box::new(redact::Redact::default()),
    ]
}

/// Names of the built-ins (for config validation and docs).
pub const NAMES: &[&str] = &["follow", "permissions", "stats", "cards", "redact"];

pub(crate) fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// `path` relative to the session's directory when it lies inside it.
pub fn short_path(path: &str, cwd: Option<&str>) -> String {
    match cwd.and_then(|c| path.strip_prefix(c.trim_end_matches('/'))) {
        Some(rest) if rest.starts_with('/') && rest.len() > 1 => rest[1..].to_string(),
        _ => path.to_string(),
    }
}

/// Seconds as a short human duration.
pub(crate) fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    }
}
