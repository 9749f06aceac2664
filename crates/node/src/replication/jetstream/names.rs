//! The NATS names one counter store uses, all derived from `[counters] store`, so
//! several stores share one NATS without meeting.

/// Stream, subject and lease bucket of one store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The JetStream stream holding the log: `SHARDKIT_COUNTERS_<store>`.
    pub stream: String,
    /// The subject the leader publishes batches on: `shardkit.counters.<store>.log`.
    pub subject: String,
    /// The KV bucket of the writer lease: `shardkit_lease_<store>`.
    pub lease_bucket: String,
    /// The KV bucket where every node announces itself (key: its node id), for the
    /// Sentinel replies: `shardkit_members_<store>`.
    pub members_bucket: String,
    /// The object store of the snapshots: `shardkit_snapshots_<store>`.
    pub snapshot_bucket: String,
    /// The subject a replica that cannot rebuild its copy from the stream asks the
    /// leader for a fresh snapshot on: `shardkit.counters.<store>.snapshot-wanted`.
    pub snapshot_wanted: String,
}

/// The key in the lease bucket the leader holds.
pub const LEASE_KEY: &str = "leader";

/// Header of every message: `first-end` lsns (end exclusive) of the batch it carries
/// (`n-n` on a leader's marker); how snapshots find their stream sequence (`lsn_seq`).
pub const LSN_HEADER: &str = "Shardkit-Lsn";

/// Header of the empty message a new leader publishes first: its addresses (JSON).
pub const LEADER_HEADER: &str = "Shardkit-Leader";

impl Names {
    /// The names of store `store` (checked by the settings: letters, digits, `-`, `_`).
    pub fn new(store: &str) -> Self {
        Self {
            stream: format!("SHARDKIT_COUNTERS_{store}"),
            subject: format!("shardkit.counters.{store}.log"),
            lease_bucket: format!("shardkit_lease_{store}"),
            members_bucket: format!("shardkit_members_{store}"),
            snapshot_bucket: format!("shardkit_snapshots_{store}"),
            snapshot_wanted: format!("shardkit.counters.{store}.snapshot-wanted"),
        }
    }
}
