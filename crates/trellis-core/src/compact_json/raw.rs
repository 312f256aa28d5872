//! serde_json's raw values, written verbatim.

use serde::ser::{self, Serialize};

use super::Error;

/// Writes the one field of a serde_json raw value (a `&str` of JSON) as it is.
pub(super) struct RawWriter<'a> {
    pub(super) out: &'a mut Vec<u8>,
}

impl ser::Serializer for RawWriter<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.out.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(raw_error())
    }
    refuse!(
        raw_error;
        serialize_bool(bool),
        serialize_i64(i64),
        serialize_u64(u64),
        serialize_f64(f64),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_f32(f32),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );
    refuse!(raw_error; compounds);
}

fn raw_error() -> Error {
    Error("a raw JSON value must be a string of JSON".into())
}
