//! The agent's settings as a user names them: `key = value` checked against the config
//! options (or legacy modes) the agent offers, then asked of the agent.

use trellis_acp::Command;

use crate::Driver;

/// A setting the user asked for, checked against what the agent offers.
#[derive(Debug, Clone, PartialEq)]
pub enum Setting {
    /// One of the agent's config options.
    Option {
        id: String,
        name: String,
        value: trellis_core::session_config::ConfigValue,
    },
    /// A legacy session mode (`session/set_mode`).
    Mode(String),
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Option { name, value, .. } => write!(f, "{name} = {value}"),
            Setting::Mode(m) => write!(f, "mode = {m}"),
        }
    }
}

impl Driver {
    /// Reads a setting as a user typed it: `key` is an option's id, category (`model`,
    /// `mode`, `thought_level`…) or name, `value` a choice's value or name (on/off for a
    /// switch). `mode` also names the legacy modes when the agent offers no config option
    /// of that category. Nothing is sent (see [`Driver::send_setting`]).
    pub fn resolve_setting(&self, key: &str, value: &str) -> Result<Setting, String> {
        use trellis_core::session_config::find;
        if let Some(o) = find(&self.session.config, key) {
            return Ok(Setting::Option {
                id: o.id.clone(),
                name: o.name.clone(),
                value: o.parse_value(value)?,
            });
        }
        if key.trim().eq_ignore_ascii_case("mode") && !self.session.modes.is_empty() {
            let v = value.trim();
            let m = self
                .session
                .modes
                .iter()
                .find(|m| m.value == v || m.name.eq_ignore_ascii_case(v))
                .ok_or_else(|| {
                    let ids: Vec<&str> = self
                        .session
                        .modes
                        .iter()
                        .map(|m| m.value.as_str())
                        .collect();
                    format!(
                        "mode: `{v}` is not one of the agent's modes ({})",
                        ids.join(", ")
                    )
                })?;
            return Ok(Setting::Mode(m.value.clone()));
        }
        let mut keys: Vec<String> = self.session.config.iter().map(|o| o.id.clone()).collect();
        if !self.session.modes.is_empty() {
            keys.push("mode".into());
        }
        Err(if keys.is_empty() {
            format!("`{}`: the agent offers no options to set", key.trim())
        } else {
            format!(
                "`{}` is not an option of the agent ({})",
                key.trim(),
                keys.join(", ")
            )
        })
    }

    /// Asks the agent for a setting (its answer comes as
    /// [`trellis_core::EventBody::ConfigChanged`] or `ModeChanged`, or a warning).
    pub fn send_setting(&mut self, setting: Setting) {
        let cmd = match setting {
            Setting::Option { id, value, .. } => Command::SetConfigOption { id, value },
            Setting::Mode(mode) => Command::SetMode { mode },
        };
        if let Some(c) = &self.conn {
            c.handle.send(cmd);
        }
    }
}
