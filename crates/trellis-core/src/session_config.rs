//! The session's configuration as the agent offers it: ACP config options (`configOptions`
//! in the session setup responses, `config_option_update`, the answer to
//! `session/set_config_option`) and the legacy modes (`modes`, `current_mode_update`).
//!
//! Read leniently, like the rest of the agent's input: an option of a kind Trellis does
//! not know, or one without an id, is skipped; so is a choice without a value.

use serde::Serialize;
use serde_json::Value;

/// One option the agent offers (a selector or a switch).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConfigOption {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mode`, `model`, `model_config`, `thought_level`, or the agent's own word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The current value: a choice's `value`, or a boolean.
    pub value: ConfigValue,
    /// What a selector may be set to (empty for a boolean option).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<ConfigChoice>,
}

pub use trellis_plugin_protocol::ConfigValue;

/// One choice of a selector (or one legacy mode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConfigChoice {
    pub value: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The group's name, for grouped choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl ConfigOption {
    pub fn is_boolean(&self) -> bool {
        matches!(self.value, ConfigValue::Bool(_))
    }

    /// The current value as shown: the choice's name, or on/off.
    pub fn shown_value(&self) -> String {
        match &self.value {
            ConfigValue::Id(v) => self
                .choices
                .iter()
                .find(|c| &c.value == v)
                .map_or_else(|| v.clone(), |c| c.name.clone()),
            b => b.to_string(),
        }
    }

    /// Reads what a user typed as a value of this option: a choice's value or name
    /// (any case), or for a switch on/off, true/false, yes/no, 1/0.
    pub fn parse_value(&self, text: &str) -> Result<ConfigValue, String> {
        let t = text.trim();
        if self.is_boolean() {
            return match t.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => Ok(ConfigValue::Bool(true)),
                "off" | "false" | "no" | "0" => Ok(ConfigValue::Bool(false)),
                _ => Err(format!("{}: `{t}` is not on or off", self.name)),
            };
        }
        self.choices
            .iter()
            .find(|c| c.value == t)
            .or_else(|| {
                self.choices
                    .iter()
                    .find(|c| c.value.eq_ignore_ascii_case(t) || c.name.eq_ignore_ascii_case(t))
            })
            .map(|c| ConfigValue::Id(c.value.clone()))
            .ok_or_else(|| {
                let names: Vec<&str> = self.choices.iter().map(|c| c.value.as_str()).collect();
                format!(
                    "{}: `{t}` is not one of its choices ({})",
                    self.name,
                    names.join(", ")
                )
            })
    }
}

/// Finds the option a user means by `key`: its id, else its category, else its name (any
/// case).
pub fn find<'a>(options: &'a [ConfigOption], key: &str) -> Option<&'a ConfigOption> {
    let key = key.trim();
    options
        .iter()
        .find(|o| o.id == key)
        .or_else(|| options.iter().find(|o| o.category.as_deref() == Some(key)))
        .or_else(|| options.iter().find(|o| o.name.eq_ignore_ascii_case(key)))
}

/// The options of a `configOptions` array.
pub fn parse_options(v: &Value) -> Vec<ConfigOption> {
    v.as_array()
        .map(|a| a.iter().filter_map(parse_option).collect())
        .unwrap_or_default()
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn parse_option(v: &Value) -> Option<ConfigOption> {
    let id = text(v, "id").filter(|s| !s.is_empty())?;
    let name = text(v, "name").unwrap_or_else(|| id.clone());
    let (value, choices) = match v.get("type").and_then(Value::as_str)? {
        "select" => {
            let current = text(v, "currentValue")?;
            (ConfigValue::Id(current), parse_choices(v.get("options")?))
        }
        "boolean" => (
            ConfigValue::Bool(v.get("currentValue").and_then(Value::as_bool)?),
            Vec::new(),
        ),
        _ => return None,
    };
    Some(ConfigOption {
        id,
        name,
        description: text(v, "description"),
        category: text(v, "category"),
        value,
        choices,
    })
}

/// Choices, ungrouped (`[{value, name}]`) or grouped (`[{group, name, options}]`).
fn parse_choices(v: &Value) -> Vec<ConfigChoice> {
    let mut out = Vec::new();
    for item in v.as_array().into_iter().flatten() {
        if let Some(inner) = item.get("options").and_then(Value::as_array) {
            let group = text(item, "name").or_else(|| text(item, "group"));
            out.extend(
                inner
                    .iter()
                    .filter_map(|c| choice(c, "value", group.clone())),
            );
        } else if let Some(c) = choice(item, "value", None) {
            out.push(c);
        }
    }
    out
}

fn choice(v: &Value, key: &str, group: Option<String>) -> Option<ConfigChoice> {
    let value = text(v, key).filter(|s| !s.is_empty())?;
    Some(ConfigChoice {
        name: text(v, "name").unwrap_or_else(|| value.clone()),
        description: text(v, "description"),
        value,
        group,
    })
}

/// The legacy modes (`availableModes`: `[{id, name, description}]`).
pub fn parse_modes(v: &[Value]) -> Vec<ConfigChoice> {
    v.iter().filter_map(|m| choice(m, "id", None)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_switches_groups_and_what_is_skipped() {
        let v = json!([
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "fast", "options": [
                {"value": "fast", "name": "Fast"}, {"value": "deep", "name": "Deep", "description": "slow"},
                {"name": "no value"}]},
            {"id": "effort", "name": "Effort", "type": "select", "currentValue": "low",
             "options": [{"group": "g1", "name": "Cheap", "options": [{"value": "low", "name": "Low"}]},
                         {"group": "g2", "name": "Dear", "options": [{"value": "high", "name": "High"}]}]},
            {"id": "web", "name": "Web search", "type": "boolean", "currentValue": false},
            {"id": "odd", "name": "Odd", "type": "slider", "currentValue": 3},
            {"name": "no id", "type": "boolean", "currentValue": true},
            "not an object"
        ]);
        let o = parse_options(&v);
        assert_eq!(o.len(), 3);
        assert_eq!(o[0].choices.len(), 2);
        assert_eq!(o[0].shown_value(), "Fast");
        assert_eq!(o[1].choices[1].group.as_deref(), Some("Dear"));
        assert_eq!(o[2].value, ConfigValue::Bool(false));
        assert_eq!(o[2].shown_value(), "off");
        assert_eq!(find(&o, "model").map(|x| x.id.as_str()), Some("model"));
        assert_eq!(find(&o, "web search").map(|x| x.id.as_str()), Some("web"));
        assert_eq!(o[0].parse_value("DEEP"), Ok(ConfigValue::Id("deep".into())));
        assert!(o[0].parse_value("huge").unwrap_err().contains("fast, deep"));
        assert_eq!(o[2].parse_value("on"), Ok(ConfigValue::Bool(true)));
        assert!(o[2].parse_value("maybe").is_err());
    }
}
