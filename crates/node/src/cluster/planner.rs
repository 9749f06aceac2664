//! Where the slot groups go when nodes join or leave: the placement with the fewest
//! group moves, and replicas kept where they are while they still can be.
//!
//! Exists so `shardkit cluster rebalance|add-node|remove-node` and a node taking over a
//! dead one's groups compute placement one way. Owners come from `shardkit-ring`'s move
//! plan, with the groups as its logical shards: every node ends within one group of its
//! fair share, and no plan that meets that bound moves fewer groups (a group moves at
//! most once, straight to its final owner). Groups nobody owns (their owner left the map)
//! always move, to the nodes below their share.

use super::map::{NodeInfo, SlotMap};
use serde::Serialize;
use shardkit_ring::{NodeSpec, Plan, ShardMap};
use std::collections::BTreeMap;

/// Stands for "no owner" in the ring's table (node ids are 40 hex characters, so it
/// never names a node).
const NOBODY: &str = "-";

/// One group changing owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupMove {
    /// The group.
    pub group: u16,
    /// Its slots, `first-last`, as `CLUSTER SLOTS` would list them.
    pub slots: String,
    /// Its owner before (`None`: nobody served it).
    pub from: Option<String>,
    /// Its owner after.
    pub to: String,
}

/// A new map and the moves that lead to it from the old one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rebalance {
    /// The version of the map it was planned from (0: there was none); it may only
    /// replace that version.
    pub from_version: u64,
    /// The map after the moves (its `version` is set when it is stored).
    pub map: SlotMap,
    /// The owner changes, in group order.
    pub moves: Vec<GroupMove>,
}

/// Why no plan can be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// A map needs a node to place groups on.
    #[error("no node to place the slot groups on: start a node with [cluster] enabled first")]
    NoNodes,
    /// The group count of a cluster is fixed when its map is first written.
    #[error(
        "the cluster's map has {has} groups, not {asked}: the group count is fixed when \
         the map is first written"
    )]
    GroupCount {
        /// The stored map's count.
        has: u16,
        /// The count asked for.
        asked: u16,
    },
    /// The ring refused the inputs (a bug if it happens: the inputs are checked here).
    #[error("placement failed: {0}")]
    Ring(String),
}

/// Places `groups` groups over `nodes` with `copies` replicas each, moving as few
/// groups as possible from `current` (or placing them all when there is no map yet).
/// The new map names exactly `nodes`; groups of nodes not among them move.
pub fn plan(
    current: Option<&SlotMap>,
    nodes: &[NodeInfo],
    groups: u16,
    copies: usize,
) -> Result<Rebalance, PlanError> {
    if nodes.is_empty() {
        return Err(PlanError::NoNodes);
    }
    let mut sorted: Vec<NodeInfo> = nodes.to_vec();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    sorted.dedup_by(|a, b| a.id == b.id);
    let Some(current) = current else {
        let map = SlotMap::place(0, groups, &sorted, copies);
        let moves = (0..groups)
            .map(|g| GroupMove {
                group: g,
                slots: slots_text(&map, g),
                from: None,
                to: map.owner[usize::from(g)].clone().unwrap_or_default(),
            })
            .collect();
        return Ok(Rebalance {
            from_version: 0,
            map,
            moves,
        });
    };
    if current.groups != groups {
        return Err(PlanError::GroupCount {
            has: current.groups,
            asked: groups,
        });
    }
    let owners = owners_after(current, &sorted)?;
    let moves = (0..groups)
        .filter(|&g| current.owner[usize::from(g)].as_ref() != Some(&owners[usize::from(g)]))
        .map(|g| GroupMove {
            group: g,
            slots: slots_text(current, g),
            from: current.owner[usize::from(g)].clone(),
            to: owners[usize::from(g)].clone(),
        })
        .collect();
    let replicas = (0..usize::from(groups))
        .map(|g| replicas_for(&current.replicas[g], &owners[g], &sorted, copies))
        .collect();
    let map = SlotMap {
        version: current.version,
        groups,
        owner: owners.into_iter().map(Some).collect(),
        replicas,
        nodes: sorted.iter().map(|n| (n.id.clone(), n.clone())).collect(),
    };
    Ok(Rebalance {
        from_version: current.version,
        map,
        moves,
    })
}

/// Each group's owner after the ring's fewest-moves plan over `nodes`.
fn owners_after(current: &SlotMap, nodes: &[NodeInfo]) -> Result<Vec<String>, PlanError> {
    let ring_err = |e: shardkit_ring::RingError| PlanError::Ring(e.to_string());
    // The ring's table names its nodes by index: today's owners (in id order), plus
    // NOBODY for groups without one.
    let mut before: BTreeMap<&str, u32> = BTreeMap::new();
    for id in current.owner.iter().flatten() {
        before.entry(id.as_str()).or_insert(0);
    }
    before.insert(NOBODY, 0);
    let before_nodes: Vec<NodeSpec> = before.keys().map(|id| NodeSpec::new(*id)).collect();
    for (index, i) in before.values_mut().zip(0u32..) {
        *index = i;
    }
    let table = current
        .owner
        .iter()
        .map(|o| before[o.as_deref().unwrap_or(NOBODY)])
        .collect();
    let map = ShardMap::from_parts(
        current.version,
        u32::from(current.groups),
        before_nodes,
        table,
    )
    .map_err(ring_err)?;
    let after: Vec<NodeSpec> = nodes.iter().map(|n| NodeSpec::new(n.id.clone())).collect();
    let plan = Plan::rebalance(&map, after).map_err(ring_err)?;
    let moved = plan.apply(&map).map_err(ring_err)?;
    Ok((0..u32::from(current.groups))
        .map(|g| moved.owner(g).unwrap_or(NOBODY).to_owned())
        .collect())
}

/// A group's replicas: those it had that are still in the map and are not its owner,
/// then the nodes after the owner in id order, up to `copies` (at most every other node).
fn replicas_for(had: &[String], owner: &str, nodes: &[NodeInfo], copies: usize) -> Vec<String> {
    let want = copies.min(nodes.len().saturating_sub(1));
    let mut out: Vec<String> = had
        .iter()
        .filter(|id| id.as_str() != owner && nodes.iter().any(|n| &n.id == *id))
        .take(want)
        .cloned()
        .collect();
    let start = nodes.iter().position(|n| n.id == owner).unwrap_or(0);
    for k in 1..nodes.len() {
        if out.len() >= want {
            break;
        }
        let id = &nodes[(start + k) % nodes.len()].id;
        if id != owner && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// `first-last` of group `g`'s slots.
fn slots_text(map: &SlotMap, g: u16) -> String {
    let r = map.slots_of(g);
    format!("{}-{}", r.start(), r.end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(i: u8) -> NodeInfo {
        NodeInfo {
            id: format!("{i:040x}"),
            host: "127.0.0.1".into(),
            port: 7000 + u16::from(i),
            http: String::new(),
        }
    }

    fn owned(map: &SlotMap, n: &NodeInfo) -> usize {
        map.owner
            .iter()
            .filter(|o| o.as_deref() == Some(&n.id))
            .count()
    }

    #[test]
    fn a_first_plan_places_every_group() {
        let nodes = [node(1), node(2), node(3)];
        let r = plan(None, &nodes, 64, 1).unwrap();
        assert_eq!(r.from_version, 0);
        assert_eq!(r.moves.len(), 64);
        assert!(r.moves.iter().all(|m| m.from.is_none()));
        assert_eq!(r.map.slots_assigned(), 16_384);
        assert_eq!(r.moves[0].slots, "0-255");
        assert_eq!(plan(None, &[], 64, 1).unwrap_err(), PlanError::NoNodes);
    }

    #[test]
    fn a_fourth_node_takes_a_quarter_and_nothing_else_moves() {
        let three = [node(1), node(2), node(3)];
        let mut map = plan(None, &three, 64, 1).unwrap().map;
        map.version = 5;
        let four = [node(1), node(2), node(3), node(4)];
        let r = plan(Some(&map), &four, 64, 1).unwrap();
        assert_eq!(r.from_version, 5);
        assert_eq!(r.moves.len(), 16, "a quarter of 64 groups");
        assert!(r.moves.iter().all(|m| m.to == node(4).id));
        for n in &four {
            assert_eq!(owned(&r.map, n), 16);
        }
        for g in 0..64usize {
            let owner = r.map.owner[g].as_ref().unwrap();
            assert_eq!(r.map.replicas[g].len(), 1);
            assert_ne!(&r.map.replicas[g][0], owner);
        }
        // Planning again from the result moves nothing.
        let again = plan(Some(&r.map), &four, 64, 1).unwrap();
        assert!(again.moves.is_empty());
        assert_eq!(again.map.replicas, r.map.replicas, "replicas stay put");
    }

    #[test]
    fn a_removed_node_s_groups_and_unowned_groups_move_to_the_others() {
        let three = [node(1), node(2), node(3)];
        let mut map = plan(None, &three, 64, 1).unwrap().map;
        map.owner[0] = None;
        let two = [node(1), node(2)];
        let r = plan(Some(&map), &two, 64, 1).unwrap();
        let gone = &node(3).id;
        let from_gone = map
            .owner
            .iter()
            .filter(|o| o.as_ref() == Some(gone))
            .count();
        assert_eq!(r.moves.len(), from_gone + 1);
        assert!(r.moves.iter().any(|m| m.group == 0 && m.from.is_none()));
        assert_eq!(owned(&r.map, &node(1)) + owned(&r.map, &node(2)), 64);
        assert!(r.map.replicas.iter().flatten().all(|id| id != gone));
        assert!(!r.map.nodes.contains_key(gone));
    }

    #[test]
    fn the_group_count_is_fixed() {
        let map = plan(None, &[node(1)], 64, 0).unwrap().map;
        assert_eq!(
            plan(Some(&map), &[node(1)], 128, 0).unwrap_err(),
            PlanError::GroupCount {
                has: 64,
                asked: 128
            }
        );
    }
}
