//! Segment allocation (Meituan Leaf's "segment" mode with its double buffer): numbers
//! come from a block reserved in the store with one durable write; when a share of the
//! current block is used, the next block is reserved in the background, so callers
//! almost never wait for the disk. The block size adapts to the consumption rate.

use super::spec::{validate_name, SequenceSpec, MAX_TICKETS_PER_CALL};
use super::TicketStore;
use crate::error::TicketError;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How blocks are sized and when the next one is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentOptions {
    /// Size of the first block.
    pub initial_step: u64,
    /// The step never shrinks below this.
    pub min_step: u64,
    /// The step never grows above this.
    pub max_step: u64,
    /// Share of the current block used (0.0 to 1.0) at which the next one is loaded.
    pub preload_at: f64,
    /// How long one block should last: a block used up in less than half of this
    /// doubles the step, one lasting more than twice this halves it.
    pub target_block_duration: Duration,
}

impl Default for SegmentOptions {
    /// Blocks of 1,000 growing up to 1,000,000, preload at 10% used, aim for a block a minute.
    fn default() -> Self {
        Self {
            initial_step: 1_000,
            min_step: 100,
            max_step: 1_000_000,
            preload_at: 0.1,
            target_block_duration: Duration::from_secs(60),
        }
    }
}

/// A reserved block of positions.
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    next: u64,
    end: u64,
    len: u64,
}

impl Block {
    fn new(first: u64, len: u64) -> Self {
        Self {
            next: first,
            end: first + len,
            len,
        }
    }
    fn remaining(&self) -> u64 {
        self.end - self.next
    }
}

#[derive(Debug, Default)]
struct State {
    current: Block,
    next: Option<Block>,
    loading: bool,
    step: u64,
    last_load: Option<Instant>,
    loader: Option<JoinHandle<()>>,
    last_failure: Option<String>,
}

#[derive(Debug)]
struct Inner<S> {
    store: S,
    name: String,
    spec: SequenceSpec,
    options: SegmentOptions,
    state: Mutex<State>,
    loaded: Condvar,
}

/// Hands out the numbers of one sequence from memory, a block at a time.
///
/// Thread-safe; numbers from one allocator increase. Dropping it (or a crash) loses
/// the unused rest of the reserved blocks: those numbers are skipped, never reissued.
#[derive(Debug)]
pub struct SegmentAllocator<S: TicketStore> {
    inner: Arc<Inner<S>>,
}

impl<S: TicketStore> SegmentAllocator<S> {
    /// An allocator for sequence `name`; nothing is reserved until the first number.
    pub fn new(
        store: S,
        name: &str,
        spec: SequenceSpec,
        options: SegmentOptions,
    ) -> Result<Self, TicketError> {
        validate_name(name)?;
        let mut options = options;
        options.min_step = options.min_step.max(1);
        options.max_step = options.max_step.max(options.min_step);
        options.initial_step = options
            .initial_step
            .clamp(options.min_step, options.max_step);
        let state = State {
            step: options.initial_step,
            ..State::default()
        };
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                name: name.to_string(),
                spec,
                options,
                state: Mutex::new(state),
                loaded: Condvar::new(),
            }),
        })
    }

    /// The next number.
    pub fn next(&self) -> Result<u64, TicketError> {
        {
            // Fast path: a number left in the current block, no allocation.
            let mut state = self.inner.state.lock();
            if state.current.remaining() > 0 {
                let position = state.current.next;
                let number = self
                    .inner
                    .spec
                    .number(position)
                    .ok_or_else(|| TicketError::Exhausted(self.inner.name.clone()))?;
                state.current.next += 1;
                self.maybe_preload(&mut state);
                return Ok(number);
            }
        }
        let mut one = Vec::with_capacity(1);
        self.take_into(1, &mut one)?;
        Ok(one[0])
    }

    /// `count` numbers (1 to [`MAX_TICKETS_PER_CALL`]), increasing.
    pub fn take(&self, count: u64) -> Result<Vec<u64>, TicketError> {
        let mut out = Vec::with_capacity(count.min(MAX_TICKETS_PER_CALL) as usize);
        self.take_into(count, &mut out)?;
        Ok(out)
    }

    /// Appends `count` numbers to `out`. On error, nothing is appended.
    pub fn take_into(&self, count: u64, out: &mut Vec<u64>) -> Result<(), TicketError> {
        if count == 0 || count > MAX_TICKETS_PER_CALL {
            return Err(TicketError::BadCount {
                got: count,
                max: MAX_TICKETS_PER_CALL,
            });
        }
        let inner = &self.inner;
        let start_len = out.len();
        let mut state = inner.state.lock();
        let mut left = count;
        while left > 0 {
            let available = state.current.remaining();
            if available > 0 {
                let n = left.min(available);
                let first = state.current.next;
                for position in first..first + n {
                    match inner.spec.number(position) {
                        Some(number) => out.push(number),
                        None => {
                            out.truncate(start_len);
                            return Err(TicketError::Exhausted(inner.name.clone()));
                        }
                    }
                }
                state.current.next += n;
                left -= n;
                self.maybe_preload(&mut state);
            } else if let Some(block) = state.next.take() {
                state.current = block;
            } else if state.loading {
                inner.loaded.wait(&mut state);
            } else {
                // Nothing preloaded (first use, or the preload failed): load now, and
                // at least what this call still needs.
                state.loading = true;
                let len = Self::next_step(&inner.options, &mut state).max(left);
                let reserved = parking_lot::MutexGuard::unlocked(&mut state, || {
                    inner.store.reserve(&inner.name, inner.spec, len)
                });
                state.loading = false;
                inner.loaded.notify_all();
                match reserved {
                    Ok(first) => state.current = Block::new(first, len),
                    Err(e) => {
                        out.truncate(start_len);
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// The current block size.
    pub fn step(&self) -> u64 {
        self.inner.state.lock().step
    }

    /// The last background load failure, if the most recent one failed.
    pub fn last_failure(&self) -> Option<String> {
        self.inner.state.lock().last_failure.clone()
    }

    /// Starts loading the next block in the background once enough of this one is used.
    fn maybe_preload(&self, state: &mut State) {
        if state.next.is_some() || state.loading {
            return;
        }
        let used = state.current.len - state.current.remaining();
        if (used as f64) < self.inner.options.preload_at * state.current.len as f64 {
            return;
        }
        if let Some(done) = state.loader.take() {
            // Not loading, so the previous loader has finished; joining is immediate.
            let _ = done.join();
        }
        state.loading = true;
        let len = Self::next_step(&self.inner.options, state);
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("shardkit-ticket-preload".into())
            .spawn(move || {
                let reserved = inner.store.reserve(&inner.name, inner.spec, len);
                let mut state = inner.state.lock();
                state.loading = false;
                match reserved {
                    Ok(first) => {
                        state.next = Some(Block::new(first, len));
                        state.last_failure = None;
                    }
                    Err(e) => state.last_failure = Some(e.to_string()),
                }
                inner.loaded.notify_all();
            });
        match spawned {
            Ok(handle) => state.loader = Some(handle),
            // No thread to be had: the caller that empties the block loads it itself.
            Err(_) => state.loading = false,
        }
    }

    /// Adapts the step to how fast the last block went, and returns it.
    fn next_step(options: &SegmentOptions, state: &mut State) -> u64 {
        let now = Instant::now();
        if let Some(last) = state.last_load {
            let lasted = now.duration_since(last);
            if lasted < options.target_block_duration / 2 {
                state.step = (state.step.saturating_mul(2)).min(options.max_step);
            } else if lasted > options.target_block_duration * 2 {
                state.step = (state.step / 2).max(options.min_step);
            }
        }
        state.last_load = Some(now);
        state.step
    }
}

impl<S: TicketStore> Drop for SegmentAllocator<S> {
    /// Waits for a background load to finish, so the store is no longer in use once
    /// the allocator is gone. Writes nothing: dropping is the same as crashing.
    fn drop(&mut self) {
        let loader = self.inner.state.lock().loader.take();
        if let Some(handle) = loader {
            let _ = handle.join();
        }
    }
}
