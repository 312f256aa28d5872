//! `[[hooks]]` entries — the user's config's and a trusted project's — checked and made
//! into the hooks extension's entries, each named as its entry is written.

/// `[[hooks]]` entries (the config's, or a trusted project's), checked: a known event
/// type, a command, globs that compile, a positive timeout; an error (made by `invalid`)
/// names the entry and the key. Each hook is named as its entry is (`hooks[1]`, after
/// `source`: `project ` for a project's).
pub(crate) fn hooks_of(
    entries: &[trellis_store::config::HookConfig],
    source: &str,
    invalid: impl Fn(&str, &str, String) -> anyhow::Error,
) -> anyhow::Result<Vec<trellis_plugin::hooks::Hook>> {
    use trellis_core::glob::{GlobKind, compile};
    let mut out = Vec::new();
    for (i, h) in entries.iter().enumerate() {
        let table = format!("hooks[{i}]");
        let bad = |key: &str, why: String| invalid(&table, key, why);
        if !trellis_core::event::EVENT_KINDS.contains(&h.on.as_str()) {
            let kinds = trellis_core::event::EVENT_KINDS;
            let meant = trellis_plugin::package::nearest(&h.on, kinds.iter().copied())
                .map(|m| format!("; did you mean {m:?}?"))
                .unwrap_or_default();
            return Err(bad(
                "on",
                format!(
                    "{:?} is not an event type{meant} (docs/events.md: {})",
                    h.on,
                    kinds.join(", ")
                ),
            ));
        }
        if h.run.trim().is_empty() {
            return Err(bad("run", "an empty command".into()));
        }
        if let Some(k) = &h.kind
            && !trellis_core::ToolKind::ALL.iter().any(|x| x.as_str() == k)
        {
            let meant = trellis_plugin::package::nearest(
                k,
                trellis_core::ToolKind::ALL.iter().map(|x| x.as_str()),
            )
            .map(|m| format!("; did you mean {m:?}?"))
            .unwrap_or_default();
            return Err(bad(
                "kind",
                format!(
                    "{k:?} is not a tool kind{meant} (one of: {})",
                    trellis_core::ToolKind::ALL
                        .iter()
                        .map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if let Some(g) = &h.title {
            compile(g, GlobKind::Text).map_err(|e| bad("title", e))?;
        }
        if let Some(g) = &h.path {
            compile(g, GlobKind::Path).map_err(|e| bad("path", e))?;
        }
        let timeout = match h.timeout {
            None => trellis_plugin::hooks::DEFAULT_TIMEOUT,
            Some(t) if t > 0.0 && t.is_finite() => std::time::Duration::from_secs_f64(t),
            Some(_) => {
                return Err(bad(
                    "timeout",
                    "must be a positive number of seconds".into(),
                ));
            }
        };
        out.push(trellis_plugin::hooks::Hook {
            name: format!("{source}{table}"),
            on: h.on.clone(),
            run: h.run.clone(),
            kind: h.kind.clone(),
            title: h.title.clone(),
            path: h.path.clone(),
            status: h.status.clone(),
            timeout,
        });
    }
    Ok(out)
}
