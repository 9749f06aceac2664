//! The counters' log of record on NATS JetStream (feature `nats`).
//!
//! One stream per counter store holds the engine's framed records, one message per
//! group-commit batch. One writer per store: the node holding the store's lease (a key
//! in a KV bucket whose `max_age` is the lease, renewed every third of it) publishes;
//! every publish expects the stream's last sequence, so a writer that lost the lease is
//! refused as soon as the new leader has appended (its first append is an empty marker
//! message naming it). Every other node follows the stream with an ordered consumer.
//!
//! - [`durability`]: what an acknowledged increment survives on the NATS it was
//!   written to, said at start.
//! - [`names`]: stream, subject and bucket names of a store.
//! - [`publisher`]: the leader's [`shardkit_counters::LogOfRecord`].
//! - [`follower`]: the replica's consumer.
//! - [`election`]: take the lease, catch up, fence, lead; renew; step down.
//! - [`membership`]: every node announces itself in the members bucket and hears the
//!   others (the Sentinel replies read them).
//! - [`snapshots`]: the leader's snapshots in an object store, the purge of the stream
//!   below what they cover, and a start from the newest one.
//! - [`snapshot_wanted`]: a replica that cannot rebuild its copy from the stream asks
//!   the leader for a fresh snapshot (a full resync).
//! - [`stamp`]: the term and chain headers of every message, and the check of them.
//! - [`lsn_seq`]: which stream sequence a snapshot's lsn corresponds to.
//! - [`kv_agreed`]: a KV key as its bucket's stream leader holds it (the lease, the
//!   cluster's map and node records are read so).
//! - [`joint`]: where a copy restored from a snapshot stands in the stream's chain.
//! - [`id_leases`]: this node's leases on blocks of id shards, so every node of the
//!   store issues ids and no two issue the same.
//! - [`tasks`]: where a store's tasks run and how they are stopped together.
//! - [`until_up`]: a start waits out NATS weather (a server down, no JetStream meta
//!   leader yet) instead of exiting.
//! - [`ticks`]: the grid periodic work waits on, so many stores' timers fire at once.
//!
//! Everything NATS runs on a runtime of its own (one thread), so an engine commit that
//! blocks a server thread on a publish can never starve the task doing the publish; a
//! cluster node's group stores share the node's such runtime.

pub mod durability;
pub mod election;
pub mod follower;
pub mod id_leases;
pub mod joint;
pub mod kv_agreed;
pub mod lsn_seq;
pub mod membership;
pub mod names;
pub mod publisher;
pub mod snapshot_wanted;
pub mod snapshots;
pub mod stamp;
pub mod tasks;
pub mod ticks;
pub mod until_up;

use crate::replication::store::CounterStore;
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;

/// Exit status of a leader that lost its lease and could not restart in place
/// ([`crate::restart_in_place`]): restart it and it rejoins as a replica (its in-memory
/// state may hold writes the stream refused, so it does not keep it).
pub const EXIT_DEPOSED: i32 = 75;

/// Exit status of a replica that diverged or fell behind the stream's purge point (the
/// records it needs next are gone) and could not restart in place: restart it and it
/// starts over from the newest snapshot in the object store (every start does), rather
/// than go on with records missing.
pub const EXIT_BEHIND: i32 = 76;

/// The running replication: its tasks, stopped with [`Replicator::stop`].
pub struct Replicator {
    /// The server's own store runs its tasks on a runtime of its own; a cluster group's
    /// run on its node's (`None` here).
    runtime: Option<tokio::runtime::Runtime>,
    tasks: tasks::Tasks,
    /// The server's own store announces itself (Sentinel) and leases id shards; a
    /// cluster node's group stores do neither.
    server: Option<(
        membership::Membership,
        Arc<crate::id_leases::IdLeases>,
        async_nats::jetstream::kv::Store,
    )>,
}

impl std::fmt::Debug for Replicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replicator")
    }
}

impl Replicator {
    /// Connects to NATS (`[nats] url`), makes the store's stream, lease and members
    /// buckets if they are missing, and starts announcing this node, following the
    /// stream and, with `role = "auto"`, standing for the lease; and takes this node's
    /// id shard leases into `ids`.
    pub fn start(
        state: Arc<CounterStore>,
        ids: Arc<crate::id_leases::IdLeases>,
    ) -> anyhow::Result<Self> {
        Self::run(state, Some(ids), None)
    }

    /// Follows the stream of a cluster node's group store and, when its spec may lead,
    /// stands for its lease: [`Replicator::start`] without the members and id leases,
    /// over `client`, the node's one NATS connection for all its groups, with every
    /// task on `shared`, the runtime that connection runs on. Call it from a blocking
    /// thread.
    pub fn start_group(
        state: Arc<CounterStore>,
        client: async_nats::Client,
        shared: tokio::runtime::Handle,
    ) -> anyhow::Result<Self> {
        Self::run(state, None, Some((client, shared)))
    }

    fn run(
        state: Arc<CounterStore>,
        ids: Option<Arc<crate::id_leases::IdLeases>>,
        client: Option<(async_nats::Client, tokio::runtime::Handle)>,
    ) -> anyhow::Result<Self> {
        let (runtime, handle) = match &client {
            Some((_, shared)) => (None, shared.clone()),
            None => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("shardkit-nats")
                    .enable_all()
                    .build()
                    .context("cannot start the NATS runtime")?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let tasks = tasks::Tasks::on(handle.clone());
        let client_name = format!("shardkit {}", state.replication.me.resp);
        let setup = handle.block_on(until_up::until_up(
            "making the counters' stream and buckets",
            || {
                let (client, tasks, spec, name) =
                    (client.clone(), tasks.clone(), &state.spec, &client_name);
                async move {
                    match client {
                        Some((client, _)) => election::Store::on(spec, client, tasks).await,
                        None => election::Store::connect(spec, name, tasks).await,
                    }
                }
            },
        ));
        let store = setup.with_context(|| {
            format!(
                "cannot reach JetStream at {} for the counters' log",
                state.spec.nats.urls_text()
            )
        })?;
        let version = store.js.client().server_info().version;
        let warning = durability::warning(&version, state.spec.stream_replicas);
        if let Some(w) = &warning {
            // A cluster node's many group stores share one NATS: said once.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(nats_version = %version, "acknowledged increments may not survive a lost machine: {w}");
            });
        }
        metrics::gauge!("shardkit_log_durability_warning").set(if warning.is_some() {
            1.0
        } else {
            0.0
        });
        state.replication.set_durability(version, warning);
        let server = match ids {
            Some(ids) => {
                let membership = handle
                    .block_on(until_up::until_up("making the members bucket", || {
                        membership::Membership::open(
                            &store.js,
                            &state.spec,
                            &state.replication.me.node,
                        )
                    }))
                    .context("cannot make the counters' members bucket")?;
                let id_kv = handle
                    .block_on(until_up::until_up("making the id lease bucket", || {
                        id_leases::open(&store.js, &state.spec)
                    }))
                    .context("cannot make the id shard lease bucket")?;
                let me = serde_json::to_string(&state.replication.me)?;
                let lease_for = Duration::from_millis(state.spec.lease_ms);
                tasks.spawn(id_leases::run(
                    Arc::clone(&ids),
                    id_kv.clone(),
                    me,
                    lease_for,
                ));
                tasks.spawn(membership::run(Arc::clone(&state), membership.clone()));
                Some((membership, ids, id_kv))
            }
            None => None,
        };
        tasks.spawn(election::run(state, store));
        Ok(Self {
            runtime,
            tasks,
            server,
        })
    }

    /// Has the store's lease given back if this node leads it (see
    /// [`crate::replication::store::LeaseRelease`]), waiting up to `within`.
    pub fn release_lease(&self, store: &CounterStore, within: Duration) {
        if !matches!(store.replication.role(), crate::replication::Role::Leader) {
            return;
        }
        store.release.ask();
        self.tasks.wait_up_to(within, store.release.done.notified());
    }

    /// Tells every task to end, without waiting: for a cluster node shutting its
    /// runtime down, which then waits for them.
    pub fn cancel(&self) {
        self.tasks.cancel();
    }

    /// Removes this node from the members, then stops every NATS task, waiting up to a
    /// second for them to end (so the state they hold is released). Call it from a
    /// blocking thread.
    pub fn stop(self) {
        if let Some((membership, ids, id_kv)) = &self.server {
            let leave = async {
                membership.leave().await;
                id_leases::leave(ids, id_kv).await;
            };
            self.tasks.wait_up_to(Duration::from_secs(1), leave);
        }
        match self.runtime {
            Some(runtime) => runtime.shutdown_timeout(Duration::from_secs(1)),
            None => self.tasks.stop(Duration::from_secs(1)),
        }
    }
}
