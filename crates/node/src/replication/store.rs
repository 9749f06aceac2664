//! One counter store as its log of record sees it: the engine with the `auto_create`
//! rule, this node's role for it, and the names and timings of its NATS objects.
//!
//! Exists so the replication tasks (lease, follower, publisher, snapshots) work on a
//! store rather than on the whole server state: today a node has one store; a cluster
//! node (docs/cluster.md) will hold one per slot group it serves.

use super::Status;
use crate::counters::Counters;
use std::sync::Arc;

/// A counter store: what the replication tasks read and change.
#[derive(Debug)]
pub struct CounterStore {
    /// The engine and its write rule (shared with the request handlers).
    pub counters: Arc<Counters>,
    /// This node's role and progress for the store.
    pub replication: Arc<Status>,
    /// Its NATS names and timings.
    pub spec: StoreSpec,
    /// Asks the lease holder to give the lease back (a cluster node closing a group
    /// that moves away) rather than let it lapse.
    pub release: LeaseRelease,
    /// Whether this node stands for the lease now: `spec.may_lead` at the start; a
    /// cluster node sets it when the map makes it the owner of a group it follows, so
    /// the follower takes over in place, already caught up.
    pub stands_for_lease: std::sync::atomic::AtomicBool,
    /// What happens when the store must start over (a leader that lost its lease, a
    /// replica that fell behind the stream's purge point).
    pub on_restart: OnRestart,
    /// The snapshot this copy started from (none: from the stream's start), noted as
    /// not to start from again if the stream does not continue it.
    pub started_from: Option<super::distrusted::StartedFrom>,
    /// Where a replay that the stream leader's copy cannot continue is noted, so the
    /// next start waits for a snapshot past it (none for the local log).
    pub resync: Option<super::resync::Resync>,
}

/// How a store starts over when its state can no longer be trusted: a deposed leader
/// (its memory may hold writes the stream refused) or a replica behind the purge point.
/// Either way the local copy is dropped and rebuilt from the newest snapshot and the
/// stream; what differs is who does it.
#[derive(Debug, Default)]
pub enum OnRestart {
    /// The server's one store: the whole node starts over, restarting itself in place
    /// ([`crate::restart_in_place`]; it exits 75 deposed, 76 behind only when it
    /// cannot, for a supervisor).
    #[default]
    RestartProcess,
    /// A cluster node's group store: its group number goes to the node's runner,
    /// which closes the store and opens it again from the snapshot and the stream; the
    /// node and its other groups go on serving.
    Reopen {
        /// The group.
        group: u16,
        /// The runner's queue of groups to reopen.
        queue: tokio::sync::mpsc::UnboundedSender<u16>,
    },
}

impl OnRestart {
    /// Starts the store over: asks the server to drain and restart in place (`code`
    /// is its exit status if it cannot), or asks the runner to reopen the group.
    pub fn restart(&self, code: i32) {
        match self {
            OnRestart::RestartProcess => crate::restart_in_place::request(code),
            OnRestart::Reopen { group, queue } => {
                // The runner is gone only when the node is stopping: nothing to reopen.
                let _ = queue.send(*group);
            }
        }
    }
}

/// The hand-back of a store's lease: [`LeaseRelease::ask`] wakes the task that renews
/// the lease, which deletes it (only if it still holds it: the delete expects its
/// revision), stops taking writes without leaving the process, and says it is done.
#[derive(Debug, Default)]
pub struct LeaseRelease {
    /// Wakes the renewing task.
    pub asked: tokio::sync::Notify,
    /// Wakes the closer once the lease is given back.
    pub done: tokio::sync::Notify,
}

impl LeaseRelease {
    /// Asks for the lease back.
    pub fn ask(&self) {
        self.asked.notify_one();
    }
}

/// Makes what a new leader needs in its engine before it takes writes.
pub type PrepareLeader = fn(&shardkit_counters::Engine) -> Result<(), shardkit_counters::Error>;

/// Where a store's log lives and how its lease runs.
#[derive(Debug, Clone)]
pub struct StoreSpec {
    /// The store's name: its stream, buckets and subject derive from it.
    pub name: String,
    /// The NATS servers and credentials.
    pub nats: crate::nats_settings::NatsSettings,
    /// How long the writer's lease lasts without renewal, ms.
    pub lease_ms: u64,
    /// Copies JetStream keeps of the stream and the buckets.
    pub stream_replicas: usize,
    /// Whether this node stands for the lease (`role = "auto"`).
    pub may_lead: bool,
    /// Snapshots kept in the object store.
    pub snapshots_kept: usize,
    /// What a new leader makes in its engine before it takes writes (the server's own
    /// store: the link-click counters). A function of the layer above, so replication
    /// need not know what the store holds.
    pub prepare_leader: Option<PrepareLeader>,
}
