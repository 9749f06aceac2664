//! A UUIDv7 generator: strictly increasing UUIDs from one generator shared between
//! threads, with the snowflake generators' rules for a clock that steps back and the
//! same durable time guard.
//!
//! RFC 9562 section 6.2 method 1: the 12 bits of `rand_a` count the UUIDs of one
//! millisecond. The (millisecond, counter) pair is exactly the snowflake generators'
//! (time, sequence) state with 48 bits of Unix ms and a 12-bit sequence, so it reuses
//! that state: one compare-and-swap per UUID, no lock. When the counter runs out within
//! a millisecond, the state moves on to the next millisecond, as the RFC allows,
//! bounded by [`GeneratorOptions::max_lead`] like the snowflake generators.
//!
//! The counter starts at 0 in each millisecond rather than at a random value: 12 bits
//! leave no room to spare for a random start, and the 62 random bits of `rand_b` (fresh
//! for every UUID) are what makes UUIDs from independent generators distinct.

use crate::clock::{Clock, SystemClock};
use crate::error::GenerateError;
use crate::issuer::Issuer;
use crate::layout::Layout;
use crate::options::GeneratorOptions;
use crate::random;
use crate::sequence::SequenceState;
use crate::uuid7::Uuid7;

/// Bits of the per-millisecond counter in `rand_a`.
const COUNTER_BITS: u8 = 12;

/// Issues version 7 UUIDs, strictly increasing across all threads that share it.
///
/// Share it behind an `Arc`. Dropping it is a clean shutdown (the time guard, if any,
/// records the last issued millisecond).
#[derive(Debug)]
pub struct Uuid7Generator<C: Clock = SystemClock> {
    issuer: Issuer<C>,
    state: SequenceState,
}

impl Uuid7Generator<SystemClock> {
    /// A generator on the system clock with default options.
    pub fn new() -> Result<Self, GenerateError> {
        Self::with_clock(SystemClock, &GeneratorOptions::default())
    }
}

impl<C: Clock> Uuid7Generator<C> {
    /// A generator with its own clock and options; opens the time guard if one is set.
    pub fn with_clock(clock: C, options: &GeneratorOptions) -> Result<Self, GenerateError> {
        let layout = Layout::unix_ms_clock(COUNTER_BITS);
        let issuer = Issuer::new(layout, clock, options)?;
        let state = SequenceState::starting_at(issuer.start_units, &layout);
        Ok(Self { issuer, state })
    }

    /// The next UUID.
    #[inline]
    pub fn next_id(&self) -> Result<Uuid7, GenerateError> {
        let mut now = self.issuer.now()?;
        let run = self.issuer.reserve(&self.state, 1, &mut now)?;
        Ok(Uuid7::pack(
            run.time_units,
            run.first_sequence,
            random::u64() >> 2,
        ))
    }

    /// Stops as a crash would: the time guard keeps its written-ahead mark and no
    /// clean-shutdown record is written. For crash tests.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.issuer.abandon();
    }
}

impl<C: Clock> Drop for Uuid7Generator<C> {
    fn drop(&mut self) {
        let last = self.state.last_time_units(&self.issuer.layout);
        self.issuer.close(last);
    }
}
