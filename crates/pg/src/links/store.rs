//! [`PgLinkStore`]: shardkit-links' [`LinkStore`] on the cluster's logical shards.
//!
//! Routing. A generated code's first character names its group (`0..62`, the hash of
//! the normalized URL when it was minted); group `g` lives in logical shard
//! `g mod S` ([`shard_of_group`]), and the shard map in `shardkit_meta` names the
//! server holding that shard. So:
//!
//! - by code (a redirect): one query on one shard, `shard_NNNN.links` by `code`;
//! - long -> short (`"reuse": true`): the URL's group (the same hash the minter used)
//!   names the shard whose `link_urls` index lists the reusable links of that URL; for a
//!   link created by the server its code is in the same group, so both reads hit one
//!   shard (a link whose target was later replaced may sit in another);
//! - by alias: an alias has no group of its own, so `link_aliases` in the shard of
//!   the alias's hash ([`group_of`]) maps it to the code, and the code's shard holds the
//!   link: two reads, on two shards unless they coincide;
//! - by id (`get`, `delete`, `replace`), `list` and `count`: every shard that holds
//!   groups, one `UNION ALL` query per server.
//!
//! Atomicity. Within one shard, writes share a transaction. A batch spanning shards is
//! not one distributed transaction: duplicates are checked on every shard before
//! anything is written, aliases are claimed first (a unique key in their shard, so two
//! servers never hand one alias to two links), and a failure afterwards undoes the
//! claims, best effort.

use crate::blocking::Bridge;
use crate::cluster::Cluster;
use crate::connect::query_error;
use crate::error::PgError;
use crate::schema::shard_schema;
use shardkit_links::{
    group_of, Codec, InsertOutcome, Link, LinkStore, Redirect, StoreError, GROUPS,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// The columns every link query selects, in the order [`row_to_link`] reads them.
const COLUMNS: &str =
    "id, code, alias_name, url, created_at, expires_at, max_visits, redirect, tags";

/// The logical shard holding group `group` in a cluster of `logical_shards` shards.
pub fn shard_of_group(group: u8, logical_shards: u32) -> u32 {
    u32::from(group) % logical_shards.max(1)
}

/// Whether `path` has the shape of a generated code (7 to 11 base62 characters);
/// aliases never do (see `shardkit_links::validate_alias`).
fn looks_generated(path: &str) -> bool {
    (7..=11).contains(&path.len()) && path.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The group of a generated code, or an error naming it (a code the store cannot route).
fn group_of_code(code: &str) -> Result<u8, StoreError> {
    Codec::group_of_code(code)
        .filter(|_| looks_generated(code))
        .ok_or_else(|| {
            StoreError::Backend(format!(
                "code {code:?} is not a generated code, so it names no shard"
            ))
        })
}

/// Whether `"reuse": true` may hand `link` out again.
fn reusable(link: &Link) -> bool {
    link.alias.is_none() && link.expires_at.is_none() && link.max_visits.is_none()
}

fn url_hash(url: &str) -> i64 {
    shardkit_ring::hash_bytes(url.as_bytes()) as i64
}

fn to_time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn backend(e: PgError) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn query_failed(server: &str, what: &str, e: &tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        return StoreError::Duplicate(format!(
            "a link of this batch ({})",
            crate::connect::error_text(e)
        ));
    }
    backend(query_error(server, what, e))
}

/// Reads one row of [`COLUMNS`].
fn row_to_link(row: &Row) -> Result<Link, StoreError> {
    let id: i64 = row.try_get(0).map_err(|e| StoreError::Corrupt {
        id: 0,
        reason: e.to_string(),
    })?;
    let corrupt = |e: tokio_postgres::Error| StoreError::Corrupt {
        id: id as u64,
        reason: e.to_string(),
    };
    let redirect: i16 = row.try_get(7).map_err(corrupt)?;
    let redirect = Redirect::from_status(redirect as u16).ok_or_else(|| StoreError::Corrupt {
        id: id as u64,
        reason: format!("redirect status {redirect}"),
    })?;
    Ok(Link {
        id: id as u64,
        code: row.try_get(1).map_err(corrupt)?,
        alias: row.try_get(2).map_err(corrupt)?,
        url: row.try_get(3).map_err(corrupt)?,
        created_at: to_ms(row.try_get(4).map_err(corrupt)?),
        expires_at: row
            .try_get::<_, Option<SystemTime>>(5)
            .map_err(corrupt)?
            .map(to_ms),
        max_visits: row
            .try_get::<_, Option<i64>>(6)
            .map_err(corrupt)?
            .map(|v| v as u64),
        redirect,
        tags: row.try_get(8).map_err(corrupt)?,
    })
}

/// The async half of the store: everything here runs on the bridge's runtime.
#[derive(Clone)]
struct Shards {
    cluster: Cluster,
}

impl Shards {
    fn shard_of(&self, group: u8) -> u32 {
        shard_of_group(group, self.cluster.map().shard_count())
    }

    /// A connection to the server of `shard`, and that server's name for errors.
    async fn client(&self, shard: u32) -> Result<(deadpool_postgres::Object, String), StoreError> {
        let server = self
            .cluster
            .server_for_shard(shard)
            .unwrap_or("?")
            .to_string();
        let client = self
            .cluster
            .client_for_shard(shard)
            .await
            .map_err(backend)?;
        Ok((client, server))
    }

    /// The shards that hold groups, grouped by server (map order).
    fn shards_by_server(&self) -> Vec<Vec<u32>> {
        let shards: HashSet<u32> = (0..GROUPS).map(|g| self.shard_of(g)).collect();
        let mut by_server: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for shard in shards {
            let server = self
                .cluster
                .map()
                .table()
                .get(shard as usize)
                .copied()
                .unwrap_or(0) as usize;
            by_server.entry(server).or_default().push(shard);
        }
        by_server
            .into_values()
            .map(|mut s| {
                s.sort_unstable();
                s
            })
            .collect()
    }

    /// Runs `template` (with `{s}` for the schema) on every group shard, one
    /// `UNION ALL` per server, and gathers the rows.
    async fn scatter(
        &self,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<Vec<Row>, StoreError> {
        let mut rows = Vec::new();
        for shards in self.shards_by_server() {
            let sql = shards
                .iter()
                .map(|&s| format!("({})", template.replace("{s}", &shard_schema(s))))
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let (client, server) = self.client(shards[0]).await?;
            rows.extend(
                client
                    .query(&sql, params)
                    .await
                    .map_err(|e| query_failed(&server, what, &e))?,
            );
        }
        Ok(rows)
    }

    async fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM {{s}}.links WHERE id = $1");
        let rows = self
            .scatter(&sql, &[&(id as i64)], "reading a link by id")
            .await?;
        rows.first().map(row_to_link).transpose()
    }

    /// Runs `template` (with `{s}` for the schema) on one shard and returns its row,
    /// if any: the shape of every single-shard look-up.
    async fn query_opt_in(
        &self,
        shard: u32,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<Option<Row>, StoreError> {
        let (client, server) = self.client(shard).await?;
        let sql = template.replace("{s}", &shard_schema(shard));
        client.query_opt(&sql, params).await.map_err(|e| query_failed(&server, what, &e))
    }

    /// The link with generated code `code`, from its group's shard.
    async fn by_code(&self, code: &str) -> Result<Option<Link>, StoreError> {
        let shard = self.shard_of(group_of_code(code)?);
        let sql = format!("SELECT {COLUMNS} FROM {{s}}.links WHERE code = $1");
        let row = self.query_opt_in(shard, &sql, &[&code], "reading a link by code").await?;
        row.as_ref().map(row_to_link).transpose()
    }

    async fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        if looks_generated(path) {
            return self.by_code(path).await;
        }
        let shard = self.shard_of(group_of(path));
        let sql = "SELECT code FROM {s}.link_aliases WHERE alias = $1";
        let row = self.query_opt_in(shard, sql, &[&path], "reading an alias").await?;
        match row {
            Some(row) => {
                let code: String = row.get(0);
                Ok(self
                    .by_code(&code)
                    .await?
                    .filter(|l| l.alias.as_deref() == Some(path)))
            }
            None => Ok(None),
        }
    }

    async fn find_reusable(&self, url: &str) -> Result<Option<Link>, StoreError> {
        let shard = self.shard_of(group_of(url));
        let sql = "SELECT code FROM {s}.link_urls WHERE url_hash = $1 AND url = $2 ORDER BY created_at, id LIMIT 1";
        let row = self.query_opt_in(shard, sql, &[&url_hash(url), &url], "reading the URL index").await?;
        match row {
            Some(row) => {
                let code: String = row.get(0);
                Ok(self
                    .by_code(&code)
                    .await?
                    .filter(|l| l.url == url && reusable(l)))
            }
            None => Ok(None),
        }
    }

    /// Adds `link` to the URL index of its URL's shard (outside any transaction).
    async fn index_url(&self, link: &Link) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(&link.url));
        let (client, server) = self.client(shard).await?;
        let sql = format!(
            "INSERT INTO {}.link_urls (id, url_hash, url, code, created_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (id) DO UPDATE SET url_hash = EXCLUDED.url_hash, url = EXCLUDED.url",
            shard_schema(shard)
        );
        client
            .execute(
                &sql,
                &[
                    &(link.id as i64),
                    &url_hash(&link.url),
                    &link.url,
                    &link.code,
                    &to_time(link.created_at),
                ],
            )
            .await
            .map_err(|e| query_failed(&server, "writing the URL index", &e))?;
        Ok(())
    }

    /// Removes link `id` from the URL index of `url`'s shard.
    async fn unindex_url(&self, id: u64, url: &str) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(url));
        let (client, server) = self.client(shard).await?;
        let sql = format!(
            "DELETE FROM {}.link_urls WHERE id = $1",
            shard_schema(shard)
        );
        client
            .execute(&sql, &[&(id as i64)])
            .await
            .map_err(|e| query_failed(&server, "writing the URL index", &e))?;
        Ok(())
    }

    /// Frees `alias` if link `id` holds it.
    async fn release_alias(&self, alias: &str, id: u64) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(alias));
        let (client, server) = self.client(shard).await?;
        let sql = format!(
            "DELETE FROM {}.link_aliases WHERE alias = $1 AND id = $2",
            shard_schema(shard)
        );
        client
            .execute(&sql, &[&alias, &(id as i64)])
            .await
            .map_err(|e| query_failed(&server, "freeing an alias", &e))?;
        Ok(())
    }

    /// Refuses the batch if a code or id in it is already stored or repeated.
    async fn check_duplicates(&self, links: &[Link]) -> Result<(), StoreError> {
        let mut ids = HashSet::new();
        let mut codes = HashSet::new();
        let mut codes_by_shard: HashMap<u32, Vec<String>> = HashMap::new();
        for link in links {
            if !ids.insert(link.id) {
                return Err(StoreError::Duplicate(format!("link id {}", link.id)));
            }
            if !codes.insert(link.code.as_str()) {
                return Err(StoreError::Duplicate(format!("code {}", link.code)));
            }
            codes_by_shard
                .entry(self.shard_of(group_of_code(&link.code)?))
                .or_default()
                .push(link.code.clone());
        }
        let id_list: Vec<i64> = links.iter().map(|l| l.id as i64).collect();
        let rows = self
            .scatter(
                "SELECT id FROM {s}.links WHERE id = ANY($1)",
                &[&id_list],
                "checking ids",
            )
            .await?;
        if let Some(row) = rows.first() {
            return Err(StoreError::Duplicate(format!(
                "link id {}",
                row.get::<_, i64>(0)
            )));
        }
        for (shard, codes) in codes_by_shard {
            let (client, server) = self.client(shard).await?;
            let sql = format!(
                "SELECT code FROM {}.links WHERE code = ANY($1) LIMIT 1",
                shard_schema(shard)
            );
            let row = client
                .query_opt(&sql, &[&codes])
                .await
                .map_err(|e| query_failed(&server, "checking codes", &e))?;
            if let Some(row) = row {
                return Err(StoreError::Duplicate(format!(
                    "code {}",
                    row.get::<_, String>(0)
                )));
            }
        }
        Ok(())
    }

    /// Claims `link`'s alias in the alias's shard: `None` if claimed, else the owner's code.
    async fn claim_alias(&self, alias: &str, link: &Link) -> Result<Option<String>, StoreError> {
        let shard = self.shard_of(group_of(alias));
        let (client, server) = self.client(shard).await?;
        let s = shard_schema(shard);
        let claimed = client
            .execute(
                &format!("INSERT INTO {s}.link_aliases (alias, id, code) VALUES ($1, $2, $3) ON CONFLICT (alias) DO NOTHING"),
                &[&alias, &(link.id as i64), &link.code],
            )
            .await
            .map_err(|e| query_failed(&server, "claiming an alias", &e))?;
        if claimed == 1 {
            return Ok(None);
        }
        let row = client
            .query_opt(
                &format!("SELECT code FROM {s}.link_aliases WHERE alias = $1"),
                &[&alias],
            )
            .await
            .map_err(|e| query_failed(&server, "reading an alias", &e))?;
        // Freed between the two statements: report it taken anyway; the caller may retry.
        Ok(Some(row.map(|r| r.get(0)).unwrap_or_default()))
    }

    async fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        self.check_duplicates(links).await?;
        let mut outcomes = Vec::with_capacity(links.len());
        let mut claimed: Vec<(&str, u64)> = Vec::new();
        for link in links {
            let outcome = match &link.alias {
                Some(alias) => match self.claim_alias(alias, link).await {
                    Ok(None) => {
                        claimed.push((alias, link.id));
                        InsertOutcome::Inserted
                    }
                    Ok(Some(owner_code)) => InsertOutcome::AliasTaken {
                        alias: alias.clone(),
                        owner_code,
                    },
                    Err(e) => {
                        self.undo_claims(&claimed).await;
                        return Err(e);
                    }
                },
                None => InsertOutcome::Inserted,
            };
            outcomes.push(outcome);
        }
        let stored: Vec<&Link> = links
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| **o == InsertOutcome::Inserted)
            .map(|(l, _)| l)
            .collect();
        if let Err(e) = self.write_links(&stored).await {
            self.undo_claims(&claimed).await;
            return Err(e);
        }
        Ok(outcomes)
    }

    async fn undo_claims(&self, claimed: &[(&str, u64)]) {
        for &(alias, id) in claimed {
            let _ = self.release_alias(alias, id).await;
        }
    }

    /// Writes `links` to their code shards, one transaction per shard, with the URL
    /// index rows that belong to the same shard; other URL index rows follow.
    async fn write_links(&self, links: &[&Link]) -> Result<(), StoreError> {
        let mut by_shard: BTreeMap<u32, Vec<&Link>> = BTreeMap::new();
        for &link in links {
            by_shard
                .entry(self.shard_of(group_of_code(&link.code)?))
                .or_default()
                .push(link);
        }
        let mut elsewhere = Vec::new();
        for (shard, links) in by_shard {
            let (mut client, server) = self.client(shard).await?;
            let s = shard_schema(shard);
            let fail = |what: &str, e: tokio_postgres::Error| query_failed(&server, what, &e);
            let tx = client
                .transaction()
                .await
                .map_err(|e| fail("starting a transaction", e))?;
            let insert = format!(
                "INSERT INTO {s}.links (id, code, alias, alias_name, url, url_hash, created_at, expires_at, max_visits, redirect, tags) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            );
            let index = format!("INSERT INTO {s}.link_urls (id, url_hash, url, code, created_at) VALUES ($1, $2, $3, $4, $5)");
            for link in links {
                let hash = url_hash(&link.url);
                let created = to_time(link.created_at);
                tx.execute(
                    &insert,
                    &[
                        &(link.id as i64),
                        &link.code,
                        &link.alias.is_some(),
                        &link.alias,
                        &link.url,
                        &hash,
                        &created,
                        &link.expires_at.map(to_time),
                        &link.max_visits.map(|v| v as i64),
                        &(link.redirect.status() as i16),
                        &link.tags,
                    ],
                )
                .await
                .map_err(|e| fail("storing a link", e))?;
                if reusable(link) {
                    if self.shard_of(group_of(&link.url)) == shard {
                        tx.execute(
                            &index,
                            &[&(link.id as i64), &hash, &link.url, &link.code, &created],
                        )
                        .await
                        .map_err(|e| fail("writing the URL index", e))?;
                    } else {
                        elsewhere.push(link);
                    }
                }
            }
            tx.commit().await.map_err(|e| fail("committing links", e))?;
        }
        for link in elsewhere {
            self.index_url(link).await?;
        }
        Ok(())
    }

    async fn replace(&self, link: &Link) -> Result<(), StoreError> {
        let old = self
            .get(link.id)
            .await?
            .ok_or(StoreError::Missing(link.id))?;
        if old.code != link.code || old.alias != link.alias {
            return Err(StoreError::Immutable(link.id));
        }
        let shard = self.shard_of(group_of_code(&old.code)?);
        let (client, server) = self.client(shard).await?;
        let sql = format!(
            "UPDATE {}.links SET url = $2, url_hash = $3, expires_at = $4, max_visits = $5, redirect = $6, tags = $7 WHERE id = $1",
            shard_schema(shard)
        );
        let updated = client
            .execute(
                &sql,
                &[
                    &(link.id as i64),
                    &link.url,
                    &url_hash(&link.url),
                    &link.expires_at.map(to_time),
                    &link.max_visits.map(|v| v as i64),
                    &(link.redirect.status() as i16),
                    &link.tags,
                ],
            )
            .await
            .map_err(|e| query_failed(&server, "replacing a link", &e))?;
        drop(client);
        if updated == 0 {
            return Err(StoreError::Missing(link.id));
        }
        self.unindex_url(old.id, &old.url).await?;
        let mut new = link.clone();
        new.created_at = old.created_at;
        if reusable(&new) {
            self.index_url(&new).await?;
        }
        Ok(())
    }

    async fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let Some(link) = self.get(id).await? else {
            return Ok(None);
        };
        let shard = self.shard_of(group_of_code(&link.code)?);
        let (client, server) = self.client(shard).await?;
        let sql = format!("DELETE FROM {}.links WHERE id = $1", shard_schema(shard));
        let deleted = client
            .execute(&sql, &[&(id as i64)])
            .await
            .map_err(|e| query_failed(&server, "deleting a link", &e))?;
        drop(client);
        if deleted == 0 {
            return Ok(None);
        }
        self.unindex_url(id, &link.url).await?;
        if let Some(alias) = &link.alias {
            self.release_alias(alias, id).await?;
        }
        Ok(Some(link))
    }

    async fn list(
        &self,
        tag: Option<String>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {{s}}.links WHERE id > $1 AND ($2::text IS NULL OR $2::text = ANY(tags)) ORDER BY id LIMIT $3"
        );
        let after = after.map(|a| a as i64).unwrap_or(-1);
        let limit_sql = limit.min(i64::MAX as usize) as i64;
        let rows = self
            .scatter(&sql, &[&after, &tag, &limit_sql], "listing links")
            .await?;
        let mut links = rows
            .iter()
            .map(row_to_link)
            .collect::<Result<Vec<_>, _>>()?;
        links.sort_unstable_by_key(|l| l.id);
        links.truncate(limit);
        Ok(links)
    }

    async fn count(&self) -> Result<u64, StoreError> {
        let rows = self
            .scatter("SELECT count(*) FROM {s}.links", &[], "counting links")
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).sum())
    }
}

/// Links on PostgreSQL logical shards: each link in the shard of its code's group (see
/// the module docs for how every lookup is routed). Synchronous like every
/// [`LinkStore`]: calls run on the store's own small runtime ([`Bridge`]).
pub struct PgLinkStore {
    shards: Shards,
    bridge: Bridge,
}

impl std::fmt::Debug for PgLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLinkStore")
            .field("cluster", &self.shards.cluster)
            .finish()
    }
}

impl PgLinkStore {
    /// Opens the store on an initialised cluster (`shardkit pg init`): reads the shard
    /// map from `servers` and keeps `pool_size` connections per server. A server that
    /// cannot be reached is named in the error.
    pub fn open(servers: &[String], pool_size: usize) -> Result<Self, PgError> {
        let bridge =
            Bridge::new("shardkit-links-pg").map_err(|e| PgError::Runtime(e.to_string()))?;
        let servers = servers.to_vec();
        let cluster = bridge
            .run(async move { Cluster::open(&servers, pool_size).await })
            .ok_or_else(|| {
                PgError::Runtime("the runtime stopped while opening the cluster".into())
            })??;
        Ok(Self {
            shards: Shards { cluster },
            bridge,
        })
    }

    /// The cluster the links live on.
    pub fn cluster(&self) -> &Cluster {
        &self.shards.cluster
    }

    /// Runs one call on the bridge.
    fn run<T, F>(&self, call: impl FnOnce(Shards) -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.bridge
            .run(call(self.shards.clone()))
            .unwrap_or_else(|| {
                Err(StoreError::Backend(
                    "the PostgreSQL link store's runtime stopped".into(),
                ))
            })
    }
}

impl LinkStore for PgLinkStore {
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        let links = links.to_vec();
        self.run(|s| async move { s.insert_batch(&links).await })
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.run(|s| async move { s.get(id).await })
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        let path = path.to_string();
        self.run(|s| async move { s.resolve(&path).await })
    }

    fn find_reusable(&self, url: &str) -> Result<Option<Link>, StoreError> {
        let url = url.to_string();
        self.run(|s| async move { s.find_reusable(&url).await })
    }

    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        let link = link.clone();
        self.run(|s| async move { s.replace(&link).await })
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.run(|s| async move { s.delete(id).await })
    }

    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let tag = tag.map(str::to_string);
        self.run(|s| async move { s.list(tag, after, limit).await })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.run(|s| async move { s.count().await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_route_to_shards_and_codes_are_recognised() {
        assert_eq!(shard_of_group(5, 4), 1);
        assert_eq!(shard_of_group(61, 8192), 61);
        assert!(looks_generated("a000001"));
        assert!(!looks_generated("bee-alias"));
        assert_eq!(
            group_of_code("b000001").unwrap(),
            Codec::group_of_code("b").unwrap()
        );
        assert!(group_of_code("nope").is_err());
    }
}
