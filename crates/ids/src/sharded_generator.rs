//! Instagram's mode: one generator state per logical shard, the shard picked from the
//! key the id is for (a user id, say), so ids of one user's rows land in one shard.

use crate::clock::{Clock, SystemClock};
use crate::error::GenerateError;
use crate::issuer::Issuer;
use crate::layout::Layout;
use crate::options::GeneratorOptions;
use crate::sequence::SequenceState;
use crossbeam_utils::CachePadded;

/// Issues ids for every logical shard of a layout: per shard strictly increasing and
/// never repeated; across shards unique because the shard is part of the id.
///
/// Each shard's state sits on its own cache line, so threads issuing for different
/// shards never contend. Dropping it is a clean shutdown.
///
/// ```
/// use shardkit_ids::{Layout, ShardedGenerator};
/// // One issuer per shard: this generator hands out every shard's sequence numbers, so
/// // it must be the only one issuing for these shards. A second process (or machine)
/// // running the same line would make the same ids. Share this one behind an `Arc`,
/// // or give each process its own shards with `ShardGenerator`, and set a time guard
/// // (`GeneratorOptions::guard`) so a restart cannot reissue ids either.
/// let ids = ShardedGenerator::new(Layout::instagram()).unwrap();
/// let id = ids.next_for_key(31_337).unwrap();
/// let decoded = Layout::instagram().decode(id).unwrap();
/// assert_eq!(decoded.parts.shard, 31_337 % 8192);
/// ```
#[derive(Debug)]
pub struct ShardedGenerator<C: Clock = SystemClock> {
    issuer: Issuer<C>,
    states: Box<[CachePadded<SequenceState>]>,
}

impl ShardedGenerator<SystemClock> {
    /// A generator on the system clock with default options.
    pub fn new(layout: Layout) -> Result<Self, GenerateError> {
        Self::with_clock(layout, SystemClock, &GeneratorOptions::default())
    }
}

impl<C: Clock> ShardedGenerator<C> {
    /// A generator with its own clock and options; opens the time guard if one is set.
    pub fn with_clock(
        layout: Layout,
        clock: C,
        options: &GeneratorOptions,
    ) -> Result<Self, GenerateError> {
        let issuer = Issuer::new(layout, clock, options)?;
        let states = (0..layout.shards())
            .map(|_| CachePadded::new(SequenceState::starting_at(issuer.start_units, &layout)))
            .collect();
        Ok(Self { issuer, states })
    }

    /// The logical shard of a key: `key % 2^shard_bits` (Instagram's `user_id % 2000`
    /// idea with a power of two, so it is a mask).
    #[inline]
    pub fn shard_for_key(&self, key: u64) -> u64 {
        key & (self.issuer.layout.shards() - 1)
    }

    /// The next id for a shard.
    #[inline]
    pub fn next_id(&self, shard: u64) -> Result<u64, GenerateError> {
        let state = self.state(shard)?;
        let mut now = self.issuer.now()?;
        let run = self.issuer.reserve(state, 1, &mut now)?;
        Ok(self
            .issuer
            .layout
            .pack(run.time_units, shard, run.first_sequence))
    }

    /// The next id in the shard of `key` (see [`ShardedGenerator::shard_for_key`]).
    #[inline]
    pub fn next_for_key(&self, key: u64) -> Result<u64, GenerateError> {
        self.next_id(self.shard_for_key(key))
    }

    /// Fills `out` with consecutive ids of one shard, a run of sequence numbers per swap.
    pub fn fill(&self, shard: u64, out: &mut [u64]) -> Result<(), GenerateError> {
        let state = self.state(shard)?;
        let layout = self.issuer.layout;
        let mut now = self.issuer.now()?;
        let mut filled = 0;
        while filled < out.len() {
            let run = self
                .issuer
                .reserve(state, (out.len() - filled) as u64, &mut now)?;
            // The run stays inside one sequence field, so stepping never carries
            // into the shard or the time.
            let first = layout.pack(run.time_units, shard, run.first_sequence);
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

    /// Fills `out[i]` with an id in the shard of `keys[i]`: one id for each of many
    /// rows, reading the clock once for the whole batch.
    ///
    /// # Panics
    /// Never on data; `keys` and `out` of different lengths is a programming error
    /// and is reported as such by an assertion.
    pub fn fill_for_keys(&self, keys: &[u64], out: &mut [u64]) -> Result<(), GenerateError> {
        assert_eq!(
            keys.len(),
            out.len(),
            "fill_for_keys: keys and out must have the same length"
        );
        let layout = self.issuer.layout;
        let mask = layout.shards() - 1;
        let mut now = self.issuer.now()?;
        for (slot, &key) in out.iter_mut().zip(keys) {
            let shard = key & mask;
            // The mask keeps the index in range: shards() == states.len().
            let run = self
                .issuer
                .reserve(&self.states[shard as usize], 1, &mut now)?;
            *slot = layout.pack(run.time_units, shard, run.first_sequence);
        }
        Ok(())
    }

    /// The layout ids are made in.
    pub fn layout(&self) -> &Layout {
        &self.issuer.layout
    }

    /// Stops as a crash would (for crash tests); see [`crate::ShardGenerator::abandon`].
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.issuer.abandon();
    }

    fn state(&self, shard: u64) -> Result<&SequenceState, GenerateError> {
        self.states
            .get(shard as usize)
            .map(|s| &**s)
            .ok_or(GenerateError::ShardOutOfRange {
                shard,
                shards: self.issuer.layout.shards(),
            })
    }
}

impl<C: Clock> Drop for ShardedGenerator<C> {
    fn drop(&mut self) {
        let last = self
            .states
            .iter()
            .map(|s| s.last_time_units(&self.issuer.layout))
            .max()
            .unwrap_or(0);
        self.issuer.close(last);
    }
}
