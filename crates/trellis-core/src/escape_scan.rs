//! Finding the next byte of a JSON string that needs an escape: a control character, `"`
//! or `\`. Both directions of the hot path run through it — the parse looks for the end of
//! each string literal an agent sends (`hot::scan`), and the JSON writer for the bytes to
//! escape in each string it writes (`compact_json`; a tool's output kept as the agent
//! wrote it is copied instead, see `bulk::escaped`) — and the scan was the largest single
//! cost of a headless run by instructions (a fifth of them with eight bytes a step).
//!
//! On x86_64 the scan looks at sixteen bytes a step with SSE2, which every x86_64
//! processor has (the module's one `unsafe` block is the load and compares, guarded by the
//! build's own target features, not a run-time guess). Elsewhere, and in a slice shorter
//! than sixteen bytes (where the block path measured slower), it looks at eight bytes a
//! step in a `u64` (no `unsafe`); a property test holds both to a byte-at-a-time
//! reference. In time the gain is smaller than in instructions: the reader finds the ends
//! of a line's strings about a fifth faster, the writer's copying of a long output between
//! its escapes costs what it did (`benches/json_out.rs`, group `escape`).

/// Index of the first byte at or after `from` that needs an escape, if any (`None` too
/// when `from` is past the end).
#[inline]
pub(crate) fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        sse2::next_escape(bytes, from)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        words::next_escape(bytes, from)
    }
}

#[inline]
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// One bit per byte of the block (bit `k` for byte `k`) that needs an escape.
    #[inline]
    #[allow(unsafe_code)]
    fn mask(block: &[u8; 16]) -> u32 {
        // SAFETY: this module is compiled only where the build enables SSE2 (every x86_64
        // target does), so the intrinsics exist on the running processor; the unaligned
        // load reads exactly the sixteen bytes `block` borrows.
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // Below 0x20 (unsigned) exactly when min(byte, 0x1f) is the byte itself.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }

    #[inline]
    pub(super) fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
        if bytes.len() < 16 {
            // Shorter than one block (a short string the writer escapes: an id, a name, a
            // path): eight bytes a step, as elsewhere.
            return super::words::next_escape(bytes, from);
        }
        let mut at = from;
        while let Some(block) = bytes.get(at..).and_then(<[u8]>::first_chunk::<16>) {
            let m = mask(block);
            if m != 0 {
                return Some(at + m.trailing_zeros() as usize);
            }
            at += 16;
        }
        if at >= bytes.len() {
            return None;
        }
        // The last sixteen bytes (there are as many: checked above), less those before
        // `at` (the loop stopped because fewer than sixteen were left, so `at` is inside).
        let block = bytes.last_chunk::<16>()?;
        let last = bytes.len() - 16;
        let m = mask(block) & (u32::MAX << (at - last));
        (m != 0).then(|| last + m.trailing_zeros() as usize)
    }
}

/// Eight bytes a step in a `u64`: where SSE2 is not there to use, and for slices shorter
/// than its sixteen bytes.
mod words {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;

    /// The high bit of each of the eight bytes that is a control character, `"` or `\` —
    /// exact for the lowest flagged byte (a borrow only carries upward from a true match),
    /// so `trailing_zeros / 8` is the first byte to escape.
    #[inline]
    fn mask(w: u64) -> u64 {
        let control = w.wrapping_sub(LO * 0x20) & !w;
        let q = w ^ (LO * u64::from(b'"'));
        let quote = q.wrapping_sub(LO) & !q;
        let b = w ^ (LO * u64::from(b'\\'));
        let backslash = b.wrapping_sub(LO) & !b;
        (control | quote | backslash) & HI
    }

    #[inline]
    fn word(chunk: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&chunk[..8]);
        u64::from_le_bytes(w)
    }

    #[inline]
    pub(super) fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
        let rest = bytes.get(from..)?;
        let mut words = rest.chunks_exact(8);
        let mut at = 0;
        for w in words.by_ref() {
            let m = mask(word(w));
            if m != 0 {
                return Some(from + at + (m.trailing_zeros() / 8) as usize);
            }
            at += 8;
        }
        words
            .remainder()
            .iter()
            .position(|&b| super::needs_escape(b))
            .map(|k| from + at + k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(bytes: &[u8], from: usize) -> Option<usize> {
        (from..bytes.len()).find(|&i| needs_escape(bytes[i]))
    }

    /// Bytes mostly plain, with escapes, controls and high bytes where they may straddle a
    /// block's edge.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                8 => b'a'..=b'z',
                1 => Just(b'"'),
                1 => Just(b'\\'),
                1 => 0u8..0x20,
                1 => 0x7fu8..=0xff,
                1 => Just(b' '),
            ],
            0..80,
        )
    }

    proptest! {
        #[test]
        fn every_scan_finds_what_a_byte_at_a_time_finds(bytes in text(), from in 0usize..90) {
            let want = reference(&bytes, from);
            prop_assert_eq!(next_escape(&bytes, from), want);
            prop_assert_eq!(words::next_escape(&bytes, from), want);
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            prop_assert_eq!(sse2::next_escape(&bytes, from), want);
        }
    }

    #[test]
    fn each_byte_value_at_each_place_of_a_block() {
        for len in [1usize, 15, 16, 17, 31, 32, 33, 47] {
            for place in 0..len {
                for byte in 0..=255u8 {
                    let mut bytes = vec![b'x'; len];
                    bytes[place] = byte;
                    let want = needs_escape(byte).then_some(place);
                    assert_eq!(
                        next_escape(&bytes, 0),
                        want,
                        "{byte:#x} at {place} of {len}"
                    );
                    assert_eq!(words::next_escape(&bytes, 0), want);
                    // From just past it: nothing.
                    assert_eq!(next_escape(&bytes, place + 1), None);
                }
            }
        }
    }

    #[test]
    fn a_start_at_or_past_the_end_finds_nothing() {
        assert_eq!(next_escape(b"", 0), None);
        assert_eq!(next_escape(b"\"", 1), None);
        assert_eq!(next_escape(b"ab", 5), None);
        assert_eq!(words::next_escape(b"ab", 5), None);
    }
}
