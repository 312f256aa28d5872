//! When held events go out: the pacing shared by the host (events for extensions whose
//! events may wait, see `Extension::events_may_wait`) and the plugin writer (lines for a
//! plugin's stdin).
//!
//! Outside a storm everything goes at once. During a storm (the agent streams thousands
//! of calls a second) what may wait is held until the storm pauses, or until the oldest
//! has waited [`MAX_HOLD`]: a plugin process that parses JSON while the session is
//! saturated takes CPU, memory bandwidth and cache from the client and the agent, and
//! each hand-over wakes threads. Anything that needs an answer is never held (urgent),
//! and takes everything held before it along (order is kept).

use std::time::{Duration, Instant};

/// Lines arriving within this of each other are a storm; a pause this long ends it.
pub const QUIET: Duration = Duration::from_millis(15);
/// The longest an event line waits for a pause.
pub const MAX_HOLD: Duration = Duration::from_millis(400);

/// When held lines go out: the policy, apart from the clock and the pipe.
#[derive(Debug, Default)]
pub struct Pacer {
    /// When the previous block arrived.
    last: Option<Instant>,
    /// When the oldest held block arrived (`None`: nothing held).
    held_since: Option<Instant>,
}

impl Pacer {
    /// A block arrives at `now`: true when everything held (it included) goes out now.
    pub fn arrive(&mut self, now: Instant, urgent: bool) -> bool {
        let storm = self
            .last
            .is_some_and(|l| now.saturating_duration_since(l) < QUIET);
        self.last = Some(now);
        let since = *self.held_since.get_or_insert(now);
        let go = urgent || !storm || now.saturating_duration_since(since) >= MAX_HOLD;
        if go {
            self.held_since = None;
        }
        go
    }

    /// How long the writer may wait for the next block before writing what it holds
    /// (`None`: nothing held, wait as long as it takes).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let since = self.held_since?;
        let quiet = self.last.map_or(Duration::ZERO, |l| {
            (l + QUIET).saturating_duration_since(now)
        });
        let hold = (since + MAX_HOLD).saturating_duration_since(now);
        Some(quiet.min(hold))
    }

    /// The wait ran out: what is held goes out.
    pub fn timed_out(&mut self) {
        self.held_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn a_line_after_a_pause_goes_at_once() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        assert_eq!(p.wait(t), None);
        assert!(p.arrive(at(t, 100), false), "a pause longer than QUIET");
    }

    #[test]
    fn a_storm_is_held_until_it_pauses() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false), "the first block of a storm");
        assert!(!p.arrive(at(t, 1), false));
        assert!(!p.arrive(at(t, 2), false));
        // Waits for a pause measured from the last arrival.
        assert_eq!(p.wait(at(t, 2)), Some(QUIET));
        assert_eq!(p.wait(at(t, 10)), Some(QUIET - Duration::from_millis(8)));
        p.timed_out();
        assert_eq!(p.wait(at(t, 20)), None);
    }

    #[test]
    fn a_long_storm_is_written_every_max_hold() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        let mut written = Vec::new();
        for ms in 1..=1000 {
            if p.arrive(at(t, ms), false) {
                written.push(ms);
            }
            assert!(p.wait(at(t, ms)).is_none_or(|w| w <= QUIET));
        }
        let hold = MAX_HOLD.as_millis() as u64;
        assert_eq!(written, vec![1 + hold, 2 + 2 * hold]);
    }

    #[test]
    fn requests_are_never_held() {
        let t = Instant::now();
        let mut p = Pacer::default();
        assert!(p.arrive(t, false));
        assert!(!p.arrive(at(t, 1), false));
        assert!(
            p.arrive(at(t, 2), true),
            "a request takes the held events with it"
        );
        assert_eq!(p.wait(at(t, 2)), None);
    }
}
