//! Which nodes are up: each node keeps a record under its id in the bucket
//! `shardkit_nodes_<cluster>`, whose values lapse [`RECORD_LIFE`] after they are
//! written; a live node writes its record every [`HEARTBEAT`]. A node that stops
//! (crash, pause, cut from NATS) drops out of [`Registry::live`] within that life.

use super::names::nodes_bucket;
use crate::cluster::map::NodeInfo;
use crate::replication::jetstream::election::lease_bucket;
use crate::replication::jetstream::kv_agreed::{agreed_entry, agreed_keys};
use anyhow::Context;
use async_nats::jetstream::{self, kv};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How often a node renews its record.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a record lives without renewal: three heartbeats.
pub const RECORD_LIFE: Duration = Duration::from_secs(3);

/// A node as the cluster knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// 40 lowercase hex characters (Redis Cluster's node id shape), kept in the node's
    /// data directory so it survives restarts.
    pub id: String,
    /// The RESP address clients dial (`[cluster] announce`), `host:port`.
    pub announce: String,
    /// The HTTP address, `host:port` (for tools and for peers).
    pub http: String,
    /// When the node started, ms since the Unix epoch.
    pub started_ms: u64,
    /// The slot groups whose store is open on this node (as owner or follower), as of
    /// its last heartbeat: a rebalance waits for a group's new owner to follow it
    /// before it hands the group over.
    #[serde(default)]
    pub following: Vec<u16>,
}

impl NodeRecord {
    /// The node as the slot map names it (host and port split off `announce`).
    pub fn info(&self) -> anyhow::Result<NodeInfo> {
        let (host, port) = self.announce.rsplit_once(':').with_context(|| {
            format!(
                "node {} announces {:?}, not host:port",
                self.id, self.announce
            )
        })?;
        Ok(NodeInfo {
            id: self.id.clone(),
            host: host.to_owned(),
            port: port
                .parse()
                .with_context(|| format!("node {} announces port {port:?}", self.id))?,
            http: self.http.clone(),
        })
    }
}

/// The node records of one cluster.
#[derive(Clone)]
pub struct Registry {
    kv: kv::Store,
    /// When this node's own record was last written (shared by the clones).
    announced: std::sync::Arc<parking_lot::Mutex<Option<std::time::Instant>>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registry")
    }
}

impl Registry {
    /// The bucket of cluster `cluster`, made if missing (`replicas` copies in JetStream).
    pub async fn open(
        js: &jetstream::Context,
        cluster: &str,
        replicas: usize,
    ) -> anyhow::Result<Self> {
        let kv = lease_bucket(js, &nodes_bucket(cluster), RECORD_LIFE, replicas)
            .await
            .context("cannot make the cluster's node bucket")?;
        Ok(Self {
            kv,
            announced: Default::default(),
        })
    }

    /// Writes (or renews) `record`.
    pub async fn announce(&self, record: &NodeRecord) -> anyhow::Result<()> {
        let value = serde_json::to_vec(record)?;
        self.kv
            .put(&record.id, value.into())
            .await
            .with_context(|| format!("cannot write node {}'s record", record.id))?;
        *self.announced.lock() = Some(std::time::Instant::now());
        Ok(())
    }

    /// Whether this node wrote its own record within `within`. A node that cannot
    /// write its record does not judge others by theirs: nats-server 2.9, healing
    /// after a partition, answered reads of the bucket for seconds while no write went
    /// through, and every record then looked unrenewed.
    pub fn announced_within(&self, within: Duration) -> bool {
        self.announced
            .lock()
            .is_some_and(|at| at.elapsed() <= within)
    }

    /// Renews `record` every [`HEARTBEAT`] until the task is dropped; a failed write is
    /// logged and tried again at the next beat (the record lapses if it goes on).
    pub async fn run(self, record: NodeRecord) {
        self.run_with(record, Vec::new).await;
    }

    /// [`Registry::run`], with `following` read afresh for every beat.
    pub async fn run_with(self, mut record: NodeRecord, following: impl Fn() -> Vec<u16>) {
        loop {
            record.following = following();
            if let Err(e) = self.announce(&record).await {
                tracing::warn!(error = %format!("{e:#}"), "cluster heartbeat");
            }
            tokio::time::sleep(HEARTBEAT).await;
        }
    }

    /// Removes node `id`'s record (a clean stop).
    pub async fn leave(&self, id: &str) -> anyhow::Result<()> {
        self.kv.delete(id).await?;
        Ok(())
    }

    /// The records that have not lapsed, in id order.
    pub async fn live(&self) -> anyhow::Result<Vec<NodeRecord>> {
        Ok(self.records().await?.into_iter().map(|(r, _)| r).collect())
    }

    /// The records whose keys are there, each with its revision (what
    /// [`super::liveness::Liveness`] judges), in id order.
    pub async fn records(&self) -> anyhow::Result<Vec<(NodeRecord, u64)>> {
        let ids = agreed_keys(&self.kv.stream, &self.kv.name)
            .await
            .context("cannot list the cluster's nodes")?;
        let mut out = Vec::new();
        for id in ids {
            // From the bucket's stream leader, not a direct get: a copy that is behind
            // would show a renewed record as not renewed.
            let entry = agreed_entry(&self.kv.stream, &self.kv.name, &id)
                .await
                .context("cannot read the cluster's node records")?;
            let Some((revision, value)) = entry else {
                continue;
            };
            match serde_json::from_slice::<NodeRecord>(&value) {
                Ok(record) => out.push((record, revision)),
                Err(e) => tracing::warn!(key = %id, error = %e, "unreadable node record"),
            }
        }
        out.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        Ok(out)
    }
}
