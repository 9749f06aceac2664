//! A generator for one shard (worker) value: Snowflake's model, one per process.

use crate::clock::{Clock, SystemClock};
use crate::error::GenerateError;
use crate::issuer::Issuer;
use crate::layout::Layout;
use crate::options::GeneratorOptions;
use crate::sequence::SequenceState;

/// Issues strictly increasing, never repeated ids for one shard value.
///
/// Share it between threads behind an `Arc`: issuing is one compare-and-swap on an
/// atomic word, with no lock. Dropping it is a clean shutdown (the time guard, if any,
/// records the last issued time).
#[derive(Debug)]
pub struct ShardGenerator<C: Clock = SystemClock> {
    issuer: Issuer<C>,
    shard: u64,
    state: SequenceState,
}

impl ShardGenerator<SystemClock> {
    /// A generator on the system clock with default options.
    pub fn new(layout: Layout, shard: u64) -> Result<Self, GenerateError> {
        Self::with_clock(layout, shard, SystemClock, &GeneratorOptions::default())
    }
}

impl<C: Clock> ShardGenerator<C> {
    /// A generator with its own clock and options; opens the time guard if one is set.
    pub fn with_clock(
        layout: Layout,
        shard: u64,
        clock: C,
        options: &GeneratorOptions,
    ) -> Result<Self, GenerateError> {
        if shard >= layout.shards() {
            return Err(GenerateError::ShardOutOfRange {
                shard,
                shards: layout.shards(),
            });
        }
        let issuer = Issuer::new(layout, clock, options)?;
        let state = SequenceState::starting_at(issuer.start_units, &layout);
        Ok(Self {
            issuer,
            shard,
            state,
        })
    }

    /// The next id.
    #[inline]
    pub fn next_id(&self) -> Result<u64, GenerateError> {
        let mut now = self.issuer.now()?;
        let run = self.issuer.reserve(&self.state, 1, &mut now)?;
        Ok(self
            .issuer
            .layout
            .pack(run.time_units, self.shard, run.first_sequence))
    }

    /// Fills `out` with consecutive ids, reserving a whole run of sequence numbers per
    /// compare-and-swap.
    pub fn fill(&self, out: &mut [u64]) -> Result<(), GenerateError> {
        let layout = self.issuer.layout;
        let mut now = self.issuer.now()?;
        let mut filled = 0;
        while filled < out.len() {
            let run = self
                .issuer
                .reserve(&self.state, (out.len() - filled) as u64, &mut now)?;
            // The run stays inside one sequence field, so stepping never carries
            // into the shard or the time.
            let first = layout.pack(run.time_units, self.shard, run.first_sequence);
            let step = layout.sequence_step();
            for (i, slot) in out[filled..filled + run.count as usize]
                .iter_mut()
                .enumerate()
            {
                *slot = first + i as u64 * step;
            }
            filled += run.count as usize;
        }
        Ok(())
    }

    /// The layout ids are made in.
    pub fn layout(&self) -> &Layout {
        &self.issuer.layout
    }

    /// The shard value in every id.
    pub fn shard(&self) -> u64 {
        self.shard
    }

    /// Stops as a crash would: the time guard keeps its written-ahead mark and no
    /// clean-shutdown record is written. For crash tests.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.issuer.abandon();
    }
}

impl<C: Clock> Drop for ShardGenerator<C> {
    fn drop(&mut self) {
        let last = self.state.last_time_units(&self.issuer.layout);
        self.issuer.close(last);
    }
}
