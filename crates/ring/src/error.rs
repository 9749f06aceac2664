//! The one error type of the crate.
//!
//! Every way a caller can hand this crate bad input has its own variant, so the binary
//! can print a sentence that says what was wrong, and callers can match on the cause
//! instead of parsing strings. Nothing in the crate panics on input from outside.

use thiserror::Error;

/// What went wrong while building or changing a ring, a shard map or a move plan.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingError {
    /// A ring, a jump hash or a shard map needs at least one node to place keys on.
    #[error("no nodes: give at least one node")]
    NoNodes,

    /// Two nodes share a name; placement is keyed by name, so names must be unique.
    #[error("duplicate node name {0:?}: every node needs its own name")]
    DuplicateNode(String),

    /// A node name that is empty (or only spaces) cannot be told apart in a table.
    #[error("empty node name: give every node a non-empty name")]
    EmptyNodeName,

    /// A weight of 0 would give a node nothing; remove the node instead.
    #[error("node {0:?} has weight 0: weights start at 1 (remove the node to give it nothing)")]
    ZeroWeight(String),

    /// A ring with zero virtual nodes per node has no points to search.
    #[error("0 virtual nodes per node: give at least 1 (160 is a good default)")]
    ZeroVnodes,

    /// The ring would hold more points than the crate is willing to allocate.
    #[error("the ring would have {points} points (nodes x vnodes x weight); the limit is {limit}")]
    TooManyPoints {
        /// Points the ring would need.
        points: u64,
        /// The most points a ring may hold.
        limit: u64,
    },

    /// The named node is not in the ring or the table.
    #[error("unknown node {0:?}: it is not in the map")]
    UnknownNode(String),

    /// The node to add is already there.
    #[error("node {0:?} is already in the map")]
    NodeExists(String),

    /// Removing this node would leave nothing to place keys on.
    #[error("cannot remove {0:?}: it is the last node")]
    LastNode(String),

    /// Jump hash needs at least one bucket.
    #[error("0 buckets: jump hash needs at least one bucket")]
    ZeroBuckets,

    /// The logical-shard count must be a power of two (it is a bit field of an id).
    #[error("{0} logical shards: the count must be a power of two between 1 and 2^24 (8192 is the default)")]
    ShardCountNotPowerOfTwo(u64),

    /// A table lists a shard number at or past the shard count.
    #[error("shard {shard} is out of range: the map has {shards} shards (0..{shards})")]
    ShardOutOfRange {
        /// The shard named.
        shard: u64,
        /// The map's shard count.
        shards: u64,
    },

    /// A table gives one shard to two owners (or twice to the same one).
    #[error("shard {0} is assigned more than once")]
    ShardAssignedTwice(u64),

    /// A table leaves a shard with no owner: keys hashing there would have nowhere to go.
    #[error("shard {0} has no node: the table must cover every shard")]
    ShardUnassigned(u64),

    /// A shard range whose start is past its end.
    #[error("shard range {start}-{end} is backwards: write the smaller number first")]
    BadRange {
        /// First shard of the range.
        start: u64,
        /// Last shard of the range.
        end: u64,
    },

    /// A plan made for one version of a table was applied to another.
    #[error("the plan was made for version {plan} of the map, but the map is at version {map}")]
    VersionMismatch {
        /// Version the plan was made from.
        plan: u64,
        /// Version of the map it was applied to.
        map: u64,
    },

    /// A move in a plan does not match the table it is applied to.
    #[error("bad move of shard {shard}: {reason}")]
    BadMove {
        /// The shard the move names.
        shard: u64,
        /// Why the move does not apply.
        reason: String,
    },

    /// A map file could not be read as TOML or JSON.
    #[error("cannot parse the map: {0}")]
    Parse(String),

    /// A map could not be written out.
    #[error("cannot write the map: {0}")]
    Serialize(String),

    /// A statistics run was asked for a size it cannot do.
    #[error("invalid statistics request: {0}")]
    BadStats(String),
}
