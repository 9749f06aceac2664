//! Moving one logical shard to another server while the others keep serving:
//! create the schema on the target, copy the rows in id order, then a brief write
//! pause for that shard only (its tables locked against writes, its `next_id()` lock
//! held) to copy what arrived meanwhile and carry the id state over, write the next map
//! version everywhere, and drop the old copy in the same transaction that held the
//! pause, so a writer still routed by the old map gets an error (and re-reads the map)
//! rather than writing to a copy nobody reads.
//!
//! Catching up relies on `next_id()`: ids of a shard only grow, so "what arrived
//! meanwhile" is every row with an id above the last one copied. Rows updated or deleted
//! during the copy (before the pause) are not caught up: links are insert-mostly, and
//! the pause covers the switch itself.

use crate::cluster::{read_meta, record_meta, Meta};
use crate::connect::{connect, query_error};
use crate::error::{redact_url, PgError};
use crate::schema::{shard_ddl, shard_schema, ADVISORY_CLASS};
use shardkit_ring::{Format, NodeSpec, ShardMap};
use std::time::{Duration, Instant};
use tokio_postgres::GenericClient;

/// Tables of a shard schema, copied in this order.
pub const SHARD_TABLES: &[&str] = &["links", "link_aliases", "link_urls"];

/// Rows per copy batch.
const BATCH: i64 = 5_000;

/// What a move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReport {
    /// The logical shard moved.
    pub shard: u32,
    /// Server it was on.
    pub from: String,
    /// Server it is on now.
    pub to: String,
    /// Rows copied (bulk copy plus catch-up).
    pub rows: u64,
    /// The map version now in force.
    pub map_version: u64,
    /// How long writes to this shard were paused.
    pub pause: Duration,
}

/// Copies rows of `table` with an id above `after`, in id order, from `source` to
/// `target`; returns (rows, last id). Rows travel as JSON, so every column type does.
async fn copy_rows<S: GenericClient, T: GenericClient>(
    source: &S,
    target: &T,
    schema: &str,
    table: &str,
    mut after: i64,
    names: (&str, &str),
) -> Result<(u64, i64), PgError> {
    let mut rows = 0u64;
    loop {
        let batch = source
            .query_one(
                &format!(
                    "SELECT coalesce(json_agg(t ORDER BY t.id)::text, '[]'), count(*), coalesce(max(t.id), $1) \
                     FROM (SELECT * FROM {schema}.{table} WHERE id > $1 ORDER BY id LIMIT $2) t"
                ),
                &[&after, &BATCH],
            )
            .await
            .map_err(|e| query_error(names.0, &format!("reading {schema}.{table}"), &e))?;
        let (json, count, last): (String, i64, i64) = (batch.get(0), batch.get(1), batch.get(2));
        if count == 0 {
            return Ok((rows, after));
        }
        target
            .execute(
                &format!("INSERT INTO {schema}.{table} SELECT * FROM json_populate_recordset(NULL::{schema}.{table}, $1::text::json)"),
                &[&json],
            )
            .await
            .map_err(|e| query_error(names.1, &format!("writing {schema}.{table}"), &e))?;
        rows += count as u64;
        after = last;
    }
}

/// Moves logical shard `shard` to the server at `to` (which may be new to the cluster).
/// `servers` are the URLs of every server in the current map.
pub async fn move_shard(servers: &[String], shard: u32, to: &str) -> Result<MoveReport, PgError> {
    // The newest map, from every server (all must answer: all get the new version).
    let mut clients = Vec::new();
    let mut meta: Option<Meta> = None;
    for url in servers {
        let name = redact_url(url.trim());
        let client = connect(url.trim()).await?;
        if let Some(m) = read_meta(&client, &name).await? {
            if meta.as_ref().is_none_or(|seen| m.map.version() > seen.map.version()) {
                meta = Some(m);
            }
        }
        clients.push((name, url.trim().to_string(), client));
    }
    let meta = meta.ok_or_else(|| PgError::ClusterMismatch {
        server: redact_url(&servers[0]),
        reason: "no shardkit_meta found: run `shardkit pg init` first".into(),
    })?;
    let map = &meta.map;
    let from = map.owner(shard).ok_or(PgError::BadShardCount(u64::from(shard)))?.to_string();
    let to_name = redact_url(to.trim());
    if from == to_name {
        return Err(PgError::ClusterMismatch { server: to_name, reason: format!("shard {shard} is already there") });
    }
    for node in map.nodes() {
        if !clients.iter().any(|(n, _, _)| *n == node.name) {
            return Err(PgError::ClusterMismatch {
                server: node.name.clone(),
                reason: "it is in the shard map but no URL for it was given with --servers".into(),
            });
        }
    }
    let schema = shard_schema(shard);

    // The next map: the shard's table entry points at the target (added as a node if new).
    let mut nodes = map.nodes().to_vec();
    let target_index = match nodes.iter().position(|n| n.name == to_name) {
        Some(i) => i,
        None => {
            nodes.push(NodeSpec::new(to_name.clone()));
            nodes.len() - 1
        }
    };
    let mut table = map.table().to_vec();
    table[shard as usize] = target_index as u32;
    let next = ShardMap::from_parts(map.version() + 1, map.shard_count(), nodes, table)?;
    let next_json = next.render(Format::Json)?;

    // Target: meta (current version) and the empty shard schema.
    let mut target = match clients.iter().position(|(n, _, _)| *n == to_name) {
        Some(i) => clients.remove(i).2,
        None => connect(to.trim()).await?,
    };
    record_meta(&mut target, &to_name, meta.logical_shards, meta.epoch_unix_ms, map, &map.render(Format::Json)?).await?;
    let exists: bool = target
        .query_one("SELECT to_regnamespace($1) IS NOT NULL", &[&schema])
        .await
        .map_err(|e| query_error(&to_name, "checking the target", &e))?
        .get(0);
    if exists {
        return Err(PgError::ClusterMismatch {
            server: to_name,
            reason: format!("it already has a schema {schema} (a leftover of an earlier move?); drop it first"),
        });
    }
    target.batch_execute(&shard_ddl(shard, meta.epoch_unix_ms)).await.map_err(|e| query_error(&to_name, "creating the shard", &e))?;

    let source_index = clients.iter().position(|(n, _, _)| *n == from).ok_or_else(|| PgError::ClusterMismatch {
        server: from.clone(),
        reason: "no URL given for the shard's current server".into(),
    })?;
    let (_, _, mut source) = clients.remove(source_index);

    // 1. Bulk copy while writes go on.
    let mut rows = 0;
    let mut last = Vec::new();
    for table in SHARD_TABLES {
        let (n, l) = copy_rows(&source, &target, &schema, table, 0, (&from, &to_name)).await?;
        rows += n;
        last.push(l);
    }

    // 2. The pause: writes to this shard wait on the lock; catch up; carry the id state.
    let paused = Instant::now();
    let tx = source.transaction().await.map_err(|e| query_error(&from, "starting the pause", &e))?;
    // Tables first, then the id lock: an insert in flight holds its table lock and may
    // wait for the id lock, so the other order could deadlock with it.
    for table in SHARD_TABLES {
        tx.batch_execute(&format!("LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE"))
            .await
            .map_err(|e| query_error(&from, "pausing writes", &e))?;
    }
    tx.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&ADVISORY_CLASS, &(shard as i32)])
        .await
        .map_err(|e| query_error(&from, "taking the shard's id lock", &e))?;
    for (table, after) in SHARD_TABLES.iter().zip(&last) {
        rows += copy_rows(&tx, &target, &schema, table, *after, (&from, &to_name)).await?.0;
    }
    let state: i64 = tx
        .query_one(&format!("SELECT last_value FROM {schema}.id_state"), &[])
        .await
        .map_err(|e| query_error(&from, "reading the id state", &e))?
        .get(0);
    target
        .execute("SELECT setval($1::text::regclass, greatest($2::bigint, 1))", &[&format!("{schema}.id_state"), &state])
        .await
        .map_err(|e| query_error(&to_name, "carrying the id state over", &e))?;

    // 3. The next map version everywhere, the source's inside the pause; drop the old copy.
    let insert_map = "INSERT INTO shardkit_meta.shard_maps (version, map) VALUES ($1, $2::text::jsonb) ON CONFLICT (version) DO NOTHING";
    let version = next.version() as i64;
    target.execute(insert_map, &[&version, &next_json]).await.map_err(|e| query_error(&to_name, "recording the map", &e))?;
    for (name, _, client) in &clients {
        client.execute(insert_map, &[&version, &next_json]).await.map_err(|e| query_error(name, "recording the map", &e))?;
    }
    tx.execute(insert_map, &[&version, &next_json]).await.map_err(|e| query_error(&from, "recording the map", &e))?;
    tx.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.map_err(|e| query_error(&from, "dropping the old copy", &e))?;
    tx.commit().await.map_err(|e| query_error(&from, "ending the pause", &e))?;
    Ok(MoveReport { shard, from, to: to_name, rows, map_version: next.version(), pause: paused.elapsed() })
}
