//! The calls the inspector steps through from one call: its session's own calls, or one
//! subagent's. Worked out from positions, never by reading every call: at a million calls
//! most are frozen, and the inspector asks on every frame it draws (`[i/n]`) and on every
//! step.

use trellis_core::Session;
use trellis_core::cold::CHUNK;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Siblings {
    /// Positions `0..len` but those in `skip` (sorted): the session's own calls, which are
    /// every call but its subagents'.
    Own { len: usize, skip: Vec<usize> },
    /// One subagent's calls, in its order.
    Child(Vec<usize>),
}

impl Siblings {
    /// The siblings of call `index` of `s`.
    pub(crate) fn of(s: &Session, index: usize) -> Siblings {
        let len = s.ledger.len();
        if s.subagents.is_empty() {
            return Siblings::Own {
                len,
                skip: Vec::new(),
            };
        }
        // Which child a call belongs to is in the subagents' own lists (in memory), so
        // the call itself is not read back to learn it.
        let mut skip = Vec::new();
        for child in &s.subagents.list {
            let calls: Vec<usize> = child.call_indices().collect();
            if calls.contains(&index) {
                return Siblings::Child(calls);
            }
            skip.extend(calls);
        }
        skip.sort_unstable();
        skip.dedup();
        skip.retain(|&p| p < len);
        Siblings::Own { len, skip }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Siblings::Own { len, skip } => len - skip.len(),
            Siblings::Child(calls) => calls.len(),
        }
    }

    /// How many siblings come before position `pos`.
    fn rank(&self, pos: usize) -> usize {
        match self {
            Siblings::Own { len, skip } => pos.min(*len) - skip.partition_point(|&x| x < pos),
            Siblings::Child(calls) => calls.iter().filter(|&&x| x < pos).count(),
        }
    }

    /// Call `index`'s place among them (0-based), if it is one.
    pub(crate) fn place(&self, index: usize) -> Option<usize> {
        match self {
            Siblings::Own { len, skip } => {
                (index < *len && skip.binary_search(&index).is_err()).then(|| self.rank(index))
            }
            Siblings::Child(calls) => calls.iter().position(|&i| i == index),
        }
    }

    /// The position of the `k`-th sibling (`k < len()`).
    pub(crate) fn nth(&self, k: usize) -> usize {
        match self {
            Siblings::Own { skip, .. } => {
                // The smallest position with k + 1 siblings at or before it.
                let (mut lo, mut hi) = (k, k + skip.len());
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if mid + 1 - skip.partition_point(|&x| x <= mid) > k {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                lo
            }
            Siblings::Child(calls) => calls[k],
        }
    }

    /// The next sibling after call `index` (backwards when `!forward`, wrapping round, the
    /// call itself last) that `wanted` accepts. `may_hold(chunk)`: whether ledger chunk
    /// `chunk` can hold a wanted call at all; false lets the walk skip it whole.
    pub(crate) fn step(
        &self,
        index: usize,
        forward: bool,
        may_hold: impl Fn(usize) -> bool,
        mut wanted: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let mut k = self.place(index).unwrap_or(0);
        let chunks = matches!(self, Siblings::Own { .. });
        let mut walked = 0;
        while walked < n {
            k = if forward {
                (k + 1) % n
            } else {
                (k + n - 1) % n
            };
            walked += 1;
            let p = self.nth(k);
            if chunks && !may_hold(p / CHUNK) {
                // Jump to the chunk's last sibling (first, going back); the next turn of the
                // loop leaves the chunk.
                let c = p / CHUNK;
                let to = if forward {
                    self.rank((c + 1) * CHUNK) - 1
                } else {
                    self.rank(c * CHUNK)
                };
                walked += to.abs_diff(k);
                k = to;
                continue;
            }
            if wanted(p) {
                return Some(p);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(len: usize, skip: &[usize]) -> Siblings {
        Siblings::Own {
            len,
            skip: skip.to_vec(),
        }
    }

    #[test]
    fn places_and_positions_agree_with_a_plain_list() {
        let s = own(20, &[0, 3, 4, 9, 19]);
        let plain: Vec<usize> = (0..20).filter(|p| ![0, 3, 4, 9, 19].contains(p)).collect();
        assert_eq!(s.len(), plain.len());
        for (k, &p) in plain.iter().enumerate() {
            assert_eq!(s.nth(k), p);
            assert_eq!(s.place(p), Some(k));
        }
        assert_eq!(s.place(3), None);
        assert_eq!(s.place(20), None);
    }

    #[test]
    fn steps_wrap_round_and_end_on_the_call_itself() {
        let s = own(10, &[5]);
        assert_eq!(s.step(9, true, |_| true, |_| true), Some(0));
        assert_eq!(s.step(0, false, |_| true, |_| true), Some(9));
        assert_eq!(s.step(4, true, |_| true, |_| true), Some(6));
        assert_eq!(s.step(7, true, |_| true, |p| p == 7), Some(7));
        assert_eq!(s.step(7, true, |_| true, |p| p == 5), None);
    }

    #[test]
    fn chunks_that_cannot_hold_a_match_are_never_read() {
        // Three chunks; only the last holds what is wanted, and the one in the middle
        // holds a subagent's calls too.
        let len = 3 * CHUNK;
        let s = own(len, &[CHUNK + 1, CHUNK + 7]);
        let target = 2 * CHUNK + 10;
        for forward in [true, false] {
            let mut read = Vec::new();
            let got = s.step(
                3,
                forward,
                |c| c == 2 || c == 0,
                |p| {
                    read.push(p);
                    p == target
                },
            );
            assert_eq!(got, Some(target));
            assert!(read.iter().all(|p| p / CHUNK != 1), "{read:?}");
        }
        // Nothing anywhere: every chunk skipped, and the walk ends.
        let mut read = 0;
        assert_eq!(
            s.step(
                0,
                true,
                |_| false,
                |_| {
                    read += 1;
                    true
                }
            ),
            None
        );
        assert_eq!(read, 0);
    }

    #[test]
    fn a_subagents_calls_step_in_its_order() {
        let s = Siblings::Child(vec![4, 8, 15]);
        assert_eq!(s.place(8), Some(1));
        assert_eq!(s.step(15, true, |_| false, |_| true), Some(4));
        assert_eq!(s.step(4, false, |_| false, |_| true), Some(15));
    }
}
