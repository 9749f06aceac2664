//! Replication of the counters' log (`[counters] log = "jetstream"`): who may write,
//! who leads, how far a replica has come.
//!
//! - [`status`]: the node's role and progress, shared by the servers (always built; in
//!   `local` mode the node is a standalone master).
//! - [`gate`]: the one check the RESP dispatcher and the HTTP handlers make before a
//!   write, and the `ROLE` / `INFO replication` replies.
//! - [`store`]: one counter store as the replication tasks see it (engine, role, NATS
//!   names and timings, how it starts over).
//! - [`log_chain`]: the term and running checksum every message of the log carries, so
//!   a replica applies only what continues its own copy.
//! - [`distrusted`]: the snapshots a store no longer starts from on this node (the
//!   stream did not continue them).
//! - [`resync`]: where the stream leader's own copy could not be replayed, so the next
//!   start waits for a snapshot past it.
//! - [`members`]: the store's nodes as they announce themselves; [`sentinel`]: the
//!   Sentinel view (master, replicas, sentinels) built from them and the lease.
//! - `jetstream` (feature `nats`): the log of record on a JetStream stream, the leader
//!   lease in a KV bucket, the follower that applies the stream, the membership
//!   announcements.

pub mod distrusted;
pub mod gate;
#[cfg(feature = "nats")]
pub mod jetstream;
pub mod log_chain;
pub mod members;
pub mod resync;
pub mod sentinel;
pub mod status;
pub mod store;

pub use status::{LeaderAddr, Role, Status};

/// The replication tasks of a node, if its counters' log is on JetStream.
#[derive(Debug)]
pub struct Running {
    #[cfg(feature = "nats")]
    replicator: jetstream::Replicator,
}

impl Running {
    /// Starts replication of `store` when its log is on JetStream (`None` for the local
    /// log). Blocks while connecting: call it from a blocking thread.
    pub fn start(
        jetstream: bool,
        store: &std::sync::Arc<store::CounterStore>,
        id_leases: &std::sync::Arc<crate::id_leases::IdLeases>,
    ) -> anyhow::Result<Option<Self>> {
        if !jetstream {
            return Ok(None);
        }
        #[cfg(feature = "nats")]
        {
            let replicator = jetstream::Replicator::start(
                std::sync::Arc::clone(store),
                std::sync::Arc::clone(id_leases),
            )?;
            Ok(Some(Self { replicator }))
        }
        #[cfg(not(feature = "nats"))]
        {
            let _ = (store, id_leases);
            anyhow::bail!(
                "counters.log \"jetstream\" needs a shardkit built with the cargo feature `nats`"
            )
        }
    }

    /// Stops the replication tasks (blocks up to a second: call it from a blocking thread).
    pub fn stop(self) {
        #[cfg(feature = "nats")]
        self.replicator.stop();
    }
}
