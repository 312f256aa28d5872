//! Elicitations: the agent asks the user for structured input (`elicitation/create`), as a
//! form built from a restricted JSON Schema or as a link to visit (URL mode).
//!
//! Invariants: decoding never fails on what the schema allows to grow (an unknown property
//! type becomes [`FieldKind::Unsupported`], an unknown mode is refused by the client, never
//! rendered); fields keep the agent's order; [`Form::check`] is the only validation, used by
//! the dialog, headless answers and extensions alike, so an accepted answer always matches
//! the requested schema.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One request for input, as the session keeps it while it is open.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Elicitation {
    /// The JSON-RPC id of the agent's request (canonical JSON text).
    pub request_id: String,
    /// The tool call the question belongs to, when the agent named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The subagent (child session id) that asks; none: the session itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
    /// What the agent says it needs.
    pub message: String,
    #[serde(flatten)]
    pub mode: ElicitMode,
}

/// How the input is collected.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitMode {
    /// Fields to fill in.
    Form(Form),
    /// A page for the user to visit (sign-in, payment…): the data never passes through
    /// the client; the agent later says `elicitation/complete`.
    Url { elicitation_id: String, url: String },
}

/// A form: the requested schema's fields, in the agent's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Form {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub fields: Vec<Field>,
}

/// One property of the requested schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Field {
    /// The property name (the key of the answer's `content`).
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
    #[serde(flatten)]
    pub kind: FieldKind,
}

impl Field {
    /// The label a form shows: the title, else the property name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        #[serde(skip_serializing_if = "Option::is_none")]
        min_length: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_length: Option<u64>,
        /// A regular expression the whole value must match.
        #[serde(skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
        /// `email`, `uri`, `date`, `date-time` (checked), or another word (not checked).
        #[serde(skip_serializing_if = "Option::is_none")]
        format: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
    Number {
        /// Whole numbers only (`integer` in the schema).
        integer: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<f64>,
    },
    Boolean {
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<bool>,
    },
    /// One value of a list (`enum` or `oneOf` of a string).
    Choice {
        options: Vec<ChoiceOption>,
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
    /// Any number of values of a list (an `array` of `enum`/`anyOf` items).
    Multi {
        options: Vec<ChoiceOption>,
        #[serde(skip_serializing_if = "Option::is_none")]
        min_items: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_items: Option<u64>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        default: Vec<String>,
    },
    /// A property type this client cannot edit (`schema_type` as the agent named it): a
    /// form with such a required field can only be declined.
    Unsupported { schema_type: String },
}

/// One value a choice offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChoiceOption {
    pub value: String,
    /// What the user sees (the value when the agent gave no title).
    pub title: String,
}

/// The answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Form: the content (checked with [`Form::check`]); URL: the user agreed to visit.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// Dismissed without a choice (or nobody is left to answer).
    Cancel,
}

impl ElicitAnswer {
    /// The action's name on the wire.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitAnswer::Accept(_) => "accept",
            ElicitAnswer::Decline => "decline",
            ElicitAnswer::Cancel => "cancel",
        }
    }

    /// The `elicitation/create` result.
    pub fn to_json(&self) -> Value {
        match self {
            ElicitAnswer::Accept(c) if !c.is_empty() => {
                serde_json::json!({"action": "accept", "content": c})
            }
            other => serde_json::json!({"action": other.action()}),
        }
    }
}

/// Why an `elicitation/create` could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The params do not decode.
    Malformed(String),
    /// A mode this client does not know (it must not be rendered as a known one).
    UnknownMode(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed(e) => write!(f, "malformed elicitation: {e}"),
            Refusal::UnknownMode(m) => write!(f, "unsupported elicitation mode {m:?}"),
        }
    }
}

/// The modes the client advertised (`clientCapabilities.elicitation`), as the session saw
/// them in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offered {
    pub form: bool,
    pub url: bool,
}

impl Offered {
    /// Reads `initialize` params (their JSON text).
    pub fn from_initialize(params: &str) -> Offered {
        let v: Value = serde_json::from_str(params).unwrap_or(Value::Null);
        let e = &v["clientCapabilities"]["elicitation"];
        Offered {
            form: e["form"].is_object(),
            url: e["url"].is_object(),
        }
    }

    /// Whether `mode` was offered.
    pub fn allows(&self, mode: &ElicitMode) -> bool {
        match mode {
            ElicitMode::Form(_) => self.form,
            ElicitMode::Url { .. } => self.url,
        }
    }
}

/// The scope fields of the params (`sessionId` + `toolCallId`, or `requestId`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub session_id: Option<String>,
    pub call_id: Option<String>,
}

/// Decodes `elicitation/create` params (their JSON text) for request `request_id`.
pub fn parse(request_id: &str, params: &str) -> Result<(Scope, Elicitation), Refusal> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        #[serde(default)]
        mode: Option<String>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        session_id: Option<String>,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        elicitation_id: Option<String>,
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        requested_schema: Option<RawSchema>,
    }
    let p: Params = serde_json::from_str(params).map_err(|e| Refusal::Malformed(e.to_string()))?;
    let scope = Scope {
        session_id: p.session_id,
        call_id: p.tool_call_id,
    };
    let mode = match p.mode.as_deref() {
        Some("form") => {
            let schema = p
                .requested_schema
                .ok_or_else(|| Refusal::Malformed("a form without requestedSchema".into()))?;
            ElicitMode::Form(schema.into_form())
        }
        Some("url") => {
            let url = p
                .url
                .ok_or_else(|| Refusal::Malformed("a URL elicitation without url".into()))?;
            let elicitation_id = p.elicitation_id.ok_or_else(|| {
                Refusal::Malformed("a URL elicitation without elicitationId".into())
            })?;
            ElicitMode::Url {
                elicitation_id,
                url,
            }
        }
        Some(other) => return Err(Refusal::UnknownMode(other.to_string())),
        None => return Err(Refusal::Malformed("no mode".into())),
    };
    Ok((
        scope.clone(),
        Elicitation {
            request_id: request_id.to_string(),
            call_id: scope.call_id,
            subagent: None,
            message: p.message.unwrap_or_default(),
            mode,
        },
    ))
}

/// `requestedSchema`, with its properties in the order they came.
#[derive(Deserialize)]
struct RawSchema {
    #[serde(default)]
    title: Option<Value>,
    #[serde(default)]
    description: Option<Value>,
    #[serde(default)]
    properties: Ordered,
    #[serde(default)]
    required: Option<Value>,
}

/// A JSON object's members in document order (serde_json's map sorts them).
#[derive(Default)]
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some((k, val)) = m.next_entry::<String, Value>()? {
                    // A repeated key: the last one wins, in the first one's place.
                    match v.iter_mut().find(|(name, _)| *name == k) {
                        Some(slot) => slot.1 = val,
                        None => v.push((k, val)),
                    }
                }
                Ok(Ordered(v))
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::default())
            }
        }
        d.deserialize_any(V)
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
}

/// The options of an `enum` (plain values) or `oneOf`/`anyOf` (`const` + `title`) list.
fn options(plain: Option<&Value>, titled: Option<&Value>) -> Option<Vec<ChoiceOption>> {
    if let Some(list) = titled.and_then(Value::as_array) {
        return Some(
            list.iter()
                .filter_map(|o| {
                    let value = o.get("const")?.as_str()?.to_string();
                    let title = text(o.get("title")).unwrap_or_else(|| value.clone());
                    Some(ChoiceOption { value, title })
                })
                .collect(),
        );
    }
    let list = plain.and_then(Value::as_array)?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(|v| ChoiceOption {
                value: v.to_string(),
                title: v.to_string(),
            })
            .collect(),
    )
}

impl RawSchema {
    fn into_form(self) -> Form {
        let required: Vec<String> = self
            .required
            .as_ref()
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let fields = self
            .properties
            .0
            .into_iter()
            .map(|(name, p)| {
                let kind = field_kind(&p);
                Field {
                    required: required.contains(&name),
                    title: text(p.get("title")),
                    description: text(p.get("description")),
                    name,
                    kind,
                }
            })
            .collect();
        Form {
            title: text(self.title.as_ref()),
            description: text(self.description.as_ref()),
            fields,
        }
    }
}

fn field_kind(p: &Value) -> FieldKind {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "string" => match options(p.get("enum"), p.get("oneOf")) {
            Some(options) => FieldKind::Choice {
                default: text(p.get("default")).filter(|d| options.iter().any(|o| o.value == *d)),
                options,
            },
            None => FieldKind::Text {
                min_length: count(p.get("minLength")),
                max_length: count(p.get("maxLength")),
                pattern: text(p.get("pattern")),
                format: text(p.get("format")),
                default: text(p.get("default")),
            },
        },
        "number" | "integer" => FieldKind::Number {
            integer: ty == "integer",
            minimum: p.get("minimum").and_then(Value::as_f64),
            maximum: p.get("maximum").and_then(Value::as_f64),
            default: p.get("default").and_then(Value::as_f64),
        },
        "boolean" => FieldKind::Boolean {
            default: p.get("default").and_then(Value::as_bool),
        },
        "array" => {
            let items = p.get("items");
            match options(
                items.and_then(|i| i.get("enum")),
                items.and_then(|i| i.get("anyOf")),
            ) {
                Some(options) => FieldKind::Multi {
                    default: p
                        .get("default")
                        .and_then(Value::as_array)
                        .map(|d| {
                            d.iter()
                                .filter_map(Value::as_str)
                                .filter(|v| options.iter().any(|o| o.value == *v))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                    min_items: count(p.get("minItems")),
                    max_items: count(p.get("maxItems")),
                    options,
                },
                None => FieldKind::Unsupported {
                    schema_type: "array".into(),
                },
            }
        }
        other => FieldKind::Unsupported {
            schema_type: if other.is_empty() {
                "untyped".into()
            } else {
                other.to_string()
            },
        },
    }
}

mod check;
pub use check::{Problem, from_input};

#[cfg(test)]
mod tests;
