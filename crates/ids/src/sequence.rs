//! The per-shard state and the one compare-and-swap that reserves sequence numbers:
//! the hot path of every generator.
//!
//! The state is one `AtomicU64` holding the last issued `(time, sequence)` packed as
//! `time << sequence_bits | sequence`. Reserving ids reads it, computes the next
//! value and swaps it in; a failed swap means another thread got there first and the
//! loop tries again. Nothing is locked, and because every successful swap moves the
//! packed value strictly upwards, two reservations can never overlap.

use crate::layout::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

/// A run of consecutive sequence numbers inside one time unit, reserved by one swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// The time unit the run belongs to.
    pub time_units: u64,
    /// Its first sequence number.
    pub first_sequence: u64,
    /// How many numbers it holds (at least 1).
    pub count: u64,
}

/// What was reserved, as far as the issuer's checks need to know: its time unit,
/// which must fit the layout and be covered by the time guard before it is handed out.
pub(crate) trait Reserved {
    /// The time unit the reserved ids carry.
    fn time_units(&self) -> u64;
}

impl Reserved for Run {
    #[inline]
    fn time_units(&self) -> u64 {
        self.time_units
    }
}

/// What a reservation attempt found. `R` is what a successful one reserved: a [`Run`]
/// for the snowflake and UUIDv7 states, one ULID for the ULID state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt<R = Run> {
    /// Ids reserved.
    Issued(R),
    /// The sequence and the allowed lead are used up: wait for the next wall-clock unit.
    WaitForTick,
    /// The wall clock reads `behind_units` before the last issued time, further back
    /// than the allowed lead.
    ClockBehind { behind_units: u64 },
    /// The next id would need a time past the largest the format can hold (only a
    /// state whose word cannot hold such a time reports this instead of issuing it).
    PastTimeRange,
}

/// The last issued `(time, sequence)` of one shard, packed into one atomic word.
#[derive(Debug)]
pub(crate) struct SequenceState(AtomicU64);

impl SequenceState {
    /// A state from which the next id is at time unit `start_units` or later.
    pub fn starting_at(start_units: u64, layout: &Layout) -> Self {
        // "Last issued" is (start - 1, max sequence), so the next is (start, 0) at the
        // earliest. At 0 the state is (0, 0): the first id is then (now, 0) unless the
        // clock reads exactly the epoch, which only costs one skipped number.
        let packed = (start_units << layout.sequence_bits()).saturating_sub(1);
        Self(AtomicU64::new(packed))
    }

    /// The time unit of the last issued id.
    pub fn last_time_units(&self, layout: &Layout) -> u64 {
        self.0.load(Ordering::Acquire) >> layout.sequence_bits()
    }

    /// Tries to reserve up to `want` (>= 1) sequence numbers at wall-clock unit `now`,
    /// letting the logical time run at most `max_lead` units ahead of `now`. The
    /// caller checks the run against the durable guard before handing ids out.
    #[inline]
    pub fn try_reserve(&self, layout: &Layout, now: u64, max_lead: u64, want: u64) -> Attempt {
        let sequence_bits = layout.sequence_bits();
        let max_sequence = layout.max_sequence();
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let time = current >> sequence_bits;
            let sequence = current & max_sequence;
            let (next_time, first) = if now > time {
                (now, 0)
            } else if sequence < max_sequence {
                (time, sequence + 1)
            } else {
                (time + 1, 0)
            };
            if next_time > now.saturating_add(max_lead) {
                return if time > now.saturating_add(max_lead) {
                    Attempt::ClockBehind {
                        behind_units: time - now,
                    }
                } else {
                    Attempt::WaitForTick
                };
            }
            let count = want.min(max_sequence - first + 1);
            let next = (next_time << sequence_bits) | (first + count - 1);
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Attempt::Issued(Run {
                        time_units: next_time,
                        first_sequence: first,
                        count,
                    })
                }
                Err(seen) => current = seen,
            }
        }
    }
}
