//! A cluster of PostgreSQL servers holding logical shards as schemas (Instagram's
//! scheme): `init` creates it following a `shardkit-ring` shard map, `Cluster::open`
//! reads the map back and routes a shard to its server.
//!
//! Every server's `shardkit_meta` holds the same facts (shard count, epoch, every map
//! version), so any one of them can bootstrap a client, and a re-run of `init` finds out
//! what exists before it changes anything.

use crate::connect::{connect, pool, query_error};
use crate::error::{redact_url, PgError};
use crate::schema::{shard_ddl, shard_schema, ADVISORY_CLASS, META_DDL};
use shardkit_ids::{Layout, DEFAULT_EPOCH_UNIX_MS};
use shardkit_ring::{Format, NodeSpec, ShardMap};
use std::collections::HashSet;
use tokio_postgres::Client;

/// The most logical shards a cluster may have: the 13 shard bits of an Instagram id.
pub const MAX_LOGICAL_SHARDS: u32 = 8192;

/// How long [`Cluster::refresh`] waits for the servers' shard maps.
pub const REFRESH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// How many shards one transaction creates: bounded so that a large cluster does not
/// run out of `max_locks_per_transaction`; a re-run completes an interrupted init.
const SHARDS_PER_TRANSACTION: usize = 32;

/// What `init` is asked to do.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Server URLs (`postgres://user@host:port/db`), in map order.
    pub servers: Vec<String>,
    /// Logical shard count S: a power of two up to [`MAX_LOGICAL_SHARDS`].
    pub logical_shards: u32,
    /// Id epoch in Unix ms; `None` keeps an existing cluster's, or 2024-01-01 for a new one.
    pub epoch_unix_ms: Option<u64>,
}

/// What `init` found and did on one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// The server (URL without password): its node name in the shard map.
    pub server: String,
    /// Logical shards the map places on it.
    pub shards: u32,
    /// Shard schemas created by this run (0 on a re-run).
    pub created: u32,
}

/// What `init` did, for the CLI to print and tests to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    /// Logical shard count.
    pub logical_shards: u32,
    /// Id epoch in Unix ms.
    pub epoch_unix_ms: u64,
    /// Version of the shard map in force.
    pub map_version: u64,
    /// True if this run created the cluster, false if it found it.
    pub new_cluster: bool,
    /// One entry per server, in map order.
    pub servers: Vec<ServerReport>,
}

/// What a server's `shardkit_meta` says, if it has one.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) logical_shards: u32,
    pub(crate) epoch_unix_ms: u64,
    pub(crate) map: ShardMap,
}

/// Checks the shard count: a power of two in `1..=8192`.
pub fn check_logical_shards(s: u64) -> Result<u32, PgError> {
    if s == 0 || s > u64::from(MAX_LOGICAL_SHARDS) || !s.is_power_of_two() {
        return Err(PgError::BadShardCount(s));
    }
    Ok(s as u32)
}

/// Node names (URLs without passwords) of the servers, refused when empty or repeated.
fn server_names(servers: &[String]) -> Result<Vec<String>, PgError> {
    if servers.is_empty() {
        return Err(PgError::NoServers);
    }
    let mut seen = HashSet::new();
    let mut names = Vec::with_capacity(servers.len());
    for url in servers {
        let name = redact_url(url.trim());
        if !seen.insert(name.clone()) {
            return Err(PgError::DuplicateServer(name));
        }
        names.push(name);
    }
    Ok(names)
}

/// Reads `shardkit_meta` of one server: `None` if it has none yet.
pub(crate) async fn read_meta(client: &Client, server: &str) -> Result<Option<Meta>, PgError> {
    let exists: Option<String> = client
        .query_one("SELECT to_regclass('shardkit_meta.shard_maps')::text", &[])
        .await
        .map_err(|e| query_error(server, "reading shardkit_meta", &e))?
        .get(0);
    if exists.is_none() {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT c.logical_shards, c.epoch_unix_ms, m.map::text FROM shardkit_meta.cluster c, \
             LATERAL (SELECT map FROM shardkit_meta.shard_maps ORDER BY version DESC LIMIT 1) m",
            &[],
        )
        .await
        .map_err(|e| query_error(server, "reading shardkit_meta", &e))?;
    let Some(row) = row else { return Ok(None) };
    let shards: i32 = row.get(0);
    let epoch: i64 = row.get(1);
    let map_json: String = row.get(2);
    let map = ShardMap::parse(&map_json, Format::Json)?;
    Ok(Some(Meta {
        logical_shards: shards as u32,
        epoch_unix_ms: epoch as u64,
        map,
    }))
}

/// Creates the cluster, or checks and completes an existing one.
///
/// Connects to every server first (an unreachable one is an error naming it, and
/// nothing is changed anywhere); reads any existing `shardkit_meta`; refuses a
/// different shard count, epoch or server set; then records the cluster and map on
/// every server and creates the shard schemas each one is missing. Running it again
/// changes nothing.
pub async fn init(options: &InitOptions) -> Result<InitReport, PgError> {
    let shards = check_logical_shards(u64::from(options.logical_shards))?;
    let names = server_names(&options.servers)?;
    let mut clients = Vec::with_capacity(names.len());
    for url in &options.servers {
        clients.push(connect(url.trim()).await?);
    }

    // What exists already: the newest map found anywhere wins; facts must agree.
    let mut existing: Option<Meta> = None;
    for (client, name) in clients.iter().zip(&names) {
        if let Some(meta) = read_meta(client, name).await? {
            if meta.logical_shards != shards {
                return Err(PgError::ShardCountMismatch {
                    server: name.clone(),
                    existing: meta.logical_shards,
                    requested: shards,
                });
            }
            if let Some(epoch) = options.epoch_unix_ms {
                if epoch != meta.epoch_unix_ms {
                    return Err(PgError::EpochMismatch {
                        server: name.clone(),
                        existing: meta.epoch_unix_ms,
                        requested: epoch,
                    });
                }
            }
            if let Some(seen) = &existing {
                if seen.epoch_unix_ms != meta.epoch_unix_ms {
                    return Err(PgError::EpochsDisagree {
                        server: name.clone(),
                        epoch: meta.epoch_unix_ms,
                        other_epoch: seen.epoch_unix_ms,
                    });
                }
            }
            if existing
                .as_ref()
                .is_none_or(|seen| meta.map.version() > seen.map.version())
            {
                existing = Some(meta);
            }
        }
    }
    let new_cluster = existing.is_none();
    let (epoch_unix_ms, map) = match existing {
        Some(meta) => {
            let in_map: HashSet<&str> = meta.map.nodes().iter().map(|n| n.name.as_str()).collect();
            let given: HashSet<&str> = names.iter().map(String::as_str).collect();
            if in_map != given {
                let mut listed: Vec<&str> = in_map.into_iter().collect();
                listed.sort_unstable();
                return Err(PgError::ServersDiffer {
                    server: names[0].clone(),
                    version: meta.map.version(),
                    placed: listed.join(", "),
                });
            }
            (meta.epoch_unix_ms, meta.map)
        }
        None => {
            let epoch = options.epoch_unix_ms.unwrap_or(DEFAULT_EPOCH_UNIX_MS);
            Layout::instagram()
                .with_epoch_unix_ms(epoch)
                .map_err(|e| PgError::Epoch(e.to_string()))?;
            let nodes = names.iter().map(NodeSpec::new).collect();
            (epoch, ShardMap::new(shards, nodes)?)
        }
    };
    let map_json = map.render(Format::Json)?;

    let mut reports = Vec::with_capacity(names.len());
    for (client, name) in clients.iter_mut().zip(&names) {
        let owned: Vec<u32> = (0..shards)
            .filter(|&s| map.owner(s) == Some(name.as_str()))
            .collect();
        record_meta(client, name, shards, epoch_unix_ms, &map, &map_json).await?;
        let present = existing_shard_schemas(client, name).await?;
        let missing: Vec<u32> = owned
            .iter()
            .copied()
            .filter(|s| !present.contains(&shard_schema(*s)))
            .collect();
        for chunk in missing.chunks(SHARDS_PER_TRANSACTION) {
            let mut ddl = String::new();
            for &s in chunk {
                ddl.push_str(&shard_ddl(s, epoch_unix_ms));
            }
            let tx = client
                .transaction()
                .await
                .map_err(|e| query_error(name, "starting a transaction", &e))?;
            tx.batch_execute(&ddl).await.map_err(|e| {
                query_error(
                    name,
                    &format!("creating shards {}..", shard_schema(chunk[0])),
                    &e,
                )
            })?;
            tx.commit()
                .await
                .map_err(|e| query_error(name, "committing shard schemas", &e))?;
        }
        reports.push(ServerReport {
            server: name.clone(),
            shards: owned.len() as u32,
            created: missing.len() as u32,
        });
    }
    Ok(InitReport {
        logical_shards: shards,
        epoch_unix_ms,
        map_version: map.version(),
        new_cluster,
        servers: reports,
    })
}

/// Writes the cluster row and this map version into `shardkit_meta` (no-ops if present),
/// under a transaction-level advisory lock so two concurrent inits serialise.
pub(crate) async fn record_meta(
    client: &mut Client,
    name: &str,
    shards: u32,
    epoch_unix_ms: u64,
    map: &ShardMap,
    map_json: &str,
) -> Result<(), PgError> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| query_error(name, "starting a transaction", &e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1, -1)", &[&ADVISORY_CLASS])
        .await
        .map_err(|e| query_error(name, "locking shardkit_meta", &e))?;
    tx.batch_execute(META_DDL)
        .await
        .map_err(|e| query_error(name, "creating shardkit_meta", &e))?;
    let recorded = tx
        .query_opt("SELECT logical_shards FROM shardkit_meta.cluster", &[])
        .await
        .map_err(|e| query_error(name, "reading shardkit_meta.cluster", &e))?;
    if let Some(row) = recorded {
        // A concurrent init may have won the race with another S: check again under the lock.
        let existing: i32 = row.get(0);
        if existing as u32 != shards {
            return Err(PgError::ShardCountMismatch {
                server: name.to_string(),
                existing: existing as u32,
                requested: shards,
            });
        }
    } else {
        tx.execute(
            "INSERT INTO shardkit_meta.cluster (logical_shards, epoch_unix_ms) VALUES ($1, $2)",
            &[&(shards as i32), &(epoch_unix_ms as i64)],
        )
        .await
        .map_err(|e| query_error(name, "recording the cluster", &e))?;
    }
    tx.execute(
        "INSERT INTO shardkit_meta.shard_maps (version, map) VALUES ($1, $2::text::jsonb) ON CONFLICT (version) DO NOTHING",
        &[&(map.version() as i64), &map_json],
    )
    .await
    .map_err(|e| query_error(name, "recording the shard map", &e))?;
    tx.commit()
        .await
        .map_err(|e| query_error(name, "committing shardkit_meta", &e))
}

/// Names of the `shard_NNNN` schemas a server has.
async fn existing_shard_schemas(client: &Client, name: &str) -> Result<HashSet<String>, PgError> {
    let rows = client
        .query(
            r"SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'shard\_%'",
            &[],
        )
        .await
        .map_err(|e| query_error(name, "listing shard schemas", &e))?;
    Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
}

/// A running cluster: the shard map in force and a connection pool per server, so
/// callers route a logical shard to the server that holds it.
#[derive(Clone)]
pub struct Cluster {
    map: ShardMap,
    epoch_unix_ms: u64,
    names: Vec<String>,
    pools: Vec<deadpool_postgres::Pool>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("map_version", &self.map.version())
            .field("servers", &self.names)
            .finish()
    }
}

impl Cluster {
    /// Opens an initialised cluster: reads the newest map from the servers given (every
    /// server of the map must be among them) and makes a pool of `pool_size` per server.
    pub async fn open(servers: &[String], pool_size: usize) -> Result<Self, PgError> {
        let names = server_names(servers)?;
        let mut newest: Option<Meta> = None;
        for (url, name) in servers.iter().zip(&names) {
            let client = connect(url.trim()).await?;
            if let Some(meta) = read_meta(&client, name).await? {
                if newest
                    .as_ref()
                    .is_none_or(|seen| meta.map.version() > seen.map.version())
                {
                    newest = Some(meta);
                }
            }
        }
        let meta = newest.ok_or_else(|| PgError::NoCluster {
            server: names[0].clone(),
        })?;
        Self::assemble(meta, |name| match names.iter().position(|n| n == name) {
            Some(i) => pool(servers[i].trim(), pool_size),
            None => Err(PgError::MissingServer {
                server: name.to_string(),
            }),
        })
    }

    /// The cluster of `meta`'s map, with the pool `pool_for` gives each of its servers (by name).
    fn assemble(
        meta: Meta,
        mut pool_for: impl FnMut(&str) -> Result<deadpool_postgres::Pool, PgError>,
    ) -> Result<Self, PgError> {
        let mut pools = Vec::with_capacity(meta.map.nodes().len());
        let mut names = Vec::with_capacity(meta.map.nodes().len());
        for node in meta.map.nodes() {
            pools.push(pool_for(&node.name)?);
            names.push(node.name.clone());
        }
        Ok(Self {
            map: meta.map,
            epoch_unix_ms: meta.epoch_unix_ms,
            names,
            pools,
        })
    }

    /// The cluster under a newer shard map, if any server has one (after `shardkit pg
    /// move-shard`): asks every server of the map and every URL in `servers`, waiting
    /// at most [`REFRESH_TIMEOUT`] for each (a lost server is skipped, not waited
    /// for). Pools of servers still in the map are kept; a server new to the map is
    /// reached by its URL in `servers`, else by its node name (the URL without password).
    pub async fn refresh(
        &self,
        servers: &[String],
        pool_size: usize,
    ) -> Result<Option<Cluster>, PgError> {
        let mut asks = tokio::task::JoinSet::new();
        for (name, pool) in self.names.iter().zip(&self.pools) {
            let (name, pool) = (name.clone(), pool.clone());
            asks.spawn(async move {
                let client = pool.get().await.ok()?;
                read_meta(&client, &name).await.ok().flatten()
            });
        }
        for url in servers {
            let name = redact_url(url.trim());
            if !self.names.contains(&name) {
                let url = url.trim().to_string();
                asks.spawn(async move {
                    let client = connect(&url).await.ok()?;
                    read_meta(&client, &name).await.ok().flatten()
                });
            }
        }
        let mut newest: Option<Meta> = None;
        let deadline = tokio::time::Instant::now() + REFRESH_TIMEOUT;
        while let Ok(Some(answer)) = tokio::time::timeout_at(deadline, asks.join_next()).await {
            if let Ok(Some(meta)) = answer {
                if meta.map.version() > self.map.version()
                    && newest
                        .as_ref()
                        .is_none_or(|seen| meta.map.version() > seen.map.version())
                {
                    newest = Some(meta);
                }
            }
        }
        asks.abort_all();
        let Some(meta) = newest else { return Ok(None) };
        let fresh = Self::assemble(meta, |name| {
            match self.names.iter().position(|n| n == name) {
                Some(i) => Ok(self.pools[i].clone()),
                None => pool(
                    servers
                        .iter()
                        .map(|u| u.trim())
                        .find(|u| redact_url(u) == name)
                        .unwrap_or(name),
                    pool_size,
                ),
            }
        })?;
        Ok(Some(fresh))
    }

    /// The URL of the map's first server, which holds what the whole cluster shares
    /// (the code sequences, the API keys): its URL in `servers` (with a password
    /// the map's name leaves out), else its name. `None` for a map without servers.
    pub fn first_server_url(&self, servers: &[String]) -> Option<String> {
        let first = &self.map.nodes().first()?.name;
        Some(
            servers
                .iter()
                .map(|u| u.trim())
                .find(|u| redact_url(u) == *first)
                .unwrap_or(first)
                .to_string(),
        )
    }

    /// The shard map in force.
    pub fn map(&self) -> &ShardMap {
        &self.map
    }

    /// The id layout `next_id()` uses: Instagram's with the cluster's epoch.
    pub fn layout(&self) -> Layout {
        // The epoch was checked when the cluster was created; a past epoch stays valid.
        Layout::instagram()
            .with_epoch_unix_ms(self.epoch_unix_ms)
            .unwrap_or(Layout::instagram())
    }

    /// The server (URL without password) holding logical shard `shard`.
    pub fn server_for_shard(&self, shard: u32) -> Option<&str> {
        self.map
            .table()
            .get(shard as usize)
            .map(|&i| self.names[i as usize].as_str())
    }

    /// A pooled connection to the server holding logical shard `shard`.
    pub async fn client_for_shard(&self, shard: u32) -> Result<deadpool_postgres::Object, PgError> {
        let index = *self
            .map
            .table()
            .get(shard as usize)
            .ok_or(PgError::NoSuchShard {
                shard: u64::from(shard),
                logical_shards: self.map.shard_count(),
            })? as usize;
        self.pools[index]
            .get()
            .await
            .map_err(|e| PgError::Unreachable {
                server: self.names[index].clone(),
                reason: e.to_string(),
            })
    }
}
