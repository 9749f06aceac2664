//! Keys to logical shards to nodes: a consistent-hash ring with weighted virtual nodes
//! and clockwise replicas, jump consistent hash, Instagram-style logical shards behind a
//! versioned table, and move plans that rebalance that table with the fewest moves.
//!
//! Every placement goes through one stable hash ([`hash_bytes`], XXH3-64 with a fixed
//! seed) so a key lands in the same place on every platform and every version. Bad input
//! is a [`RingError`], never a panic. See the crate's README for the design, invariants
//! and benchmarks.

mod error;
pub mod hash;
pub mod jump;
pub mod node;
pub mod plan;
pub mod ring;
pub mod shard_map;
pub mod shared;
pub mod stats;

pub use error::RingError;
pub use hash::{hash_bytes, hash_u64};
pub use jump::{jump, JumpNodes};
pub use node::NodeSpec;
pub use plan::{Move, Plan};
pub use ring::Ring;
pub use shard_map::{Format, ShardMap, DEFAULT_SHARDS};
pub use shared::SharedRing;
pub use stats::{Algorithm, Stats, StatsRequest};
