//! A Bloom filter over 32-bit hashes: "certainly never added" in two memory reads.
//!
//! The ledger's frozen calls are found by id through sorted runs of hashes, a binary
//! search per run; almost every lookup is for a call that was never frozen (each new call
//! of a turn is looked up once), and answering those from the filter skips the searches.
//! Two bits per key of room (about 2 bytes per key), grown by doubling: false positives
//! stay under 2 % and only cost the search they would have cost anyway.

/// Bits of room per key before the filter doubles.
const BITS_PER_KEY: usize = 16;
/// The smallest filter, in bits.
const MIN_BITS: usize = 1 << 12;

#[derive(Debug, Clone, Default)]
pub(crate) struct Bloom {
    words: Vec<u64>,
    keys: usize,
}

impl Bloom {
    /// Adds `h`; `all` yields every hash added so far and is read only when the filter
    /// grows (it is rebuilt at twice the size from them).
    pub(crate) fn add<I: Iterator<Item = u32>>(&mut self, h: u32, all: impl FnOnce() -> I) {
        self.keys += 1;
        if self.keys * BITS_PER_KEY > self.bits() {
            let bits = (self.keys * BITS_PER_KEY).next_power_of_two().max(MIN_BITS);
            self.words = vec![0; bits / 64];
            for k in all() {
                self.set(k);
            }
        }
        self.set(h);
    }

    /// False only for a hash never added.
    pub(crate) fn may_hold(&self, h: u32) -> bool {
        if self.words.is_empty() {
            return false;
        }
        probes(h, self.bits())
            .iter()
            .all(|&b| self.words[b / 64] & (1 << (b % 64)) != 0)
    }

    fn bits(&self) -> usize {
        self.words.len() * 64
    }

    fn set(&mut self, h: u32) {
        for b in probes(h, self.bits()) {
            self.words[b / 64] |= 1 << (b % 64);
        }
    }
}

/// Two bit positions for `h` (the second from a multiplicative remix of the first).
fn probes(h: u32, bits: usize) -> [usize; 2] {
    let mask = bits - 1;
    let second = (u64::from(h).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 29) as usize;
    [h as usize & mask, second & mask]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_added_is_held_and_little_else() {
        let mut b = Bloom::default();
        assert!(!b.may_hold(7));
        let added: Vec<u32> = (0..50_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        for (n, &h) in added.iter().enumerate() {
            b.add(h, || added[..n].iter().copied());
        }
        assert!(added.iter().all(|&h| b.may_hold(h)), "no false negatives");
        let false_pos = (0..50_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(1))
            .filter(|&h| b.may_hold(h))
            .count();
        assert!(false_pos < 1_000, "{false_pos} false positives in 50 000");
    }
}
