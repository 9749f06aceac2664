//! Keys to logical shards to nodes: a consistent-hash ring with weighted virtual nodes
//! and clockwise replicas, jump consistent hash (Lamping–Veach, and the faster JumpBack
//! hashing), Instagram-style logical shards behind a versioned table, and move plans that
//! rebalance that table with the fewest moves.
//!
//! Every placement goes through one stable hash ([`hash_bytes`], XXH3-64 with a fixed
//! seed) so a key lands in the same place on every platform and every version. Bad input
//! is a [`RingError`], never a panic. See the crate's README for the design, invariants
//! and benchmarks.
//!
//! ```
//! use shardkit_ring::{NodeSpec, Plan, Ring, ShardMap};
//!
//! // A ring: the node for a key, and three distinct replicas starting at it.
//! let nodes = vec![NodeSpec::new("db1"), NodeSpec::new("db2"), NodeSpec::weighted("db3", 2)];
//! let ring = Ring::new(nodes.clone(), 160)?;
//! let replicas = ring.replicas("user:42", 3);
//! assert_eq!(replicas[0], ring.node_for("user:42"));
//!
//! // Logical shards: a key's shard never changes; the table moves shards between nodes.
//! let map = ShardMap::new(8192, nodes)?;
//! let shard = map.shard_for_u64(123_456);
//! let plan = Plan::add(&map, NodeSpec::new("db4"))?;
//! let next = plan.apply(&map)?;
//! assert_eq!(next.version(), 2);
//! assert!(plan.moves.iter().all(|m| m.to == "db4"));
//! assert!(next.owner(shard).is_some());
//! # Ok::<(), shardkit_ring::RingError>(())
//! ```

//!
//! The rest of this page is the crate's `README.md`.
//!
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod error;
pub mod hash;
pub mod jump;
pub mod jump_back;
pub mod node;
pub mod plan;
pub mod ring;
mod server_name;
pub mod shard_map;
pub mod shared;
pub mod stats;

pub use error::RingError;
pub use hash::{hash_bytes, hash_u64};
pub use jump::{jump, JumpAlgorithm, JumpNodes};
pub use jump_back::jump_back;
pub use node::NodeSpec;
pub use plan::{optimal_fraction, Move, Plan};
pub use ring::Ring;
pub use server_name::redact_url;
pub use shard_map::{Format, ShardMap, DEFAULT_SHARDS};
pub use shared::SharedRing;
pub use stats::{Algorithm, Stats, StatsRequest};
