//! The seam between the engine's log and a replicated log of record.
//!
//! Locally the engine's segment files are the log of record. A server that replicates
//! (shardkit's `[counters] log = "jetstream"`) attaches a [`LogOfRecord`]: every batch
//! the log writes out (one group commit) is handed to it, and no record of the batch is
//! acknowledged before it was stored. Followers feed what it stored into
//! [`crate::Engine::apply_replicated`], which checks the CRCs and the lsn sequence.

/// Called once with the outcome of one batch handed to [`LogOfRecord::submit`]: `Ok`
/// once it is stored, `Err` (why) when it may not be.
pub type Stored = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Where a batch of log records must be accepted before any of them is acknowledged.
///
/// Exists so the engine knows nothing of NATS: the implementation publishes the batch
/// (fenced, so a deposed writer is refused) and reports when it was stored.
pub trait LogOfRecord: Send + Sync {
    /// Stores one batch: `frames` holds the records `first_lsn..end_lsn` (end exclusive)
    /// framed as in the segment files (`[len u32][crc32 u32][payload]`, little-endian).
    /// Called in lsn order, one batch at a time. Returns once the batch is durable; an
    /// `Err` (why) means it may not be: the engine acknowledges nothing of it and
    /// refuses every later write ([`crate::Error::LogOfRecord`]).
    fn append(&self, first_lsn: u64, end_lsn: u64, frames: &[u8]) -> Result<(), String>;

    /// Hands one batch over as [`LogOfRecord::append`] does, but returns at once and
    /// calls `stored` with the outcome later, from whatever thread learns it (exists so
    /// a writer on an event loop does not block a thread on every publish,
    /// [`crate::Engine::commit_then`]). Batches handed over by either call are stored
    /// in the order they were handed over, and a batch is reported stored only after
    /// every batch before it was. The default stores it at once, with `append` on the
    /// caller's thread: a log of record whose `append` waits for an event loop must
    /// implement this, or a caller on that loop blocks it.
    fn submit(&self, first_lsn: u64, end_lsn: u64, frames: &[u8], stored: Stored) {
        stored(self.append(first_lsn, end_lsn, frames));
    }
}

/// What [`crate::Engine::apply_replicated`] did with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Applied {
    /// Records applied.
    pub applied: u64,
    /// Records skipped because they were already applied (a redelivered batch).
    pub skipped: u64,
    /// The lsn the next record must carry.
    pub next_lsn: u64,
}
