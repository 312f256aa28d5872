//! A session's key in a deck: below the deck and what it shows (the comparison), so both
//! name sessions the same way without importing each other.

/// A session's key in this deck (never reused while the deck lives).
pub type SessionKey = u32;
