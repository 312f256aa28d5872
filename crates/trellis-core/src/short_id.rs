//! [`ShortId`]: an id as a frame names it (a session, a tool call), held in place when it
//! is as short as agents' ids are.
//!
//! A streaming agent names its session on every line and a call on each of its updates;
//! those ids are only compared and looked up, and a `String` for each would be an
//! allocation per line, made on the thread that reads the agent and let go on the one that
//! reduces. A UUID (36 bytes) and the ids agents give their calls fit in place.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// An id, compared, hashed and borrowed as the `str` it holds.
#[derive(Clone)]
pub enum ShortId {
    Inline {
        len: u8,
        bytes: [u8; ShortId::INLINE],
    },
    Heap(Box<str>),
}

impl ShortId {
    /// The longest id held in place (the whole value is 64 bytes).
    pub const INLINE: usize = 62;

    pub fn new(id: &str) -> ShortId {
        match u8::try_from(id.len()) {
            Ok(len) if id.len() <= Self::INLINE => {
                let mut bytes = [0; Self::INLINE];
                bytes[..id.len()].copy_from_slice(id.as_bytes());
                ShortId::Inline { len, bytes }
            }
            _ => ShortId::Heap(id.into()),
        }
    }

    /// The id's bytes, without the check `as_str` makes: enough to compare.
    fn bytes(&self) -> &[u8] {
        match self {
            ShortId::Inline { len, bytes } => &bytes[..usize::from(*len)],
            ShortId::Heap(id) => id.as_bytes(),
        }
    }

    /// Bytes of the id (the `str`'s method, answered without making the `str`).
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether the id is empty (the `str`'s method, answered without making the `str`).
    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// Whether the id starts with `prefix` (the `str`'s method, answered without making
    /// the `str`: a check of every byte, per update, was 0.6 % of a headless run).
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.bytes().starts_with(prefix.as_bytes())
    }

    pub fn as_str(&self) -> &str {
        match self {
            // Copied whole from a `str`: always valid.
            ShortId::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            ShortId::Heap(id) => id,
        }
    }
}

impl Default for ShortId {
    fn default() -> Self {
        ShortId::new("")
    }
}

impl std::ops::Deref for ShortId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ShortId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ShortId {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for ShortId {}

impl PartialEq<str> for ShortId {
    fn eq(&self, other: &str) -> bool {
        self.bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for ShortId {
    fn eq(&self, other: &&str) -> bool {
        self.bytes() == other.as_bytes()
    }
}

/// As the `str`'s (its bytes, then `0xff`: what `str` hashes on any hasher that stable
/// Rust lets one write), so a map keyed by ids is looked up with a `&str` — without
/// checking the bytes are UTF-8 again, as making a `str` of them would.
impl Hash for ShortId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.bytes());
        state.write_u8(0xff);
    }
}

impl std::fmt::Debug for ShortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for ShortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for ShortId {
    fn from(id: &str) -> Self {
        ShortId::new(id)
    }
}

impl From<String> for ShortId {
    fn from(id: String) -> Self {
        ShortId::new(&id)
    }
}

impl<'de> serde::Deserialize<'de> for ShortId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = ShortId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ShortId, E> {
                Ok(ShortId::new(v))
            }
        }
        d.deserialize_str(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn short_and_long_ids_are_the_strings_they_hold() {
        let uuid = "3d1daafd-12ce-4995-8f59-8c2bb51665b0";
        let edge = "x".repeat(ShortId::INLINE);
        let long = "y".repeat(ShortId::INLINE + 1);
        let huge = "é".repeat(300);
        for s in ["", "call_1", uuid, &edge, &long, &huge, "日本語"] {
            let id = ShortId::new(s);
            assert_eq!(id.as_str(), s);
            assert_eq!(id, ShortId::from(s.to_string()));
            assert_eq!(format!("{id:?}"), format!("{s:?}"));
        }
        assert!(matches!(ShortId::new(uuid), ShortId::Inline { .. }));
        assert!(matches!(ShortId::new(&edge), ShortId::Inline { .. }));
        assert!(matches!(ShortId::new(&long), ShortId::Heap(_)));
        assert_eq!(std::mem::size_of::<ShortId>(), 64);
        // Looked up with a `&str` as a `String` key would be.
        let mut m: HashMap<ShortId, u8> = HashMap::new();
        m.insert(ShortId::new(uuid), 1);
        m.insert(ShortId::new(&long), 2);
        assert_eq!(m.get(uuid), Some(&1));
        assert_eq!(m.get(long.as_str()), Some(&2));
        assert_eq!(m.get("other"), None);
        // Hashed as the `str` by the hashers the workspace's maps use.
        fn hash<H: Hasher + Default>(v: &impl Hash) -> u64 {
            let mut h = H::default();
            v.hash(&mut h);
            h.finish()
        }
        use std::hash::BuildHasher;
        let std_maps = std::hash::RandomState::new();
        for s in ["", "x", uuid, &long, &huge] {
            let id = ShortId::new(s);
            assert_eq!(
                hash::<rustc_hash::FxHasher>(&id),
                hash::<rustc_hash::FxHasher>(&s)
            );
            assert_eq!(
                hash::<std::hash::DefaultHasher>(&id),
                hash::<std::hash::DefaultHasher>(&s)
            );
            assert_eq!(std_maps.hash_one(&id), std_maps.hash_one(s));
            assert_eq!((id.len(), id.is_empty()), (s.len(), s.is_empty()));
        }
        let read: ShortId = serde_json::from_str(r#""a\"b\u00e9""#).unwrap();
        assert_eq!(read, "a\"bé");
        assert!(serde_json::from_str::<ShortId>("1").is_err());
    }
}
