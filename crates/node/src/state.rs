//! What every request handler shares: settings, the id generator and the ticket
//! sequences. Built once at start-up, read by HTTP and RESP alike.

use crate::config::{CounterLog, CounterRole, Fsync, LinkStoreKind, Settings};
use crate::counters::Counters;
use anyhow::Context;
use parking_lot::Mutex;
use shardkit_counters::{Engine, FsyncPolicy};
use shardkit_ids::tickets::{EmbeddedTicketStore, SegmentAllocator, SegmentOptions, SequenceSpec};
use shardkit_ids::{
    BackwardPolicy, GeneratorOptions, GuardOptions, Layout, ShardedGenerator, TicketError,
};
use shardkit_link_service::Links;
use shardkit_links::{
    load_or_create_key, CompactLinkStore, GroupSequences, LinkStore, Minter, RedbLinkStore,
    SegmentLinkStore, TicketSequences,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The most ids or tickets one request may ask for.
pub const MAX_BATCH: u64 = 100_000;

/// A ticket sequence's allocator, shared by every request that asks for it.
pub type Allocator = Arc<SegmentAllocator<Arc<EmbeddedTicketStore>>>;

/// Seeds the empty JetStream-mode engine directory `dir` with the newest snapshot of the
/// store's object store that this node has no reason to distrust; returns the last
/// stream sequence it covers (0: none, replay the stream from its start) and which
/// snapshot it was.
pub(crate) fn restore_snapshot(
    spec: &crate::replication::store::StoreSpec,
    dir: &std::path::Path,
) -> anyhow::Result<(u64, Option<crate::replication::distrusted::StartedFrom>)> {
    #[cfg(feature = "nats")]
    if let Some(restored) = crate::replication::jetstream::snapshots::restore_newest(spec, dir)? {
        tracing::info!(
            snapshot = %restored.snapshot.name,
            ms = restored.took.as_millis() as u64,
            "counters restored from the object store"
        );
        let started_from = crate::replication::distrusted::StartedFrom {
            snapshot: restored.snapshot.name.clone(),
            list: crate::replication::distrusted::Distrusted::beside(dir),
        };
        return Ok((
            restored.snapshot.from_seq.saturating_sub(1),
            Some(started_from),
        ));
    }
    let _ = (spec, dir);
    Ok((0, None))
}

/// The counter engine's options from `[counters]`; `jetstream`: the engine is the local
/// copy of a store whose log of record is on JetStream (its rows all stay in RAM: the
/// cold tier's blocks are not shipped with its snapshots).
pub(crate) fn engine_options(
    settings: &Settings,
    jetstream: bool,
) -> anyhow::Result<shardkit_counters::Options> {
    let tiering = !jetstream;
    Ok(shardkit_counters::Options {
        // With the JetStream log the stream is what makes a write durable; the local
        // copy is rebuilt from it at start, so fsyncing it would buy nothing.
        fsync: match settings.counters.fsync {
            _ if jetstream => FsyncPolicy::No,
            Fsync::Everysec => FsyncPolicy::EverySec,
            Fsync::No => FsyncPolicy::No,
            Fsync::Always => FsyncPolicy::Always,
        },
        txid_window: Duration::from_secs(settings.counters.txid_window_secs),
        snapshot_log_bytes: Some(settings.counters.snapshot_log_mib.max(1) << 20),
        snapshot_growth_percent: match settings.counters.snapshot_growth_percent {
            0 => None,
            pct => Some(pct),
        },
        snapshot_interval: (settings.counters.snapshot_seconds > 0)
            .then(|| Duration::from_secs(settings.counters.snapshot_seconds)),
        cold_after: if tiering {
            settings.counters.cold_after_duration()?
        } else {
            None
        },
        max_memory: if tiering {
            settings.counters.max_memory_bytes()?
        } else {
            None
        },
        block_cache_bytes: settings.counters.block_cache_bytes()?,
        keep_snapshots: settings.counters.snapshots_kept,
    })
}

/// Shared server state.
#[derive(Debug)]
pub struct AppState {
    /// The settings the server started with.
    pub settings: Settings,
    /// The admin key and the named keys with roles: who may do what.
    pub access: crate::api_keys::Access,
    /// The id layout in use.
    pub layout: Layout,
    /// Ids for every logical shard, with a durable time guard in the data directory.
    pub ids: ShardedGenerator,
    /// UUIDv7s and ULIDs, each with its own time guard in the data directory.
    pub time_ordered: crate::id_format::TimeOrderedIds,
    /// The shards this node may issue ids from (all of them, unless nodes share the
    /// counters' store on NATS: then the blocks it leases).
    pub id_leases: Arc<crate::id_leases::IdLeases>,
    /// The counter engine (in `<data>/counters`), with the auto-create rule.
    pub counters: Arc<Counters>,
    /// The same engine with this node's role for it, as the replication tasks see it.
    pub store: Arc<crate::replication::store::CounterStore>,
    /// Short links (`<data>/links.redb`, code key `<data>/links.key`).
    pub links: Links,
    /// `[regions]`: where links live, the calls to other regions, their links' cache.
    pub regions: Option<shardkit_link_service::regions::Regions>,
    /// This node's replication role (standalone with the `local` log).
    pub replication: Arc<crate::replication::Status>,
    /// When the server started (`INFO server`'s uptime).
    pub started: std::time::Instant,
    /// This node's view of its Redis Cluster (`[cluster] enabled`): set once the node
    /// has joined; unset on a node outside a cluster.
    pub cluster: std::sync::OnceLock<Arc<crate::cluster::live::Live>>,
    tickets: TicketBook,
}

impl AppState {
    /// The counters' figures as `INFO`, `/metrics` and `DBSIZE` show them: this server's
    /// engine, or on a cluster node the groups it leads, each counter summed over them
    /// (the rest, snapshots and fsync, stay the node's own engine's).
    pub fn counter_stats(&self) -> shardkit_counters::Stats {
        let mut stats = self.counters.engine.stats();
        if let Some(live) = self.cluster.get() {
            stats.counters = live.counter_stats();
        }
        stats
    }

    /// Opens everything under the data directory. Fails (with the file named) if
    /// another process holds it.
    pub fn open(settings: Settings) -> anyhow::Result<Self> {
        crate::data_dir::create(&settings.data)?;
        let mut layout: Layout = settings.ids.layout.parse()?;
        if let Some(epoch) = &settings.ids.epoch {
            layout = layout.with_epoch_rfc3339(epoch)?;
        }
        crate::id_layout_record::check_and_record(&settings.data, &settings.ids.layout, &layout)?;
        let options = GeneratorOptions {
            max_lead: Duration::from_millis(settings.ids.max_lead_ms),
            on_clock_backwards: if settings.ids.on_clock_backwards == "wait" {
                BackwardPolicy::Wait
            } else {
                BackwardPolicy::Refuse
            },
            guard: Some(GuardOptions::new(settings.data.join("ids.guard"))),
        };
        let ids = ShardedGenerator::with_clock(layout, shardkit_ids::SystemClock, &options)?;
        let time_ordered = crate::id_format::TimeOrderedIds::open(&settings.data, &options)?;
        let spec = SequenceSpec::new(settings.tickets.increment, settings.tickets.offset)?;
        let store = Arc::new(EmbeddedTicketStore::open(
            settings.data.join("tickets.redb"),
        )?);
        let segment = SegmentOptions {
            initial_step: settings.tickets.initial_step,
            ..SegmentOptions::default()
        };
        let embedded_sequences = TicketSequences::new(Arc::clone(&store), spec, segment.clone())?;
        let tickets = TicketBook {
            store,
            spec,
            segment,
            sequences: Mutex::new(HashMap::new()),
        };
        let jetstream = settings.counters.log == CounterLog::Jetstream;
        let engine_options = engine_options(&settings, jetstream)?;
        // With the JetStream log: the stream sequence the start's snapshot covers.
        let (mut restored_seq, mut started_from, mut resync) = (0, None, None);
        let engine = if jetstream {
            // The stream is the log of record: the local directory is only the copy being
            // built from it, started afresh (it may hold records the stream refused),
            // from the newest snapshot in the store's object store when there is one.
            let dir = settings
                .data
                .join("counters-jetstream")
                .join(&settings.counters.store);
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("cannot clear {}", dir.display()))?;
            }
            (restored_seq, started_from) = restore_snapshot(&store_spec(&settings), &dir)?;
            resync = Some(crate::replication::resync::Resync::beside(&dir));
            let engine = Engine::open(dir, engine_options)?;
            engine.set_read_only(true);
            engine
        } else {
            Engine::open(settings.data.join("counters"), engine_options)?
        };
        let recovery = engine.recovery();
        tracing::info!(report = ?recovery, "counters recovered");
        // A write waits for its batch's fsync, or for JetStream's ack of its batch.
        let writes_wait_for_disk = settings.counters.fsync == Fsync::Always || jetstream;
        let counters = Arc::new(Counters {
            engine,
            auto_create: settings.counters.auto_create,
            writes_wait_for_disk,
            group_commit: Default::default(),
            before_auto_create: Default::default(),
        });
        if !jetstream {
            // With the JetStream log they are made when this node first leads.
            shardkit_link_service::analytics::clicks::ensure_counters(&counters.engine)?;
        }
        let announced = crate::announce::addresses(
            settings.counters.announce.as_deref(),
            settings.resp.addr(),
            settings.http.listen,
        );
        let me = crate::replication::LeaderAddr {
            node: node_id(),
            resp: announced.resp,
            http: announced.http,
        };
        let role = if jetstream {
            crate::replication::Role::Replica { leader: None }
        } else {
            crate::replication::Role::Standalone
        };
        let replication = Arc::new(crate::replication::Status::new(role, me));
        // Everything up to it is in the restored snapshot: follow the stream after it.
        replication.set_progress(restored_seq, 0, 0);
        let key_path = settings.data.join("links.key");
        let key = load_or_create_key(&key_path)
            .with_context(|| format!("cannot read or make the code key {}", key_path.display()))?;
        let mut remote_keys: Option<Box<dyn crate::api_keys::KeySource>> = None;
        let (store, link_sequences): (Arc<dyn LinkStore>, Box<dyn GroupSequences>) =
            match settings.links.store {
                LinkStoreKind::Postgres => {
                    let (store, sequences, keys) = open_postgres_links(&settings.links.servers)?;
                    remote_keys = Some(keys);
                    (store, sequences)
                }
                // The previous format, for side-by-side measurements only.
                LinkStoreKind::RedbJson => (
                    Arc::new(RedbLinkStore::open(settings.data.join("links.redb"))?),
                    Box::new(embedded_sequences),
                ),
                // The previous embedded store (records in redb), for side-by-side
                // measurements only.
                LinkStoreKind::RedbCompact => (
                    Arc::new(CompactLinkStore::open(
                        settings.data.join("links.redb"),
                        Links::codec(settings.links.sequential_codes, key),
                        settings.links.store_cache_bytes(),
                    )?),
                    Box::new(embedded_sequences),
                ),
                LinkStoreKind::Redb => {
                    let store = SegmentLinkStore::open(
                        settings.data.join("links.redb"),
                        Links::codec(settings.links.sequential_codes, key),
                        settings.links.store_cache_bytes(),
                    )?;
                    if store.index_rebuilt() != 0 {
                        tracing::warn!(
                            groups = format!("{:#x}", store.index_rebuilt()),
                            "offset-index files of the links were missing; the index was \
                             rebuilt from the segments (links.segments/index-gNN)"
                        );
                    }
                    let (held, budget) = store.index_memory();
                    tracing::info!(
                        held_mib = format!("{:.1}", held as f64 / f64::from(1 << 20)),
                        budget_mib = format!("{:.1}", budget as f64 / f64::from(1 << 20)),
                        "offset index of the links held in memory (slots past the budget \
                         are read from links.segments/index-gNN)"
                    );
                    (Arc::new(store), Box::new(embedded_sequences))
                }
            };
        let minter = Minter::new(
            Links::codec(settings.links.sequential_codes, key),
            link_sequences,
        );
        // Without `base_url`, short URLs take each request's origin; the bound address
        // is the fallback for a request without a usable Host.
        let base_url = settings
            .links
            .base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", settings.http.listen));
        let geo = match &settings.links.geoip_db {
            Some(path) => Some(shardkit_link_service::analytics::geo::GeoIp::open(path)?),
            None => None,
        };
        let analytics = shardkit_link_service::analytics::Analytics::open(&counters.engine, geo)?;
        let webhooks = shardkit_link_service::webhooks::Webhooks::new(
            &settings.links.webhooks,
            analytics.geo_shared(),
        );
        let regions = match &settings.regions {
            None => {
                shardkit_link_service::regions::claim::forget(&settings.data)?;
                None
            }
            Some(region_settings) => {
                // Ids are made in the shard of the code's group (`Links::draft`): with the
                // groups split between regions and a shard per group, no two regions make
                // one id, so a link's clicks keep one key in every region.
                if layout.shards() < u64::from(shardkit_links::GROUPS) {
                    anyhow::bail!(
                        "[regions] needs an id layout with at least 62 shards (one per code group), \
                         so regions never make the same link id; ids.layout {:?} has {}",
                        settings.ids.layout,
                        layout.shards()
                    );
                }
                let regions = shardkit_link_service::regions::Regions::new(region_settings)?;
                shardkit_link_service::regions::claim::check(
                    &settings.data,
                    &regions.map,
                    store.as_ref(),
                )?;
                Some(regions)
            }
        };
        let mut links = Links::new(
            store,
            minter,
            base_url,
            settings.links.cache_entries,
            analytics,
        )?
        .with_regions(regions.as_ref().map(|r| std::sync::Arc::clone(&r.map)))
        .with_webhooks(webhooks)
        .with_domains(&settings.links.domains)?;
        if settings.links.base_url.is_none() {
            links = links.with_request_origins(&settings.links.hosts)?;
        }
        let access = match remote_keys {
            // With the links in the cluster, so are the keys: every server takes the same.
            Some(keys) => crate::api_keys::Access::open_remote(keys, settings.api_key.clone())?,
            None => crate::api_keys::Access::open(&settings.data, settings.api_key.clone())?,
        };
        // Nodes that share a store, or a cluster, lease the shards they issue ids from.
        let id_leases = Arc::new(if jetstream || settings.cluster.enabled {
            crate::id_leases::IdLeases::leased(layout.shards())
        } else {
            crate::id_leases::IdLeases::unleased(layout.shards())
        });
        let store = Arc::new(crate::replication::store::CounterStore {
            counters: Arc::clone(&counters),
            replication: Arc::clone(&replication),
            spec: store_spec(&settings),
            release: Default::default(),
            stands_for_lease: std::sync::atomic::AtomicBool::new(
                settings.counters.role == CounterRole::Auto,
            ),
            on_restart: crate::replication::store::OnRestart::RestartProcess,
            started_from,
            resync,
        });
        Ok(Self {
            settings,
            access,
            layout,
            ids,
            time_ordered,
            id_leases,
            counters,
            store,
            links,
            regions,
            replication,
            started: std::time::Instant::now(),
            cluster: Default::default(),
            tickets,
        })
    }

    /// Clean shutdown: the counter log is flushed and a snapshot written; the id
    /// guard records the exact last time when `self` is dropped.
    pub fn close(self) -> anyhow::Result<()> {
        let Self {
            counters,
            store,
            links,
            ..
        } = self;
        drop(store);
        links.analytics.flush(&counters.engine, &links.clicks)?;
        counters.engine.snapshot()?;
        match Arc::try_unwrap(counters) {
            Ok(counters) => counters.engine.close()?,
            // A replication task that did not end in time still holds the engine: the
            // snapshot above has everything; the engine closes when it lets go.
            Err(_) => tracing::warn!("the counter engine is still in use; not closed"),
        }
        Ok(())
    }

    /// The increment and offset of every ticket sequence (`[tickets]`).
    pub fn ticket_spec(&self) -> SequenceSpec {
        self.tickets.spec
    }

    /// The allocator of ticket sequence `name`, created on first use.
    pub fn tickets(&self, name: &str) -> Result<Allocator, TicketError> {
        self.tickets.get(name)
    }
}

/// The server's one counter store, from `[counters]` and `[nats]`; its leader makes
/// the link-click counters.
fn store_spec(settings: &Settings) -> crate::replication::store::StoreSpec {
    crate::replication::store::StoreSpec {
        name: settings.counters.store.clone(),
        nats: settings.nats.clone(),
        lease_ms: settings.counters.lease_ms,
        stream_replicas: settings.counters.stream_replicas,
        may_lead: settings.counters.role == CounterRole::Auto,
        snapshots_kept: settings.counters.snapshots_kept,
        prepare_leader: Some(shardkit_link_service::analytics::clicks::ensure_counters),
    }
}
/// A random id for this process, as announced in the counters' lease.
fn node_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Connections per PostgreSQL server for the link store.
#[cfg(feature = "sql")]
const PG_POOL_SIZE: usize = 8;

/// Codes per `nextval` of a group's code sequence on PostgreSQL: one database write
/// per thousand links minted.
#[cfg(feature = "sql")]
const PG_CODE_BLOCK: u64 = 1000;

/// The link store on the PostgreSQL cluster at `servers` (an unreachable server is
/// named), and code sequences shared by every shardkit in front of that cluster: one
/// PostgreSQL sequence per group (`shardkit_tickets."links.gNN"`) on the first server
/// of the shard map, one `nextval` per block of [`PG_CODE_BLOCK`] codes. Sequences in
/// each server's own data directory would let two servers mint the same code.
#[cfg(feature = "sql")]
fn open_postgres_links(servers: &[String]) -> anyhow::Result<PostgresParts> {
    use shardkit_pg::tickets::{postgres::PgTicketStore, segment_options, BlockSize};
    let store = shardkit_pg::PgLinkStore::open(servers, PG_POOL_SIZE)
        .context("cannot open the PostgreSQL link store")?;
    tracing::info!(cluster = ?store.cluster(), "links on PostgreSQL");
    let url = store
        .cluster()
        .first_server_url(servers)
        .context("the shard map has no servers")?;
    let block = BlockSize::new(PG_CODE_BLOCK);
    let tickets = Arc::new(PgTicketStore::new(&url, 1, 1, block)?);
    let sequences = TicketSequences::new(tickets, SequenceSpec::default(), segment_options(block))?;
    let keys = shardkit_pg::PgKeyStore::new(&url).context("cannot open the cluster's key table")?;
    Ok((Arc::new(store), Box::new(sequences), Box::new(keys)))
}

/// Without feature `sql` there is no PostgreSQL store (settings refuse it earlier).
#[cfg(not(feature = "sql"))]
fn open_postgres_links(_servers: &[String]) -> anyhow::Result<PostgresParts> {
    anyhow::bail!("links.store \"postgres\" needs a shardkit built with the cargo feature `sql`")
}

/// What a `--store postgres` deployment keeps in the cluster: the links, the code
/// sequences and the API keys.
type PostgresParts = (
    Arc<dyn LinkStore>,
    Box<dyn GroupSequences>,
    Box<dyn crate::api_keys::KeySource>,
);

/// Ticket sequences by name, each with its own segment allocator over one store.
#[derive(Debug)]
struct TicketBook {
    store: Arc<EmbeddedTicketStore>,
    spec: SequenceSpec,
    segment: SegmentOptions,
    sequences: Mutex<HashMap<String, Allocator>>,
}

impl TicketBook {
    fn get(&self, name: &str) -> Result<Allocator, TicketError> {
        if let Some(found) = self.sequences.lock().get(name) {
            return Ok(Arc::clone(found));
        }
        let made = Arc::new(SegmentAllocator::new(
            Arc::clone(&self.store),
            name,
            self.spec,
            self.segment.clone(),
        )?);
        Ok(Arc::clone(
            self.sequences
                .lock()
                .entry(name.to_string())
                .or_insert(made),
        ))
    }
}
