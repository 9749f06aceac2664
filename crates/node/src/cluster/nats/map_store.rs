//! The slot map in the bucket `shardkit_map_<cluster>`, key `map`: read with its KV
//! revision, which is the map's `version`, and changed only by a compare-and-set on that
//! revision. So two planners cannot both win, and a map's version only ever goes up.

use super::names::{map_bucket, MAP_KEY, SCHEMA_KEY};
use crate::cluster::map::SlotMap;
use crate::cluster::schema::{ChangeError, Schema, SchemaWriter};
use crate::replication::jetstream::election::kv_bucket;
use crate::replication::jetstream::kv_agreed::agreed_entry;
use anyhow::Context;
use async_nats::jetstream::{self, kv};
use std::time::Duration;

/// Past versions of the map kept in the bucket (for `nats kv history` and post-mortems).
const HISTORY: i64 = 8;

/// Why a map was not stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Someone stored another version since the one the new map was planned from.
    #[error(
        "the cluster's map changed while this plan was made (planned from version \
         {planned_from}, now {now}): plan again"
    )]
    Changed {
        /// The version the plan started from (0: no map).
        planned_from: u64,
        /// The version stored now (0: none).
        now: u64,
    },
    /// NATS failed or refused otherwise.
    #[error(transparent)]
    Nats(#[from] anyhow::Error),
}

/// One cluster's map bucket.
#[derive(Clone)]
pub struct MapStore {
    kv: kv::Store,
}

impl std::fmt::Debug for MapStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MapStore")
    }
}

impl MapStore {
    /// The bucket of cluster `cluster`, made if missing.
    pub async fn open(
        js: &jetstream::Context,
        cluster: &str,
        replicas: usize,
    ) -> anyhow::Result<Self> {
        let kv = kv_bucket(js, &map_bucket(cluster), Duration::ZERO, HISTORY, replicas)
            .await
            .context("cannot make the cluster's map bucket")?;
        Ok(Self { kv })
    }

    /// The newest map, its `version` set to its revision; `None` before the first.
    pub async fn load(&self) -> anyhow::Result<Option<SlotMap>> {
        let entry = self
            .agreed(MAP_KEY)
            .await
            .context("cannot read the cluster's map")?;
        let Some((revision, value)) = entry else {
            return Ok(None);
        };
        let mut map: SlotMap = serde_json::from_slice(&value)
            .with_context(|| format!("the cluster's map (version {revision}) is unreadable"))?;
        map.version = revision;
        Ok(Some(map))
    }

    /// Key `key`'s value and revision as the bucket's stream leader holds them: a
    /// node adopting a map from a copy of the bucket that is behind, or that kept a
    /// write the others never took, would serve slots by a version never agreed.
    async fn agreed(&self, key: &str) -> anyhow::Result<Option<(u64, bytes::Bytes)>> {
        Ok(agreed_entry(&self.kv.stream, &self.kv.name, key).await?)
    }

    /// A stream that yields whenever the map key changes (its values are not read:
    /// [`MapStore::load`] reads the newest).
    pub async fn changes(&self) -> anyhow::Result<kv::Watch> {
        self.kv
            .watch(MAP_KEY)
            .await
            .context("cannot watch the cluster's map")
    }

    /// Stores `map` if the stored version is still `planned_from` (0: no map yet);
    /// answers the new version.
    pub async fn store(&self, map: &SlotMap, planned_from: u64) -> Result<u64, StoreError> {
        let value = serde_json::to_vec(map).map_err(anyhow::Error::from)?;
        let result = if planned_from == 0 {
            self.kv.create(MAP_KEY, value.into()).await.map_err(|e| {
                (
                    e.kind() == kv::CreateErrorKind::AlreadyExists,
                    e.to_string(),
                )
            })
        } else {
            self.kv
                .update(MAP_KEY, value.into(), planned_from)
                .await
                .map_err(|e| {
                    (
                        e.kind() == kv::UpdateErrorKind::WrongLastRevision,
                        e.to_string(),
                    )
                })
        };
        match result {
            Ok(version) => Ok(version),
            Err((true, _)) => {
                let now = self.load().await?.map_or(0, |m| m.version);
                Err(StoreError::Changed { planned_from, now })
            }
            Err((false, e)) => Err(StoreError::Nats(anyhow::anyhow!(
                "cannot store the cluster's map: {e}"
            ))),
        }
    }
}

impl MapStore {
    /// The counters' schema and its KV revision (an empty schema and 0 before the
    /// first `COUNTER.CREATE`).
    pub async fn load_schema(&self) -> anyhow::Result<(u64, Schema)> {
        let entry = self
            .agreed(SCHEMA_KEY)
            .await
            .context("cannot read the cluster's counter schema")?;
        let Some((revision, value)) = entry else {
            return Ok((0, Schema::default()));
        };
        let schema = serde_json::from_slice(&value).with_context(|| {
            format!("the cluster's counter schema (revision {revision}) is unreadable")
        })?;
        Ok((revision, schema))
    }

    /// Stores `schema` if the stored revision is still `read_at` (0: none yet); answers
    /// the new revision, or `None` if another one was stored meanwhile.
    async fn store_schema(&self, schema: &Schema, read_at: u64) -> anyhow::Result<Option<u64>> {
        let value = serde_json::to_vec(schema)?;
        if read_at == 0 {
            match self.kv.create(SCHEMA_KEY, value.into()).await {
                Ok(revision) => Ok(Some(revision)),
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(None),
                Err(e) => Err(anyhow::anyhow!("cannot store the counter schema: {e}")),
            }
        } else {
            match self.kv.update(SCHEMA_KEY, value.into(), read_at).await {
                Ok(revision) => Ok(Some(revision)),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
                Err(e) => Err(anyhow::anyhow!("cannot store the counter schema: {e}")),
            }
        }
    }
}

/// [`SchemaWriter`] over the map's bucket, run on the cluster's runtime for the
/// request threads (which are not on it).
#[derive(Debug)]
pub struct KvSchemaWriter {
    /// The bucket.
    pub maps: MapStore,
    /// The cluster runtime, where the KV calls run.
    pub runtime: tokio::runtime::Handle,
}

/// The longest one KV call of a schema change may hold its request thread.
const CHANGE_WAIT: Duration = Duration::from_secs(5);
/// The longest a schema read before `auto_create` or `COUNTER.INFO` may hold its
/// request thread (NATS unreachable: the write goes on with the defaults).
const LOAD_WAIT: Duration = Duration::from_secs(1);

/// Compare-and-set rounds before a schema change gives up.
const SCHEMA_TRIES: usize = 20;

impl SchemaWriter for KvSchemaWriter {
    fn change(
        &self,
        change: &(dyn Fn(&Schema) -> Result<Schema, shardkit_counters::Error> + Sync),
    ) -> Result<(u64, Schema), ChangeError> {
        for _ in 0..SCHEMA_TRIES {
            let maps = self.maps.clone();
            let (revision, schema) = self
                .on_runtime(CHANGE_WAIT, async move { maps.load_schema().await })
                .map_err(|e| ChangeError::Unavailable(format!("{e:#}")))?;
            let next = change(&schema)?;
            let maps = self.maps.clone();
            let to_store = next.clone();
            let stored = self
                .on_runtime(CHANGE_WAIT, async move {
                    maps.store_schema(&to_store, revision).await
                })
                .map_err(|e| ChangeError::Unavailable(format!("{e:#}")))?;
            if let Some(revision) = stored {
                return Ok((revision, next));
            }
        }
        Err(ChangeError::Unavailable(format!(
            "the counter schema changed under this node {SCHEMA_TRIES} times in a row; try again"
        )))
    }

    fn load(&self) -> Result<(u64, Schema), String> {
        self.load_now()
    }
}

impl KvSchemaWriter {
    fn load_now(&self) -> Result<(u64, Schema), String> {
        let maps = self.maps.clone();
        self.on_runtime(LOAD_WAIT, async move { maps.load_schema().await })
            .map_err(|e| format!("{e:#}"))
    }

    /// Runs `work` on the cluster runtime and waits for it, at most `wait` (the caller
    /// is a request thread: every connection of the RESP runtime waits with it).
    fn on_runtime<T: Send + 'static>(
        &self,
        wait: Duration,
        work: impl std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
    ) -> anyhow::Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        crate::resp_runtime::block_here(|| rx.recv_timeout(wait))
            .map_err(|_| anyhow::anyhow!("NATS did not answer within {wait:?}"))?
    }
}
