//! The shard map a store routes by, kept current while it serves: after `shardkit pg
//! move-shard` a call that hit the dropped old copy asks for the newer map and is
//! retried on the shard's new server.

use crate::cluster::Cluster;
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The least time between two look-ups of the servers' maps: a lost server fails
/// every call for its shards, and those calls must not each ask every server.
pub const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// The cluster in force, swapped for a newer one when the map changes.
pub(super) struct LiveCluster {
    current: RwLock<Arc<Cluster>>,
    servers: Vec<String>,
    pool_size: usize,
    /// When the servers were last asked; the lock also makes refreshes one at a time.
    last_refresh: tokio::sync::Mutex<Option<Instant>>,
}

impl LiveCluster {
    /// Starts from `cluster`; `servers` and `pool_size` are what it was opened with.
    pub(super) fn new(cluster: Cluster, servers: Vec<String>, pool_size: usize) -> Self {
        Self {
            current: RwLock::new(Arc::new(cluster)),
            servers,
            pool_size,
            last_refresh: tokio::sync::Mutex::new(None),
        }
    }

    /// The cluster in force now.
    pub(super) fn get(&self) -> Arc<Cluster> {
        Arc::clone(&self.current.read())
    }

    /// Whether a map newer than version `seen` is in force, asking the servers for
    /// one unless someone did less than [`REFRESH_EVERY`] ago.
    pub(super) async fn newer_than(&self, seen: u64) -> bool {
        if self.get().map().version() > seen {
            return true;
        }
        let mut last = self.last_refresh.lock().await;
        let current = self.get();
        if current.map().version() > seen {
            return true;
        }
        if last.is_some_and(|t| t.elapsed() < REFRESH_EVERY) {
            return false;
        }
        *last = Some(Instant::now());
        match current.refresh(&self.servers, self.pool_size).await {
            Ok(Some(fresh)) => {
                *self.current.write() = Arc::new(fresh);
                true
            }
            _ => false,
        }
    }
}
