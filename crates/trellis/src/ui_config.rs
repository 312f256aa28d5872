//! `[ui]` from the config applied to a session's app (cursor, keys, output policies,
//! theme): for the UI, attach and every launch alike.

use trellis_store::Config;
use trellis_tui::App;

/// Applies `[ui]` from the config to the app; a bad value is an error naming file, line
/// and key.
pub(crate) fn apply_ui_config(app: &mut App, config: &Config) -> anyhow::Result<()> {
    use trellis_store::config::KeySetting;
    use trellis_tui::app::CursorMode;
    use trellis_view::{OutputPolicies, OutputPolicy};
    let ui = &config.ui;
    if let Some(c) = &ui.cursor {
        app.cursor_mode = CursorMode::parse(c).ok_or_else(|| {
            config.invalid(
                "ui",
                "cursor",
                format!("{c:?} is not one of exact, nearest, above, below"),
            )
        })?;
    }
    app.key_hints = ui.key_hints.unwrap_or(true);
    app.alerts = trellis_tui::app::Alerts {
        bell: ui.bell.unwrap_or(true),
        title: ui.title_marker.unwrap_or(true),
        notify: ui.notify.unwrap_or(true),
    };
    let mut by_kind = Vec::new();
    for (kind, policy) in &ui.output {
        let k = trellis_core::ToolKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| {
                config.invalid("ui.output", kind, format!("{kind:?} is not a tool kind"))
            })?;
        let words: Vec<&str> = policy.split_whitespace().collect();
        let p = match words.as_slice() {
            ["hidden"] => OutputPolicy::Hidden,
            ["full"] => OutputPolicy::Full,
            ["preview", n] => OutputPolicy::Preview(n.parse().map_err(|_| {
                config.invalid("ui.output", kind, format!("{n:?} is not a number of lines"))
            })?),
            _ => {
                return Err(config
                    .invalid(
                        "ui.output",
                        kind,
                        format!("{policy:?} is not \"hidden\", \"preview N\" or \"full\""),
                    )
                    .into());
            }
        };
        by_kind.push((k, p));
    }
    app.view.policies = OutputPolicies {
        by_kind,
        ..OutputPolicies::default()
    };
    let mut keys = std::collections::BTreeMap::new();
    for (action, setting) in &ui.keys {
        // The session keys are the deck's (`deck_keys`).
        if trellis_tui::deck::DeckAction::is_name(action) {
            continue;
        }
        if !trellis_tui::keymap::KeyAction::ALL
            .iter()
            .any(|(_, n, _)| n == action)
        {
            let known: Vec<&str> = trellis_tui::keymap::KeyAction::ALL
                .iter()
                .map(|(_, n, _)| *n)
                .collect();
            return Err(config
                .invalid(
                    "ui.keys",
                    action,
                    format!("unknown key action (known: {})", known.join(", ")),
                )
                .into());
        }
        let v = match setting {
            KeySetting::Keys(s) => {
                trellis_tui::keymap::parse_keys(s)
                    .map_err(|e| config.invalid("ui.keys", action, e.0))?;
                Some(s.clone())
            }
            KeySetting::Enabled(false) => None,
            KeySetting::Enabled(true) => {
                return Err(config
                    .invalid(
                        "ui.keys",
                        action,
                        "use a key like \"gT\", or false to disable",
                    )
                    .into());
            }
        };
        keys.insert(action.clone(), v);
    }
    app.keys = trellis_tui::keymap::Keymap::new(&keys).map_err(|e| {
        let key = ui
            .keys
            .keys()
            .find(|k| e.0.contains(k.as_str()))
            .cloned()
            .unwrap_or_else(|| "keys".into());
        config.invalid("ui.keys", &key, e.0)
    })?;
    Ok(())
}
