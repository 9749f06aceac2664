//! What a cluster node's request path reads: the newest slot map it has seen and the
//! counter store of each slot group it serves or follows.
//!
//! Exists so the RESP dispatcher (`resp/table.rs`) routes by plain reads, without
//! knowing about NATS: the part that watches the map and opens and closes group stores
//! (`cluster/nats/runner.rs`, feature `nats`) writes here.

use super::map::SlotMap;
use super::schema::{Schema, SchemaWriter};
use crate::replication::store::CounterStore;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The node's view of the cluster.
#[derive(Debug)]
pub struct Live {
    /// This node's id (40 hex characters).
    pub me: String,
    /// The newest map seen (version 0, nothing served, before the first).
    map: RwLock<Arc<SlotMap>>,
    /// `map`'s version, read without the lock: a connection keeps the map it used
    /// last and takes the newest only when this moved ([`Live::map_after`]).
    map_version: AtomicU64,
    /// The open store of each group this node owns or follows.
    stores: Vec<RwLock<Option<Arc<CounterStore>>>>,
    /// The newest counter schema read, with its KV revision (0: none yet).
    schema: RwLock<Arc<(u64, Schema)>>,
    /// Stores schema changes (set when the node has joined the cluster).
    schema_writer: std::sync::OnceLock<Box<dyn SchemaWriter>>,
    /// Per group, the store (by address) and schema revision last applied to it.
    applied: Vec<parking_lot::Mutex<Option<(usize, u64)>>>,
    /// One apply at a time (the map watch and a `COUNTER.CREATE` may both run one).
    applying: parking_lot::Mutex<()>,
}

impl Live {
    /// A node `me` of a cluster of `groups` groups that has seen no map yet.
    pub fn new(me: String, groups: u16) -> Self {
        let empty = SlotMap {
            version: 0,
            groups,
            owner: vec![None; usize::from(groups)],
            replicas: vec![Vec::new(); usize::from(groups)],
            nodes: Default::default(),
        };
        Self {
            me,
            map: RwLock::new(Arc::new(empty)),
            map_version: AtomicU64::new(0),
            stores: (0..groups).map(|_| RwLock::new(None)).collect(),
            schema: RwLock::new(Arc::new((0, Schema::default()))),
            schema_writer: std::sync::OnceLock::new(),
            applied: (0..groups).map(|_| parking_lot::Mutex::new(None)).collect(),
            applying: parking_lot::Mutex::new(()),
        }
    }

    /// The groups this node leads that have not had the newest schema applied (newly
    /// led, or the schema is newer), with their stores and the mark to set once done.
    fn lacking_schema(&self, revision: u64) -> Vec<(usize, Arc<CounterStore>, (usize, u64))> {
        self.stores
            .iter()
            .enumerate()
            .filter_map(|(g, slot)| Some((g, slot.read().clone()?)))
            .filter(|(_, s)| matches!(s.replication.role(), crate::replication::Role::Leader))
            .map(|(g, s)| {
                let mark = (Arc::as_ptr(&s) as usize, revision);
                (g, s, mark)
            })
            .filter(|(g, _, mark)| *self.applied[*g].lock() != Some(*mark))
            .collect()
    }

    /// The figures of each counter summed over the groups this node leads (ticket
    /// sequences left out: they are not keys), in name order: what `INFO`, `/metrics`
    /// and `COUNTER.INFO` show on a cluster node.
    pub fn counter_stats(&self) -> Vec<shardkit_counters::CounterStats> {
        let mut by_name: std::collections::BTreeMap<String, shardkit_counters::CounterStats> =
            Default::default();
        for store in self.led() {
            for c in store.counters.engine.stats().counters {
                if c.name == super::tickets::COUNTER {
                    continue;
                }
                by_name
                    .entry(c.name.clone())
                    .or_insert_with(|| shardkit_counters::CounterStats {
                        name: c.name.clone(),
                        ..Default::default()
                    })
                    .absorb(&c);
            }
        }
        by_name.into_values().collect()
    }

    /// Reads the cluster's schema now and applies it to `engine` (a group store about
    /// to make a counter or column with `auto_create`'s defaults), so what
    /// `COUNTER.CREATE|ADDCOL` declared anywhere wins over the defaults. Failures are
    /// logged: the write then goes on with the defaults.
    pub fn apply_fresh_schema(&self, engine: &shardkit_counters::Engine) {
        let Some(writer) = self.schema_writer() else {
            return;
        };
        match writer.load() {
            Ok((revision, schema)) => self.set_schema(revision, schema),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the counter schema before auto_create")
            }
        }
        if let Err(e) = self.schema().1.apply(engine) {
            tracing::warn!(error = %e, "cannot apply the counter schema before auto_create");
        }
    }

    /// Whether a group this node leads lacks the newest schema.
    pub fn needs_schema(&self) -> bool {
        let revision = self.schema().0;
        revision > 0 && !self.lacking_schema(revision).is_empty()
    }

    /// Applies the newest schema to every group this node leads that lacks it (it may
    /// block on the groups' logs: call it off the async runtimes). Answers the groups
    /// it could not apply to, with why; they are tried again on the next call.
    pub fn apply_schema(&self) -> Vec<(u16, String)> {
        let _one = self.applying.lock();
        let schema = self.schema();
        if schema.0 == 0 {
            return Vec::new();
        }
        let mut failed = Vec::new();
        for (g, store, mark) in self.lacking_schema(schema.0) {
            match schema.1.apply(&store.counters.engine) {
                Ok(_) => *self.applied[g].lock() = Some(mark),
                Err(e) => failed.push((g as u16, e.to_string())),
            }
        }
        failed
    }

    /// The newest counter schema this node has read, and its revision.
    pub fn schema(&self) -> Arc<(u64, Schema)> {
        Arc::clone(&self.schema.read())
    }

    /// Takes `schema` (of KV revision `revision`) if it is newer than the one held.
    pub fn set_schema(&self, revision: u64, schema: Schema) {
        let mut held = self.schema.write();
        if revision > held.0 {
            *held = Arc::new((revision, schema));
        }
    }

    /// Sets what stores schema changes (once, when the node joins).
    pub fn set_schema_writer(&self, writer: Box<dyn SchemaWriter>) {
        let _ = self.schema_writer.set(writer);
    }

    /// What stores schema changes; `None` before the node has joined.
    pub fn schema_writer(&self) -> Option<&dyn SchemaWriter> {
        self.schema_writer.get().map(|w| w.as_ref())
    }

    /// The newest map seen.
    pub fn map(&self) -> Arc<SlotMap> {
        Arc::clone(&self.map.read())
    }

    /// `held` if it is still the newest map, else the newest: a command's map without
    /// the lock or a reference count bumped when the map has not changed (versions
    /// only go up).
    pub fn map_after(&self, held: Option<Arc<SlotMap>>) -> Arc<SlotMap> {
        match held {
            Some(map) if map.version == self.map_version.load(Ordering::Acquire) => map,
            _ => self.map(),
        }
    }

    /// Takes `map` if it is newer than the one held; answers whether it did.
    pub fn set_map(&self, map: SlotMap) -> bool {
        let mut held = self.map.write();
        if map.version <= held.version || map.groups != held.groups {
            return false;
        }
        let version = map.version;
        *held = Arc::new(map);
        self.map_version.store(version, Ordering::Release);
        true
    }

    /// The open store of group `group`, if any.
    pub fn store(&self, group: u16) -> Option<Arc<CounterStore>> {
        self.stores.get(usize::from(group))?.read().clone()
    }

    /// Sets (or clears) the open store of group `group`.
    pub fn set_store(&self, group: u16, store: Option<Arc<CounterStore>>) {
        if let Some(slot) = self.stores.get(usize::from(group)) {
            *slot.write() = store;
        }
    }

    /// The groups whose store is open on this node.
    pub fn open_groups(&self) -> Vec<u16> {
        (0..self.stores.len() as u16)
            .filter(|&g| self.stores[usize::from(g)].read().is_some())
            .collect()
    }

    /// The stores of the groups this node leads now.
    pub fn led(&self) -> Vec<Arc<CounterStore>> {
        self.stores
            .iter()
            .filter_map(|s| s.read().clone())
            .filter(|s| matches!(s.replication.role(), crate::replication::Role::Leader))
            .collect()
    }

    /// Whether the map names an owner for every group and this node leads each group
    /// the map gives it (`CLUSTER INFO`'s `cluster_state:ok` as this node sees it).
    pub fn serving(&self) -> bool {
        let map = self.map();
        map.version > 0
            && (0..map.groups).all(|g| match &map.owner[usize::from(g)] {
                None => false,
                Some(owner) if *owner == self.me => self.store(g).is_some_and(|s| {
                    matches!(s.replication.role(), crate::replication::Role::Leader)
                }),
                Some(_) => true,
            })
    }
}
