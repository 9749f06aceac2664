//! One named counter: its column schema and its lock stripes.
//!
//! Lock order, everywhere: the schema lock, then one stripe lock (or several, always
//! in index order: `Engine::incr_run`, `clear`), then the log's buffer lock. Mutations hold the schema for reading, so `add_column` (which writes it) is
//! ordered against every mutation and the log shows the column before any value in it.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::cold::ColdStats;
use crate::column::ColumnSpec;
use crate::hash::{hash_bytes, mix64, reduce};
use crate::key::Key;
use crate::stripe::Stripe;

/// Lock stripes per counter. Part of the snapshot format: changing it makes older
/// snapshots unreadable.
pub const STRIPES: usize = 32;

/// A counter: schema plus rows spread over [`STRIPES`] independently locked stripes.
pub(crate) struct Counter {
    /// The counter's name.
    pub name: String,
    /// Columns in the order they were added; never shrinks.
    pub schema: RwLock<Vec<ColumnSpec>>,
    /// Rows, by [`stripe_of`].
    pub stripes: Box<[RwLock<Stripe>]>,
    /// How the cold reads of this counter went (shared with its cold files).
    pub cold_stats: Arc<ColdStats>,
    /// When the eviction clock of its string-keyed rows last ticked (Unix ms; 0: never):
    /// a row not written since then has gone that long unwritten ([`crate::evict`]).
    pub names_tick_ms: std::sync::atomic::AtomicU64,
}

impl Counter {
    /// An empty counter with no columns.
    pub(crate) fn new(name: &str) -> Counter {
        Counter {
            name: name.to_string(),
            schema: RwLock::new(Vec::new()),
            stripes: (0..STRIPES)
                .map(|_| RwLock::new(Stripe::default()))
                .collect(),
            cold_stats: Arc::default(),
            names_tick_ms: Default::default(),
        }
    }

    /// The stripe a key lives in.
    #[inline]
    pub(crate) fn stripe(&self, key: Key<'_>) -> &RwLock<Stripe> {
        &self.stripes[stripe_of(key)]
    }
}

/// Stripe index of a key. Numeric ids go by their high 32 bits, so every id sharing a
/// prefix is in one stripe and can be gathered into one dense partition.
#[inline]
pub(crate) fn stripe_of(key: Key<'_>) -> usize {
    match key {
        Key::Id(id) => reduce(mix64(id >> 32), STRIPES),
        Key::Name(n) => reduce(hash_bytes(n.as_bytes()), STRIPES),
    }
}
