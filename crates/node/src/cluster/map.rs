//! The slot map: which node owns each group of slots and which nodes follow it, and
//! where clients reach them. Built from the cluster's KV map and node records
//! (docs/cluster.md); every `CLUSTER` reply and every `-MOVED` is read off it.

use super::slot::SLOTS;
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// A node as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeInfo {
    /// 40 lowercase hex characters, as Redis Cluster node ids are.
    pub id: String,
    /// The host clients dial (`[cluster] announce`).
    pub host: String,
    /// Its RESP port.
    pub port: u16,
    /// Its HTTP address (`host:port`), where the counter routes of the slots it owns
    /// are served; empty in a map written before nodes said it.
    #[serde(default)]
    pub http: String,
}

impl NodeInfo {
    /// Node `i` of a made-up cluster on one host: id `i` in hex, port 7000 + `i`. For
    /// tests of maps and of the replies written from them, in this crate and above.
    #[doc(hidden)]
    pub fn numbered(i: u8) -> Self {
        Self {
            id: format!("{i:040x}"),
            host: "127.0.0.1".into(),
            port: 7000 + u16::from(i),
            http: String::new(),
        }
    }
}

/// Slot groups, their owners and replicas, and the nodes, at one version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SlotMap {
    /// Goes up with every change (the KV revision it was read at).
    pub version: u64,
    /// How many contiguous groups the slots are split into (a power of two).
    pub groups: u16,
    /// The owner of each group, by node id (`None`: nobody serves it).
    pub owner: Vec<Option<String>>,
    /// The replicas of each group, by node id, in the order they take over.
    pub replicas: Vec<Vec<String>>,
    /// Every node the map names.
    pub nodes: BTreeMap<String, NodeInfo>,
}

/// One run of slots with the same owner and replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRange<'a> {
    /// First and last slot (inclusive).
    pub slots: RangeInclusive<u16>,
    /// The node serving writes.
    pub owner: &'a NodeInfo,
    /// The nodes following it.
    pub replicas: Vec<&'a NodeInfo>,
}

impl SlotMap {
    /// Places `groups` groups over `nodes` (in their order) round-robin, each with
    /// `copies` replicas on the next nodes: the first map of a new cluster.
    pub fn place(version: u64, groups: u16, nodes: &[NodeInfo], copies: usize) -> Self {
        let n = nodes.len();
        let owner = (0..usize::from(groups))
            .map(|g| (n > 0).then(|| nodes[g % n].id.clone()))
            .collect();
        let replicas = (0..usize::from(groups))
            .map(|g| {
                (1..=copies.min(n.saturating_sub(1)))
                    .map(|k| nodes[(g + k) % n].id.clone())
                    .collect()
            })
            .collect();
        Self {
            version,
            groups,
            owner,
            replicas,
            nodes: nodes.iter().map(|n| (n.id.clone(), n.clone())).collect(),
        }
    }

    /// The group slot `slot` belongs to.
    pub fn group_of(&self, slot: u16) -> u16 {
        (u32::from(slot) * u32::from(self.groups) / u32::from(SLOTS)) as u16
    }

    /// The slots of group `group`.
    pub fn slots_of(&self, group: u16) -> RangeInclusive<u16> {
        let per = u32::from(SLOTS) / u32::from(self.groups);
        let first = u32::from(group) * per;
        first as u16..=(first + per - 1) as u16
    }

    /// The node that serves slot `slot`, if any.
    pub fn owner_of(&self, slot: u16) -> Option<&NodeInfo> {
        self.nodes.get(self.owner_id_of(slot)?)
    }

    /// The id of the node that serves slot `slot`, if any: what a node compares with
    /// its own on every command, without looking the node up.
    pub fn owner_id_of(&self, slot: u16) -> Option<&str> {
        self.owner.get(usize::from(self.group_of(slot)))?.as_deref()
    }

    /// Runs of served slots, in slot order, adjacent groups with the same owner and
    /// replicas merged (what `CLUSTER SLOTS` lists).
    pub fn ranges(&self) -> Vec<SlotRange<'_>> {
        let mut out: Vec<SlotRange<'_>> = Vec::new();
        for g in 0..self.groups {
            let Some(owner) = self.owner[usize::from(g)]
                .as_ref()
                .and_then(|id| self.nodes.get(id))
            else {
                continue;
            };
            let replicas: Vec<&NodeInfo> = self.replicas[usize::from(g)]
                .iter()
                .filter_map(|id| self.nodes.get(id))
                .collect();
            let slots = self.slots_of(g);
            match out.last_mut() {
                Some(last)
                    if *last.slots.end() + 1 == *slots.start()
                        && last.owner.id == owner.id
                        && last.replicas == replicas =>
                {
                    last.slots = *last.slots.start()..=*slots.end();
                }
                _ => out.push(SlotRange {
                    slots,
                    owner,
                    replicas,
                }),
            }
        }
        out
    }

    /// How many slots some node serves.
    pub fn slots_assigned(&self) -> usize {
        self.ranges().iter().map(|r| r.slots.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cover_every_slot_once_in_order() {
        for groups in [1u16, 2, 64, 1024] {
            let map = SlotMap::place(1, groups, &[NodeInfo::numbered(1)], 0);
            let mut next = 0u32;
            for g in 0..groups {
                let r = map.slots_of(g);
                assert_eq!(u32::from(*r.start()), next);
                for s in [*r.start(), *r.end()] {
                    assert_eq!(map.group_of(s), g);
                }
                next = u32::from(*r.end()) + 1;
            }
            assert_eq!(next, u32::from(SLOTS));
        }
    }

    #[test]
    fn placement_spreads_groups_and_ranges_merge() {
        let nodes = [
            NodeInfo::numbered(1),
            NodeInfo::numbered(2),
            NodeInfo::numbered(3),
        ];
        let map = SlotMap::place(7, 64, &nodes, 1);
        let owned = |n: &NodeInfo| {
            map.owner
                .iter()
                .filter(|o| o.as_deref() == Some(&n.id))
                .count()
        };
        assert_eq!(nodes.iter().map(owned).collect::<Vec<_>>(), [22, 21, 21]);
        for g in 0..64usize {
            assert_ne!(
                map.owner[g].as_ref(),
                map.replicas[g].first(),
                "a replica is not its owner"
            );
        }
        assert_eq!(map.slots_assigned(), usize::from(SLOTS));
        assert_eq!(map.owner_of(0).unwrap().port, 7001);
        assert_eq!(map.owner_of(16_383).unwrap().port, 7001);
        let one = SlotMap::place(1, 64, &nodes[..1], 1);
        assert_eq!(one.ranges().len(), 1, "one owner, one range");
        assert_eq!(one.ranges()[0].slots, 0..=16_383);
        let mut gap = one.clone();
        gap.owner[1] = None;
        assert_eq!(gap.slots_assigned(), 16_384 - 256);
        assert_eq!(gap.ranges().len(), 2);
        assert!(gap.owner_of(300).is_none());
    }
}
