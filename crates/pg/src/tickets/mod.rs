//! Ticket servers on existing databases, behind `shardkit-ids`'s [`TicketStore`]:
//! Flickr's on MariaDB/MySQL ([`mysql`]) and a PostgreSQL sequence store ([`postgres`]).
//!
//! Both use one model, [`BlockSize`]: the database hands out *tickets* t (1, 2, 3, ...,
//! or with `increment`/`offset` the odd or even ones), and ticket t stands for the block
//! of positions `(t - 1) * B .. t * B`. With B = 1 that is Flickr's original, one
//! database write per number; with a larger B, `shardkit-ids`'s segment allocator gives
//! out a block from memory after one write. Tickets are unique across servers that
//! share an increment with distinct offsets, so blocks, and the numbers in them, are too.
//!
//! [`TicketStore`]: shardkit_ids::tickets::TicketStore

pub mod mysql;
pub mod postgres;

use shardkit_ids::tickets::SegmentOptions;
use shardkit_ids::TicketError;
use std::path::PathBuf;
use std::time::Duration;

/// Positions per database ticket. Part of a sequence's identity: changing it for an
/// existing sequence would make blocks overlap, so the stores record it and refuse
/// another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize(u64);

impl BlockSize {
    /// Flickr's original: one ticket per number.
    pub const ONE: BlockSize = BlockSize(1);

    /// A block size of at least 1.
    pub fn new(size: u64) -> Self {
        Self(size.max(1))
    }

    /// The size.
    pub fn get(self) -> u64 {
        self.0
    }

    /// First position of ticket `ticket`'s block.
    pub fn first_position(self, name: &str, ticket: u64) -> Result<u64, TicketError> {
        ticket
            .checked_sub(1)
            .and_then(|t| t.checked_mul(self.0))
            .filter(|p| *p < (1 << 63))
            .ok_or_else(|| TicketError::Exhausted(name.to_string()))
    }

    /// Checks a reservation fits one block (the allocator from [`segment_options`] never asks for more).
    pub fn check_count(self, count: u64) -> Result<(), TicketError> {
        if count == 0 || count > self.0 {
            return Err(TicketError::BadCount {
                got: count,
                max: self.0,
            });
        }
        Ok(())
    }
}

/// Segment options whose every block is exactly one database ticket (`step` fixed at
/// the block size), for `SegmentAllocator::new` over a store of this module.
pub fn segment_options(block: BlockSize) -> SegmentOptions {
    SegmentOptions {
        initial_step: block.get(),
        min_step: block.get(),
        max_step: block.get(),
        preload_at: 0.1,
        target_block_duration: Duration::from_secs(60),
    }
}

/// A store error naming the server (URL without password) and what failed.
pub(crate) fn store_error(server: &str, message: impl Into<String>) -> TicketError {
    TicketError::Store {
        path: PathBuf::from(server),
        message: message.into(),
    }
}
