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
    fn serialize_bool(self, _: bool) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_i64(self, _: i64) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_u64(self, _: u64) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_i8(self, _: i8) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_i16(self, _: i16) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_i32(self, _: i32) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_u8(self, _: u8) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_u16(self, _: u16) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_u32(self, _: u32) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_f32(self, _: f32) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_char(self, _: char) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        Err(raw_error())
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
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
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
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(raw_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(raw_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(raw_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(raw_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(raw_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(raw_error())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(raw_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(raw_error())
    }
}

fn raw_error() -> Error {
    Error("a raw JSON value must be a string of JSON".into())
}
