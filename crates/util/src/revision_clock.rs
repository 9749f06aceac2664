//! How long a replicated record's revision has stood, on this node's own clock.
//!
//! A lease or a node record is alive while its holder renews it (each renewal is a
//! new revision of its key). Waiting for the store to expire the key is late when the
//! store is busy electing (a NATS bucket's stream after a partition), and comparing
//! wall clocks trusts every host's time; so each reader notes when it first saw the
//! current revision and judges the holder gone once that revision has stood for a
//! whole life on its own monotonic clock. Whenever the key cannot be read the clock
//! starts again: the holder could not renew then either.

use std::time::{Duration, Instant};

/// The revision last seen of one key, and since when.
#[derive(Debug, Default, Clone, Copy)]
pub struct RevisionClock {
    seen: Option<(u64, Instant)>,
}

impl RevisionClock {
    /// How long `revision`, read at `now`, has stood as this clock saw it: zero when
    /// it is new (another revision, or the first reading).
    pub fn stood(&mut self, revision: u64, now: Instant) -> Duration {
        match self.seen {
            Some((seen, since)) if seen == revision => now.saturating_duration_since(since),
            _ => {
                self.seen = Some((revision, now));
                Duration::ZERO
            }
        }
    }

    /// The key could not be read, or is gone: the next reading starts the clock again.
    pub fn reset(&mut self) {
        self.seen = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_stands_until_another_or_a_reset() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut clock = RevisionClock::default();
        assert_eq!(clock.stood(4, at(0)), Duration::ZERO);
        assert_eq!(clock.stood(4, at(3)), Duration::from_secs(3));
        assert_eq!(clock.stood(5, at(4)), Duration::ZERO);
        assert_eq!(clock.stood(5, at(6)), Duration::from_secs(2));
        clock.reset();
        assert_eq!(clock.stood(5, at(9)), Duration::ZERO);
        assert_eq!(clock.stood(5, at(10)), Duration::from_secs(1));
    }
}
