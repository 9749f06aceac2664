//! A monotonic ULID generator: strictly increasing ULIDs from one generator shared
//! between threads, with the snowflake generators' rules for a clock that steps back
//! and the same durable time guard.
//!
//! The spec's monotonic mode: the first ULID of a millisecond gets fresh random bits,
//! each further one in that millisecond is the previous plus one. The last issued ULID
//! is one 128-bit atomic word, moved on by compare-and-swap, so threads never take a
//! lock and two callers can never get the same ULID.
//!
//! If the 80-bit random part would carry into the time (a chance of one in 2^80 per
//! increment, or after 2^80 ULIDs in one millisecond), the generator moves on to the
//! next millisecond with fresh random bits instead of failing: the ULID still sorts
//! after the previous one, and that millisecond is borrowed ahead of the clock like
//! any other, within [`GeneratorOptions::max_lead`].

use crate::clock::{Clock, SystemClock};
use crate::error::GenerateError;
use crate::issuer::Issuer;
use crate::layout::Layout;
use crate::options::GeneratorOptions;
use crate::random;
use crate::sequence::{Attempt, Reserved};
use crate::ulid::{Ulid, ULID_MAX_RANDOM, ULID_MAX_UNIX_MS};
use portable_atomic::AtomicU128;
use std::sync::atomic::Ordering;

const RANDOM_BITS: u32 = 80;

/// Issues ULIDs, strictly increasing across all threads that share it.
///
/// Share it behind an `Arc`. Dropping it is a clean shutdown (the time guard, if any,
/// records the last issued millisecond).
#[derive(Debug)]
pub struct UlidGenerator<C: Clock = SystemClock> {
    issuer: Issuer<C>,
    /// The last issued ULID.
    last: AtomicU128,
}

impl Reserved for Ulid {
    #[inline]
    fn time_units(&self) -> u64 {
        self.unix_ms()
    }
}

impl UlidGenerator<SystemClock> {
    /// A generator on the system clock with default options.
    pub fn new() -> Result<Self, GenerateError> {
        Self::with_clock(SystemClock, &GeneratorOptions::default())
    }
}

impl<C: Clock> UlidGenerator<C> {
    /// A generator with its own clock and options; opens the time guard if one is set.
    pub fn with_clock(clock: C, options: &GeneratorOptions) -> Result<Self, GenerateError> {
        // The issuer's layout only carries time here (the sequence lives in the ULID's
        // random part), so its sequence width does not matter.
        let issuer = Issuer::new(Layout::unix_ms_clock(1), clock, options)?;
        // "Last issued" is the end of the millisecond before the first allowed one, so
        // the next ULID is at that millisecond or later, with fresh random bits.
        let start = issuer.start_units.min(ULID_MAX_UNIX_MS + 1);
        let last = match start.checked_sub(1) {
            Some(before) => (u128::from(before) << RANDOM_BITS) | ULID_MAX_RANDOM,
            None => 0,
        };
        Ok(Self {
            issuer,
            last: AtomicU128::new(last),
        })
    }

    /// The next ULID.
    #[inline]
    pub fn next_id(&self) -> Result<Ulid, GenerateError> {
        let mut now = self.issuer.now()?;
        self.issuer.reserve_with(&mut now, |now_ms, max_lead_ms| {
            self.try_next(now_ms, max_lead_ms)
        })
    }

    /// One attempt at the ULID after the last, at wall-clock millisecond `now`, at
    /// most `max_lead` ms ahead of it.
    #[inline]
    fn try_next(&self, now: u64, max_lead: u64) -> Attempt<Ulid> {
        let mut current = self.last.load(Ordering::Acquire);
        loop {
            let time = (current >> RANDOM_BITS) as u64;
            let (next_time, next_random) = if now > time {
                (now, fresh_random())
            } else if current & ULID_MAX_RANDOM < ULID_MAX_RANDOM {
                (time, (current & ULID_MAX_RANDOM) + 1)
            } else {
                (time + 1, fresh_random())
            };
            let limit = now.saturating_add(max_lead);
            if next_time > limit {
                return if time > limit {
                    Attempt::ClockBehind {
                        behind_units: time - now,
                    }
                } else {
                    Attempt::WaitForTick
                };
            }
            // Checked before packing: a time past 48 bits would wrap the word and
            // make the next ULID sort first.
            if next_time > ULID_MAX_UNIX_MS {
                return Attempt::PastTimeRange;
            }
            let next = (u128::from(next_time) << RANDOM_BITS) | next_random;
            match self.last.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Attempt::Issued(Ulid::from_u128(next)),
                Err(seen) => current = seen,
            }
        }
    }

    /// Stops as a crash would: the time guard keeps its written-ahead mark and no
    /// clean-shutdown record is written. For crash tests.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.issuer.abandon();
    }
}

/// 80 fresh random bits.
#[inline]
fn fresh_random() -> u128 {
    ((u128::from(random::u64()) << 64) | u128::from(random::u64())) & ULID_MAX_RANDOM
}

impl<C: Clock> Drop for UlidGenerator<C> {
    fn drop(&mut self) {
        let last = (self.last.load(Ordering::Acquire) >> RANDOM_BITS) as u64;
        self.issuer.close(last);
    }
}
