//! [`PgLinkStore`]: the synchronous [`LinkStore`] face of the shard operations, run on
//! the store's own small runtime, with one retry under a newer shard map.

use super::live_map::LiveCluster;
use super::shards::Shards;
use crate::blocking::Bridge;
use crate::cluster::Cluster;
use crate::error::PgError;
use shardkit_links::{write_one, InsertOutcome, Link, LinkStore, StoreError, Write, Written};
use std::future::Future;
use std::sync::Arc;

/// Links on PostgreSQL logical shards: each link in the shard of its code's group (see
/// the module docs for how every lookup is routed and how the map is followed).
/// Synchronous like every [`LinkStore`]: calls run on the store's own small runtime
/// ([`Bridge`]).
pub struct PgLinkStore {
    live: Arc<LiveCluster>,
    bridge: Bridge,
}

impl std::fmt::Debug for PgLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLinkStore")
            .field("cluster", &self.live.get())
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
        let given = servers.to_vec();
        let cluster = bridge
            .run(async move { Cluster::open(&given, pool_size).await })
            .ok_or_else(|| {
                PgError::Runtime("the runtime stopped while opening the cluster".into())
            })??;
        Ok(Self {
            live: Arc::new(LiveCluster::new(cluster, servers.to_vec(), pool_size)),
            bridge,
        })
    }

    /// The cluster the links live on, under the newest shard map the store has seen.
    pub fn cluster(&self) -> Arc<Cluster> {
        self.live.get()
    }

    /// Runs one call on the bridge. If it fails for a reason other than the request
    /// itself (a missing shard, a lost server) and the servers hold a newer shard map,
    /// it runs once more under that map: a call that hit a shard just moved away.
    fn run<T, F>(&self, call: impl Fn(Shards) -> F + Send + 'static) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let live = Arc::clone(&self.live);
        self.bridge
            .run(async move {
                let cluster = live.get();
                let seen = cluster.map().version();
                match call(Shards { cluster }).await {
                    Err(StoreError::Backend(reason)) => {
                        if live.newer_than(seen).await {
                            call(Shards {
                                cluster: live.get(),
                            })
                            .await
                        } else {
                            Err(StoreError::Backend(reason))
                        }
                    }
                    other => other,
                }
            })
            .unwrap_or_else(|| {
                Err(StoreError::Backend(
                    "the PostgreSQL link store's runtime stopped".into(),
                ))
            })
    }
}

impl LinkStore for PgLinkStore {
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        let links = Arc::new(links.to_vec());
        self.run(move |s| {
            let links = Arc::clone(&links);
            async move { s.insert_batch(&links).await }
        })
    }

    /// Ids from each code shard's `next_id()` (Instagram's layout, made in the
    /// database), so servers sharing the cluster never make the same link id.
    fn assign_ids(&self, links: &mut [Link]) -> Result<(), StoreError> {
        let codes: Arc<Vec<String>> = Arc::new(links.iter().map(|l| l.code.clone()).collect());
        let ids = self.run(move |s| {
            let codes = Arc::clone(&codes);
            async move { s.next_ids(&codes).await }
        })?;
        for (link, id) in links.iter_mut().zip(ids) {
            link.id = id;
        }
        Ok(())
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.run(move |s| async move { s.get(id).await })
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        let path: Arc<str> = path.into();
        self.run(move |s| {
            let path = Arc::clone(&path);
            async move { s.resolve(&path).await }
        })
    }

    fn held_codes(
        &self,
        codes: &[String],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        let codes: Arc<Vec<String>> = Arc::new(codes.to_vec());
        self.run(move |s| {
            let codes = Arc::clone(&codes);
            async move { s.held_codes(&codes).await }
        })
    }

    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        let url: Arc<str> = url.into();
        let domain: Option<Arc<str>> = domain.map(Into::into);
        self.run(move |s| {
            let url = Arc::clone(&url);
            let domain = domain.clone();
            async move { s.find_reusable(&url, domain.as_deref()).await }
        })
    }

    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        let link = Arc::new(link.clone());
        self.run(move |s| {
            let link = Arc::clone(&link);
            async move { s.replace(&link).await }
        })
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.run(move |s| async move { s.delete(id).await })
    }

    fn delete_link(&self, link: &Link) -> Result<Option<Link>, StoreError> {
        let link = Arc::new(link.clone());
        self.run(move |s| {
            let link = Arc::clone(&link);
            async move { s.delete_link(&link).await }
        })
    }

    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let tag = tag.map(str::to_string);
        self.run(move |s| {
            let tag = tag.clone();
            async move { s.list(tag, after, limit).await }
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.run(|s| async move { s.count().await })
    }

    /// The group commit's writes: each run of replaces and deletes in one transaction
    /// per code shard (inserts as `insert_batch`). A write that failed for a reason
    /// other than itself while the servers hold a newer shard map runs once more, on
    /// its own, under that map.
    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        let live = Arc::clone(&self.live);
        let group = Arc::new(writes.to_vec());
        let answers = self.bridge.run(async move {
            let cluster = live.get();
            let seen = cluster.map().version();
            let answers = Shards { cluster }.write_group(&group).await;
            let moved = answers
                .iter()
                .any(|a| matches!(a, Err(StoreError::Backend(_))))
                && live.newer_than(seen).await;
            (answers, moved)
        });
        let Some((mut answers, moved)) = answers else {
            return writes
                .iter()
                .map(|_| {
                    Err(StoreError::Backend(
                        "the PostgreSQL link store's runtime stopped".into(),
                    ))
                })
                .collect();
        };
        if moved {
            for (answer, write) in answers.iter_mut().zip(writes) {
                if matches!(answer, Err(StoreError::Backend(_))) {
                    *answer = write_one(self, write);
                }
            }
        }
        answers
    }
}
