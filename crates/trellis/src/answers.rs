//! Headless answers to the agent's questions (`elicitation/create`): a run has nobody to
//! fill in a form, so it answers from `--answers FILE` (a JSON object: field name → value)
//! or declines, saying why on stderr. Links (URL mode) are not offered headless.
//!
//! One file serves every form of the run: a form takes the file's values for its own
//! fields, its defaults for the others, and is accepted only when [`Form::check`] passes
//! (the same check the dialog and the reducer apply); otherwise it is declined and
//! every problem is named.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};
use trellis_core::elicitation::{ElicitMode, Form};
use trellis_core::{ElicitAnswer, Elicitation};

/// The most an answers file may hold.
const MAX_BYTES: u64 = 1 << 20;

pub struct Answers {
    values: Option<Map<String, Value>>,
}

impl Answers {
    /// No file: every form is declined.
    pub fn none() -> Answers {
        Answers { values: None }
    }

    /// Reads `path` (a regular file or a pipe such as `<(…)`): a JSON object of at most
    /// 1 MiB.
    pub fn load(path: &Path) -> anyhow::Result<Answers> {
        let file = std::fs::File::open(path)
            .with_context(|| format!("--answers {}: cannot open", path.display()))?;
        let mut text = String::new();
        file.take(MAX_BYTES + 1)
            .read_to_string(&mut text)
            .with_context(|| format!("--answers {}: not readable UTF-8 text", path.display()))?;
        if text.len() as u64 > MAX_BYTES {
            anyhow::bail!("--answers {}: larger than 1 MiB", path.display());
        }
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("--answers {}: not JSON", path.display()))?;
        match value {
            Value::Object(values) => Ok(Answers {
                values: Some(values),
            }),
            _ => anyhow::bail!(
                "--answers {}: expected a JSON object (field name → value)",
                path.display()
            ),
        }
    }

    /// Whether a file was given (else questions are declined, or wait for a hub).
    pub fn given(&self) -> bool {
        self.values.is_some()
    }

    /// Who the session log names as the answer's decider.
    pub fn decider(&self) -> trellis_core::Decider {
        let by = if self.values.is_some() {
            "--answers"
        } else {
            "headless"
        };
        trellis_core::Decider::Policy(by.into())
    }

    /// The answer to `e`, and what to tell the user about it.
    pub fn answer(&self, e: &Elicitation) -> (ElicitAnswer, String) {
        let form = match &e.mode {
            ElicitMode::Form(f) => f,
            ElicitMode::Url { .. } => {
                return (
                    ElicitAnswer::Decline,
                    format!(
                        "declined the agent's link ({}): a headless run opens no links",
                        e.message
                    ),
                );
            }
        };
        let what = match &form.title {
            Some(t) => format!("form {t:?}"),
            None => format!("form ({})", e.message),
        };
        let Some(values) = &self.values else {
            return (
                ElicitAnswer::Decline,
                format!(
                    "declined the agent's {what}: a headless run has nobody to fill it in (answer it with --answers FILE)"
                ),
            );
        };
        match form.check(&content(form, values)) {
            Ok(c) => {
                let names: Vec<_> = c.keys().map(String::as_str).collect();
                (
                    ElicitAnswer::Accept(c.clone()),
                    format!(
                        "answered the agent's {what} from --answers ({})",
                        names.join(", ")
                    ),
                )
            }
            Err(problems) => {
                let list: Vec<_> = problems.into_iter().map(|p| p.1).collect();
                (
                    ElicitAnswer::Decline,
                    format!(
                        "declined the agent's {what}: --answers does not fill it in: {}",
                        list.join("; ")
                    ),
                )
            }
        }
    }
}

/// The form's defaults, overlaid with the file's values for the form's own fields.
fn content(form: &Form, values: &Map<String, Value>) -> Map<String, Value> {
    let mut c = form.defaults();
    for f in &form.fields {
        if let Some(v) = values.get(&f.name) {
            c.insert(f.name.clone(), v.clone());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(schema: &str) -> Elicitation {
        let params = format!(
            r#"{{"sessionId": "s", "mode": "form", "message": "Who?", "requestedSchema": {schema}}}"#
        );
        trellis_core::elicitation::parse("1", &params).unwrap().1
    }

    #[test]
    fn answers_fill_forms_with_defaults_and_decline_what_they_cannot() {
        let e = asked(
            r#"{"title": "Deploy", "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}, "n": {"type": "integer", "default": 2}}, "required": ["env"]}"#,
        );
        let file: Value = serde_json::json!({"env": "dev", "other_form_field": true});
        let a = Answers {
            values: file.as_object().cloned(),
        };
        let (answer, said) = a.answer(&e);
        assert_eq!(
            answer.to_json(),
            serde_json::json!({"action": "accept", "content": {"env": "dev", "n": 2}})
        );
        assert!(said.contains("\"Deploy\""), "{said}");
        let wrong = Answers {
            values: serde_json::json!({"env": "staging"}).as_object().cloned(),
        };
        let (answer, said) = wrong.answer(&e);
        assert_eq!(answer, ElicitAnswer::Decline);
        assert!(said.contains("env: "), "{said}");
        let (answer, said) = Answers::none().answer(&e);
        assert_eq!(answer, ElicitAnswer::Decline);
        assert!(said.contains("--answers FILE"), "{said}");
    }

    #[test]
    fn files_must_be_small_json_objects() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "[1]").unwrap();
        assert!(Answers::load(&p).is_err());
        std::fs::write(&p, vec![b' '; (MAX_BYTES + 2) as usize]).unwrap();
        assert!(format!("{:#}", Answers::load(&p).err().unwrap()).contains("1 MiB"));
        std::fs::write(&p, r#"{"a": 1}"#).unwrap();
        assert!(Answers::load(&p).unwrap().values.is_some());
    }
}
