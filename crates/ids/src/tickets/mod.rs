//! Flickr-style ticket sequences: named counters handed out as unique numbers, with
//! `increment`/`offset` so several ticket servers never collide, and Leaf-style
//! segment allocation so a sequence costs one durable write per block, not per number.
//!
//! A [`TicketStore`] only deals in *positions* (0, 1, 2, ...); a [`SequenceSpec`]
//! turns position `k` into the number `offset + k * increment`. With increment 2, the
//! server with offset 1 hands out 1, 3, 5, ... and the one with offset 2 hands out 2, 4,
//! 6, ...: Flickr's two ticket servers.

mod embedded;
mod segment;
mod spec;

pub use embedded::EmbeddedTicketStore;
pub use segment::{SegmentAllocator, SegmentOptions};
pub use spec::{validate_name, SequenceSpec, MAX_TICKETS_PER_CALL};

use crate::error::TicketError;

/// Durable storage of ticket sequences: reserves blocks of positions so that a
/// position, once returned, is never returned again, even after a crash.
///
/// Implementations: [`EmbeddedTicketStore`] here; PostgreSQL and MariaDB live in
/// `shardkit-pg`.
pub trait TicketStore: Send + Sync + 'static {
    /// Reserves `count` consecutive positions of sequence `name` (created on first use
    /// with `spec`) and returns the first. The reservation is durable before this returns.
    fn reserve(&self, name: &str, spec: SequenceSpec, count: u64) -> Result<u64, TicketError>;
}

impl<T: TicketStore + ?Sized> TicketStore for std::sync::Arc<T> {
    fn reserve(&self, name: &str, spec: SequenceSpec, count: u64) -> Result<u64, TicketError> {
        (**self).reserve(name, spec, count)
    }
}
