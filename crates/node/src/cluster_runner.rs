//! A cluster node's background side (feature `nats`): it keeps its record alive, watches
//! the slot map, and opens or closes the store of each group as the map gives it or
//! takes it away.
//!
//! A group store is one counter store of the JetStream mode, named
//! `<cluster>-g<NNN>`, its local copy in `<data>/cluster/g<NNN>`, its tasks run on the
//! node's runtime over the node's one NATS connection (both shared by all its groups,
//! each group's tasks stopped on their own when it closes): the group's owner
//! stands for its lease and leads once it has it (catching up and fencing as every
//! JetStream leader does); a replica follows its stream. A group the map moves away
//! from this node is closed: it stops taking the group's writes, deletes its lease key
//! (expecting its own revision, so never a newer holder's) and stops its tasks; the new
//! owner takes the lease at its next try (every third of `counters.lease_ms`), catches
//! up with the stream and leads, its first append fenced by the stream's last sequence,
//! so no write acknowledged here is lost.

use crate::cluster::live::Live;
use crate::cluster::map::SlotMap;
use crate::cluster::nats::liveness::Liveness;
use crate::cluster::nats::map_store::MapStore;
use crate::cluster::nats::names::group_store_name;
use crate::cluster::nats::registry::{NodeRecord, Registry, HEARTBEAT};
use crate::config::Settings;
use crate::counters::Counters;
use crate::replication::jetstream::Replicator;
use crate::replication::store::{CounterStore, StoreSpec};
use anyhow::Context;
use parking_lot::Mutex;
use shardkit_util::log_every::LogEvery;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the node reads the map without being told it changed (a KV watch wakes
/// it at once on a change).
const MAP_POLL: Duration = Duration::from_millis(200);

/// While NATS elects leaders after a partition the map watch fails every poll (5 a
/// second): each kind of failure is logged at most every 5 s.
static CHECK_FAILED: LogEvery = LogEvery::every(Duration::from_secs(5));
static MAP_UNREADABLE: LogEvery = LogEvery::every(Duration::from_secs(5));
static SCHEMA_UNREADABLE: LogEvery = LogEvery::every(Duration::from_secs(5));

/// The longest one read of the map or the schema may hold the map watch: while the
/// bucket's stream elects a leader a read waits for NATS's request timeout, and the
/// check for dead owners must go on meanwhile.
const READ_BOUND: Duration = Duration::from_secs(1);

/// One open group store and what runs it.
struct Open {
    /// Whether it was opened as the group's owner (standing for the lease).
    owner: bool,
    store: Arc<CounterStore>,
    replicator: Replicator,
    /// Stops the store's group-commit task.
    stop_commit: watch::Sender<bool>,
}

/// What the runner needs of the settings, taken once.
#[derive(Clone)]
struct Ctx {
    settings: Arc<Settings>,
    record: NodeRecord,
    live: Arc<Live>,
    open: Arc<Mutex<BTreeMap<u16, Open>>>,
    /// The node's NATS connection, which every group store uses (one per node, not
    /// one per group: publishes of groups committing together share its writes).
    nats: async_nats::Client,
    /// The node's runtime (the one `nats` runs on): every group's tasks (follower,
    /// lease renewal, publisher, snapshot shipping) run here, so the publishes and
    /// timers of many groups wake one thread.
    shared: tokio::runtime::Handle,
    /// The RESP runtime, where the connections that wait on the groups' commits run:
    /// every group's commit task runs there too, so on the one-thread event loop a
    /// group commits after every connection ready in the same turn has written, as a
    /// lone node's commit does ([`crate::counters::commit_task`]).
    commits: tokio::runtime::Handle,
    /// Groups whose store must start over (a lease lost other than by a hand-over, or a
    /// follower behind the purge point): the map watch closes and reopens them.
    reopen: tokio::sync::mpsc::UnboundedSender<u16>,
    /// Copies of each group's stream and buckets (`[cluster] stream_replicas`, or what
    /// NATS can hold).
    replicas: usize,
}

/// The running background side; [`Runner::stop`] ends it.
pub struct Runner {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
    ctx: Ctx,
    ids: (
        Arc<crate::id_leases::IdLeases>,
        async_nats::jetstream::kv::Store,
    ),
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("node", &self.ctx.record.id)
            .finish()
    }
}

impl Runner {
    /// Joins cluster `[cluster] name` on `[nats] url` as the node `live.me`: writes its
    /// record, starts the heartbeat and the map watch, and takes this node's id shard
    /// leases into `ids` (bucket `shardkit_ids_<cluster>`), so no two nodes of the
    /// cluster issue the same id.
    /// Every group's commit task runs on `commits`, the RESP runtime.
    pub fn start(
        settings: &Settings,
        live: Arc<Live>,
        ids: Arc<crate::id_leases::IdLeases>,
        commits: tokio::runtime::Handle,
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("shardkit-cluster")
            .enable_all()
            .build()
            .context("cannot start the cluster runtime")?;
        let announced = crate::announce::addresses(
            settings.cluster.announce.as_deref(),
            settings.resp.addr(),
            settings.http.listen,
        );
        let record = NodeRecord {
            id: live.me.clone(),
            announce: announced.resp,
            http: announced.http,
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            following: Vec::new(),
        };
        let name = &settings.cluster.name;
        let lease_for = Duration::from_millis(settings.counters.lease_ms);
        let (registry, maps, id_kv, nats, replicas) = runtime.block_on(async {
            let js = crate::cluster::nats::connect(
                &settings.nats,
                &format!("shardkit {}", record.announce),
            )
            .await?;
            let replicas =
                crate::cluster::nats::replicas::choose(&js, name, settings.cluster.stream_replicas)
                    .await?;
            let registry = Registry::open(&js, name, replicas).await?;
            let maps = MapStore::open(&js, name, replicas).await?;
            let id_kv = crate::replication::jetstream::election::lease_bucket(
                &js,
                &crate::replication::jetstream::id_leases::bucket_name(name),
                lease_for,
                replicas,
            )
            .await
            .context("cannot make the cluster's id shard lease bucket")?;
            registry.announce(&record).await?;
            anyhow::Ok((registry, maps, id_kv, js.client(), replicas))
        })?;
        live.set_schema_writer(Box::new(crate::cluster::nats::map_store::KvSchemaWriter {
            maps: maps.clone(),
            runtime: runtime.handle().clone(),
        }));
        let (reopen, reopen_queue) = tokio::sync::mpsc::unbounded_channel();
        let ctx = Ctx {
            settings: Arc::new(settings.clone()),
            record: record.clone(),
            live,
            open: Default::default(),
            nats,
            shared: runtime.handle().clone(),
            commits,
            reopen,
            replicas,
        };
        let holder = serde_json::to_string(&crate::replication::LeaderAddr {
            node: record.id.clone(),
            resp: record.announce.clone(),
            http: record.http.clone(),
        })?;
        runtime.spawn(crate::replication::jetstream::id_leases::run(
            Arc::clone(&ids),
            id_kv.clone(),
            holder,
            lease_for,
        ));
        let following = Arc::clone(&ctx.live);
        runtime.spawn(
            registry
                .clone()
                .run_with(record, move || following.open_groups()),
        );
        runtime.spawn(watch_map(ctx.clone(), maps, registry.clone(), reopen_queue));
        tracing::info!(node = %ctx.record.id, cluster = %name, "joined the cluster");
        Ok(Self {
            runtime,
            registry,
            ctx,
            ids: (ids, id_kv),
        })
    }

    /// Leaves: removes the node's record, stops every group store (their leases lapse)
    /// and the runtime. Call it from a blocking thread.
    pub fn stop(self) {
        let (ids, id_kv) = &self.ids;
        let leave = async {
            let _ = self.registry.leave(&self.ctx.record.id).await;
            crate::replication::jetstream::id_leases::leave(ids, id_kv).await;
        };
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(1), leave).await });
        // The groups' tasks run on the node's runtime: leases are given back while it
        // runs, then its shutdown ends every task (the groups' and the map watch's).
        let open = std::mem::take(&mut *self.ctx.open.lock());
        for (&group, open) in &open {
            self.ctx.live.set_store(group, None);
            open.replicator
                .release_lease(&open.store, Duration::from_secs(1));
            let _ = open.stop_commit.send(true);
            open.replicator.cancel();
        }
        self.runtime.shutdown_timeout(Duration::from_secs(1));
        drop(open);
    }
}

/// Reads the map every [`MAP_POLL`] (at once when the KV watch says it changed) and
/// adopts a newer one; every [`FAILOVER_EVERY`] polls, takes over the groups whose owner's
/// record lapsed and of which this node is the first live replica. Opening and closing
/// group stores is [`keep_stores`]'s, a task of its own: a store that is slow to open
/// (a big snapshot to fetch, NATS slow to answer) never holds this node at an old map,
/// which would have it answer `CLUSTER SLOTS` and `-MOVED` from a stale table.
async fn watch_map(
    ctx: Ctx,
    maps: MapStore,
    registry: Registry,
    reopen: tokio::sync::mpsc::UnboundedReceiver<u16>,
) {
    let stores = Arc::new(tokio::sync::Notify::new());
    ctx.shared
        .spawn(keep_stores(ctx.clone(), Arc::clone(&stores), reopen));
    let mut polls = 0u32;
    let mut changes = maps.changes().await.ok();
    let mut liveness = Liveness::default();
    loop {
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(FAILOVER_EVERY) {
            match tokio::time::timeout(
                ORPHAN_CHECK_BOUND,
                take_over_orphans(&ctx, &maps, &registry, &mut liveness, &stores),
            )
            .await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    if CHECK_FAILED.due() {
                        tracing::warn!(error = %e, "cannot check the cluster for dead owners (logged at most every 5 s)")
                    }
                }
                Err(_) => {
                    liveness.unreadable();
                    tracing::warn!(
                        bound = ?ORPHAN_CHECK_BOUND,
                        "checking the cluster for dead owners took too long; will retry"
                    )
                }
            }
        }
        let read = tokio::time::timeout(READ_BOUND, maps.load())
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {READ_BOUND:?}")));
        match read {
            Ok(Some(map)) if map.version > ctx.live.map().version => {
                if map.groups != ctx.live.map().groups {
                    tracing::error!(
                        theirs = map.groups,
                        ours = ctx.settings.cluster.groups,
                        "the cluster's map has another group count than [cluster] groups; \
                         not serving it"
                    );
                } else {
                    ctx.live.set_map(map);
                    promote_followers(&ctx);
                    stores.notify_one();
                }
            }
            Ok(_) => {}
            Err(e) => {
                if MAP_UNREADABLE.due() {
                    tracing::warn!(error = %e, "cannot read the cluster's map (logged at most every 5 s)")
                }
            }
        }
        sync_schema(&ctx, &maps).await;
        match changes.as_mut() {
            Some(watch) => {
                tokio::select! {
                    _ = tokio::time::sleep(MAP_POLL) => {}
                    event = futures_util::StreamExt::next(watch) => {
                        if !matches!(event, Some(Ok(_))) {
                            changes = None;
                        }
                    }
                }
            }
            None => tokio::time::sleep(MAP_POLL).await,
        }
    }
}

/// The longest one check for dead owners may take before the map watch goes on without
/// it (NATS slow or away): adopting newer maps comes first.
const ORPHAN_CHECK_BOUND: Duration = Duration::from_secs(5);

/// How often [`keep_stores`] compares the open stores with the map unasked: a group
/// whose store could not be opened (NATS unreachable when the map gave it, or when it
/// was reopened after losing its lease) is tried again about every second.
const STORES_RETRY: Duration = Duration::from_secs(1);

/// Opens and closes group stores to match the map the node holds, one pass at a time
/// on a blocking thread (opening a store reads a snapshot and starts its own runtime):
/// woken by a newer map (`wake`), a group to start over (`reopen`: closed, then opened
/// again as the map says, from its snapshot and stream), or every [`STORES_RETRY`].
async fn keep_stores(
    ctx: Ctx,
    wake: Arc<tokio::sync::Notify>,
    mut reopen: tokio::sync::mpsc::UnboundedReceiver<u16>,
) {
    let mut restarted = Vec::new();
    loop {
        while let Ok(g) = reopen.try_recv() {
            restarted.push(g);
        }
        let groups = std::mem::take(&mut restarted);
        let ctx = ctx.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if !groups.is_empty() {
                reopen_groups(&ctx, &groups);
            } else if !matches_map(&ctx, &ctx.live.map()) {
                reconcile(&ctx);
            }
        })
        .await;
        tokio::select! {
            _ = wake.notified() => {}
            Some(g) = reopen.recv() => restarted.push(g),
            _ = tokio::time::sleep(STORES_RETRY) => {}
        }
    }
}

/// Reads the counter schema and applies it to the groups this node leads that lack it
/// (newly led, or a newer schema): every group a node leads has every counter and
/// column made by `COUNTER.CREATE|ADDCOL` anywhere in the cluster.
async fn sync_schema(ctx: &Ctx, maps: &MapStore) {
    let read = tokio::time::timeout(READ_BOUND, maps.load_schema())
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {READ_BOUND:?}")));
    match read {
        Ok((revision, schema)) => ctx.live.set_schema(revision, schema),
        Err(e) => {
            if SCHEMA_UNREADABLE.due() {
                tracing::warn!(error = %e, "cannot read the cluster's counter schema (logged at most every 5 s)")
            }
        }
    }
    if !ctx.live.needs_schema() {
        return;
    }
    let live = Arc::clone(&ctx.live);
    if let Ok(failed) = tokio::task::spawn_blocking(move || live.apply_schema()).await {
        for (group, error) in failed {
            tracing::warn!(group, %error, "cannot apply the counter schema to a group; will retry");
        }
    }
}

/// Map polls between two checks for groups whose owner is dead (about a second).
const FAILOVER_EVERY: u32 = 5;

/// Names this node owner of every group whose owner is not live (its record not renewed
/// for a record life, as `liveness` saw it) and of which this node is the first live
/// replica, in one compare-and-set of the map; the map watch then reopens those groups
/// as owner (this node's own stores at once: `stores` wakes their keeper). Two nodes
/// deciding at once cannot both win (the map's version), and the
/// new owner takes the group's lease only once it lapsed, judged the same way, so a
/// record judged dead too early costs a map change, never a second writer.
async fn take_over_orphans(
    ctx: &Ctx,
    maps: &MapStore,
    registry: &Registry,
    liveness: &mut Liveness,
    stores: &tokio::sync::Notify,
) -> anyhow::Result<()> {
    if !registry.announced_within(2 * HEARTBEAT) {
        // This node cannot write its own record now: the others may not either.
        liveness.unreadable();
        return Ok(());
    }
    let Some(map) = maps.load().await? else {
        return Ok(());
    };
    let records = match registry.records().await {
        Ok(records) => records,
        Err(e) => {
            liveness.unreadable();
            return Err(e);
        }
    };
    let live: Vec<String> = liveness
        .live(records, std::time::Instant::now())
        .into_iter()
        .map(|r| r.id)
        .collect();
    let Some((next, taken)) = orphans_taken(&map, &live, &ctx.record.id) else {
        return Ok(());
    };
    let version = maps.store(&next, map.version).await?;
    tracing::warn!(groups = ?taken, version, "took over the groups of a node that stopped");
    // Served at once: the map just stored is the newest, and reading it back can wait
    // on the same NATS elections the failover is racing.
    let mut next = next;
    next.version = version;
    if next.version > ctx.live.map().version {
        ctx.live.set_map(next);
        promote_followers(ctx);
        stores.notify_one();
    }
    Ok(())
}

/// The map with node `me` owner of every group whose owner is not among `live` and of
/// which `me` is the first live replica, and those groups; `None` when there is none.
/// The dead owner stays in the group as its last replica, so when it comes back it
/// follows the new owner on its own (as a Redis master back from a failover becomes a
/// replica of the one that replaced it) and the group has its copies again without a
/// rebalance.
fn orphans_taken(map: &SlotMap, live: &[String], me: &String) -> Option<(SlotMap, Vec<usize>)> {
    let is_live = |id: &String| live.contains(id);
    let mut next = map.clone();
    let mut taken = Vec::new();
    for g in 0..usize::from(map.groups) {
        let Some(owner) = map.owner[g].as_ref().filter(|o| !is_live(o)) else {
            continue;
        };
        if map.replicas[g].iter().find(|r| is_live(r)) == Some(me) {
            next.owner[g] = Some(me.clone());
            next.replicas[g].retain(|r| r != me);
            if !next.replicas[g].contains(owner) {
                next.replicas[g].push(owner.clone());
            }
            taken.push(g);
        }
    }
    (!taken.is_empty()).then_some((next, taken))
}

/// What this node holds of group `g` under `map`: `Some(true)` owner, `Some(false)`
/// replica, `None` nothing.
fn part_in(map: &SlotMap, g: u16, me: &str) -> Option<bool> {
    let g = usize::from(g);
    if map.owner[g].as_deref() == Some(me) {
        Some(true)
    } else if map.replicas[g].iter().any(|r| r == me) {
        Some(false)
    } else {
        None
    }
}

/// Whether the open group stores are what `map` gives this node (owner or replica).
fn matches_map(ctx: &Ctx, map: &SlotMap) -> bool {
    let open = ctx.open.lock();
    (0..map.groups).all(|g| part_in(map, g, &ctx.record.id) == open.get(&g).map(|o| o.owner))
}

/// Opens, reopens (replica → owner and back) and closes group stores to match the map
/// the node holds, read again for each group: a map adopted while a store opens is
/// followed from the next group on (and whole by the pass it wakes).
fn reconcile(ctx: &Ctx) {
    promote_followers(ctx);
    for g in 0..ctx.live.map().groups {
        let want = part_in(&ctx.live.map(), g, &ctx.record.id);
        let have = ctx.open.lock().get(&g).map(|o| o.owner);
        if want == have {
            continue;
        }
        if have.is_some() {
            ctx.live.set_store(g, None);
            if let Some(open) = ctx.open.lock().remove(&g) {
                close(open);
            }
        }
        if let Some(owner) = want {
            match open_group(ctx, g, owner) {
                Ok(open) => {
                    ctx.live.set_store(g, Some(Arc::clone(&open.store)));
                    ctx.open.lock().insert(g, open);
                }
                Err(e) => tracing::error!(group = g, error = %e, "cannot open the group's store"),
            }
        }
    }
}

/// Makes every open group the map now names this node owner of, that it follows,
/// stand for the lease in place, already caught up (the old owner gives the lease
/// back, or it lapses with a dead one). Cheap and never waits on NATS, so it runs as
/// soon as a map is adopted, not behind the opening of another group's store (which
/// can wait many seconds for NATS during a partition).
fn promote_followers(ctx: &Ctx) {
    let map = ctx.live.map();
    let mut open = ctx.open.lock();
    for (g, group) in open.iter_mut() {
        if !group.owner && part_in(&map, *g, &ctx.record.id) == Some(true) {
            group
                .store
                .stands_for_lease
                .store(true, std::sync::atomic::Ordering::Release);
            group.owner = true;
        }
    }
}

/// Closes each of `groups` and opens it again as the current map says (owner: it
/// stands for the lease again; replica: it follows), its local copy rebuilt from the
/// newest snapshot and the stream, as at a node's start. The node's other groups go on.
fn reopen_groups(ctx: &Ctx, groups: &[u16]) {
    for &g in groups {
        ctx.live.set_store(g, None);
        if let Some(open) = ctx.open.lock().remove(&g) {
            tracing::warn!(group = g, "reopening the group's store");
            close(open);
        }
    }
    reconcile(ctx);
}

/// Where the node keeps its local copy of group `group`.
fn group_dir(data: &Path, group: u16) -> PathBuf {
    data.join("cluster").join(format!("g{group:03}"))
}

/// Opens group `g`'s store afresh from its newest snapshot and stream.
fn open_group(ctx: &Ctx, g: u16, owner: bool) -> anyhow::Result<Open> {
    let settings = &ctx.settings;
    let spec = StoreSpec {
        name: group_store_name(&settings.cluster.name, g),
        nats: settings.nats.clone(),
        lease_ms: settings.counters.lease_ms,
        stream_replicas: ctx.replicas,
        may_lead: owner,
        snapshots_kept: settings.counters.snapshots_kept,
        prepare_leader: None,
    };
    let dir = group_dir(&settings.data, g);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let (restored_seq, started_from) = crate::state::restore_snapshot(&spec, &dir)?;
    let engine =
        shardkit_counters::Engine::open(&dir, crate::state::engine_options(settings, true)?)?;
    engine.set_read_only(true);
    let counters = Arc::new(Counters {
        engine,
        auto_create: settings.counters.auto_create,
        writes_wait_for_disk: true,
        group_commit: Default::default(),
        before_auto_create: Default::default(),
    });
    let live = Arc::clone(&ctx.live);
    let _ = counters
        .before_auto_create
        .set(Box::new(move |engine| live.apply_fresh_schema(engine)));
    let me = crate::replication::LeaderAddr {
        node: ctx.record.id.clone(),
        resp: ctx.record.announce.clone(),
        http: ctx.record.http.clone(),
    };
    let replication = Arc::new(crate::replication::Status::new(
        crate::replication::Role::Replica { leader: None },
        me,
    ));
    replication.set_progress(restored_seq, 0, 0);
    let store = Arc::new(CounterStore {
        counters: Arc::clone(&counters),
        replication,
        spec,
        release: Default::default(),
        stands_for_lease: std::sync::atomic::AtomicBool::new(owner),
        on_restart: crate::replication::store::OnRestart::Reopen {
            group: g,
            queue: ctx.reopen.clone(),
        },
        started_from,
        resync: Some(crate::replication::resync::Resync::beside(&dir)),
    });
    let replicator =
        Replicator::start_group(Arc::clone(&store), ctx.nats.clone(), ctx.shared.clone())?;
    let (stop_commit, stopped) = watch::channel(false);
    // The group commit's waiters are the RESP connections, and it runs beside them;
    // its publishes go to the group's publisher on the node's runtime. It ends on
    // `stop_commit` (the group closed).
    ctx.commits
        .spawn(crate::counters::commit_task::GroupCommit::run(
            counters, true, stopped,
        ));
    Ok(Open {
        owner,
        store,
        replicator,
        stop_commit,
    })
}

/// Gives the group's lease back (when held), stops its tasks and lets its engine go.
fn close(open: Open) {
    open.replicator
        .release_lease(&open.store, Duration::from_secs(1));
    let _ = open.stop_commit.send(true);
    open.replicator.stop();
    drop(open.store);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::map::NodeInfo;

    #[test]
    fn a_dead_owners_groups_go_to_their_first_live_replica_and_it_follows_them_back() {
        let nodes = [
            NodeInfo::numbered(1),
            NodeInfo::numbered(2),
            NodeInfo::numbered(3),
        ];
        let id = |i: usize| nodes[i].id.clone();
        // Owners round-robin, two replicas each: group 0 is node 1's, followed by 2, 3.
        let map = SlotMap::place(4, 6, &nodes, 2);
        let live = [id(1), id(2)];
        assert!(
            orphans_taken(&map, &live, &id(2)).is_none(),
            "node 3 is not first"
        );
        let (next, taken) = orphans_taken(&map, &live, &id(1)).unwrap();
        assert_eq!(taken, [0, 3]);
        for g in taken {
            assert_eq!(next.owner[g], Some(id(1)));
            assert_eq!(next.replicas[g], [id(2), id(0)], "group {g}");
        }
        for g in [1, 2, 4, 5] {
            assert_eq!(
                (&next.owner[g], &next.replicas[g]),
                (&map.owner[g], &map.replicas[g])
            );
        }
        assert!(
            orphans_taken(&next, &live, &id(1)).is_none(),
            "nothing left"
        );
    }
}
