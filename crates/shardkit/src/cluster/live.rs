//! What a cluster node's request path reads: the newest slot map it has seen and the
//! counter store of each slot group it serves or follows.
//!
//! Exists so the RESP dispatcher (`resp/table.rs`) routes by plain reads, without
//! knowing about NATS: the part that watches the map and opens and closes group stores
//! (`cluster/nats/runner.rs`, feature `nats`) writes here.

use super::map::SlotMap;
use crate::counter_store::CounterStore;
use parking_lot::RwLock;
use std::sync::Arc;

/// The node's view of the cluster.
#[derive(Debug)]
pub struct Live {
    /// This node's id (40 hex characters).
    pub me: String,
    /// The newest map seen (version 0, nothing served, before the first).
    map: RwLock<Arc<SlotMap>>,
    /// The open store of each group this node owns or follows.
    stores: Vec<RwLock<Option<Arc<CounterStore>>>>,
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
            stores: (0..groups).map(|_| RwLock::new(None)).collect(),
        }
    }

    /// The newest map seen.
    pub fn map(&self) -> Arc<SlotMap> {
        Arc::clone(&self.map.read())
    }

    /// Takes `map` if it is newer than the one held; answers whether it did.
    pub fn set_map(&self, map: SlotMap) -> bool {
        let mut held = self.map.write();
        if map.version <= held.version || map.groups != held.groups {
            return false;
        }
        *held = Arc::new(map);
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
