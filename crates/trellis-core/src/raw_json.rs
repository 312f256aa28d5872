//! A JSON value kept as the agent wrote it: a call's `rawInput` and `rawOutput`, which
//! Trellis shows and hands on but never reads as a structure on the hot path.
//!
//! Why not serde_json's `Box<RawValue>`: building one checks the text again, and the hot
//! reader (`hot::scan`) has already checked it by the same grammar while finding its end
//! — a tool's arguments were checked twice per call, 3 % of a headless run's instructions.
//! A `RawJson` is made either from text that reader accepted ([`RawJson::scanned`], this
//! crate only; the reader's property test holds it to serde_json: what it accepts, serde
//! accepts) or through serde_json's own check ([`RawJson::from_string`], deserializing).
//! It serializes exactly as a `RawValue` does, so every serde_json serializer (and
//! `compact_json`) writes it verbatim.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// Valid JSON text, written as it came.
#[derive(Clone, PartialEq, Eq)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// `text`, checked by serde_json.
    pub fn from_string(text: String) -> Result<RawJson, serde_json::Error> {
        RawValue::from_string(text).map(|r| RawJson(r.into()))
    }

    /// Text the hot reader accepted as one JSON value (its grammar check is serde_json's:
    /// `hot::scan`'s property test).
    pub(crate) fn scanned(text: &str) -> RawJson {
        RawJson(text.into())
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for RawJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> RawJson {
        RawJson(raw.into())
    }
}

impl Serialize for RawJson {
    /// As serde_json's `RawValue` serializes itself: a struct of one field, both named by
    /// its token, which its serializers (and `compact_json`'s) write as the text itself.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct(crate::compact_json::RAW_VALUE_TOKEN, 1)?;
        st.serialize_field(crate::compact_json::RAW_VALUE_TOKEN, &*self.0)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawJson, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_written_as_a_raw_value_is_by_every_writer() {
        let text = r#"{"a": [1, 2.5e3, "\u0041"]}"#;
        let ours = RawJson::from_string(text.into()).unwrap();
        let theirs = RawValue::from_string(text.into()).unwrap();
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
        assert_eq!(serde_json::to_string(&ours).unwrap(), text);
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::json!({"a": [1, 2500.0, "A"]})
        );
        let mut out = Vec::new();
        crate::compact_json::to_vec_into(&mut out, &ours).unwrap();
        assert_eq!(out, text.as_bytes());
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        assert!(RawJson::from_string("{\"a\":".into()).is_err());
        assert!(serde_json::from_str::<RawJson>("[1,]").is_err());
        let r: RawJson = serde_json::from_str(" [1, 2] ").unwrap();
        assert_eq!(r.get(), "[1, 2]");
    }
}
